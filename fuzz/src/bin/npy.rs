//! Two-dimensional `.npy` arrays (the toy regression sets).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        bdl_fuzz::put("toy/dun/agw_1d_data.npy", data);
        let _ = bdl_data::toy::agw_1d(bdl_fuzz::root());
    });
}
