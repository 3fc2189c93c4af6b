//! The update rules, one per method, on a mean-field Gaussian q(θ) = N(μ, diag σ²).
//!
//! Notation (Khan et al. 2018): N examples, prior N(0, λ⁻¹ I), λ̃ = λ/N; per step, at
//! perturbed weights θ = μ + σ∘ε: ĝ the minibatch-mean gradient of the negative log-likelihood,
//! ĝ² the mean over Monte Carlo samples of ĝ∘ĝ, ĥ a curvature estimate.
//!
//! | method | curvature and moments | mean | σ² |
//! |---|---|---|---|
//! | VON | s ← (1−β)s + β ĥ, ĥ = diag of the minibatch-mean GGN | μ ← μ − α(ĝ + λ̃μ)/(s + λ̃) | 1/(N(s + λ̃)) |
//! | VOGN | as VON, ĥ = (1/M) Σ_i g_i∘g_i over per-example gradients | as VON | as VON |
//! | Vprop | s ← (1−β)s + β ĝ² | μ ← μ − α(ĝ + λ̃μ)/(√s + λ̃) | 1/(N(s + λ̃)) |
//! | Vadam | m ← γ₁m + (1−γ₁)(ĝ + λ̃μ), s ← γ₂s + (1−γ₂)ĝ², m̂ = m/(1−γ₁ᵗ), ŝ = s/(1−γ₂ᵗ) | μ ← μ − α m̂/(√ŝ + λ̃) | 1/(N(s + λ̃)), raw s |
//! | VadaGrad | s ← s + (1−γ₂)ĝ² (never decays) | μ ← μ − α ĝ/√s | 1/s |
//! | IVON | ḡ ← β₁ḡ + (1−β₁)ĝ, ĥ = ĝ∘(θ−μ)/σ², h ← β₂h + (1−β₂)ĥ + ½(1−β₂)²(h−ĥ)²/(h+λ̃) | μ ← μ − α(h₀+λ̃) clip((ḡ/(1−β₁ᵗ) + λ̃μ)/(h+λ̃)) | 1/(N(h + λ̃)) |
//! | BBVI | Adam on (μ, ρ), σ = softplus ρ, loss = mean NLL + KL(q‖p)/N | Adam | softplus(ρ)² |

use bdl_inference::{InvalidParam, Optimizer, OptimizerState, Validate, positive, unit_interval};
use bdl_tensor::Real;
use serde::{Deserialize, Serialize};

use crate::{DiagGaussian, Error, Result};

/// A variational method and its hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Method {
    /// Variational online Newton with the diagonal GGN of the minibatch (the Hessian for a
    /// linear model).
    Von {
        /// Step size α.
        learning_rate: f64,
        /// Curvature averaging β.
        beta: f64,
    },
    /// Variational online Gauss–Newton: the mean of per-example squared gradients.
    Vogn {
        /// Step size α.
        learning_rate: f64,
        /// Curvature averaging β.
        beta: f64,
    },
    /// Vprop: RMSprop-like, curvature from the squared minibatch gradient.
    Vprop {
        /// Step size α.
        learning_rate: f64,
        /// Curvature averaging β.
        beta: f64,
    },
    /// Vadam: Adam with natural momentum and bias correction; perturbation from the raw s.
    Vadam {
        /// Step size α.
        learning_rate: f64,
        /// Momentum decay γ₁.
        beta1: f64,
        /// Second-moment decay γ₂.
        beta2: f64,
    },
    /// VadaGrad: variational optimisation (no prior, no KL), AdaGrad-like.
    VadaGrad {
        /// Step size α.
        learning_rate: f64,
        /// The increment weight: s grows by (1 − γ₂)ĝ².
        beta2: f64,
    },
    /// IVON (Shen et al. 2024): the Hessian estimate from the same backward pass.
    Ivon {
        /// Step size α.
        learning_rate: f64,
        /// Gradient momentum β₁.
        beta1: f64,
        /// Hessian averaging β₂.
        beta2: f64,
        /// Initial Hessian h₀.
        h0: f64,
        /// Elementwise clip of the preconditioned step (∞ for none).
        clip: f64,
    },
    /// Bayes-by-Backprop: reparameterisation gradients of the ELBO, Adam on (μ, ρ).
    Bbvi {
        /// Adam's step size.
        learning_rate: f64,
        /// Adam's β₁.
        beta1: f64,
        /// Adam's β₂.
        beta2: f64,
        /// The initial σ of every weight.
        init_std: f64,
    },
}

/// What curvature the training loop must estimate for a method, besides ĝ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Curvature {
    /// None.
    None,
    /// The diagonal GGN of the minibatch (VON).
    GgnDiagonal,
    /// The mean of per-example squared gradients (VOGN).
    SumSqGrads,
}

impl Method {
    /// Vadam with the paper's defaults γ₁ = 0.9, γ₂ = 0.999.
    pub fn vadam(learning_rate: f64) -> Self {
        Self::Vadam {
            learning_rate,
            beta1: 0.9,
            beta2: 0.999,
        }
    }

    /// IVON with the defaults of Shen et al.: β₁ = 0.9, β₂ = 0.99999, h₀ = 1, no clipping.
    pub fn ivon(learning_rate: f64) -> Self {
        Self::Ivon {
            learning_rate,
            beta1: 0.9,
            beta2: 0.99999,
            h0: 1.0,
            clip: f64::INFINITY,
        }
    }

    /// The method's name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Von { .. } => "VON",
            Self::Vogn { .. } => "VOGN",
            Self::Vprop { .. } => "Vprop",
            Self::Vadam { .. } => "Vadam",
            Self::VadaGrad { .. } => "VadaGrad",
            Self::Ivon { .. } => "IVON",
            Self::Bbvi { .. } => "BBVI",
        }
    }

    /// The step size α.
    pub fn learning_rate(&self) -> f64 {
        match *self {
            Self::Von { learning_rate, .. }
            | Self::Vogn { learning_rate, .. }
            | Self::Vprop { learning_rate, .. }
            | Self::Vadam { learning_rate, .. }
            | Self::VadaGrad { learning_rate, .. }
            | Self::Ivon { learning_rate, .. }
            | Self::Bbvi { learning_rate, .. } => learning_rate,
        }
    }

    pub(crate) fn curvature(&self) -> Curvature {
        match self {
            Self::Von { .. } => Curvature::GgnDiagonal,
            Self::Vogn { .. } => Curvature::SumSqGrads,
            _ => Curvature::None,
        }
    }
}

impl Validate for Method {
    /// α finite and > 0; β in (0, 1] for the running averages of VON, VOGN and Vprop; decay
    /// rates in [0, 1); h₀, the clip and σ₀ > 0.
    fn validate(&self) -> Result<(), InvalidParam> {
        positive("learning_rate", self.learning_rate())?;
        match *self {
            Self::Von { beta, .. } | Self::Vogn { beta, .. } | Self::Vprop { beta, .. } => {
                bdl_inference::require(beta > 0.0 && beta <= 1.0, "beta", beta, "in (0, 1]")
            }
            Self::Vadam { beta1, beta2, .. } => {
                unit_interval("beta1", beta1)?;
                unit_interval("beta2", beta2)
            }
            Self::VadaGrad { beta2, .. } => unit_interval("beta2", beta2),
            Self::Ivon {
                beta1,
                beta2,
                h0,
                clip,
                ..
            } => {
                unit_interval("beta1", beta1)?;
                unit_interval("beta2", beta2)?;
                positive("h0", h0)?;
                bdl_inference::require(clip > 0.0, "clip", clip, "> 0 (infinite for none)")
            }
            Self::Bbvi {
                beta1,
                beta2,
                init_std,
                ..
            } => {
                unit_interval("beta1", beta1)?;
                unit_interval("beta2", beta2)?;
                positive("init_std", init_std)
            }
        }
    }
}

/// Monte Carlo means of what one step observed, over the samples θ_s = μ + σ∘ε_s; a mean the
/// method does not use is kept empty (and not accumulated).
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    /// ĝ.
    pub(crate) g: Vec<f64>,
    /// The mean of ĝ_s∘ĝ_s (Vprop, Vadam, VadaGrad).
    pub(crate) g_sq: Vec<f64>,
    /// The mean of ĝ_s∘ε_s (IVON, BBVI).
    pub(crate) g_eps: Vec<f64>,
    /// The mean curvature ĥ (VON, VOGN).
    pub(crate) h: Vec<f64>,
}

impl Stats {
    /// Zeros for D parameters, for what `method` uses.
    pub(crate) fn zeros(d: usize, method: &Method) -> Self {
        let len = |used: bool| if used { d } else { 0 };
        let with_eps = matches!(method, Method::Ivon { .. } | Method::Bbvi { .. });
        let curvature = method.curvature() != Curvature::None;
        Self {
            g: vec![0.0; d],
            g_sq: vec![0.0; len(!with_eps && !curvature)],
            g_eps: vec![0.0; len(with_eps)],
            h: vec![0.0; len(curvature)],
        }
    }
}

/// The state of one method over D parameters.
#[derive(Clone, Debug)]
pub(crate) struct State {
    method: Method,
    /// N, the number of training examples.
    n: f64,
    /// τλ̃ = τλ/N: the prior precision per example, times the KL weight τ.
    lt: f64,
    /// λ̃ = λ/N (BBVI's KL gradient; τ scales it separately).
    lambda_tilde: f64,
    /// The KL weight τ ∈ [0, 1].
    tau: f64,
    /// Subnetwork inference: which parameters are held fixed (σ = 0, never updated).
    fixed: Option<Vec<bool>>,
    pub(crate) mu: Vec<f64>,
    /// s (curvature or second moment), h for IVON, ρ for BBVI.
    s: Vec<f64>,
    /// Momentum m (Vadam), ḡ (IVON).
    m: Vec<f64>,
    /// BBVI only: Adam on μ and on ρ.
    adam: Option<[OptimizerState; 2]>,
    t: usize,
    /// σ of every parameter for the current s (0 where held fixed), refreshed after each
    /// update: the draw and the next update read it, so each step evaluates it once.
    sd: Vec<f64>,
    /// BBVI only: ∂σ/∂ρ = sigmoid(ρ), from the same exponential as σ = softplus(ρ).
    sd_slope: Vec<f64>,
}

/// (softplus(ρ), sigmoid(ρ)) from one exponential: softplus = ln(1 + eᵖ), its derivative
/// eᵖ/(1 + eᵖ); above ρ = 30 they are ρ and 1 to double precision. Branch-free, so that a loop
/// of them vectorises: eᵖ and ln by [`Real`]'s within 2 ulp, and ln(1 + e) for small e as
/// ln(u)·e/(u − 1) with u = 1 + e rounded, which cancels u's rounding error (Goldberg, 1991).
#[inline(always)]
fn softplus_and_slope(r: f64) -> (f64, f64) {
    let e = Real::exp(r.min(30.0));
    let u = 1.0 + e;
    let ln_1p = if u == 1.0 {
        e
    } else {
        Real::ln(u) * (e / (u - 1.0))
    };
    if r > 30.0 { (r, 1.0) } else { (ln_1p, e / u) }
}

/// num / den, and 0 for 0 / 0: with τ = 0 nothing bounds a denominator away from zero, and a
/// parameter whose curvature is exactly zero (a dead unit) also has a zero gradient, so it
/// stays where it is.
#[inline(always)]
fn ratio(num: f64, den: f64) -> f64 {
    if den == 0.0 { 0.0 } else { num / den }
}

impl State {
    /// The initial state at mean `mu`, with initial precision `p0` per parameter (N s / τ + λ =
    /// p0 for the natural methods; 1/σ² = p0 for VadaGrad; BBVI starts from its own σ₀) and KL
    /// weight `tau`.
    pub(crate) fn new(
        method: Method,
        mu: Vec<f64>,
        n: usize,
        lambda: f64,
        p0: f64,
        tau: f64,
    ) -> Self {
        let d = mu.len();
        let (n, lambda_tilde) = (n as f64, lambda / n as f64);
        let lt = tau * lambda_tilde;
        let adam = match method {
            Method::Bbvi { beta1, beta2, .. } => {
                let rule = Optimizer::adam(beta1, beta2);
                Some([OptimizerState::new(rule, d), OptimizerState::new(rule, d)])
            }
            _ => None,
        };
        let s0 = match method {
            Method::VadaGrad { .. } => p0,
            Method::Ivon { h0, .. } => h0,
            Method::Bbvi { init_std, .. } => init_std.exp_m1().ln(),
            _ => (tau * (p0 - lambda) / n).max(0.0),
        };
        let mut state = Self {
            method,
            n,
            lt,
            lambda_tilde,
            tau,
            fixed: None,
            mu,
            s: vec![s0; d],
            m: vec![0.0; d],
            adam,
            t: 0,
            sd: Vec::new(),
            sd_slope: Vec::new(),
        };
        state.refresh_sigma();
        state
    }

    /// The method's name.
    pub(crate) fn method_name(&self) -> &'static str {
        self.method.name()
    }

    /// Infers only the parameters `subset`; every other one stays at its current μ with σ = 0.
    pub(crate) fn infer_only(&mut self, subset: &[usize]) {
        let mut fixed = vec![true; self.mu.len()];
        for &i in subset {
            fixed[i] = false;
        }
        self.fixed = Some(fixed);
        self.refresh_sigma();
    }

    /// The perturbation standard deviation σ of every parameter: √τ / √(N(s + τλ̃)) for the
    /// natural methods and IVON (0 at τ = 0), 1/√s for VadaGrad, softplus(ρ) for BBVI; 0 for a
    /// parameter held fixed.
    pub(crate) fn sigma(&self) -> &[f64] {
        &self.sd
    }

    /// Recomputes σ (and BBVI's ∂σ/∂ρ) from the current s, in place.
    fn refresh_sigma(&mut self) {
        let (n, lt, root_tau) = (self.n, self.lt, self.tau.sqrt());
        let d = self.s.len();
        self.sd.resize(d, 0.0);
        if matches!(self.method, Method::Bbvi { .. }) {
            self.sd_slope.resize(d, 0.0);
        }
        let (sd, slopes, s) = (&mut self.sd, &mut self.sd_slope, &self.s);
        // One branch-free pass per method, compiled for the widest vector instructions.
        bdl_tensor::vectorized(
            #[inline(always)]
            || match self.method {
                Method::VadaGrad { .. } => {
                    for (sd, s) in sd.iter_mut().zip(s) {
                        *sd = s.sqrt().recip();
                    }
                }
                Method::Bbvi { .. } => {
                    for ((sd, &rho), slope) in sd.iter_mut().zip(s).zip(slopes) {
                        (*sd, *slope) = softplus_and_slope(rho);
                    }
                }
                _ if self.tau == 0.0 => sd.fill(0.0),
                _ => {
                    for (sd, s) in sd.iter_mut().zip(s) {
                        *sd = root_tau * (n * (s + lt)).sqrt().recip();
                    }
                }
            },
        );
        if let Some(fixed) = &self.fixed {
            for (sd, _) in self.sd.iter_mut().zip(fixed).filter(|(_, fixed)| **fixed) {
                *sd = 0.0;
            }
        }
    }

    /// q(θ) = N(μ, diag σ²) as it stands.
    pub(crate) fn posterior(&self) -> DiagGaussian {
        DiagGaussian {
            mean: self.mu.clone(),
            var: self.sigma().iter().map(|s| s * s).collect(),
        }
    }

    /// One update with the step size scaled by `lr_scale` (a decay schedule).
    pub(crate) fn update(&mut self, stats: &Stats, lr_scale: f64) -> Result<()> {
        self.t += 1;
        let t = self.t as i32;
        let lt = self.lt;
        let alpha = self.method.learning_rate() * lr_scale;
        let d = self.mu.len();
        // Every method updates all parameters in zipped passes, compiled for the widest vector
        // instructions the processor has; the ones held fixed are put back afterwards (BBVI's
        // gradients are zero there, for Adam's moments).
        let held = self
            .fixed
            .as_ref()
            .map(|_| (self.mu.clone(), self.s.clone(), self.m.clone()));
        // σ and ∂σ/∂ρ of the state being updated; both are recomputed after the update.
        let sigma = std::mem::take(&mut self.sd);
        let slope = std::mem::take(&mut self.sd_slope);
        let (mu, s, m) = (&mut self.mu, &mut self.s, &mut self.m);
        bdl_tensor::vectorized(
            #[inline(always)]
            || match self.method.clone() {
                Method::Von { beta, .. } | Method::Vogn { beta, .. } => {
                    for ((mu, s), (&g, &h)) in mu
                        .iter_mut()
                        .zip(s.iter_mut())
                        .zip(stats.g.iter().zip(&stats.h))
                    {
                        *s = (1.0 - beta) * *s + beta * h;
                        *mu -= alpha * ratio(g + lt * *mu, *s + lt);
                    }
                }
                Method::Vprop { beta, .. } => {
                    for ((mu, s), (&g, &g_sq)) in mu
                        .iter_mut()
                        .zip(s.iter_mut())
                        .zip(stats.g.iter().zip(&stats.g_sq))
                    {
                        *s = (1.0 - beta) * *s + beta * g_sq;
                        *mu -= alpha * ratio(g + lt * *mu, s.sqrt() + lt);
                    }
                }
                Method::Vadam { beta1, beta2, .. } => {
                    vadam_step((mu, s, m), stats, (beta1, beta2), t, alpha, lt);
                }
                Method::VadaGrad { beta2, .. } => {
                    for ((mu, s), (&g, &g_sq)) in mu
                        .iter_mut()
                        .zip(s.iter_mut())
                        .zip(stats.g.iter().zip(&stats.g_sq))
                    {
                        *s += (1.0 - beta2) * g_sq;
                        *mu -= alpha * g / s.sqrt();
                    }
                }
                Method::Ivon {
                    beta1,
                    beta2,
                    h0,
                    clip,
                    ..
                } => {
                    let ivon = Ivon {
                        beta1,
                        beta2,
                        h0,
                        clip,
                        m_debias: 1.0 - beta1.powi(t),
                        alpha,
                        lt,
                    };
                    ivon.step((mu, s, m), stats, &sigma);
                }
                Method::Bbvi { .. } => {
                    let bbvi = Bbvi {
                        lambda: self.lambda_tilde * self.n,
                        tau: self.tau,
                        n: self.n,
                        alpha,
                    };
                    let adam = self.adam.as_mut().expect("BBVI keeps Adam's state");
                    bbvi.step(
                        (mu, s),
                        stats,
                        (&sigma, &slope),
                        self.fixed.as_deref(),
                        adam,
                    );
                }
            },
        );
        if let (Some(fixed), Some((mu, s, m))) = (&self.fixed, held) {
            for i in (0..d).filter(|&i| fixed[i]) {
                (self.mu[i], self.s[i], self.m[i]) = (mu[i], s[i], m[i]);
            }
        }
        (self.sd, self.sd_slope) = (sigma, slope);
        self.refresh_sigma();
        self.check_finite()
    }

    /// A non-finite mean or curvature after an update is a divergence.
    fn check_finite(&self) -> Result<()> {
        for (state, what) in [(&self.mu, "mean"), (&self.s, "curvature")] {
            if !bdl_tensor::all_finite(state) {
                return Err(Error::Diverged {
                    method: self.method.name(),
                    step: self.t,
                    what,
                });
            }
        }
        Ok(())
    }
}

/// Vadam's step (Khan et al. 2018, Alg. 1): m ← β₁m + (1 − β₁)(ĝ + λ̃μ), s ← β₂s + (1 − β₂)ĝ²,
/// μ ← μ − α m̂/(√ŝ + λ̃) with the bias corrections m̂ = m/(1 − β₁ᵗ), ŝ = s/(1 − β₂ᵗ).
#[inline(always)]
fn vadam_step(
    (mu, s, m): (&mut [f64], &mut [f64], &mut [f64]),
    stats: &Stats,
    (beta1, beta2): (f64, f64),
    t: i32,
    alpha: f64,
    lt: f64,
) {
    // The bias corrections as factors: one division per parameter, not three.
    let m_debias = (1.0 - beta1.powi(t)).recip();
    let s_debias = (1.0 - beta2.powi(t)).recip();
    let state = mu.iter_mut().zip(s.iter_mut()).zip(m.iter_mut());
    for (((mu, s), m), (&g, &g_sq)) in state.zip(stats.g.iter().zip(&stats.g_sq)) {
        *m = beta1 * *m + (1.0 - beta1) * (g + lt * *mu);
        *s = beta2 * *s + (1.0 - beta2) * g_sq;
        let m_hat = *m * m_debias;
        let s_hat = *s * s_debias;
        *mu -= alpha * ratio(m_hat, s_hat.sqrt() + lt);
    }
}

/// Bayes-by-Backprop's step: Adam on the gradients of the mean log-likelihood plus
/// τ KL(q ‖ p)/N in μ and in ρ (σ = softplus ρ), ∂/∂μ = ĝ + τλμ/N and
/// ∂/∂ρ = (ĝ∘ε + τ(λσ − 1/σ)/N) ∂σ/∂ρ, zero where a parameter is held fixed.
struct Bbvi {
    /// λ, the prior precision (λ̃N).
    lambda: f64,
    tau: f64,
    n: f64,
    alpha: f64,
}

impl Bbvi {
    #[inline(always)]
    fn step(
        &self,
        (mu, rho): (&mut [f64], &mut [f64]),
        stats: &Stats,
        (sigma, slope): (&[f64], &[f64]),
        fixed: Option<&[bool]>,
        [adam_mu, adam_rho]: &mut [OptimizerState; 2],
    ) {
        let Self {
            lambda,
            tau,
            n,
            alpha,
        } = *self;
        let mut grad_mu: Vec<f64> = (stats.g.iter().zip(mu.iter()))
            .map(|(&g, &mu)| g + tau * lambda * mu / n)
            .collect();
        let mut grad_rho: Vec<f64> = (stats.g_eps.iter().zip(sigma).zip(slope))
            .map(|((&g_eps, &sd), &dsd_drho)| {
                let dkl_dsigma = tau * (lambda * sd - sd.recip());
                (g_eps + dkl_dsigma / n) * dsd_drho
            })
            .collect();
        if let Some(fixed) = fixed {
            for (i, _) in fixed.iter().enumerate().filter(|(_, fixed)| **fixed) {
                (grad_mu[i], grad_rho[i]) = (0.0, 0.0);
            }
        }
        adam_mu.step(mu, &grad_mu, alpha);
        adam_rho.step(rho, &grad_rho, alpha);
    }
}

/// IVON's update at one step (Shen et al. 2024, Alg. 1) with the step's constants:
/// ĥ = ĝ∘ε/σ, m ← β₁m + (1 − β₁)ĝ, h ← β₂h + (1 − β₂)ĥ + ½(1 − β₂)²(h − ĥ)²/(h + λ̃),
/// μ ← μ − α(h₀ + λ̃) clip((m/(1 − β₁ᵗ) + λ̃μ)/(h + λ̃)).
struct Ivon {
    beta1: f64,
    beta2: f64,
    h0: f64,
    clip: f64,
    /// 1 − β₁ᵗ.
    m_debias: f64,
    alpha: f64,
    /// λ̃, the prior precision per example.
    lt: f64,
}

impl Ivon {
    #[inline(always)]
    fn step(&self, (mu, s, m): (&mut [f64], &mut [f64], &mut [f64]), stats: &Stats, sigma: &[f64]) {
        let Self {
            beta1,
            beta2,
            h0,
            clip,
            m_debias,
            alpha,
            lt,
        } = *self;
        let state = mu.iter_mut().zip(s.iter_mut()).zip(m.iter_mut());
        let seen = stats.g.iter().zip(&stats.g_eps).zip(sigma);
        for (((mu, s), m), ((&g, &g_eps), &sd)) in state.zip(seen) {
            // ĥ = ĝ∘(θ − μ)/σ² = ĝ∘ε/σ.
            let h_hat = g_eps / sd;
            *m = beta1 * *m + (1.0 - beta1) * g;
            let h = *s;
            *s = beta2 * h
                + (1.0 - beta2) * h_hat
                + 0.5 * (1.0 - beta2).powi(2) * ratio((h - h_hat).powi(2), h + lt);
            let step = ratio(*m / m_debias + lt * *mu, *s + lt);
            *mu -= alpha * (h0 + lt) * step.clamp(-clip, clip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free softplus and its slope against the standard library's ln_1p and exp,
    /// from ρ = −700 (σ near 10⁻³⁰⁴) to 60, densely around 0 and the switch at 30: within 8 ulp
    /// (the parts are within 2 ulp each; observed 2.7).
    #[test]
    fn softplus_and_slope_track_the_standard_library() {
        let ulps = |a: f64, b: f64| (a - b).abs() / (b.abs() * f64::EPSILON);
        let mut worst: f64 = 0.0;
        for i in 0..=760_000 {
            let r = -700.0 + i as f64 * 1e-3;
            let (sp, slope) = softplus_and_slope(r);
            let e = r.exp();
            let (want_sp, want_slope) = if r > 30.0 {
                (r, 1.0)
            } else {
                (e.ln_1p(), e / (1.0 + e))
            };
            worst = worst.max(ulps(sp, want_sp)).max(ulps(slope, want_slope));
        }
        assert!(worst <= 8.0, "{worst} ulp");
    }

    fn stats(g: f64, g_sq: f64, g_eps: f64, h: f64) -> Stats {
        Stats {
            g: vec![g],
            g_sq: vec![g_sq],
            g_eps: vec![g_eps],
            h: vec![h],
        }
    }

    /// The documented rule for an initial precision below λ: the natural methods start at the
    /// prior's precision (s₁ = 0), exactly as without one; above λ they start at it.
    #[test]
    fn an_initial_precision_below_the_prior_starts_at_the_prior() {
        let (n, lambda) = (10, 2.0);
        for method in [
            Method::Vadam {
                learning_rate: 0.1,
                beta1: 0.9,
                beta2: 0.99,
            },
            Method::Vogn {
                learning_rate: 0.1,
                beta: 0.99,
            },
        ] {
            let sigma = |p0: f64| {
                State::new(method.clone(), vec![0.0; 3], n, lambda, p0, 1.0)
                    .sigma()
                    .to_vec()
            };
            assert_eq!(sigma(0.5), vec![lambda.sqrt().recip(); 3], "{method:?}");
            assert_eq!(sigma(lambda), sigma(0.5));
            let above = sigma(8.0)[0];
            assert!((above - 8.0f64.sqrt().recip()).abs() < 1e-15, "{above}");
        }
    }

    /// One step of each method on one parameter, against the formulas worked by hand
    /// (N = 10, λ = 2, so λ̃ = 0.2; μ = 1).
    #[test]
    fn one_step_of_each_method_follows_its_formula() {
        let st = stats(0.5, 0.3, 0.4, 0.7);
        let step = |method: Method, p0: f64| {
            let mut s = State::new(method, vec![1.0], 10, 2.0, p0, 1.0);
            let sigma = s.sigma()[0];
            s.update(&st, 1.0).unwrap();
            (s.mu[0], s.s[0], s.sigma()[0], sigma)
        };
        // VOGN / VON, β = 0.5, s₀ = 0: s = 0.35, μ = 1 − 0.1(0.5 + 0.2)/(0.35 + 0.2).
        let (mu, s, sd, sd0) = step(
            Method::Vogn {
                learning_rate: 0.1,
                beta: 0.5,
            },
            2.0,
        );
        assert!(
            (sd0 - (10.0f64 * 0.2).sqrt().recip()).abs() < 1e-15,
            "σ₁ is the prior's"
        );
        assert!((s - 0.35).abs() < 1e-15);
        assert!((mu - (1.0 - 0.1 * 0.7 / 0.55)).abs() < 1e-15);
        assert!((sd - (10.0f64 * 0.55).sqrt().recip()).abs() < 1e-15);
        // Vprop: s = 0.15, μ = 1 − 0.1·0.7/(√0.15 + 0.2).
        let (mu, s, ..) = step(
            Method::Vprop {
                learning_rate: 0.1,
                beta: 0.5,
            },
            2.0,
        );
        assert!(
            (s - 0.15).abs() < 1e-15 && (mu - (1.0 - 0.07 / (0.15f64.sqrt() + 0.2))).abs() < 1e-15
        );
        // Vadam (t = 1): m = 0.1·0.7, s = 0.001·0.3, m̂ = 0.7, ŝ = 0.3; σ uses the raw s.
        let (mu, s, sd, _) = step(Method::vadam(0.1), 2.0);
        assert!((mu - (1.0 - 0.1 * 0.7 / (0.3f64.sqrt() + 0.2))).abs() < 1e-12);
        assert!((s - 0.0003).abs() < 1e-15);
        assert!((sd - (10.0f64 * (0.0003 + 0.2)).sqrt().recip()).abs() < 1e-15);
        // VadaGrad, s₀ = 4: s = 4 + 0.5·0.3, μ = 1 − 0.1·0.5/√4.15, σ = 1/√4.15.
        let (mu, s, sd, sd0) = step(
            Method::VadaGrad {
                learning_rate: 0.1,
                beta2: 0.5,
            },
            4.0,
        );
        assert!((sd0 - 0.5).abs() < 1e-15 && (s - 4.15).abs() < 1e-15);
        assert!(
            (mu - (1.0 - 0.05 / 4.15f64.sqrt())).abs() < 1e-15
                && (sd - 4.15f64.sqrt().recip()).abs() < 1e-15
        );
        // IVON (β₁ = 0.9, β₂ = 0.5, h₀ = 1): σ = 1/√(10·1.2); ĥ = 0.4/σ;
        // h = 0.5 + 0.5ĥ + ½·0.25(1 − ĥ)²/1.2; ḡ = 0.05, step = (0.05/0.1 + 0.2)/(h + 0.2).
        let ivon = Method::Ivon {
            learning_rate: 0.1,
            beta1: 0.9,
            beta2: 0.5,
            h0: 1.0,
            clip: f64::INFINITY,
        };
        let (mu, h, ..) = step(ivon, 2.0);
        let sigma = (12.0f64).sqrt().recip();
        let h_hat = 0.4 / sigma;
        let h_expected = 0.5 + 0.5 * h_hat + 0.125 * (1.0 - h_hat).powi(2) / 1.2;
        assert!((h - h_expected).abs() < 1e-12);
        assert!((mu - (1.0 - 0.1 * 1.2 * (0.5 + 0.2) / (h_expected + 0.2))).abs() < 1e-12);
    }

    #[test]
    fn bbvi_step_follows_adam_on_the_elbo() {
        // σ₀ = 0.5 ⇒ ρ₀ = log(e^0.5 − 1). Adam's first step moves each parameter by −α·sign.
        let mut s = State::new(
            Method::Bbvi {
                learning_rate: 0.01,
                beta1: 0.9,
                beta2: 0.999,
                init_std: 0.5,
            },
            vec![1.0],
            10,
            2.0,
            2.0,
            1.0,
        );
        assert!((s.sigma()[0] - 0.5).abs() < 1e-15);
        let rho0 = s.s[0];
        s.update(&stats(0.5, 0.0, -3.0, 0.0), 1.0).unwrap();
        // ∂/∂μ = 0.5 + 2·1/10 > 0; ∂/∂ρ = (−3 + (2·0.5 − 2)/10)·sigmoid(ρ₀) < 0.
        assert!((s.mu[0] - (1.0 - 0.01)).abs() < 1e-9);
        assert!((s.s[0] - (rho0 + 0.01)).abs() < 1e-9);
    }

    #[test]
    fn bad_hyper_parameters_are_errors() {
        assert!(
            Method::Vogn {
                learning_rate: 0.0,
                beta: 0.5
            }
            .check()
            .is_err()
        );
        assert!(
            Method::Vadam {
                learning_rate: 0.1,
                beta1: 1.0,
                beta2: 0.9
            }
            .check()
            .is_err()
        );
        assert!(
            Method::Bbvi {
                learning_rate: 0.1,
                beta1: 0.9,
                beta2: 0.9,
                init_std: 0.0
            }
            .check()
            .is_err()
        );
        assert!(Method::ivon(0.1).check().is_ok());
    }
}
