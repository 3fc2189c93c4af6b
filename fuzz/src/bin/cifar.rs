//! CIFAR-10's binary archive (`cifar-10-binary.tar.gz`): the input is the compressed tar.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        bdl_fuzz::put(bdl_data::cifar::ARCHIVE, data);
        let _ = bdl_data::cifar::load(bdl_fuzz::root(), bdl_data::cifar::Part::Test);
    });
}
