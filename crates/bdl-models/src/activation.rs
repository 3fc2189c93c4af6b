//! Elementwise activations h = φ(z) and their derivatives φ'(z).

use bdl_tensor::Real;
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::Result;

/// An elementwise activation function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// φ(z) = z.
    Identity,
    /// φ(z) = max(z, 0), with φ'(0) = 0 (as PyTorch).
    Relu,
    /// φ(z) = tanh z.
    Tanh,
    /// φ(z) = 1 / (1 + e⁻ᶻ).
    Sigmoid,
}

impl Activation {
    /// h = φ(z).
    pub fn apply(self, z: &Tensor) -> Result<Tensor> {
        Ok(match self {
            Self::Identity => z.clone(),
            Self::Relu => z.relu()?,
            Self::Tanh => z.tanh()?,
            Self::Sigmoid => sigmoid(z)?,
        })
    }

    /// φ'(z), given z and h = φ(z) (whichever is cheaper is used): 1, 𝟙\[z > 0\], 1 − h², h(1 − h).
    pub fn derivative(self, z: &Tensor, h: &Tensor) -> Result<Option<Tensor>> {
        Ok(match self {
            Self::Identity => None,
            // max(sign(z), 0) = 𝟙[z > 0] exactly (0 at z = 0 and for NaN, as a comparison
            // gives), in two vectorised passes: a comparison's u8 mask cast back costs 7× more.
            Self::Relu => Some(z.sign()?.relu()?),
            Self::Tanh => Some(h.sqr()?.affine(-1.0, 1.0)?),
            Self::Sigmoid => Some((h * h.affine(-1.0, 1.0)?)?),
        })
    }

    /// h = φ(z) elementwise on slices of equal length (σ(z) = 1 / (1 + e⁻ᶻ) with the
    /// branch-free [`Real::exp`]), for kernels run under [`bdl_tensor::vectorized`].
    ///
    /// ```
    /// use bdl_models::Activation;
    /// let mut h = [0.0f64; 3];
    /// Activation::Relu.apply_to_slice(&[-1.0, 0.0, 2.5], &mut h);
    /// assert_eq!(h, [0.0, 0.0, 2.5]);
    /// ```
    #[inline(always)]
    pub fn apply_to_slice<T: Real>(self, z: &[T], h: &mut [T]) {
        let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));
        let pairs = h.iter_mut().zip(z);
        match self {
            Self::Identity => h.copy_from_slice(z),
            Self::Relu => pairs.for_each(|(h, &z)| *h = if z > zero { z } else { zero }),
            Self::Tanh => pairs.for_each(|(h, &z)| *h = z.tanh()),
            Self::Sigmoid => pairs.for_each(|(h, &z)| *h = one / (one + (zero - z).exp())),
        }
    }

    /// δ ← δ ∘ φ'(z) elementwise, from z and h = φ(z) as [`derivative`](Self::derivative) reads
    /// them: 1, 𝟙\[z > 0\], 1 − h², h(1 − h).
    ///
    /// ```
    /// use bdl_models::Activation;
    /// let mut delta = [3.0f32, 3.0, 3.0];
    /// let z = [-1.0, 0.0, 2.0];
    /// Activation::Relu.scale_by_derivative(&z, &z, &mut delta);
    /// assert_eq!(delta, [0.0, 0.0, 3.0]);
    /// ```
    #[inline(always)]
    pub fn scale_by_derivative<T: Real>(self, z: &[T], h: &[T], delta: &mut [T]) {
        let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));
        match self {
            Self::Identity => {}
            Self::Relu => delta
                .iter_mut()
                .zip(z)
                .for_each(|(d, &z)| *d = if z > zero { *d } else { zero }),
            Self::Tanh => delta
                .iter_mut()
                .zip(h)
                .for_each(|(d, &h)| *d *= one - h * h),
            Self::Sigmoid => delta
                .iter_mut()
                .zip(h)
                .for_each(|(d, &h)| *d *= h * (one - h)),
        }
    }
}

/// σ(z) = 1 / (1 + e⁻ᶻ), differentiable through candle's autograd.
fn sigmoid(z: &Tensor) -> Result<Tensor> {
    Ok(z.neg()?.exp()?.affine(1.0, 1.0)?.recip()?)
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device, Tensor};

    use super::*;

    /// ReLU's derivative is the comparison z > 0 as 0/1, value for value: at ±0, NaN, the
    /// infinities, the smallest subnormal and ordinary values, in both dtypes.
    #[test]
    fn the_relu_derivative_is_the_indicator_of_a_positive_input() {
        let z = [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            5e-324,
            -5e-324,
            2.5,
            -2.5,
        ];
        for dtype in [DType::F32, DType::F64] {
            let z = Tensor::new(&z, &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let ours = Activation::Relu
                .derivative(&z, &z.relu().unwrap())
                .unwrap()
                .unwrap();
            let indicator = z.gt(0.0).unwrap().to_dtype(dtype).unwrap();
            let bits = |t: &Tensor| -> Vec<u64> {
                let v = t.to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap();
                v.iter().map(|x| x.to_bits()).collect()
            };
            assert_eq!(bits(&ours), bits(&indicator), "{dtype:?}");
        }
    }
}
