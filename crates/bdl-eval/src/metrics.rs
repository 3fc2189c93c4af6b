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

/// One equal-width bin of a reliability diagram: the points whose confidence (largest class
/// probability) falls in [lower, upper), their number, mean confidence and accuracy.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReliabilityBin {
    /// The bin's lower edge.
    pub lower: f64,
    /// The bin's upper edge (the last bin includes 1).
    pub upper: f64,
    /// Points in the bin.
    pub count: usize,
    /// Their mean confidence (0 for an empty bin).
    pub confidence: f64,
    /// The fraction of them whose most probable class is the label (0 for an empty bin).
    pub accuracy: f64,
}

/// The reliability diagram of a categorical predictive: `bins` equal-width confidence bins.
///
/// ```
/// use bdl_eval::metrics::reliability;
/// use bdl_likelihoods::Predictive;
/// use candle_core::{Device, Tensor};
/// let probs = Tensor::new(&[[0.9f64, 0.1], [0.8, 0.2], [0.4, 0.6]], &Device::Cpu).unwrap();
/// let pred = Predictive::categorical(&probs).unwrap();
/// let labels = Tensor::new(&[0u32, 1, 1], &Device::Cpu).unwrap();
/// let bins = reliability(&pred, &labels, 10).unwrap();
/// assert_eq!((bins[9].count, bins[9].accuracy), (1, 1.0)); // confidence 0.9: right
/// assert_eq!((bins[8].count, bins[8].accuracy), (1, 0.0)); // confidence 0.8: wrong
/// assert_eq!((bins[6].count, bins[6].confidence), (1, 0.6));
/// ```
pub fn reliability(pred: &Predictive, labels: &Tensor, bins: usize) -> Result<Vec<ReliabilityBin>> {
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
    Ok((0..bins)
        .map(|b| {
            let n = count[b].max(1) as f64;
            ReliabilityBin {
                lower: b as f64 / bins as f64,
                upper: (b + 1) as f64 / bins as f64,
                count: count[b],
                confidence: conf[b] / n,
                accuracy: hits[b] / n,
            }
        })
        .collect())
}

/// The expected calibration error with `bins` equal-width confidence bins:
/// Σ_b (|B_b|/N) |acc(B_b) − conf(B_b)|, confidence = the largest class probability.
pub fn expected_calibration_error(pred: &Predictive, labels: &Tensor, bins: usize) -> Result<f64> {
    let diagram = reliability(pred, labels, bins)?;
    let n: usize = diagram.iter().map(|b| b.count).sum();
    Ok(diagram
        .iter()
        .map(|b| b.count as f64 * (b.accuracy - b.confidence).abs() / n as f64)
        .sum())
}

/// The predictive entropy H[p(y | x_n)] = −Σ_c p_nc log p_nc of each point of a categorical
/// predictive (0 log 0 = 0), in nats: the usual score for telling out-of-distribution inputs.
pub fn predictive_entropy(pred: &Predictive) -> Result<Vec<f64>> {
    let probs: Vec<Vec<f64>> = pred.probs()?.to_vec2()?;
    Ok(probs
        .iter()
        .map(|p| {
            -p.iter()
                .filter(|&&q| q > 0.0)
                .map(|q| q * q.ln())
                .sum::<f64>()
        })
        .collect())
}

/// The area under the ROC curve of telling `outside` scores from `inside` ones, a higher score
/// meaning "outside": P(score_out > score_in) + ½ P(score_out = score_in), the Mann–Whitney
/// statistic, computed from ranks in O((n + m) log(n + m)).
///
/// ```
/// use bdl_eval::metrics::auroc;
/// assert_eq!(auroc(&[0.1, 0.2], &[0.3, 0.4]).unwrap(), 1.0);   // separated
/// assert_eq!(auroc(&[0.1, 0.2], &[0.1, 0.2]).unwrap(), 0.5);   // identical
/// assert_eq!(auroc(&[0.3, 0.4], &[0.1, 0.2]).unwrap(), 0.0);   // reversed
/// ```
pub fn auroc(inside: &[f64], outside: &[f64]) -> Result<f64> {
    if inside.is_empty() || outside.is_empty() {
        return Err(Error::InvalidInput(format!(
            "AUROC needs scores on both sides, got {} inside and {} outside",
            inside.len(),
            outside.len()
        )));
    }
    if let Some(bad) = inside.iter().chain(outside).find(|v| v.is_nan()) {
        return Err(Error::InvalidInput(format!("AUROC of a NaN score ({bad})")));
    }
    let mut all: Vec<(f64, bool)> = inside
        .iter()
        .map(|&v| (v, false))
        .chain(outside.iter().map(|&v| (v, true)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The sum of the outside scores' ranks (1-based), ties sharing their mean rank.
    let mut rank_sum = 0.0;
    let mut start = 0;
    while start < all.len() {
        let end = start
            + all[start..]
                .iter()
                .take_while(|v| v.0 == all[start].0)
                .count();
        let mean_rank = (start + end + 1) as f64 / 2.0;
        rank_sum += mean_rank * all[start..end].iter().filter(|v| v.1).count() as f64;
        start = end;
    }
    let (n_in, n_out) = (inside.len() as f64, outside.len() as f64);
    Ok((rank_sum - n_out * (n_out + 1.0) / 2.0) / (n_in * n_out))
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

    #[test]
    fn entropy_of_uniform_and_certain_predictions() {
        let probs = Tensor::new(
            &[[0.25f64, 0.25, 0.25, 0.25], [0.0, 1.0, 0.0, 0.0]],
            &Device::Cpu,
        )
        .unwrap();
        let h = predictive_entropy(&Predictive::categorical(&probs).unwrap()).unwrap();
        assert!((h[0] - 4f64.ln()).abs() < 1e-15 && h[1] == 0.0, "{h:?}");
    }

    /// The rank formula against the definition (all n·m pairs, ties ½) on random integer
    /// scores with many ties; and two large samples of one distribution give 0.5 within four
    /// standard errors of the Mann–Whitney statistic, √((n + m + 1)/(12 n m)) ≈ 0.0065 here.
    #[test]
    fn auroc_is_the_pair_probability() {
        use rand::Rng;
        let mut rng = bdl_tensor::Seed(11).rng();
        for _ in 0..200 {
            let (n, m) = (rng.random_range(1..20), rng.random_range(1..20));
            let a: Vec<f64> = (0..n)
                .map(|_| f64::from(rng.random_range(0..5u8)))
                .collect();
            let b: Vec<f64> = (0..m)
                .map(|_| f64::from(rng.random_range(0..5u8)))
                .collect();
            let pairs: f64 = b
                .iter()
                .flat_map(|o| {
                    a.iter().map(move |i| {
                        if o > i {
                            1.0
                        } else if o == i {
                            0.5
                        } else {
                            0.0
                        }
                    })
                })
                .sum();
            let direct = pairs / (n * m) as f64;
            assert!((auroc(&a, &b).unwrap() - direct).abs() < 1e-12);
        }
        let a: Vec<f64> = (0..2000).map(|_| rng.random::<f64>()).collect();
        let b: Vec<f64> = (0..2000).map(|_| rng.random::<f64>()).collect();
        let se = (4001.0f64 / (12.0 * 2000.0 * 2000.0)).sqrt();
        assert!((auroc(&a, &b).unwrap() - 0.5).abs() < 4.0 * se);
        assert!(auroc(&[], &[1.0]).is_err() && auroc(&[f64::NAN], &[1.0]).is_err());
    }
}
