//! Stochastic-gradient MCMC over the flat parameter vector of any model: SGLD (Welling & Teh
//! 2011), SGHMC (Chen et al. 2014), each with a constant or a cyclical step size (Zhang et al.
//! 2020).
//!
//! The target is p(θ | D)^{1/T} with U(θ) = −Σ_n log p(y_n | f(x_n; θ)) + (λ/2)‖θ‖², estimated on
//! a minibatch B of M examples as Ũ(θ) = −(N/M) Σ_{n∈B} log p(y_n | f(x_n; θ)) + (λ/2)‖θ‖²:
//!
//! - SGLD: θ ← θ − ε ∇Ũ(θ) + √(2εT) ξ, ξ ~ N(0, I);
//! - SGHMC (the momentum form of Chen et al., eq. 15, with no noise estimate):
//!   v ← (1 − α) v − ε ∇Ũ(θ) + √(2αεT) ξ, θ ← θ + v, friction α ∈ (0, 1];
//! - cyclical: over each of `cycles` equal cycles of the run the step size follows
//!   ε_k = (ε₀/2)(cos(π r_k) + 1), r_k ∈ [0, 1) the position in the cycle; the first
//!   `exploration` of every cycle moves without noise (an optimiser's steps) and keeps no draw.
//!
//! With a `subset`, only those coordinates move; the others stay at θ₀ (subnetwork inference).
//! With a `blocking`, each step updates the blocks in turn, each after a gradient at the state the
//! blocks before it left, on the step's minibatch (SGLD-within-Gibbs: a Langevin step on each
//! block's conditional).

use bdl_inference::{
    InvalidParam, MinibatchLoop, Valid, Validate, at_least_one, non_negative, positive, require,
    unit_interval,
};
use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network};
use bdl_tensor::Seed;
use candle_core::Tensor;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::{Blocking, ChainWindow, Result};

/// The dynamics of a stochastic-gradient sampler.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Dynamics {
    /// Stochastic-gradient Langevin dynamics.
    Sgld,
    /// Stochastic-gradient Hamiltonian Monte Carlo with friction α.
    Sghmc {
        /// α ∈ (0, 1]: the fraction of the velocity lost per step (1 − momentum).
        friction: f64,
    },
}

impl Dynamics {
    /// The sampler's name ("SGLD", "SGHMC").
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sgld => "SGLD",
            Self::Sghmc { .. } => "SGHMC",
        }
    }

    /// One coordinate's update at step size ε and temperature T, with ξ ~ N(0, 1) (0 when not
    /// sampling) and g the minibatch gradient of −log p(θ | D):
    /// SGLD θ ← θ − ε g + √(2εT) ξ; SGHMC v ← (1 − α) v − ε g + √(2αεT) ξ, θ ← θ + v.
    fn step(&self, theta: &mut f64, velocity: &mut f64, grad: f64, eps: f64, t: f64, xi: f64) {
        match *self {
            Self::Sgld => *theta += -eps * grad + (2.0 * eps * t).sqrt() * xi,
            Self::Sghmc { friction } => {
                *velocity = (1.0 - friction) * *velocity - eps * grad
                    + (2.0 * friction * eps * t).sqrt() * xi;
                *theta += *velocity;
            }
        }
    }
}

/// The step size over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Schedule {
    /// ε at every step.
    #[default]
    Constant,
    /// Cosine cycles (cSG-MCMC): `cycles` equal cycles, the first `exploration` of each without
    /// noise and without draws.
    Cyclical {
        /// M ≥ 1.
        cycles: usize,
        /// β ∈ [0, 1): the exploration fraction of a cycle.
        exploration: f64,
    },
}

/// How to run a stochastic-gradient sampler.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_mcmc::{Dynamics, SgmcmcConfig};
/// let config: SgmcmcConfig = serde_json::from_str(
///     r#"{"dynamics": {"kind": "sghmc", "friction": 0.1}, "step_size": 1e-4,
///         "prior_precision": 1.0, "epochs": 10, "batch_size": 32}"#,
/// ).unwrap();
/// assert_eq!(config.dynamics, Dynamics::Sghmc { friction: 0.1 });
/// assert_eq!((config.temperature, config.keep_every), (1.0, 1));
/// let bad = SgmcmcConfig { step_size: 0.0, ..config };
/// assert_eq!(bad.check().unwrap_err().param, "step_size");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SgmcmcConfig {
    /// SGLD or SGHMC.
    pub dynamics: Dynamics,
    /// ε (the largest, for a cyclical schedule).
    pub step_size: f64,
    /// Constant or cyclical.
    #[serde(default)]
    pub schedule: Schedule,
    /// λ of the prior N(0, λ⁻¹ I).
    pub prior_precision: f64,
    /// T: 1 samples the posterior, below 1 a tempered (cold) one.
    #[serde(default = "one")]
    pub temperature: f64,
    /// Passes over the data.
    pub epochs: usize,
    /// M, examples per step.
    pub batch_size: usize,
    /// Steps before the first kept draw.
    #[serde(default)]
    pub burn_in: u64,
    /// Keep every this many steps' θ after the burn-in (and, cyclical, in a sampling stage).
    #[serde(default = "one_step")]
    pub keep_every: u64,
    /// Only these flat indices move; `None`: every parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<Vec<usize>>,
    /// Within Gibbs: each step updates these blocks in turn (of the subset, if one is given),
    /// a gradient for each; `None`: every moving coordinate at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<Blocking>,
    /// The root of the minibatch orders and the noise.
    #[serde(default = "seed_zero")]
    pub seed: Seed,
}

fn one() -> f64 {
    1.0
}

fn one_step() -> u64 {
    1
}

fn seed_zero() -> Seed {
    Seed(0)
}

impl Validate for SgmcmcConfig {
    /// A positive step size, temperature and prior precision; a friction in (0, 1]; at least
    /// one epoch, example per batch, cycle and kept step; an exploration fraction in [0, 1).
    fn validate(&self) -> Result<(), InvalidParam> {
        positive("step_size", self.step_size)?;
        positive("temperature", self.temperature)?;
        non_negative("prior_precision", self.prior_precision)?;
        if let Dynamics::Sghmc { friction } = self.dynamics {
            require(
                friction > 0.0 && friction <= 1.0,
                "friction",
                friction,
                "in (0, 1]",
            )?;
        }
        if let Schedule::Cyclical {
            cycles,
            exploration,
        } = self.schedule
        {
            at_least_one("cycles", cycles)?;
            unit_interval("exploration", exploration)?;
        }
        at_least_one("epochs", self.epochs)?;
        at_least_one("batch_size", self.batch_size)?;
        at_least_one("keep_every", self.keep_every as usize)
    }
}

impl Schedule {
    /// The step size at step k (from 0) of `total`, and whether that step samples (adds noise
    /// and may keep its draw).
    fn at(&self, step_size: f64, k: u64, total: u64) -> (f64, bool) {
        match *self {
            Self::Constant => (step_size, true),
            Self::Cyclical {
                cycles,
                exploration,
            } => {
                let length = total.div_ceil(cycles as u64).max(1);
                let r = (k % length) as f64 / length as f64;
                let eps = step_size / 2.0 * ((std::f64::consts::PI * r).cos() + 1.0);
                (eps, r >= exploration)
            }
        }
    }
}

/// What a stochastic-gradient run gives: the kept draws as a posterior (named by the dynamics)
/// and the steps taken.
#[derive(Clone, Debug)]
pub struct SgmcmcFit {
    /// The kept draws; its predictive averages over all of them.
    pub posterior: ChainWindow,
    /// Steps taken (epochs × minibatches per epoch).
    pub steps: u64,
}

/// The coordinates each update of a step moves: the subset (or every parameter) at once, or
/// block by block within Gibbs, each block after a gradient at the state the blocks before it
/// left.
fn update_groups(network: &Network, config: &SgmcmcConfig, d: usize) -> Result<Vec<Vec<usize>>> {
    let moving: Vec<usize> = match &config.subset {
        Some(subset) => {
            bdl_models::check_param_indices(subset, d)?;
            subset.clone()
        }
        None => (0..d).collect(),
    };
    let Some(blocking) = &config.blocking else {
        return Ok(vec![moving]);
    };
    let blocking = match &config.subset {
        Some(subset) => Blocking::Subnetwork {
            subset: subset.clone(),
            within: Box::new(blocking.clone()),
        },
        None => blocking.clone(),
    };
    Ok(blocking
        .blocks(network.layout())?
        .into_iter()
        .map(|b| b.indices)
        .collect())
}

/// Runs the sampler of `config` on `network` from `theta0` (its dtype is the compute dtype) for
/// the data (x, y) under `likelihood`.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_likelihoods::Likelihood;
/// use bdl_mcmc::{Dynamics, SgmcmcConfig, sample_sgmcmc};
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh))?);
/// let x = Tensor::arange(0u32, 32, &Device::Cpu)?.to_dtype(DType::F64)?.affine(0.0625, -1.0)?.unsqueeze(1)?;
/// let y = (x.clone() * 3.0)?.sin()?;
/// let theta0 = net.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let config = SgmcmcConfig {
///     dynamics: Dynamics::Sgld, step_size: 1e-4, schedule: Default::default(),
///     prior_precision: 1.0, temperature: 1.0, epochs: 50, batch_size: 8,
///     burn_in: 100, keep_every: 5, subset: None, blocking: None, seed: Seed(1),
/// }.check()?;
/// let fit = sample_sgmcmc(&net, &theta0, Likelihood::Gaussian { sigma: 0.1 }, &x, &y, &config)?;
/// assert_eq!(fit.steps, 200);
/// assert_eq!(fit.posterior.draws().dims(), &[20, net.layout().len()]);
/// # Ok(()) }
/// ```
pub fn sample_sgmcmc(
    network: &Network,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<SgmcmcConfig>,
) -> Result<SgmcmcFit> {
    likelihood.check().map_err(bdl_inference::Error::from)?;
    network.layout().check_flat(theta0)?;
    let data = MinibatchLoop::new(x, y, config.batch_size, config.seed)?;
    let n = data.len() as f64;
    let (dtype, device) = (theta0.dtype(), theta0.device().clone());
    let mut theta = bdl_tensor::to_f64_vec(theta0)?;
    let d = theta.len();
    let groups = update_groups(network, config, d)?;
    let mut velocity = vec![0.0; d];
    let mut noise = config.seed.fork("noise").rng();
    let total = config.epochs as u64 * data.batches_per_epoch() as u64;
    let (mut k, mut draws, mut kept) = (0u64, Vec::new(), Vec::new());
    for epoch in 0..config.epochs {
        let mut step_in_epoch = 0;
        data.epoch(epoch, |xb, yb| {
            let m = xb.dims()[0] as f64;
            let (eps, sampling) = config.schedule.at(config.step_size, k, total);
            let t = config.temperature;
            for group in &groups {
                let at = Tensor::from_slice(&theta, d, &device)?.to_dtype(dtype)?;
                // A non-finite output at finite parameters (the data are finite): θ overflowed
                // the network's dtype, a divergence.
                let output_gradient = |f: &Tensor| -> bdl_inference::Result<Tensor> {
                    match likelihood.grad_f(f, yb) {
                        Ok(r) => Ok(r.to_dtype(dtype)?),
                        Err(bdl_likelihoods::Error::NonFinite { arg, .. }) if arg == "f" => {
                            Err(bdl_inference::Error::NonFiniteStep {
                                epoch,
                                step: step_in_epoch,
                            })
                        }
                        Err(e) => Err(e.into()),
                    }
                };
                let g = network
                    .loss_gradient(&at, xb, None, output_gradient, false)?
                    .sum;
                for &i in group {
                    let grad = n / m * g[i] + config.prior_precision * theta[i];
                    let xi: f64 = if sampling {
                        StandardNormal.sample(&mut noise)
                    } else {
                        0.0
                    };
                    config
                        .dynamics
                        .step(&mut theta[i], &mut velocity[i], grad, eps, t, xi);
                }
            }
            if theta.iter().any(|v| !v.is_finite()) {
                return Err(bdl_inference::Error::NonFiniteStep {
                    epoch,
                    step: step_in_epoch,
                });
            }
            if sampling
                && k >= config.burn_in
                && (k - config.burn_in).is_multiple_of(config.keep_every)
            {
                draws.extend_from_slice(&theta);
                kept.push(k);
            }
            k += 1;
            step_in_epoch += 1;
            Ok(std::ops::ControlFlow::Continue(()))
        })?;
    }
    let s = kept.len();
    at_least_one("kept draws (lower burn_in or keep_every)", s)?;
    let draws = Tensor::from_vec(draws, (s, d), &device)?.to_dtype(dtype)?;
    let name = match config.blocking {
        None => config.dynamics.name().to_owned(),
        Some(_) => format!("{}-within-Gibbs", config.dynamics.name()),
    };
    let window = ChainWindow::new(network.clone(), likelihood, draws, kept)?
        .with_seed(config.seed)
        .by(name);
    Ok(SgmcmcFit {
        posterior: window,
        steps: k,
    })
}
