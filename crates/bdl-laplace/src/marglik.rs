//! Online marginal-likelihood training (the `marglik_training` protocol of laplace-torch, after
//! Immer et al. 2021): MAP steps and prior steps in turn, so that λ (and a Gaussian's σ) follow
//! the Laplace evidence during training instead of being tuned once afterwards.
//!
//! Round r trains the MAP for `map.epochs` epochs from the last round's θ under λ_r (σ_r), then
//! maximises the Laplace log evidence of the full-network GGN Laplace at that θ over (λ, σ)
//! ([`Evidence::maximize`]) for the next round. Each round restarts the optimiser's moments
//! (laplace-torch keeps them); the result is the last round's MAP and its Laplace posterior at
//! the last (λ, σ).

use bdl_inference::{
    InvalidParam, MapConfig, MapEstimate, Valid, Validate, at_least_one, train_map,
};
use bdl_likelihoods::Likelihood;
use bdl_models::{Model as _, Network};
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::{Evidence, Result, SubnetLaplace};

/// How to train with the marginal likelihood online.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MarglikConfig {
    /// Each round's MAP training (`epochs` per round; `prior_precision` the first λ; σ is not
    /// learned by the MAP here but by the evidence).
    pub map: MapConfig,
    /// Rounds of MAP training and prior steps.
    pub rounds: usize,
    /// Rows per minibatch of the GGN.
    #[serde(default = "rows")]
    pub ggn_batch_size: usize,
}

fn rows() -> usize {
    256
}

impl Validate for MarglikConfig {
    /// A valid MAP configuration without σ learning, at least one round and GGN row.
    fn validate(&self) -> Result<(), InvalidParam> {
        self.map.validate().map_err(|e| e.within("map"))?;
        bdl_inference::require(
            !self.map.learn_sigma,
            "map.learn_sigma",
            true,
            "false (σ follows the evidence)",
        )?;
        at_least_one("rounds", self.rounds)?;
        at_least_one("ggn_batch_size", self.ggn_batch_size)
    }
}

/// What online training gives.
#[derive(Debug)]
pub struct MarglikFit {
    /// The last round's MAP, with the last σ.
    pub map: MapEstimate,
    /// λ of every round, the first given and then each round's choice (rounds + 1 values).
    pub lambdas: Vec<f64>,
    /// σ likewise (a classification likelihood's placeholder 1 throughout).
    pub sigmas: Vec<f64>,
    /// The log evidence after every round, at its MAP and the chosen (λ, σ).
    pub log_evidence: Vec<f64>,
    /// The full-network Laplace at the last MAP and (λ, σ).
    pub posterior: SubnetLaplace,
}

/// Trains `network` from `theta0` on (x, y) under `likelihood` (its σ the first) with λ and σ
/// following the marginal likelihood.
///
/// ```
/// use bdl_inference::{MapConfig, Validate};
/// use bdl_laplace::{MarglikConfig, marglik_training};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh))?);
/// let x = Tensor::arange(0u32, 40, &Device::Cpu)?.to_dtype(DType::F64)?.affine(0.05, -1.0)?.unsqueeze(1)?;
/// let y = (x.clone() * 3.0)?.sin()?;
/// let theta0 = net.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let map = MapConfig { learning_rate: 1e-2, epochs: 50, batch_size: 40, prior_precision: 1.0, ..MapConfig::default() };
/// let config = MarglikConfig { map, rounds: 3, ggn_batch_size: 256 }.check()?;
/// let fit = marglik_training(&net, &theta0, Likelihood::Gaussian { sigma: 1.0 }, &x, &y, &config)?;
/// assert_eq!((fit.lambdas.len(), fit.log_evidence.len()), (4, 3));
/// assert!(fit.sigmas[3] < 0.5); // σ moved from 1 towards the residuals
/// # Ok(()) }
/// ```
pub fn marglik_training(
    network: &Network,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<MarglikConfig>,
) -> Result<MarglikFit> {
    let sigma_of = |l: Likelihood| match l {
        Likelihood::Gaussian { sigma } => sigma,
        _ => 1.0,
    };
    let with_sigma = |sigma: f64| match likelihood {
        Likelihood::Gaussian { .. } => Likelihood::Gaussian { sigma },
        other => other,
    };
    let all: Vec<usize> = (0..network.layout().len()).collect();
    let (mut lambdas, mut sigmas) = (vec![config.map.prior_precision], vec![sigma_of(likelihood)]);
    let mut theta = theta0.clone();
    let mut log_evidence = Vec::with_capacity(config.rounds);
    let mut last = None;
    for round in 0..config.rounds {
        let (lambda, sigma) = (lambdas[round], sigmas[round]);
        let map_config = MapConfig {
            prior_precision: lambda,
            seed: config.map.seed.index(round as u64),
            ..config.map.clone()
        }
        .check()?;
        let map = train_map(network, &theta, with_sigma(sigma), x, y, &map_config)?.estimate;
        let evidence = Evidence::new(&map, x, y, all.clone(), config.ggn_batch_size)?;
        let tuned = evidence.maximize(lambda, sigma)?;
        lambdas.push(tuned.lambda);
        sigmas.push(tuned.sigma);
        log_evidence.push(tuned.log_evidence);
        theta = map.theta().clone();
        last = Some(evidence);
    }
    let evidence = last.expect("at least one round");
    let (lambda, sigma) = (lambdas[config.rounds], sigmas[config.rounds]);
    let posterior = evidence.posterior(lambda, sigma)?;
    let map = MapEstimate::new(network.clone(), theta, with_sigma(sigma))?;
    Ok(MarglikFit {
        map,
        lambdas,
        sigmas,
        log_evidence,
        posterior,
    })
}
