//! CIFAR-10-C's archive (`CIFAR-10-C.tar`): the input is the uncompressed tar of `.npy` arrays,
//! read for one corruption at one severity.
use bdl_data::cifar::{Corruption, Severity, load_corrupted};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        bdl_fuzz::put(bdl_data::cifar::CORRUPTED_ARCHIVE, data);
        let severity = Severity::new(1).expect("a severity in 1..=5");
        let _ = load_corrupted(bdl_fuzz::root(), Corruption::Fog, severity);
    });
}
