//! Elementwise activations h = φ(z) and their derivatives φ'(z).

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
            Self::Relu => Some(z.gt(0.0)?.to_dtype(z.dtype())?),
            Self::Tanh => Some(h.sqr()?.affine(-1.0, 1.0)?),
            Self::Sigmoid => Some((h * h.affine(-1.0, 1.0)?)?),
        })
    }
}

/// σ(z) = 1 / (1 + e⁻ᶻ), differentiable through candle's autograd.
fn sigmoid(z: &Tensor) -> Result<Tensor> {
    Ok(z.neg()?.exp()?.affine(1.0, 1.0)?.recip()?)
}
