//! The predictive distribution: what every inference method ends in and evaluation consumes.

use std::f64::consts::PI;

use candle_core::{D, DType, Tensor};

use crate::{Error, Result, check};

/// Tolerance on Σ_c p_c = 1 when class probabilities are accepted (they are then renormalised
/// exactly). f32 softmax rows of 1000 classes sum to 1 within ~1e-4; unnormalised input (logits
/// by mistake) is off by far more.
const PROB_TOL: f64 = 1e-3;

/// The predictive distribution p(y* | x*, D) at N test points, held in f64.
///
/// Every inference method ends in one, and evaluation consumes only this type. The variants are
/// public for matching (`Predictive::Gaussian { mean, var, .. }`) but can only be built through
/// the validating constructors, so the invariants below always hold.
///
/// - [`Gaussian`](Predictive::Gaussian): y_nk ~ N(mean_nk, var_nk), outputs independent.
/// - [`GaussianMixture`](Predictive::GaussianMixture): p(y_n) = Σ_s w_s Π_k N(y_nk; μ_snk, v_snk)
///   — what ensembles, MC samples and MCMC chains give for regression. A mixture of Gaussians is
///   not Gaussian, so it is kept as a mixture: [`log_lik`](Predictive::log_lik) is the log of the
///   mixture density, not of a moment-matched Gaussian.
/// - [`Categorical`](Predictive::Categorical): p(y_n = c) = probs_nc. A mixture of categoricals
///   is the categorical of the averaged probabilities, so mixtures stay in this variant.
///
/// Binary (Bernoulli) predictives are categorical over the classes {0, 1}.
///
/// ```
/// use bdl_likelihoods::Predictive;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_likelihoods::Error> {
/// let dev = Device::Cpu;
/// // Two ensemble members predicting one output at one point.
/// let a = Predictive::gaussian(&Tensor::new(&[[0.0f64]], &dev)?, &Tensor::new(&[[1.0f64]], &dev)?)?;
/// let b = Predictive::gaussian(&Tensor::new(&[[2.0f64]], &dev)?, &Tensor::new(&[[1.0f64]], &dev)?)?;
/// let ens = Predictive::mixture(&[a, b])?;
/// assert_eq!(ens.mean()?.to_vec2::<f64>()?, [[1.0]]);
/// // Law of total variance: E[var] + Var[mean] = 1 + 1.
/// assert_eq!(ens.variance()?.to_vec2::<f64>()?, [[2.0]]);
/// // Per-point log-likelihood: log of the mixture density at y = 1.
/// let ll = ens.log_lik(&Tensor::new(&[1.0f64], &dev)?)?.to_vec1::<f64>()?;
/// assert!((ll[0] - (-0.5 - 0.5 * (2.0 * std::f64::consts::PI).ln())).abs() < 1e-12);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub enum Predictive {
    /// Independent Gaussians per point and output.
    #[non_exhaustive]
    Gaussian {
        /// Means, `[N, K]`, f64.
        mean: Tensor,
        /// Variances, `[N, K]`, f64, each `> 0`.
        var: Tensor,
    },
    /// A finite mixture of independent Gaussians, one per component s.
    #[non_exhaustive]
    GaussianMixture {
        /// Mixture weights, `[S]`, f64, positive, summing to 1.
        weights: Tensor,
        /// Component means, `[S, N, K]`, f64.
        means: Tensor,
        /// Component variances, `[S, N, K]`, f64, each `> 0`.
        vars: Tensor,
    },
    /// Class probabilities.
    #[non_exhaustive]
    Categorical {
        /// Probabilities, `[N, C]`, f64, rows non-negative and summing to 1.
        probs: Tensor,
    },
}

impl Predictive {
    /// A Gaussian predictive with `mean` and `var` of shape `[N, K]` (f32 or f64, finite,
    /// `var > 0`), converted to f64.
    pub fn gaussian(mean: &Tensor, var: &Tensor) -> Result<Self> {
        let (n, k) = check::outputs(mean, "mean", None)?;
        Ok(Self::Gaussian {
            mean: mean.to_dtype(DType::F64)?.contiguous()?,
            var: positive_variances(var, &[n, k], "var")?,
        })
    }

    /// An equally weighted mixture of S Gaussians, `means` and `vars` of shape `[S, N, K]`
    /// (S ≥ 1; f32 or f64, finite, `vars > 0`), e.g. the outputs of S Monte Carlo samples of the
    /// network with the observation noise as `vars`.
    pub fn gaussian_mixture(means: &Tensor, vars: &Tensor) -> Result<Self> {
        check::float_dtype(means, "means")?;
        let expected = "[S, N, K] with S >= 1".to_owned();
        let (s, n, k) = means
            .dims3()
            .map_err(|_| check::shape_error(means, "means", expected.clone()))?;
        if s == 0 {
            return Err(check::shape_error(means, "means", expected));
        }
        check::values(means, "means")?;
        Ok(Self::GaussianMixture {
            weights: Tensor::full(1.0 / s as f64, s, means.device())?,
            means: means.to_dtype(DType::F64)?.contiguous()?,
            vars: positive_variances(vars, &[s, n, k], "vars")?,
        })
    }

    /// A categorical predictive from class probabilities `[N, C]` (f32 or f64): every row
    /// non-negative and summing to 1 within 1e-3; rows are renormalised exactly in f64.
    pub fn categorical(probs: &Tensor) -> Result<Self> {
        let (n, c) = check::outputs(probs, "probs", None)?;
        let mut values = check::values(probs, "probs")?;
        for (row, p) in values.chunks_mut(c).enumerate() {
            let sum: f64 = p.iter().sum();
            let min = p.iter().copied().fold(f64::INFINITY, f64::min);
            if !(min >= 0.0 && (sum - 1.0).abs() <= PROB_TOL) {
                return Err(Error::NotProbabilities { row, sum, min });
            }
            p.iter_mut().for_each(|x| *x /= sum);
        }
        Ok(Self::Categorical {
            probs: Tensor::from_vec(values, (n, c), probs.device())?,
        })
    }

    /// The equally weighted mixture (1/M) Σ_m p_m of M predictives over the same points: an
    /// ensemble, a set of MC samples or of MCMC draws or chains.
    ///
    /// All components must be of one family. Gaussian components (plain or mixtures) give a
    /// [`GaussianMixture`](Predictive::GaussianMixture) in which component m's own weights are
    /// scaled by 1/M, so nesting mixtures is exact. Categorical components give the categorical
    /// of the averaged probabilities. A mixture of one component is that component.
    pub fn mixture(components: &[Predictive]) -> Result<Self> {
        let (first, rest) = components.split_first().ok_or(Error::EmptyMixture)?;
        if rest.is_empty() {
            return Ok(first.clone());
        }
        let shape = (first.n_points(), first.n_outputs());
        let categorical = first.is_categorical();
        for (i, c) in components.iter().enumerate() {
            if c.is_categorical() != categorical {
                return Err(Error::WrongKind {
                    op: "Predictive::mixture",
                    expected: "components of one family (all Gaussian or all categorical)",
                    actual: c.kind(),
                });
            }
            if (c.n_points(), c.n_outputs()) != shape {
                return Err(Error::Shape {
                    arg: format!("components[{i}]"),
                    expected: format!("{} points with {} outputs", shape.0, shape.1),
                    actual: vec![c.n_points(), c.n_outputs()],
                });
            }
        }
        let scale = 1.0 / components.len() as f64;
        if categorical {
            let mut sum = first.probs()?;
            for c in rest {
                sum = (sum + c.probs()?)?;
            }
            return Ok(Self::Categorical {
                probs: sum.affine(scale, 0.0)?,
            });
        }
        let (mut weights, mut means, mut vars) = (vec![], vec![], vec![]);
        for c in components {
            let (w, m, v) = c.gaussian_components()?;
            weights.push(w.affine(scale, 0.0)?);
            means.push(m);
            vars.push(v);
        }
        Ok(Self::GaussianMixture {
            weights: Tensor::cat(&weights, 0)?,
            means: Tensor::cat(&means, 0)?,
            vars: Tensor::cat(&vars, 0)?,
        })
    }

    /// Number of test points N.
    pub fn n_points(&self) -> usize {
        self.shape().0
    }

    /// Number of outputs K (Gaussian kinds) or classes C (categorical).
    pub fn n_outputs(&self) -> usize {
        self.shape().1
    }

    /// The predictive mean E\[y\], `[N, K]`: the mean, the weighted mean of the component means,
    /// or (categorical) the class probabilities, i.e. the mean of the one-hot y.
    pub fn mean(&self) -> Result<Tensor> {
        match self {
            Self::Gaussian { mean, .. } => Ok(mean.clone()),
            Self::GaussianMixture { weights, means, .. } => weighted_sum(weights, means),
            Self::Categorical { probs } => Ok(probs.clone()),
        }
    }

    /// The predictive variance Var\[y\], `[N, K]`. For a mixture, the law of total variance
    /// Σ_s w_s (v_s + (μ_s − μ̄)²) = E\[Var\] + Var\[E\]; for a categorical, p_c(1 − p_c), the
    /// variance of the one-hot indicator of class c.
    pub fn variance(&self) -> Result<Tensor> {
        match self {
            Self::Gaussian { var, .. } => Ok(var.clone()),
            Self::GaussianMixture {
                weights,
                means,
                vars,
            } => {
                let spread = means.broadcast_sub(&weighted_sum(weights, means)?)?.sqr()?;
                weighted_sum(weights, &(vars + spread)?)
            }
            Self::Categorical { probs } => Ok((probs - probs.sqr()?)?),
        }
    }

    /// The class probabilities `[N, C]` of a categorical predictive.
    pub fn probs(&self) -> Result<Tensor> {
        match self {
            Self::Categorical { probs } => Ok(probs.clone()),
            other => Err(Error::WrongKind {
                op: "Predictive::probs",
                expected: "categorical predictives",
                actual: other.kind(),
            }),
        }
    }

    /// The per-point test log-likelihood log p(y_n), shape `[N]`, f64.
    ///
    /// - Gaussian: Σ_k log N(y_nk; mean_nk, var_nk); `y` is `[N, K]`, or `[N]` when K = 1.
    /// - Gaussian mixture: log Σ_s w_s exp(ℓ_sn) (log-sum-exp), ℓ_sn the Gaussian term of
    ///   component s; with equal weights this is log((1/S) Σ_s p(y_n | θ_s)), the standard
    ///   per-point test log-likelihood of Gal & Ghahramani.
    /// - Categorical: log probs_{n, y_n}; `y` holds labels (u8, u32, i64, or integral floats;
    ///   `[N]` or `[N, 1]`). A probability of exactly 0 gives −∞, which is not clamped.
    pub fn log_lik(&self, y: &Tensor) -> Result<Tensor> {
        match self {
            Self::Categorical { probs } => categorical_log_lik(probs, y),
            Self::Gaussian { .. } | Self::GaussianMixture { .. } => {
                let (weights, ..) = self.gaussian_components()?;
                let ll = self
                    .component_log_lik(y)?
                    .broadcast_add(&weights.log()?.unsqueeze(1)?)?;
                Ok(ll.t()?.contiguous()?.log_sum_exp(1)?)
            }
        }
    }

    /// The per-component, per-point log-likelihoods ℓ_sn = log p_s(y_n), `[S, N]`, f64 (S = 1
    /// for a Gaussian or a categorical). With these, the "joint" test log-likelihood of the Vadam
    /// code, (1/N) log((1/S) Σ_s Π_n p_s(y_n)), is a log-sum-exp over s of Σ_n ℓ_sn.
    pub fn component_log_lik(&self, y: &Tensor) -> Result<Tensor> {
        if let Self::Categorical { probs } = self {
            return Ok(categorical_log_lik(probs, y)?.unsqueeze(0)?);
        }
        let (_, means, vars) = self.gaussian_components()?;
        let (n, k) = self.shape();
        let y = check::real_targets(y, n, k, DType::F64, "y")?;
        let z2 = (means.broadcast_sub(&y.unsqueeze(0)?)?.sqr()? / &vars)?;
        let log_norm = vars.affine(2.0 * PI, 0.0)?.log()?;
        Ok((z2 + log_norm)?.sum(D::Minus1)?.affine(-0.5, 0.0)?)
    }

    /// `(N, K)` of this predictive.
    fn shape(&self) -> (usize, usize) {
        let dims = match self {
            Self::Gaussian { mean, .. } => mean.dims(),
            Self::GaussianMixture { means, .. } => &means.dims()[1..],
            Self::Categorical { probs } => probs.dims(),
        };
        (dims[0], dims[1])
    }

    /// A regression predictive widened about its mean m by `factor` s > 0: a Gaussian's
    /// variance times s²; a mixture's component means m + s(μ_k − m) and variances s² v_k (its
    /// weights kept), so that its mean is unchanged and its total variance s² times its own.
    ///
    /// ```
    /// use bdl_likelihoods::Predictive;
    /// use candle_core::{Device, Tensor};
    /// # fn main() -> Result<(), bdl_likelihoods::Error> {
    /// let dev = &Device::Cpu;
    /// let two = Predictive::gaussian_mixture(
    ///     &Tensor::new(&[[[0.0f64]], [[2.0]]], dev)?,
    ///     &Tensor::new(&[[[1.0f64]], [[1.0]]], dev)?,
    /// )?;
    /// let wide = two.widened(3.0)?;
    /// assert_eq!(wide.mean()?.to_vec2::<f64>()?, [[1.0]]);
    /// assert_eq!(wide.variance()?.to_vec2::<f64>()?, [[9.0 * 2.0]]);
    /// # Ok(()) }
    /// ```
    pub fn widened(&self, factor: f64) -> Result<Self> {
        if !(factor > 0.0 && factor.is_finite()) {
            return Err(Error::InvalidVariance {
                arg: "widening factor".into(),
                index: 0,
                value: factor,
                requirement: "> 0 and finite",
            });
        }
        let s2 = factor * factor;
        match self {
            Self::Gaussian { mean, var } => Ok(Self::Gaussian {
                mean: mean.clone(),
                var: (var * s2)?,
            }),
            Self::GaussianMixture {
                weights,
                means,
                vars,
            } => {
                let m = self.mean()?.unsqueeze(0)?;
                Ok(Self::GaussianMixture {
                    weights: weights.clone(),
                    means: (means.broadcast_sub(&m)? * factor)?.broadcast_add(&m)?,
                    vars: (vars * s2)?,
                })
            }
            Self::Categorical { .. } => Err(Error::WrongKind {
                op: "Predictive::widened",
                expected: "a regression predictive",
                actual: self.kind(),
            }),
        }
    }

    /// Whether this is a categorical predictive (class probabilities).
    pub fn is_categorical(&self) -> bool {
        matches!(self, Self::Categorical { .. })
    }

    /// A name of the variant, for errors.
    fn kind(&self) -> &'static str {
        match self {
            Self::Gaussian { .. } => "a Gaussian predictive",
            Self::GaussianMixture { .. } => "a Gaussian mixture predictive",
            Self::Categorical { .. } => "a categorical predictive",
        }
    }

    /// `(weights [S], means [S, N, K], vars [S, N, K])`, a Gaussian being a mixture of one.
    fn gaussian_components(&self) -> Result<(Tensor, Tensor, Tensor)> {
        match self {
            Self::Gaussian { mean, var } => Ok((
                Tensor::ones(1, DType::F64, mean.device())?,
                mean.unsqueeze(0)?,
                var.unsqueeze(0)?,
            )),
            Self::GaussianMixture {
                weights,
                means,
                vars,
            } => Ok((weights.clone(), means.clone(), vars.clone())),
            Self::Categorical { .. } => Err(Error::WrongKind {
                op: "Gaussian components",
                expected: "Gaussian predictives",
                actual: self.kind(),
            }),
        }
    }
}

/// Variances of shape `shape` (f32 or f64, finite, each > 0), as a contiguous f64 tensor.
fn positive_variances(var: &Tensor, shape: &[usize], arg: &str) -> Result<Tensor> {
    check::float_dtype(var, arg)?;
    if var.dims() != shape {
        return Err(check::shape_error(var, arg, format!("{shape:?}")));
    }
    let values = check::values(var, arg)?;
    check::variances(&values, arg, true)?;
    Ok(Tensor::from_vec(values, shape, var.device())?)
}

/// Σ_s w_s t_s for `w` `[S]` and `t` `[S, N, K]`, as one `[1, S] × [S, N·K]` product.
fn weighted_sum(w: &Tensor, t: &Tensor) -> Result<Tensor> {
    let (s, n, k) = t.dims3()?;
    let sum = w.reshape((1, s))?.matmul(&t.reshape((s, n * k))?)?;
    Ok(sum.reshape((n, k))?)
}

/// log probs_{n, y_n}, `[N]`.
fn categorical_log_lik(probs: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (n, c) = probs.dims2()?;
    let labels = check::labels(y, n, c, "y")?;
    let index = Tensor::from_vec(labels, (n, 1), probs.device())?;
    Ok(probs.gather(&index, 1)?.squeeze(1)?.log()?)
}
