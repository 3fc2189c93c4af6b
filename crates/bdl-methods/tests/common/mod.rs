//! Data the tests share.

use candle_core::{DType, Device, Tensor};

/// y = sin(3x) at the `n` points x = −1 + `step`·i, i = 0, …, n − 1, in f32 on the CPU: x
/// `[n, 1]`, y `[n, 1]`.
pub(crate) fn sine(n: u32, step: f64) -> (Tensor, Tensor) {
    let x = Tensor::arange(0u32, n, &Device::Cpu)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .affine(step, -1.0)
        .unwrap()
        .unsqueeze(1)
        .unwrap();
    let y = (x.clone() * 3.0).unwrap().sin().unwrap();
    (x, y)
}
