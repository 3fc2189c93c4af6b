//! The isotropic or per-parameter Gaussian prior N(0, diag(λ)⁻¹).

use bdl_inference::{InvalidParam, Validate};
use bdl_tensor::ParamLayout;
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
    /// The precisions of the parameters `subset` of the model laid out by `layout`, scaled by
    /// `scaling` (see [`SubsetScaling`]). The precisions themselves are checked by [`Validate`].
    pub fn for_subset(
        &self,
        subset: &[usize],
        layout: &ParamLayout,
        scaling: SubsetScaling,
    ) -> Result<Vec<f64>> {
        let d = layout.len();
        let scale = match scaling {
            SubsetScaling::None => 1.0,
            SubsetScaling::AllParameters => subset.len() as f64 / d as f64,
            SubsetScaling::Weights => {
                let weights = layout.weights_mask().iter().filter(|&&w| w).count();
                subset.len() as f64 / weights.max(1) as f64
            }
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

/// The prior precision of a subnetwork: λ_S = λ·S/D, the rule of Daxberger et al. (2021), which
/// restores the prior function variance lost by fixing the D − S other parameters at the MAP.
/// D counts the parameters S was chosen from.
///
/// ```
/// use bdl_laplace::{PriorPrecision, SubsetScaling};
/// use bdl_tensor::ParamLayout;
/// // 6 weights and 2 biases; a subnetwork of 3 weights.
/// let layout = ParamLayout::new([("fc.weight", vec![2, 3]), ("fc.bias", vec![2])]);
/// let prior = PriorPrecision::Scalar(4.0);
/// let of = |scaling| prior.for_subset(&[0, 1, 2], &layout, scaling).unwrap()[0];
/// assert_eq!(of(SubsetScaling::None), 4.0);
/// assert_eq!(of(SubsetScaling::AllParameters), 4.0 * 3.0 / 8.0);
/// assert_eq!(of(SubsetScaling::Weights), 4.0 * 3.0 / 6.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubsetScaling {
    /// λ as given.
    #[default]
    None,
    /// D = every parameter of the model.
    AllParameters,
    /// D = the model's weights, biases excluded: the paper's rule, whose subnetworks are chosen
    /// among weights only.
    Weights,
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
