//! From a [`SubsetRule`] to the flat parameter indices it chooses on a problem.

use bdl_inference::Validate;
use bdl_laplace::selection;
use bdl_models::Model as _;

use crate::error::{Lift, Result};
use crate::{Problem, SubsetRule, VariancesFrom};

impl SubsetRule {
    /// The indices the rule chooses on `problem` (ascending), or `None` for every parameter.
    /// `method` names the fit that asks, for its errors.
    ///
    /// ```
    /// use bdl_likelihoods::Likelihood;
    /// use bdl_methods::{Problem, SubsetRule};
    /// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
    /// use bdl_tensor::Seed;
    /// use candle_core::{DType, Device, Tensor};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 4, 1], Activation::Tanh))?);
    /// let theta = net.init(Seed(0), DType::F32, &Device::Cpu)?;
    /// let x = Tensor::zeros((3, 1), DType::F32, &Device::Cpu)?;
    /// let problem = Problem::new(&net, &theta, Likelihood::Gaussian { sigma: 1.0 }, &x, &x);
    /// // The last layer's weights: 4 of the 13 parameters (0.weight 4, 0.bias 4, 2.weight 4, 2.bias 1).
    /// let last = SubsetRule::LastLayer { candidates: Default::default() };
    /// assert_eq!(last.choose(&problem, "doc")?.unwrap(), [8, 9, 10, 11]);
    /// assert_eq!(SubsetRule::All.choose(&problem, "doc")?, None);
    /// // Every weight: the two weight matrices, without 0.bias (4..8) and 2.bias (12).
    /// let weights = SubsetRule::Weights.choose(&problem, "doc")?.unwrap();
    /// assert_eq!(weights, [0, 1, 2, 3, 8, 9, 10, 11]);
    /// # Ok(()) }
    /// ```
    pub fn choose(
        &self,
        problem: &Problem<'_>,
        method: &'static str,
    ) -> Result<Option<Vec<usize>>> {
        let layout = problem.network.layout();
        let chosen = match self {
            Self::All => return Ok(None),
            Self::Weights => (layout.weights_mask().into_iter().enumerate())
                .filter_map(|(i, weight)| weight.then_some(i))
                .collect(),
            Self::Indices { indices } => indices.clone(),
            Self::LastLayer { candidates } => selection::last_layer(layout, *candidates).indices,
            Self::Random {
                size,
                candidates,
                seed,
            } => {
                selection::random(layout, *candidates, *size, *seed)
                    .lift(method)?
                    .indices
            }
            Self::Magnitude { size, candidates } => {
                let theta = bdl_tensor::to_f64_vec(problem.theta).lift(method)?;
                selection::magnitude(&theta, layout, *candidates, *size)
                    .lift(method)?
                    .indices
            }
            Self::Wasserstein {
                size,
                candidates,
                variances,
            } => match variances {
                VariancesFrom::DiagonalLaplace { prior_precision } => {
                    let h = bdl_laplace::ggn_diagonal(
                        problem.network,
                        problem.theta,
                        &problem.likelihood,
                        problem.x,
                        GGN_BATCH,
                    )
                    .lift(method)?;
                    let prior = vec![*prior_precision; h.len()];
                    let v = selection::diagonal_variances(&h, &prior);
                    selection::wasserstein(&v, layout, *candidates, *size, 1.0 / prior_precision)
                        .lift(method)?
                        .indices
                }
                VariancesFrom::Swag(config) => {
                    let kept = problem.shared.and_then(|s| s.swag_variances(config));
                    let v = match kept {
                        Some(v) => v,
                        None => swag_variances(problem, config, method)?,
                    };
                    selection::largest(&v, layout, *candidates, *size, None)
                        .lift(method)?
                        .indices
                }
            },
        };
        Ok(Some(chosen))
    }
}

/// The diagonal variances of SWAG of `config` from the problem's θ, kept in the problem's
/// [`SharedFits`](crate::SharedFits) when it has one.
fn swag_variances(
    problem: &Problem<'_>,
    config: &bdl_baselines::SwagConfig,
    method: &'static str,
) -> Result<Vec<f64>> {
    let checked = config.clone().check().lift(method)?;
    let (x, y) = (problem.x, problem.y);
    let (net, theta, lik) = (problem.network, problem.theta, problem.likelihood);
    let swag = bdl_baselines::train_swag(net, theta, lik, x, y, &checked)
        .lift(method)?
        .posterior;
    let v = swag.swag().variances();
    if let Some(shared) = problem.shared {
        shared.keep_swag(config, v.clone());
    }
    Ok(v)
}

/// Rows per minibatch of a GGN diagonal computed for selection.
const GGN_BATCH: usize = 256;
