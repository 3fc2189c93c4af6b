//! The minibatch loop shared by every method.

use bdl_likelihoods::Likelihood;
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::{Device, Tensor};
use rand::seq::SliceRandom;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::method::{Curvature, State, Stats};
use crate::{DiagGaussian, Error, Method, Result};

/// How to fit a variational posterior.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariationalConfig {
    /// The method and its hyper-parameters.
    pub method: Method,
    /// The prior precision λ of N(0, λ⁻¹ I).
    pub prior_precision: f64,
    /// The initial precision N s₁ + λ of every weight (λ when `None`: σ₁ is the prior's).
    pub init_precision: Option<f64>,
    /// Passes over the data.
    pub epochs: usize,
    /// Examples per minibatch M.
    pub batch_size: usize,
    /// Weight samples per step (ĝ and ĝ∘ĝ are averaged over them separately).
    pub mc_samples: usize,
    /// Step-size decay α_t = α / (1 + t^κ) with this κ (the paper's logistic regression runs
    /// use 0.55); constant when `None`.
    pub lr_decay: Option<f64>,
    /// The seed of the minibatch orders and the weight perturbations.
    pub seed: Seed,
}

impl VariationalConfig {
    /// A configuration with one sample per step, no decay, σ₁ the prior's.
    pub fn new(method: Method, prior_precision: f64, epochs: usize, batch_size: usize) -> Self {
        Self {
            method,
            prior_precision,
            init_precision: None,
            epochs,
            batch_size,
            mc_samples: 1,
            lr_decay: None,
            seed: Seed(0),
        }
    }

    /// Checks the method and the loop settings.
    pub fn check(&self) -> Result<()> {
        self.method.check()?;
        let p0_ok = self.init_precision.is_none_or(|p| p > 0.0 && p.is_finite());
        if self.prior_precision > 0.0
            && self.prior_precision.is_finite()
            && p0_ok
            && self.epochs > 0
            && self.batch_size > 0
            && self.mc_samples > 0
            && self.lr_decay.is_none_or(|k| k >= 0.0)
        {
            Ok(())
        } else {
            Err(Error::InvalidConfig(format!(
                "need prior_precision > 0, init_precision > 0, epochs, batch_size and \
                 mc_samples >= 1, lr_decay >= 0; got {self:?}"
            )))
        }
    }
}

/// A fitted variational posterior.
#[derive(Clone, Debug)]
pub struct VariationalFit {
    /// q(θ) = N(μ, diag σ²).
    pub posterior: DiagGaussian,
    /// The mean negative log-likelihood (1/N) Σ_n −log p(y_n | f(x_n; μ)) after each epoch.
    pub nll: Vec<f64>,
}

/// Fits q(θ) to the data (x, y) under `likelihood`, starting from the mean `mu0` (its dtype is
/// the compute dtype of the network).
///
/// ```
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec};
/// use bdl_tensor::Seed;
/// use bdl_variational::{Method, VariationalConfig, fit};
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let model = Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity))?;
/// let x = Tensor::new(&[[-1.0f64], [0.0], [1.0], [2.0]], &Device::Cpu)?;
/// let y = Tensor::new(&[[-1.9f64], [0.1], [2.1], [3.9]], &Device::Cpu)?;
/// let config = VariationalConfig::new(Method::vadam(0.05), 1.0, 300, 4);
/// let mu0 = Tensor::zeros(2, DType::F64, &Device::Cpu)?;
/// let q = fit(&model, &mu0, Likelihood::Gaussian { sigma: 0.5 }, &x, &y, &config)?;
/// assert!((q.posterior.mean[0] - 2.0).abs() < 0.3); // the slope
/// # Ok(()) }
/// ```
pub fn fit(
    model: &impl Model,
    mu0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &VariationalConfig,
) -> Result<VariationalFit> {
    fit_monitored(model, mu0, likelihood, x, y, config, |_, _| ())
}

/// [`fit`], calling `on_epoch(epoch, q)` after every epoch (from 0) with the posterior q reached
/// so far (e.g. to record a test metric against epochs); the last call sees the returned
/// posterior. The callback does not touch the random streams: the fit is the same with any
/// callback.
pub fn fit_monitored(
    model: &impl Model,
    mu0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &VariationalConfig,
    mut on_epoch: impl FnMut(usize, &DiagGaussian),
) -> Result<VariationalFit> {
    config.check()?;
    likelihood.check()?;
    model.layout().check_flat(mu0)?;
    let (n, targets) = (x.dims()[0], y.dims().first().copied().unwrap_or(0));
    if n == 0 || n != targets {
        return Err(Error::Data { inputs: n, targets });
    }
    let (dtype, device) = (mu0.dtype(), mu0.device());
    let lambda = config.prior_precision;
    let p0 = config.init_precision.unwrap_or(lambda);
    let mut state = State::new(
        config.method.clone(),
        bdl_tensor::to_f64_vec(mu0)?,
        n,
        lambda,
        p0,
    );
    let curvature = config.method.curvature();
    let d = state.mu.len();
    let mut order: Vec<usize> = (0..n).collect();
    let mut shuffle = config.seed.fork("minibatches").rng();
    let mut noise = config.seed.fork("perturbation").rng();
    let mut nll = Vec::with_capacity(config.epochs);
    let mut step = 0usize;
    for epoch in 0..config.epochs {
        order.shuffle(&mut shuffle);
        for chunk in order.chunks(config.batch_size) {
            let idx: Vec<u32> = chunk.iter().map(|&i| i as u32).collect();
            let idx = Tensor::from_vec(idx, chunk.len(), &Device::Cpu)?.to_device(device)?;
            let (xb, yb) = (x.index_select(&idx, 0)?, y.index_select(&idx, 0)?);
            let scale = (chunk.len() * config.mc_samples) as f64;
            let mut stats = Stats {
                g: vec![0.0; d],
                g_sq: vec![0.0; d],
                g_eps: vec![0.0; d],
                h: if curvature == Curvature::None {
                    Vec::new()
                } else {
                    vec![0.0; d]
                },
            };
            for _ in 0..config.mc_samples {
                let sigma = state.sigma();
                let eps: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut noise)).collect();
                let theta: Vec<f64> = (0..d).map(|i| state.mu[i] + sigma[i] * eps[i]).collect();
                let theta = Tensor::from_vec(theta, d, device)?.to_dtype(dtype)?;
                let cache = model.forward_cached(&theta, &xb)?;
                let r = likelihood.grad_f(&cache.output, &yb)?.to_dtype(dtype)?;
                let g = bdl_tensor::to_f64_vec(&model.backward(&theta, &cache, &r)?)?;
                let h = match curvature {
                    Curvature::None => Vec::new(),
                    Curvature::SumSqGrads => {
                        bdl_tensor::to_f64_vec(&model.sum_sq_grads(&theta, &cache, &r)?)?
                    }
                    Curvature::GgnDiagonal => {
                        let factor = likelihood.hess_factor(&cache.output)?;
                        bdl_tensor::to_f64_vec(&model.ggn_diagonal(&theta, &cache, &factor)?)?
                    }
                };
                // g is a sum over the minibatch: the mean is g / M, averaged over samples.
                let m = chunk.len() as f64;
                for i in 0..d {
                    let gi = g[i] / m;
                    stats.g[i] += gi / config.mc_samples as f64;
                    stats.g_sq[i] += gi * gi / config.mc_samples as f64;
                    stats.g_eps[i] += gi * eps[i] / config.mc_samples as f64;
                }
                for (acc, v) in stats.h.iter_mut().zip(&h) {
                    *acc += v / scale;
                }
            }
            step += 1;
            let lr_scale = config
                .lr_decay
                .map_or(1.0, |k| 1.0 / (1.0 + (step as f64).powf(k)));
            state.update(&stats, lr_scale)?;
        }
        let mu = Tensor::from_vec(state.mu.clone(), d, device)?.to_dtype(dtype)?;
        let ll = bdl_tensor::to_f64_vec(&likelihood.log_lik(&model.forward(&mu, x)?, y)?)?;
        nll.push(-ll.iter().sum::<f64>() / n as f64);
        on_epoch(epoch, &state.posterior());
    }
    Ok(VariationalFit {
        posterior: state.posterior(),
        nll,
    })
}
