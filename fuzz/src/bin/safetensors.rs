//! Checkpoints: safetensors files with the sidecar embedded in their header.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        let path = bdl_fuzz::put("c.safetensors", data);
        let _ = bdl_tensor::load_safetensors(&path, &candle_core::Device::Cpu);
        let _ = bdl_tensor::read_sidecar::<serde_json::Value>(&path);
    });
}
