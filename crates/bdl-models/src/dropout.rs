//! Inverted dropout masks from a seeded stream.

use candle_core::{DType, Device, Shape, Tensor};

use bdl_tensor::ChaCha8Rng;

use crate::Result;

/// The scaled mask m / (1 − p), m_i ~ Bernoulli(1 − p) independently, of the given shape:
/// h ∘ m / (1 − p) drops each unit with probability p and keeps E[h ∘ m / (1 − p)] = h.
pub(crate) fn inverted_mask(
    rng: &mut ChaCha8Rng,
    shape: impl Into<Shape>,
    p: f64,
    (dtype, device): (DType, &Device),
) -> Result<Tensor> {
    let keep = 1.0 - p;
    let m = bdl_tensor::bernoulli(rng, shape, keep, dtype, device)?;
    Ok(m.affine(keep.recip(), 0.0)?)
}
