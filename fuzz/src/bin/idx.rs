//! IDX image and label files (MNIST).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        let images = bdl_fuzz::put("x-images-idx3-ubyte", data);
        if let Ok(im) = bdl_data::idx::load_images(&images) {
            let _ = im.image(im.count);
        }
        let _ = bdl_data::idx::load_labels(&bdl_fuzz::put("x-labels-idx1-ubyte", data));
    });
}
