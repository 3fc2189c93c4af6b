//! UCI text tables: the input is `data.txt` of a benchmark whose index files are fixed (inputs
//! in columns 0 and 1, target in column 2, one split of rows 0..4).
use bdl_data::uci::{Benchmark, SplitKind, UciData};

fn main() {
    let dir = Benchmark::Yacht.data_dir(bdl_fuzz::root());
    let rel = dir.strip_prefix(bdl_fuzz::root()).expect("under the root");
    for (name, text) in [
        ("index_features.txt", "0\n1\n"),
        ("index_target.txt", "2\n"),
        ("index_train_0.txt", "0\n1\n2\n"),
        ("index_test_0.txt", "3\n"),
    ] {
        bdl_fuzz::put(&rel.join(name).to_string_lossy(), text.as_bytes());
    }
    let data = rel.join("data.txt").to_string_lossy().into_owned();
    afl::fuzz!(|bytes: &[u8]| {
        bdl_fuzz::put(&data, bytes);
        if let Ok(uci) = UciData::open(bdl_fuzz::root(), Benchmark::Yacht) {
            let _ = uci.load(SplitKind::Standard, 0);
        }
    });
}
