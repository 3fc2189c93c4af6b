//! The isotropic or per-parameter Gaussian prior N(0, diag(λ)⁻¹).

use bdl_inference::{InvalidParam, Validate};
use serde::{Deserialize, Serialize};

use crate::Result;

/// The prior precision over all D parameters, serialised as `{"scalar": 3.0}` or
/// `{"per_parameter": [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorPrecision {
    /// λ for every parameter.
    Scalar(f64),
    /// λ_d for each parameter d (length D).
    PerParameter(Vec<f64>),
}

impl PriorPrecision {
    /// The precisions of the parameters `subset` of a D-parameter model. With `scale_to_subset`,
    /// each is multiplied by |S|/D: the rule λ_S = λ·S/D of Daxberger et al. (2021), which
    /// restores the prior function variance lost by fixing D − S weights at the MAP. The
    /// precisions themselves are checked by [`Validate`].
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
                bdl_inference::require(
                    v.len() == d,
                    "prior",
                    format!("{} per-parameter precisions", v.len()),
                    &format!("one per parameter of the model ({d})"),
                )?;
                subset.iter().map(|&i| v[i]).collect()
            }
        };
        Ok(lambda.into_iter().map(|l| l * scale).collect())
    }
}

impl Validate for PriorPrecision {
    /// Every precision finite and ≥ 0.
    fn validate(&self) -> Result<(), InvalidParam> {
        let values: &[f64] = match self {
            Self::Scalar(l) => std::slice::from_ref(l),
            Self::PerParameter(v) => v,
        };
        match values.iter().position(|l| !(l.is_finite() && *l >= 0.0)) {
            None => Ok(()),
            Some(i) => Err(InvalidParam::new(
                "prior",
                format!("{} (entry {i})", values[i]),
                "finite and >= 0 everywhere",
            )),
        }
    }
}
