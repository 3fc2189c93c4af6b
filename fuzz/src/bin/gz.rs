//! Gzip-compressed IDX files as MNIST ships them: the input is the compressed stream.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = bdl_data::idx::load_labels(&bdl_fuzz::put("z-labels-idx1-ubyte.gz", data));
        let _ = bdl_data::idx::load_images(&bdl_fuzz::put("z-images-idx3-ubyte.gz", data));
    });
}
