//! The isotropic or per-parameter Gaussian prior N(0, diag(λ)⁻¹).

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The prior precision over all D parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PriorPrecision {
    /// λ for every parameter.
    Scalar(f64),
    /// λ_d for each parameter d (length D).
    PerParameter(Vec<f64>),
}

impl PriorPrecision {
    /// The precisions of the parameters `subset` of a D-parameter model. With `scale_to_subset`,
    /// each is multiplied by |S|/D: the rule λ_S = λ·S/D of Daxberger et al. (2021), which
    /// restores the prior function variance lost by fixing D − S weights at the MAP.
    pub fn for_subset(
        &self,
        subset: &[usize],
        d: usize,
        scale_to_subset: bool,
    ) -> Result<Vec<f64>> {
        let scale = if scale_to_subset {
            subset.len() as f64 / d as f64
        } else {
            1.0
        };
        let lambda: Vec<f64> = match self {
            Self::Scalar(l) => vec![*l; subset.len()],
            Self::PerParameter(v) => {
                if v.len() != d {
                    return Err(Error::InvalidArgument(format!(
                        "a per-parameter prior precision needs {d} entries, got {}",
                        v.len()
                    )));
                }
                subset.iter().map(|&i| v[i]).collect()
            }
        };
        if let Some(bad) = lambda.iter().find(|l| !(l.is_finite() && **l >= 0.0)) {
            return Err(Error::InvalidArgument(format!(
                "prior precisions must be finite and non-negative, got {bad}"
            )));
        }
        Ok(lambda.into_iter().map(|l| l * scale).collect())
    }
}
