//! Inverted dropout masks from a seeded stream.

use candle_core::{DType, Device, Shape, Tensor};

use bdl_tensor::{ChaCha8Rng, Real};

use crate::Result;

/// The scaled mask m / (1 − p), m_i ~ Bernoulli(1 − p) independently, of the given shape:
/// h ∘ m / (1 − p) drops each unit with probability p and keeps E[h ∘ m / (1 − p)] = h. Its
/// entries are 0 and 1 / (1 − p) rounded to `dtype` (f32 or f64), drawn as
/// [`bdl_tensor::bernoulli`] draws them.
pub(crate) fn inverted_mask(
    rng: &mut ChaCha8Rng,
    shape: impl Into<Shape>,
    p: f64,
    (dtype, device): (DType, &Device),
) -> Result<Tensor> {
    fn scaled<T: Real>(
        rng: &mut ChaCha8Rng,
        shape: Shape,
        keep: f64,
        device: &Device,
    ) -> Result<Tensor> {
        let m =
            bdl_tensor::bernoulli_values(rng, shape.elem_count(), keep, T::from_f64(keep.recip()))?;
        Ok(Tensor::from_vec(m, shape, device)?)
    }
    let (shape, keep) = (shape.into(), 1.0 - p);
    match dtype {
        DType::F32 => scaled::<f32>(rng, shape, keep, device),
        DType::F64 => scaled::<f64>(rng, shape, keep, device),
        other => Err(candle_core::Error::UnsupportedDTypeForOp(other, "dropout").into()),
    }
}

#[cfg(test)]
mod tests {
    use bdl_tensor::Seed;

    use super::*;

    /// The mask is, to the bit, candle's scaling of the 0/1 Bernoulli tensor drawn from the same
    /// stream (how it was made before it was drawn in place), in both dtypes.
    #[test]
    fn the_mask_is_the_scaled_bernoulli_tensor() {
        let device = Device::Cpu;
        for dtype in [DType::F32, DType::F64] {
            for p in [0.05, 0.5, 0.9] {
                let mask =
                    inverted_mask(&mut Seed(2).rng(), (37, 50), p, (dtype, &device)).unwrap();
                let m =
                    bdl_tensor::bernoulli(&mut Seed(2).rng(), (37, 50), 1.0 - p, dtype, &device)
                        .unwrap();
                let reference = m.affine((1.0 - p).recip(), 0.0).unwrap();
                // f32 widens to f64 exactly (the sign of zero included), so equal f64 bits are
                // equal bits in either dtype.
                let bits = |t: &Tensor| -> Vec<u64> {
                    let values = bdl_tensor::to_f64_vec(t).unwrap();
                    values.iter().map(|v| v.to_bits()).collect()
                };
                assert_eq!(bits(&mask), bits(&reference), "{dtype:?}, p = {p}");
            }
        }
        let half = inverted_mask(&mut Seed(2).rng(), 4, 0.5, (DType::F16, &device));
        assert!(half.is_err(), "dropout masks are f32 or f64");
    }
}
