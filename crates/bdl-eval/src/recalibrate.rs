//! Recalibration of any predictive on held-out data, and what a posterior's disagreement says.
//!
//! - [`Temperature`]: temperature scaling of a categorical predictive, p_T ∝ p^{1/T} (the
//!   log-probabilities as logits, so it applies to any categorical predictive: a softmax, a
//!   probit, a mixture), T by the held-out negative log-likelihood.
//! - [`Widening`]: the regression counterpart, every predictive widened about its mean by a
//!   factor s (a Gaussian's σ, a mixture's components' offsets and σ's: the total variance times
//!   s²), s by the held-out negative log-likelihood.
//! - [`ConformalSets`], [`ConformalIntervals`]: split conformal prediction (Vovk et al. 2005;
//!   the score 1 − p̂_y of Sadinle et al. 2019 for classes, the standardised residual
//!   |y − μ|/σ for regression): from n calibration points, sets or intervals that contain the
//!   truth with probability ≥ 1 − α on exchangeable test points.
//! - [`mutual_information`]: the BALD score I[y; θ | x] = H[E_θ p(y | x, θ)] − E_θ H[p(y | x, θ)]
//!   from a posterior's component predictives, beside the predictive entropy for OOD.

use bdl_likelihoods::Predictive;
use candle_core::{DType, Device, Tensor};

use crate::metrics::mean_log_lik;
use crate::{Error, Result};

/// Golden-section search for the minimum of a unimodal `f` on [lo, hi] to a width of 10⁻⁶.
fn minimise(f: impl Fn(f64) -> Result<f64>, mut lo: f64, mut hi: f64) -> Result<f64> {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (hi - g * (hi - lo), lo + g * (hi - lo));
    let (mut fa, mut fb) = (f(a)?, f(b)?);
    while hi - lo > 1e-6 {
        if fa < fb {
            hi = b;
            (b, fb) = (a, fa);
            a = hi - g * (hi - lo);
            fa = f(a)?;
        } else {
            lo = a;
            (a, fa) = (b, fb);
            b = lo + g * (hi - lo);
            fb = f(b)?;
        }
    }
    Ok((lo + hi) / 2.0)
}

/// The search range of log T and log s: factors from e⁻⁵ to e⁵.
const LOG_RANGE: f64 = 5.0;

/// Temperature scaling of categorical predictives.
///
/// ```
/// use bdl_eval::recalibrate::Temperature;
/// use bdl_likelihoods::Predictive;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_eval::Error> {
/// let dev = &Device::Cpu;
/// let pred = Predictive::categorical(&Tensor::new(&[[0.9f64, 0.1], [0.8, 0.2]], dev)?)?;
/// // At T = 1 nothing changes; a higher T flattens.
/// let same = Temperature { temperature: 1.0 }.apply(&pred)?;
/// assert!((same.probs()?.to_vec2::<f64>()?[0][0] - 0.9).abs() < 1e-12);
/// let flat = Temperature { temperature: 1e6 }.apply(&pred)?;
/// assert!((flat.probs()?.to_vec2::<f64>()?[0][0] - 0.5).abs() < 1e-5);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Temperature {
    /// T > 0.
    pub temperature: f64,
}

impl Temperature {
    /// The T of least negative log-likelihood of `labels` under `pred` scaled (held-out data,
    /// not the training set), searched over e⁻⁵ … e⁵.
    pub fn fit(pred: &Predictive, labels: &Tensor) -> Result<Self> {
        let log_t = minimise(
            |log_t| {
                let scaled = Self {
                    temperature: log_t.exp(),
                }
                .apply(pred)?;
                Ok(-mean_log_lik(&scaled, labels)?)
            },
            -LOG_RANGE,
            LOG_RANGE,
        )?;
        Ok(Self {
            temperature: log_t.exp(),
        })
    }

    /// `pred` at this temperature: p_c ∝ exp(log p_c / T).
    pub fn apply(&self, pred: &Predictive) -> Result<Predictive> {
        let probs: Vec<Vec<f64>> = pred.probs()?.to_vec2()?;
        let scaled: Vec<f64> = probs
            .iter()
            .flat_map(|p| {
                let logits: Vec<f64> = p
                    .iter()
                    .map(|&q| q.max(f64::MIN_POSITIVE).ln() / self.temperature)
                    .collect();
                let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
                let z: f64 = e.iter().sum();
                e.into_iter().map(move |v| v / z)
            })
            .collect();
        let shape = (probs.len(), probs.first().map_or(0, Vec::len));
        Ok(Predictive::categorical(&Tensor::from_vec(
            scaled,
            shape,
            &Device::Cpu,
        )?)?)
    }
}

/// Widening of regression predictives about their means by a factor s.
///
/// ```
/// use bdl_eval::recalibrate::Widening;
/// use bdl_likelihoods::Predictive;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_eval::Error> {
/// let dev = &Device::Cpu;
/// let pred = Predictive::gaussian(&Tensor::new(&[[0.0f64], [1.0]], dev)?, &Tensor::new(&[[1.0f64], [4.0]], dev)?)?;
/// let wide = Widening { factor: 2.0 }.apply(&pred)?;
/// assert_eq!(wide.variance()?.to_vec2::<f64>()?, [[4.0], [16.0]]);
/// assert_eq!(wide.mean()?.to_vec2::<f64>()?, [[0.0], [1.0]]);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Widening {
    /// s > 0.
    pub factor: f64,
}

impl Widening {
    /// The s of least negative log-likelihood of `y` under `pred` widened (held-out data),
    /// searched over e⁻⁵ … e⁵.
    pub fn fit(pred: &Predictive, y: &Tensor) -> Result<Self> {
        let log_s = minimise(
            |log_s| {
                let wide = Self {
                    factor: log_s.exp(),
                }
                .apply(pred)?;
                Ok(-mean_log_lik(&wide, y)?)
            },
            -LOG_RANGE,
            LOG_RANGE,
        )?;
        Ok(Self {
            factor: log_s.exp(),
        })
    }

    /// `pred` widened about its mean ([`Predictive::widened`]): its total variance times s².
    pub fn apply(&self, pred: &Predictive) -> Result<Predictive> {
        Ok(pred.widened(self.factor)?)
    }
}

/// The conformal quantile: the ⌈(n + 1)(1 − α)⌉-th smallest of the n calibration scores
/// (infinite when that rank exceeds n: too few points for this α).
fn conformal_quantile(mut scores: Vec<f64>, alpha: f64) -> Result<f64> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(Error::InvalidInput(format!(
            "α = {alpha}: it must be in (0, 1)"
        )));
    }
    if scores.is_empty() {
        return Err(Error::InvalidInput("no calibration points".into()));
    }
    scores.sort_by(f64::total_cmp);
    let n = scores.len();
    let rank = ((n + 1) as f64 * (1.0 - alpha)).ceil() as usize;
    Ok(if rank > n {
        f64::INFINITY
    } else {
        scores[rank - 1]
    })
}

/// Split conformal prediction sets for classes: C(x) = {c : 1 − p̂_c(x) ≤ q̂}.
///
/// ```
/// use bdl_eval::recalibrate::ConformalSets;
/// use bdl_likelihoods::Predictive;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_eval::Error> {
/// let dev = &Device::Cpu;
/// let cal = Predictive::categorical(&Tensor::new(&[[0.7f64, 0.3], [0.6, 0.4], [0.2, 0.8]], dev)?)?;
/// let labels = Tensor::new(&[0u32, 1, 1], dev)?;
/// // Scores 0.3, 0.6, 0.2; α = 0.5 takes the ⌈4 · 0.5⌉ = 2nd smallest, 0.3.
/// let sets = ConformalSets::calibrate(&cal, &labels, 0.5)?;
/// assert!((sets.threshold - 0.3).abs() < 1e-12);
/// assert_eq!(sets.sets(&cal)?, [vec![0], vec![], vec![1]]);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConformalSets {
    /// q̂: a class is in the set when 1 − p̂_c ≤ q̂.
    pub threshold: f64,
}

impl ConformalSets {
    /// q̂ from the calibration predictive `pred` and its true `labels` (u32), for coverage
    /// ≥ 1 − `alpha`.
    pub fn calibrate(pred: &Predictive, labels: &Tensor, alpha: f64) -> Result<Self> {
        let probs: Vec<Vec<f64>> = pred.probs()?.to_vec2()?;
        let labels = labels_of(labels, probs.len())?;
        let scores = probs
            .iter()
            .zip(&labels)
            .map(|(p, &y)| {
                p.get(y)
                    .map(|q| 1.0 - q)
                    .ok_or_else(|| Error::InvalidInput(format!("label {y} of {} classes", p.len())))
            })
            .collect::<Result<Vec<f64>>>()?;
        Ok(Self {
            threshold: conformal_quantile(scores, alpha)?,
        })
    }

    /// The set of every point of `pred`, classes ascending.
    pub fn sets(&self, pred: &Predictive) -> Result<Vec<Vec<usize>>> {
        let probs: Vec<Vec<f64>> = pred.probs()?.to_vec2()?;
        Ok(probs
            .iter()
            .map(|p| {
                (0..p.len())
                    .filter(|&c| 1.0 - p[c] <= self.threshold)
                    .collect()
            })
            .collect())
    }
}

/// Split conformal intervals for regression: μ ± q̂ σ, q̂ the conformal quantile of the
/// standardised residuals |y − μ|/σ (μ, σ² the predictive's mean and variance).
///
/// ```
/// use bdl_eval::recalibrate::ConformalIntervals;
/// use bdl_likelihoods::Predictive;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_eval::Error> {
/// let dev = &Device::Cpu;
/// let pred = Predictive::gaussian(&Tensor::new(&[[0.0f64], [0.0], [0.0]], dev)?, &Tensor::new(&[[1.0f64], [1.0], [4.0]], dev)?)?;
/// let y = Tensor::new(&[[0.5f64], [-1.5], [1.0]], dev)?;
/// // Residuals 0.5, 1.5, 0.5; α = 0.5: the 2nd smallest, 0.5.
/// let conformal = ConformalIntervals::calibrate(&pred, &y, 0.5)?;
/// assert_eq!(conformal.scale, 0.5);
/// assert_eq!(conformal.intervals(&pred)?[2], (-1.0, 1.0));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConformalIntervals {
    /// q̂: the interval's half-width in predictive standard deviations.
    pub scale: f64,
}

impl ConformalIntervals {
    /// q̂ from the calibration predictive `pred` and targets `y` (one output), for coverage
    /// ≥ 1 − `alpha`.
    pub fn calibrate(pred: &Predictive, y: &Tensor, alpha: f64) -> Result<Self> {
        let (mean, sd) = mean_and_sd(pred)?;
        let y: Vec<f64> = y.flatten_all()?.to_dtype(DType::F64)?.to_vec1()?;
        if y.len() != mean.len() {
            return Err(Error::InvalidInput(format!(
                "{} targets for {} predictions",
                y.len(),
                mean.len()
            )));
        }
        let scores = y
            .iter()
            .zip(mean.iter().zip(&sd))
            .map(|(y, (m, s))| (y - m).abs() / s)
            .collect();
        Ok(Self {
            scale: conformal_quantile(scores, alpha)?,
        })
    }

    /// The interval (lo, hi) of every point of `pred`.
    pub fn intervals(&self, pred: &Predictive) -> Result<Vec<(f64, f64)>> {
        let (mean, sd) = mean_and_sd(pred)?;
        Ok(mean
            .iter()
            .zip(&sd)
            .map(|(m, s)| (m - self.scale * s, m + self.scale * s))
            .collect())
    }
}

/// A one-output regression predictive's means and standard deviations.
fn mean_and_sd(pred: &Predictive) -> Result<(Vec<f64>, Vec<f64>)> {
    if pred.is_categorical() || pred.n_outputs() != 1 {
        return Err(Error::InvalidInput(
            "conformal intervals are for one-output regression predictives".into(),
        ));
    }
    let mean = pred.mean()?.flatten_all()?.to_vec1::<f64>()?;
    let sd = pred
        .variance()?
        .flatten_all()?
        .to_vec1::<f64>()?
        .into_iter()
        .map(f64::sqrt)
        .collect();
    Ok((mean, sd))
}

/// u32 labels, one per point.
fn labels_of(labels: &Tensor, n: usize) -> Result<Vec<usize>> {
    let labels: Vec<u32> = labels.flatten_all()?.to_vec1()?;
    if labels.len() != n {
        return Err(Error::InvalidInput(format!(
            "{} labels for {n} predictions",
            labels.len()
        )));
    }
    Ok(labels.into_iter().map(|c| c as usize).collect())
}

/// The mutual information between the label and the parameters at each point, in nats:
/// H\[(1/S) Σ_s p_s\] − (1/S) Σ_s H\[p_s\], from the class probabilities of S posterior components
/// `[S, N, C]` (weight draws, ensemble members, dropout masks): zero where they agree, large
/// where they disagree (epistemic uncertainty, BALD).
///
/// ```
/// use bdl_eval::recalibrate::mutual_information;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_eval::Error> {
/// // Two components, certain of different classes at the first point, agreeing at the second.
/// let probs = Tensor::new(&[[[1.0f64, 0.0], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]], &Device::Cpu)?;
/// let mi = mutual_information(&probs)?;
/// assert!((mi[0] - 2f64.ln()).abs() < 1e-12 && mi[1].abs() < 1e-12);
/// # Ok(()) }
/// ```
pub fn mutual_information(component_probs: &Tensor) -> Result<Vec<f64>> {
    let (s, n, c) = component_probs.dims3()?;
    let p: Vec<f64> = component_probs
        .flatten_all()?
        .to_dtype(DType::F64)?
        .to_vec1()?;
    let entropy = |q: &mut dyn Iterator<Item = f64>| -> f64 {
        -q.filter(|&v| v > 0.0).map(|v| v * v.ln()).sum::<f64>()
    };
    Ok((0..n)
        .map(|i| {
            let at = |k: usize, j: usize| p[(k * n + i) * c + j];
            let mean =
                entropy(&mut (0..c).map(|j| (0..s).map(|k| at(k, j)).sum::<f64>() / s as f64));
            let each = (0..s)
                .map(|k| entropy(&mut (0..c).map(|j| at(k, j))))
                .sum::<f64>()
                / s as f64;
            (mean - each).max(0.0)
        })
        .collect())
}
