//! The variational training loop shared by every method, on the workspace's
//! [`MinibatchLoop`].

use std::ops::ControlFlow;

use bdl_inference::{
    InvalidParam, MinibatchLoop, Valid, Validate, at_least_one, positive, require,
};
use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network};
use bdl_tensor::Seed;
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::method::Curvature;
use crate::{Error, MeanField, Method, Online, Result};

/// How to fit a variational posterior.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariationalConfig {
    /// The method and its hyper-parameters.
    pub method: Method,
    /// The prior precision λ of N(0, λ⁻¹ I).
    pub prior_precision: f64,
    /// The initial precision N s₁ + λ of every weight (λ when `None`: σ₁ is the prior's). For
    /// the natural-gradient methods (VON, VOGN, Vprop, Vadam) the precision N s + λ is never
    /// below λ, since s is a sum of squared gradients: a value below λ starts them at s₁ = 0,
    /// the prior's precision, as `None` does. VadaGrad reads it as 1/σ₁²; IVON and BBVI start
    /// from their own hyper-parameters.
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
    /// The weight τ ∈ [0, 1] of the KL term, E_q[log p(D | θ)] − τ KL(q ‖ p) (Khan et al. 2018,
    /// §5): 1 is variational inference, 0 variational optimisation. For the natural-gradient
    /// methods and IVON its optimum is the mean-field fit to the posterior of the likelihood
    /// raised to 1/τ: λ̃ becomes τλ̃ in every update and σ² = τ / (N(s + τλ̃)), so at τ = 0
    /// σ = 0 and the mean follows the preconditioned likelihood gradient alone; BBVI scales
    /// its KL gradient by τ; VadaGrad has no KL term and ignores τ.
    #[serde(default = "one")]
    pub kl_weight: f64,
    /// Subnetwork inference: only these flat parameter indices are inferred; every other
    /// parameter stays at its value in μ₀ (a MAP, say) as a point mass, σ = 0 (the subnetwork
    /// paper's open direction: any posterior over a chosen subset, here the variational ones,
    /// with the subset from any rule of `bdl_laplace::selection`). `None`: every parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<Vec<usize>>,
    /// Evaluate the training NLL at the mean after every epoch ([`VariationalFit::nll`]: one
    /// forward pass over the whole data set an epoch, 5% of a `vadam-uci` naval fit's time at
    /// five weight samples). `false`: after the last epoch only, which still guards against
    /// outputs that overflowed the network's dtype; the fit is the same either way.
    #[serde(default = "yes")]
    pub nll_every_epoch: bool,
}

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
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
            kl_weight: 1.0,
            subset: None,
            nll_every_epoch: true,
        }
    }
}

impl Validate for VariationalConfig {
    /// The method's hyper-parameters, λ and the initial precision finite and > 0, at least one
    /// epoch, example per batch and sample per step, κ ≥ 0, τ in [0, 1], a subset of distinct
    /// indices (that they are parameters of the network is checked by the fit).
    fn validate(&self) -> Result<(), InvalidParam> {
        self.method.validate().map_err(|e| e.within("method"))?;
        positive("prior_precision", self.prior_precision)?;
        if let Some(p0) = self.init_precision {
            positive("init_precision", p0)?;
        }
        at_least_one("epochs", self.epochs)?;
        at_least_one("batch_size", self.batch_size)?;
        at_least_one("mc_samples", self.mc_samples)?;
        if let Some(k) = self.lr_decay {
            require(k >= 0.0, "lr_decay", k, ">= 0")?;
        }
        require(
            (0.0..=1.0).contains(&self.kl_weight),
            "kl_weight",
            self.kl_weight,
            "in [0, 1]",
        )?;
        if let Some(subset) = &self.subset {
            let mut sorted = subset.clone();
            sorted.sort_unstable();
            let repeated = sorted.windows(2).find(|w| w[0] == w[1]);
            require(
                !subset.is_empty() && repeated.is_none(),
                "subset",
                repeated.map_or_else(|| "empty".to_owned(), |w| format!("{} twice", w[0])),
                "distinct parameter indices, at least one",
            )?;
        }
        Ok(())
    }
}

/// A fitted variational posterior.
#[derive(Clone, Debug)]
pub struct VariationalFit {
    /// q(θ) = N(μ, diag σ²) with the network and likelihood it predicts with.
    pub posterior: MeanField,
    /// The mean negative log-likelihood (1/N) Σ_n −log p(y_n | f(x_n; μ)) after each epoch (after
    /// the last only, without [`VariationalConfig::nll_every_epoch`]).
    pub nll: Vec<f64>,
}

/// Fits q(θ) to the data (x, y) under `likelihood`, starting from the mean `mu0` (its dtype is
/// the compute dtype of the network).
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Network};
/// use bdl_variational::{Method, VariationalConfig, fit};
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity))?);
/// let x = Tensor::new(&[[-1.0f64], [0.0], [1.0], [2.0]], &Device::Cpu)?;
/// let y = Tensor::new(&[[-1.9f64], [0.1], [2.1], [3.9]], &Device::Cpu)?;
/// let config = VariationalConfig::new(Method::vadam(0.05), 1.0, 300, 4).check()?;
/// let mu0 = Tensor::zeros(2, DType::F64, &Device::Cpu)?;
/// let q = fit(&net, &mu0, Likelihood::Gaussian { sigma: 0.5 }, &x, &y, &config)?;
/// assert!((q.posterior.q().mean[0] - 2.0).abs() < 0.3); // the slope
/// # Ok(()) }
/// ```
pub fn fit(
    network: &Network,
    mu0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<VariationalConfig>,
) -> Result<VariationalFit> {
    fit_monitored(network, mu0, likelihood, x, y, config, |_, _| ())
}

/// [`fit`], calling `on_epoch(epoch, q)` after every epoch (from 0) with the posterior q reached
/// so far (e.g. to record a test metric against epochs); the last call sees the returned
/// posterior. The callback does not touch the random streams: the fit is the same with any
/// callback.
pub fn fit_monitored(
    network: &Network,
    mu0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<VariationalConfig>,
    mut on_epoch: impl FnMut(usize, &MeanField),
) -> Result<VariationalFit> {
    likelihood.check()?;
    network.layout().check_flat(mu0)?;
    let data = MinibatchLoop::new(x, y, config.batch_size, config.seed)?;
    let n = data.len();
    let (dtype, device) = (mu0.dtype(), mu0.device());
    let mut q = Online::new(bdl_tensor::to_f64_vec(mu0)?, n, config)?;
    let curvature = config.method.curvature();
    let d = q.mean().len();
    let mut nll = Vec::with_capacity(config.epochs);
    let posterior = |q: &Online| {
        MeanField::new(
            network.clone(),
            likelihood,
            q.posterior(),
            (**config).clone(),
        )
    };
    for epoch in 0..config.epochs {
        let mut diverged = None;
        data.epoch(epoch, |xb, yb| {
            let step = q.steps() + 1;
            let mut observe = || -> Result<()> {
                for _ in 0..config.mc_samples {
                    let draw = q.draw();
                    let theta = Tensor::from_slice(&draw.theta, d, device)?.to_dtype(dtype)?;
                    let (g, h) = minibatch_means(network, likelihood, curvature, &theta, xb, yb)?;
                    q.observe(&draw, &g, h.as_deref())?;
                }
                Ok(())
            };
            // The closure's errors become the inference layer's: a divergence leaves it as a
            // break and is returned below as this crate's.
            if let Err(e) = observe() {
                return match overflow_is_divergence(e, config.method.name(), step) {
                    e @ Error::Diverged { .. } => {
                        diverged = Some(e);
                        Ok(ControlFlow::Break(()))
                    }
                    e => Err(e.into()),
                };
            }
            Ok(match q.step() {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    diverged = Some(e);
                    ControlFlow::Break(())
                }
            })
        })?;
        if let Some(e) = diverged {
            return Err(e);
        }
        if config.nll_every_epoch || epoch + 1 == config.epochs {
            let mu = Tensor::from_slice(q.mean(), d, device)?.to_dtype(dtype)?;
            let ll = bdl_tensor::to_f64_vec(&likelihood.log_lik(&network.forward(&mu, x)?, y)?)?;
            let epoch_nll = -ll.iter().sum::<f64>() / n as f64;
            if !epoch_nll.is_finite() {
                // Finite parameters can still overflow the network's dtype (f32 outputs).
                return Err(Error::Diverged {
                    method: config.method.name(),
                    step: q.steps(),
                    what: "training negative log-likelihood at the mean (in the network's dtype)",
                });
            }
            nll.push(epoch_nll);
        }
        on_epoch(epoch, &posterior(&q)?);
    }
    Ok(VariationalFit {
        posterior: posterior(&q)?,
        nll,
    })
}

/// The minibatch means at θ of the loss gradient ḡ = (1/M) Σ_m ∇ℓ_m and of the method's
/// curvature: the GGN diagonal (1/M) Σ_m diag(J_mᵀ Λ_m J_m), the squared gradients
/// (1/M) Σ_m ∇ℓ_m ∘ ∇ℓ_m, or none.
fn minibatch_means(
    network: &Network,
    likelihood: Likelihood,
    curvature: Curvature,
    theta: &Tensor,
    xb: &Tensor,
    yb: &Tensor,
) -> Result<(Vec<f64>, Option<Vec<f64>>)> {
    let dtype = theta.dtype();
    let m = xb.dims()[0] as f64;
    // The network's products are sums over the minibatch: the means are / M.
    let mean = |mut sum: Vec<f64>| -> Vec<f64> {
        bdl_tensor::vectorized(
            #[inline(always)]
            || sum.iter_mut().for_each(|v| *v /= m),
        );
        sum
    };
    if curvature == Curvature::GgnDiagonal {
        let cache = network.forward_cached(theta, xb)?;
        let r = likelihood.grad_f(&cache.output, yb)?.to_dtype(dtype)?;
        let factor = likelihood.hess_factor(&cache.output)?;
        let wide = |t: Tensor| -> Result<Vec<f64>> { Ok(bdl_tensor::to_f64_vec(&t)?) };
        let g = wide(network.backward(theta, &cache, &r)?)?;
        let h = wide(network.ggn_diagonal(theta, &cache, &factor)?)?;
        return Ok((mean(g), Some(mean(h))));
    }
    let output_gradient = |f: &Tensor| -> bdl_inference::Result<Tensor> {
        Ok(likelihood.grad_f(f, yb)?.to_dtype(dtype)?)
    };
    let squares = curvature == Curvature::SumSqGrads;
    let sums = network.loss_gradient(theta, xb, None, output_gradient, squares)?;
    Ok((mean(sums.sum), sums.sum_sq.map(mean)))
}

/// A non-finite network output at a finite weight draw (the training data are finite): the draw
/// overflowed the network's dtype, a divergence like a non-finite mean.
fn overflow_is_divergence(e: Error, method: &'static str, step: usize) -> Error {
    match &e {
        Error::Inference(bdl_inference::Error::Likelihood(bdl_likelihoods::Error::NonFinite {
            arg,
            ..
        })) if arg == "f" => Error::Diverged {
            method,
            step,
            what: "network output at a weight draw (in the network's dtype)",
        },
        _ => e,
    }
}
