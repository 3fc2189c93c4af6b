//! The [`Likelihood`] enum: log-likelihood, gradient and curvature with respect to the network
//! output, and the predictive of a Gaussian over outputs.

use std::f64::consts::PI;

use candle_core::{DType, Tensor};
use serde::{Deserialize, Serialize};

use crate::function::{FunctionGaussian, FunctionVariance};
use crate::link::{self, ClassLink, Response};
use crate::{Error, Predictive, Result, bernoulli, categorical, check, gaussian, scalar};

/// The observation model p(y | f) of a network output f ∈ ℝᴷ.
///
/// All methods take the outputs of N examples as `f`: `[N, K]`, f32 or f64, finite. Results are
/// in f's dtype (so curvature-heavy callers pass f64). Targets `y` are validated: wrong shapes,
/// labels out of range and NaNs are typed [`Error`]s, never panics.
///
/// | | log p(y \| f) | grad_f = ∂(−log p)/∂f | Λ = hess_f = ∂²(−log p)/∂f² | L = hess_factor, L Lᵀ = Λ |
/// |---|---|---|---|---|
/// | `Gaussian { sigma }` | −½‖y − f‖²/σ² − (K/2) log 2πσ² | (f − y)/σ² | σ⁻² I | σ⁻¹ I |
/// | `Bernoulli` (K = 1) | y f − softplus(f) | σ(f) − y | σ(f)(1 − σ(f)) | √(σ(f)(1 − σ(f))) |
/// | `Categorical { classes }` (K = C) | f_y − log Σ_c e^{f_c} | p − onehot(y) | diag(p) − p pᵀ | diag(√p) − p √pᵀ |
///
/// with p = softmax(f). Targets: Gaussian `y` real, `[N, K]` (or `[N]` when K = 1); Bernoulli
/// `y` ∈ {0, 1}, `[N]` or `[N, 1]`; Categorical `y` labels in `0..classes`, `[N]` or `[N, 1]`.
/// Labels may be u8, u32, i64, or f32/f64 holding integers.
///
/// Serialised with an internal tag, e.g. `{"kind":"gaussian","sigma":0.5}`,
/// `{"kind":"bernoulli"}`, `{"kind":"categorical","classes":10}`.
///
/// ```
/// use bdl_likelihoods::{ClassLink, FunctionVariance, Likelihood};
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_likelihoods::Error> {
/// let dev = Device::Cpu;
/// let lik = Likelihood::Categorical { classes: 3 };
/// let f = Tensor::new(&[[2.0f64, 0.0, -1.0], [0.0, 0.0, 0.0]], &dev)?;
/// let y = Tensor::new(&[0u32, 2], &dev)?;
///
/// let ll = lik.log_lik(&f, &y)?.to_vec1::<f64>()?; // log softmax(f_n)_{y_n}
/// assert!((ll[1] - (1.0f64 / 3.0).ln()).abs() < 1e-12);
/// let g = lik.grad_f(&f, &y)?; // p − onehot(y), [2, 3]
/// let l = lik.hess_factor(&f)?; // L with L Lᵀ = diag(p) − p pᵀ, [2, 3, 3]
/// assert_eq!((g.dims(), l.dims()), (&[2, 3][..], &[2, 3, 3][..]));
///
/// // Linearised predictive with logit variances, probit link.
/// let var = FunctionVariance::Diagonal(Tensor::ones((2, 3), candle_core::DType::F64, &dev)?);
/// let pred = lik.predictive(&f, &var, ClassLink::Probit)?;
/// assert_eq!(pred.probs()?.dims(), &[2, 3]);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Likelihood {
    /// Homoscedastic Gaussian regression y = f + ε, ε ~ N(0, σ² I).
    Gaussian {
        /// The noise standard deviation σ > 0.
        sigma: f64,
    },
    /// Binary classification with one logit: p(y = 1 | f) = σ(f).
    Bernoulli,
    /// Multi-class classification with C logits: p(y = c | f) = softmax(f)_c.
    Categorical {
        /// The number of classes C ≥ 2.
        classes: usize,
    },
}

impl Likelihood {
    /// The number of network outputs K the likelihood needs: `None` (any) for Gaussian, 1 for
    /// Bernoulli, C for Categorical.
    pub fn output_dim(&self) -> Option<usize> {
        match *self {
            Self::Gaussian { .. } => None,
            Self::Bernoulli => Some(1),
            Self::Categorical { classes } => Some(classes),
        }
    }

    /// Checks the parameters: σ finite and positive, C ≥ 2.
    pub fn check(&self) -> Result<()> {
        match *self {
            Self::Gaussian { sigma } if !(sigma > 0.0 && sigma.is_finite()) => {
                Err(Error::InvalidLikelihood(format!(
                    "Gaussian noise sigma must be finite and > 0, got {sigma}"
                )))
            }
            Self::Categorical { classes } if classes < 2 => Err(Error::InvalidLikelihood(format!(
                "Categorical needs at least 2 classes, got {classes}"
            ))),
            _ => Ok(()),
        }
    }

    /// Per-example log-likelihood log p(y_n | f_n), shape `[N]` (stable: log-sum-exp,
    /// softplus). See the table on [`Likelihood`].
    pub fn log_lik(&self, f: &Tensor, y: &Tensor) -> Result<Tensor> {
        self.check_outputs(f)?;
        match *self {
            Self::Gaussian { sigma } => gaussian::log_lik(sigma, f, y),
            Self::Bernoulli => bernoulli::log_lik(f, y),
            Self::Categorical { classes } => categorical::log_lik(classes, f, y),
        }
    }

    /// The targets `y` of `n` examples with `k` outputs each, decoded once into plain numbers for
    /// [`log_lik_row`](Self::log_lik_row): row-major, one row per example, of K reals for the
    /// Gaussian and of one class label for Bernoulli and Categorical. `y` is validated as
    /// [`log_lik`](Self::log_lik) validates it.
    ///
    /// ```
    /// use bdl_likelihoods::Likelihood;
    /// use candle_core::{Device, Tensor};
    /// # fn main() -> Result<(), bdl_likelihoods::Error> {
    /// let lik = Likelihood::Categorical { classes: 3 };
    /// let f = Tensor::new(&[[2.0f64, 0.0, -1.0], [0.0, 0.0, 0.0]], &Device::Cpu)?;
    /// let y = Tensor::new(&[0u32, 2], &Device::Cpu)?;
    /// let rows = lik.target_rows(&y, 2, 3)?;
    /// assert_eq!(rows, [0.0, 2.0]);
    /// let ll = lik.log_lik(&f, &y)?.to_vec1::<f64>()?;
    /// assert!((lik.log_lik_row(&[0.0, 0.0, 0.0], &rows[1..]) - ll[1]).abs() < 1e-15);
    /// # Ok(()) }
    /// ```
    pub fn target_rows(&self, y: &Tensor, n: usize, k: usize) -> Result<Vec<f64>> {
        self.check()?;
        if k == 0 || self.output_dim().is_some_and(|d| d != k) {
            return Err(Error::Shape {
                arg: "outputs".to_owned(),
                expected: match self.output_dim() {
                    Some(d) => format!("{d} outputs"),
                    None => "at least one output".to_owned(),
                },
                actual: vec![k],
            });
        }
        match *self {
            Self::Gaussian { .. } => {
                check::values(&check::real_targets(y, n, k, DType::F64, "y")?, "y")
            }
            Self::Bernoulli => Ok(check::labels(y, n, 2, "y")?
                .into_iter()
                .map(f64::from)
                .collect()),
            Self::Categorical { classes } => Ok(check::labels(y, n, classes, "y")?
                .into_iter()
                .map(f64::from)
                .collect()),
        }
    }

    /// log p(y | f) of one example in f64, from its K outputs `f` and its target row `y` (as
    /// [`target_rows`](Self::target_rows) gives it): the formulas of the table above, with the
    /// same stable forms (softplus, log-sum-exp) as [`log_lik`](Self::log_lik). For hot loops
    /// that score many outputs against fixed targets (a Metropolis step), so nothing is checked
    /// beyond debug assertions on the lengths.
    pub fn log_lik_row(&self, f: &[f64], y: &[f64]) -> f64 {
        match *self {
            Self::Gaussian { sigma } => {
                debug_assert_eq!(f.len(), y.len());
                let r2: f64 = f.iter().zip(y).map(|(f, y)| (y - f) * (y - f)).sum();
                let k = f.len() as f64;
                -0.5 * r2 / (sigma * sigma) - 0.5 * k * (2.0 * PI * sigma * sigma).ln()
            }
            Self::Bernoulli => {
                debug_assert!(f.len() == 1 && y.len() == 1);
                y[0] * f[0] - scalar::softplus(f[0])
            }
            Self::Categorical { .. } => {
                debug_assert_eq!(y.len(), 1);
                f[y[0] as usize] - scalar::log_sum_exp(f)
            }
        }
    }

    /// Per-example gradient of the negative log-likelihood, ∂(−log p(y_n | f_n))/∂f_n, shape
    /// `[N, K]`: (f − y)/σ², σ(f) − y, or softmax(f) − onehot(y). This is the output gradient
    /// that a backward pass through the network takes.
    pub fn grad_f(&self, f: &Tensor, y: &Tensor) -> Result<Tensor> {
        self.check_outputs(f)?;
        match *self {
            Self::Gaussian { sigma } => gaussian::grad_f(sigma, f, y),
            Self::Bernoulli => bernoulli::grad_f(f, y),
            Self::Categorical { classes } => categorical::grad_f(classes, f, y),
        }
    }

    /// Per-example output-space curvature Λ_n = ∂²(−log p(y_n | f_n))/∂f_n², shape `[N, K, K]`:
    /// σ⁻² I, σ(f)(1 − σ(f)), or diag(p) − p pᵀ. It does not depend on y for these likelihoods
    /// (they are exponential families in their natural parameter f), and is symmetric positive
    /// semi-definite. Materialises K² numbers per example: for tests and small K; use
    /// [`hess_factor`](Self::hess_factor) to build a GGN.
    pub fn hess_f(&self, f: &Tensor) -> Result<Tensor> {
        self.check_outputs(f)?;
        match *self {
            Self::Gaussian { sigma } => gaussian::scaled_identity(f, 1.0 / (sigma * sigma)),
            Self::Bernoulli => bernoulli::hess_f(f),
            Self::Categorical { .. } => categorical::hess_f(f),
        }
    }

    /// A factor L_n of the curvature, L_n L_nᵀ = Λ_n, shape `[N, K, K]`:
    ///
    /// - Gaussian: L = σ⁻¹ I;
    /// - Bernoulli: L = √(σ(f)(1 − σ(f)));
    /// - Categorical: L = diag(√p) − p √pᵀ. Indeed L Lᵀ = diag(p) − 2 p pᵀ + p (√pᵀ√p) pᵀ =
    ///   diag(p) − p pᵀ, because √pᵀ√p = Σ_c p_c = 1. Row c of Lᵀ J is √p_c (J_c − pᵀJ).
    ///
    /// With it the generalised Gauss–Newton matrix Σ_n J_nᵀ Λ_n J_n = Σ_n (L_nᵀ J_n)ᵀ (L_nᵀ J_n)
    /// is a single symmetric rank-(N·K) update Aᵀ A of the stacked rows A = [L_1ᵀ J_1; …; L_Nᵀ J_N]
    /// (one SYRK), without forming any Λ_n.
    pub fn hess_factor(&self, f: &Tensor) -> Result<Tensor> {
        self.check_outputs(f)?;
        match *self {
            Self::Gaussian { sigma } => gaussian::scaled_identity(f, 1.0 / sigma),
            Self::Bernoulli => bernoulli::hess_factor(f),
            Self::Categorical { .. } => categorical::hess_factor(f),
        }
    }

    /// Gaussian only: per-example ∂ log p(y_n | f_n)/∂ log σ = ‖y_n − f_n‖²/σ² − K, shape `[N]`
    /// (the gradient for learning σ through the unconstrained log σ).
    pub fn grad_log_sigma(&self, f: &Tensor, y: &Tensor) -> Result<Tensor> {
        self.check_outputs(f)?;
        match *self {
            Self::Gaussian { sigma } => gaussian::grad_log_sigma(sigma, f, y),
            _ => Err(Error::WrongKind {
                op: "Likelihood::grad_log_sigma",
                expected: "the Gaussian likelihood",
                actual: self.name(),
            }),
        }
    }

    /// The Gaussian likelihood with the maximum-likelihood noise for outputs `f` and targets
    /// `y`: σ² = (1/(N K)) Σ_nk (y_nk − f_nk)², the mean squared residual (the root of the
    /// summed [`grad_log_sigma`](Self::grad_log_sigma)). Errors with [`Error::ZeroResidual`] if
    /// every residual is zero.
    ///
    /// ```
    /// use bdl_likelihoods::Likelihood;
    /// use candle_core::{Device, Tensor};
    /// # fn main() -> Result<(), bdl_likelihoods::Error> {
    /// let f = Tensor::new(&[[0.0f32], [1.0]], &Device::Cpu)?;
    /// let y = Tensor::new(&[1.0f32, -1.0], &Device::Cpu)?;
    /// let Likelihood::Gaussian { sigma } = Likelihood::gaussian_mle(&f, &y)? else { unreachable!() };
    /// assert!((sigma - 2.5f64.sqrt()).abs() < 1e-12); // (1 + 4) / 2
    /// # Ok(()) }
    /// ```
    pub fn gaussian_mle(f: &Tensor, y: &Tensor) -> Result<Self> {
        check::outputs(f, "f", None)?;
        Ok(Self::Gaussian {
            sigma: gaussian::sigma_mle(f, y)?,
        })
    }

    /// The predictive distribution of y* when the outputs are Gaussian,
    /// f_n ~ N(`mean_f`_n, `var_f`_n) (e.g. the linearised Laplace predictive J Σ Jᵀ).
    ///
    /// - Gaussian: N(m, diag Σ + σ²) in closed form (the noise is added; `link` is ignored, and
    ///   off-diagonal output covariances are dropped).
    /// - Bernoulli: categorical over {0, 1} with p(y = 1) from `link` applied to the logit.
    /// - Categorical: class probabilities from `link` (see [`ClassLink`]).
    ///
    /// `mean_f` is `[N, K]`; `var_f` is `[N, K]` variances or `[N, K, K]` covariances. The result
    /// is in f64 on `mean_f`'s device.
    pub fn predictive(
        &self,
        mean_f: &Tensor,
        var_f: &FunctionVariance,
        link: ClassLink,
    ) -> Result<Predictive> {
        self.check()?;
        let g = FunctionGaussian::new(mean_f, var_f, self.output_dim())?;
        match *self {
            Self::Gaussian { sigma } => gaussian::predictive(sigma, &g),
            Self::Bernoulli => link::class_predictive(&g, Response::Sigmoid, link),
            Self::Categorical { .. } => link::class_predictive(&g, Response::Softmax, link),
        }
    }

    /// The plug-in predictive p(y | f) of point outputs `f` `[N, K]` (a MAP network, one
    /// ensemble member, one MC sample): N(f, σ²), or the class probabilities σ(f) / softmax(f).
    /// It is [`predictive`](Self::predictive) with zero variance and the probit link, which is
    /// exact there. Average several with [`Predictive::mixture`].
    pub fn point_predictive(&self, f: &Tensor) -> Result<Predictive> {
        self.check_outputs(f)?;
        self.predictive(
            f,
            &FunctionVariance::Diagonal(f.zeros_like()?),
            ClassLink::Probit,
        )
    }

    /// Validates the parameters and the outputs `f`.
    fn check_outputs(&self, f: &Tensor) -> Result<()> {
        self.check()?;
        check::outputs(f, "f", self.output_dim())?;
        Ok(())
    }

    /// The variant's name, for errors.
    fn name(&self) -> &'static str {
        match self {
            Self::Gaussian { .. } => "the Gaussian likelihood",
            Self::Bernoulli => "the Bernoulli likelihood",
            Self::Categorical { .. } => "the Categorical likelihood",
        }
    }
}
