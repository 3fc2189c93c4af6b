//! MATLAB level-5 files (USPS), given decompressed: the input is gzipped (fast) and written
//! where the reader expects the `.mat.gz`.
use std::io::Write;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).expect("in memory");
        let path = bdl_data::blr::usps_path(bdl_fuzz::root());
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        std::fs::write(&path, gz.finish().expect("in memory")).expect("a scratch file");
        let _ = bdl_data::blr::load(bdl_fuzz::root(), bdl_data::blr::BlrSet::Usps3v5);
    });
}
