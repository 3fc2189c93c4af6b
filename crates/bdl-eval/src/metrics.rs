//! Metrics of predictive distributions on test data.

use bdl_likelihoods::Predictive;
use candle_core::{DType, Tensor};

use crate::{Error, Result};

fn to_f64(t: &Tensor) -> Result<Vec<f64>> {
    Ok(t.flatten_all()?.to_dtype(DType::F64)?.to_vec1()?)
}

/// The mean per-point test log-likelihood (1/N) Σ_n log p(y_n) (for mixtures, of the mixture
/// density: the standard definition of Gal & Ghahramani).
pub fn mean_log_lik(pred: &Predictive, y: &Tensor) -> Result<f64> {
    let ll = to_f64(&pred.log_lik(y)?)?;
    Ok(ll.iter().sum::<f64>() / ll.len() as f64)
}

/// The joint test log-likelihood of the Vadam code, (1/N) log((1/S) Σ_s Π_n p(y_n | θ_s)):
/// the mixture over components s of the whole test set's likelihood (not the standard per-point
/// definition, [`mean_log_lik`]; for a single Gaussian or categorical predictive the two agree).
///
/// ```
/// use bdl_likelihoods::Predictive;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Components N(0, 1) and N(2, 1) at two points y = (0, 2).
/// let means = Tensor::new(&[[[0.0f64], [0.0]], [[2.0], [2.0]]], &Device::Cpu)?;
/// let pred = Predictive::gaussian_mixture(&means, &means.ones_like()?)?;
/// let y = Tensor::new(&[[0.0f64], [2.0]], &Device::Cpu)?;
/// let joint = bdl_eval::metrics::joint_log_lik(&pred, &y)?;
/// let per_point = bdl_eval::metrics::mean_log_lik(&pred, &y)?;
/// assert!(joint < per_point); // neither component fits both points
/// # Ok(()) }
/// ```
pub fn joint_log_lik(pred: &Predictive, y: &Tensor) -> Result<f64> {
    let components: Vec<Vec<f64>> = pred.component_log_lik(y)?.to_dtype(DType::F64)?.to_vec2()?;
    let n = components.first().map_or(0, Vec::len) as f64;
    let totals: Vec<f64> = components.iter().map(|c| c.iter().sum()).collect();
    let top = totals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = top + totals.iter().map(|t| (t - top).exp()).sum::<f64>().ln();
    Ok((lse - (totals.len() as f64).ln()) / n)
}

/// The root mean squared error of the predictive mean, √((1/NK) Σ (E(y) − y)²).
pub fn rmse(pred: &Predictive, y: &Tensor) -> Result<f64> {
    let mean = to_f64(&pred.mean()?)?;
    let y = to_f64(y)?;
    if mean.len() != y.len() {
        return Err(Error::InvalidInput(format!(
            "{} predictive means for {} targets",
            mean.len(),
            y.len()
        )));
    }
    let sse: f64 = mean.iter().zip(&y).map(|(m, t)| (m - t).powi(2)).sum();
    Ok((sse / y.len() as f64).sqrt())
}

/// Class probabilities `[N, C]` and labels of a categorical predictive, checked.
fn probs_and_labels(pred: &Predictive, labels: &Tensor) -> Result<(Vec<Vec<f64>>, Vec<usize>)> {
    let probs: Vec<Vec<f64>> = pred.probs()?.to_vec2()?;
    let labels: Vec<usize> = to_f64(labels)?.iter().map(|&l| l as usize).collect();
    let c = probs.first().map_or(0, Vec::len);
    if probs.len() != labels.len() || labels.iter().any(|&l| l >= c) {
        return Err(Error::InvalidInput(format!(
            "{} labels in 0..{c} needed for {} points",
            probs.len(),
            probs.len()
        )));
    }
    Ok((probs, labels))
}

fn argmax(p: &[f64]) -> usize {
    p.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
        .map_or(0, |(i, _)| i)
}

/// The fraction of points whose most probable class is the label.
pub fn accuracy(pred: &Predictive, labels: &Tensor) -> Result<f64> {
    let (probs, labels) = probs_and_labels(pred, labels)?;
    let hits = probs
        .iter()
        .zip(&labels)
        .filter(|(p, l)| argmax(p) == **l)
        .count();
    Ok(hits as f64 / labels.len() as f64)
}

/// The Brier score (1/N) Σ_n Σ_c (p_nc − 𝟙[y_n = c])².
pub fn brier(pred: &Predictive, labels: &Tensor) -> Result<f64> {
    let (probs, labels) = probs_and_labels(pred, labels)?;
    let total: f64 = probs
        .iter()
        .zip(&labels)
        .map(|(p, &l)| {
            p.iter()
                .enumerate()
                .map(|(c, pc)| (pc - f64::from(u8::from(c == l))).powi(2))
                .sum::<f64>()
        })
        .sum();
    Ok(total / labels.len() as f64)
}

/// The expected calibration error with `bins` equal-width confidence bins:
/// Σ_b (|B_b|/N) |acc(B_b) − conf(B_b)|, confidence = the largest class probability.
pub fn expected_calibration_error(pred: &Predictive, labels: &Tensor, bins: usize) -> Result<f64> {
    let (probs, labels) = probs_and_labels(pred, labels)?;
    let bins = bins.max(1);
    let mut count = vec![0usize; bins];
    let mut hits = vec![0.0; bins];
    let mut conf = vec![0.0; bins];
    for (p, &l) in probs.iter().zip(&labels) {
        let c = argmax(p);
        let b = ((p[c] * bins as f64) as usize).min(bins - 1);
        count[b] += 1;
        hits[b] += f64::from(u8::from(c == l));
        conf[b] += p[c];
    }
    let n = labels.len() as f64;
    Ok((0..bins)
        .filter(|&b| count[b] > 0)
        .map(|b| (hits[b] - conf[b]).abs() / n)
        .sum())
}

/// A mean with its standard error √(s²/n) over repeats (splits, seeds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanSe {
    /// The sample mean.
    pub mean: f64,
    /// The standard error of the mean (0 for a single value).
    pub se: f64,
}

impl MeanSe {
    /// The mean and standard error of `values`.
    ///
    /// ```
    /// let m = bdl_eval::metrics::MeanSe::of(&[1.0, 2.0, 3.0]);
    /// assert_eq!(m.mean, 2.0);
    /// assert!((m.se - (1.0f64 / 3.0).sqrt()).abs() < 1e-15);
    /// ```
    pub fn of(values: &[f64]) -> Self {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let se = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt()
        } else {
            0.0
        };
        Self { mean, se }
    }
}

impl std::fmt::Display for MeanSe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = f.precision().unwrap_or(3);
        write!(f, "{:.p$} ± {:.p$}", self.mean, self.se)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn classification_metrics_on_a_hand_computed_case() {
        let dev = Device::Cpu;
        let probs = Tensor::new(&[[0.9f64, 0.1], [0.4, 0.6], [0.7, 0.3]], &dev).unwrap();
        let pred = Predictive::categorical(&probs).unwrap();
        let labels = Tensor::new(&[0u32, 0, 0], &dev).unwrap();
        assert!((accuracy(&pred, &labels).unwrap() - 2.0 / 3.0).abs() < 1e-15);
        // Brier: (0.01 + 0.01) + (0.36 + 0.36) + (0.09 + 0.09), over 3.
        assert!((brier(&pred, &labels).unwrap() - 0.92 / 3.0).abs() < 1e-12);
        // Bins of width 0.1: confidences 0.9 (bin 9, hit), 0.6 (bin 6, miss), 0.7 (bin 7, hit):
        // (|1 − 0.9| + |0 − 0.6| + |1 − 0.7|) / 3.
        let ece = expected_calibration_error(&pred, &labels, 10).unwrap();
        assert!((ece - 1.0 / 3.0).abs() < 1e-12, "{ece}");
        assert!(accuracy(&pred, &Tensor::new(&[0u32, 2, 0], &dev).unwrap()).is_err());
    }

    #[test]
    fn regression_metrics_against_closed_forms() {
        let dev = Device::Cpu;
        let mean = Tensor::new(&[[1.0f64], [2.0]], &dev).unwrap();
        let var = Tensor::new(&[[1.0f64], [4.0]], &dev).unwrap();
        let pred = Predictive::gaussian(&mean, &var).unwrap();
        let y = Tensor::new(&[[2.0f64], [2.0]], &dev).unwrap();
        assert!((rmse(&pred, &y).unwrap() - 0.5f64.sqrt()).abs() < 1e-15);
        let ln2pi = (2.0 * std::f64::consts::PI).ln();
        let expected = 0.5 * ((-0.5 * ln2pi - 0.5) + (-0.5 * ln2pi - 0.5 * 4f64.ln()));
        assert!((mean_log_lik(&pred, &y).unwrap() - expected).abs() < 1e-12);
    }
}
