//! Batch normalisation in evaluation mode: a channelwise affine map with fixed statistics.
//!
//! With the running mean μ_c and variance v_c of channel c (fixed: read from a `state_dict`, or
//! μ = 0 and v = 1 for a network built here),
//!
//! x̂ = (z − μ) / √(v + ε),   u = x̂∘γ + β,
//!
//! a [`Channelwise`](crate::Affine::Channelwise) layer on the normalised input x̂, and
//! ∂ℓ/∂z = ∂ℓ/∂u ∘ γ / √(v + ε). PyTorch's `BatchNorm2d` in `eval()` computes the same, with
//! ε = 10⁻⁵.

use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// ε, added to the variance before its square root (PyTorch's default).
pub const EPSILON: f64 = 1e-5;

/// The fixed statistics of one batch normalisation: per channel, the mean μ and the variance v
/// of its input over the training data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchStatistics {
    /// μ, one per channel.
    pub mean: Vec<f64>,
    /// v, one per channel (non-negative).
    pub var: Vec<f64>,
}

impl BatchStatistics {
    /// The statistics of a freshly built network (PyTorch's initial buffers): μ = 0, v = 1.
    pub fn identity(channels: usize) -> Self {
        Self {
            mean: vec![0.0; channels],
            var: vec![1.0; channels],
        }
    }

    /// The number of channels.
    pub fn channels(&self) -> usize {
        self.mean.len()
    }

    /// Checks lengths and values: `channels` finite means and finite non-negative variances.
    pub(crate) fn check(&self, channels: usize, name: &str) -> Result<()> {
        if self.mean.len() != channels || self.var.len() != channels {
            return Err(Error::InvalidConfig(format!(
                "`{name}`: statistics of {} means and {} variances for {channels} channels",
                self.mean.len(),
                self.var.len()
            )));
        }
        let bad_mean = self.mean.iter().position(|m| !m.is_finite());
        let bad_var = self.var.iter().position(|v| !(v.is_finite() && *v >= 0.0));
        if let Some(c) = bad_mean.or(bad_var) {
            return Err(Error::InvalidConfig(format!(
                "`{name}`: channel {c} has running mean {} and variance {} (a variance must be \
                 finite and ≥ 0)",
                self.mean[c], self.var[c]
            )));
        }
        Ok(())
    }
}

/// One normalisation's fixed shift μ and scale 1/√(v + ε) as `[C]` tensors of the parameters'
/// dtype and device.
#[derive(Clone, Debug)]
pub(crate) struct Normalisation {
    shift: Tensor,
    scale: Tensor,
}

impl Normalisation {
    pub(crate) fn new(stats: &BatchStatistics, dtype: DType, device: &Device) -> Result<Self> {
        let c = stats.channels();
        let scale: Vec<f64> = stats
            .var
            .iter()
            .map(|v| (v + EPSILON).sqrt().recip())
            .collect();
        Ok(Self {
            shift: Tensor::from_slice(&stats.mean, c, device)?.to_dtype(dtype)?,
            scale: Tensor::from_vec(scale, c, device)?.to_dtype(dtype)?,
        })
    }

    /// x̂ = (z − μ) / √(v + ε) for rows `z` (`[R, C]`).
    pub(crate) fn normalise(&self, z: &Tensor) -> Result<Tensor> {
        Ok(z.broadcast_sub(&self.shift)?.broadcast_mul(&self.scale)?)
    }

    /// ∂ℓ/∂z = ∂ℓ/∂u ∘ γ / √(v + ε) for the gradient `grad_u` (`[R, C]`) of the output.
    pub(crate) fn adjoint(&self, grad_u: &Tensor, gamma: &Tensor) -> Result<Tensor> {
        Ok(grad_u.broadcast_mul(&(gamma * &self.scale)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_statistics_are_config_errors_naming_the_layer() {
        let short = BatchStatistics::identity(2);
        let err = short.check(3, "bn1").unwrap_err().to_string();
        assert!(err.contains("`bn1`") && err.contains("3 channels"), "{err}");
        let negative = BatchStatistics {
            mean: vec![0.0, 0.0],
            var: vec![1.0, -1.0],
        };
        let err = negative.check(2, "bn1").unwrap_err().to_string();
        assert!(err.contains("channel 1"), "{err}");
    }
}
