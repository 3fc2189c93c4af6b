//! Effective sample size of a chain's draws, by Geyer's initial monotone sequence estimator.
//!
//! For a stationary scalar chain x₁ … x_n with autocorrelations ρ_k, the integrated
//! autocorrelation time is τ = 1 + 2 Σ_{k≥1} ρ_k and ESS = n/τ. Geyer (1992) sums the pairs
//! P_m = ρ_{2m} + ρ_{2m+1} (positive and decreasing for a reversible chain) while they stay
//! positive, each replaced by the smallest before it: τ̂ = −1 + 2 Σ_{m<M} min_{j≤m} P_j, with
//! M the first m where P_m ≤ 0. The autocovariances come from one FFT of the zero-padded,
//! centred chain, O(n log n).

use bdl_tensor::ParamLayout;

/// The effective sample size of `draws` (one scalar per iteration); `None` for fewer than four
/// draws or a chain that never moved (zero variance).
///
/// ```
/// use bdl_mcmc::effective_sample_size;
/// use rand::Rng;
/// // Independent draws: about n.
/// let mut rng = bdl_tensor::Seed(0).rng();
/// let iid: Vec<f64> = (0..4000).map(|_| rng.random::<f64>()).collect();
/// let ess = effective_sample_size(&iid).unwrap();
/// assert!((ess / 4000.0 - 1.0).abs() < 0.15, "{ess}");
/// assert_eq!(effective_sample_size(&[1.0; 50]), None);
/// ```
pub fn effective_sample_size(draws: &[f64]) -> Option<f64> {
    let n = draws.len();
    if n < 4 {
        return None;
    }
    let gamma = autocovariance(draws);
    if gamma[0].is_nan() || gamma[0] <= 0.0 {
        return None;
    }
    let mut tau = -1.0;
    let mut smallest = f64::INFINITY;
    for m in 0..n / 2 {
        let pair = (gamma[2 * m] + gamma[2 * m + 1]) / gamma[0];
        if pair <= 0.0 {
            break;
        }
        smallest = smallest.min(pair);
        tau += 2.0 * smallest;
    }
    Some(n as f64 / tau)
}

/// The effective sample sizes of every parameter of `draws` (`[S, D]` row-major, one row per
/// kept iteration), summarised per layer of `layout`.
pub fn ess_by_layer(draws: &[f64], layout: &ParamLayout) -> Vec<LayerEss> {
    let d = layout.len();
    let s = draws.len().checked_div(d).unwrap_or(0);
    let ess: Vec<Option<f64>> = (0..d)
        .map(|j| {
            let column: Vec<f64> = (0..s).map(|i| draws[i * d + j]).collect();
            effective_sample_size(&column)
        })
        .collect();
    (0..layout.layers().len())
        .map(|l| {
            let mut values: Vec<f64> = layout
                .layer_indices(l)
                .into_iter()
                .filter_map(|j| ess[j])
                .collect();
            values.sort_by(f64::total_cmp);
            let at = |q: f64| {
                values
                    .get(((values.len() as f64 - 1.0) * q).round() as usize)
                    .copied()
            };
            LayerEss {
                layer: l,
                parameters: layout.layer_indices(l).len(),
                moved: values.len(),
                min: values.first().copied(),
                median: at(0.5),
                max: values.last().copied(),
            }
        })
        .collect()
}

/// The effective sample sizes of one layer's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerEss {
    /// The layer (0 = the first).
    pub layer: usize,
    /// Its parameters.
    pub parameters: usize,
    /// Those whose draws vary (an ESS exists).
    pub moved: usize,
    /// The smallest, median and largest ESS among them.
    pub min: Option<f64>,
    /// See `min`.
    pub median: Option<f64>,
    /// See `min`.
    pub max: Option<f64>,
}

/// γ_k = (1/n) Σ_t (x_t − x̄)(x_{t+k} − x̄), k = 0 … n−1, from |FFT|² of the chain padded to
/// a power of two at least 2n (no circular wrap-around).
fn autocovariance(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    let size = (2 * n).next_power_of_two();
    let mut re: Vec<f64> = x.iter().map(|v| v - mean).collect();
    re.resize(size, 0.0);
    let mut im = vec![0.0; size];
    fft(&mut re, &mut im, false);
    for (r, i) in re.iter_mut().zip(im.iter_mut()) {
        *r = *r * *r + *i * *i;
        *i = 0.0;
    }
    fft(&mut re, &mut im, true);
    re.truncate(n);
    re.iter().map(|v| v / (size as f64 * n as f64)).collect()
}

/// The in-place radix-2 FFT of (re, im) (length a power of two); `inverse` conjugates the
/// twiddles and leaves the 1/size scaling to the caller.
fn fft(re: &mut [f64], im: &mut [f64], inverse: bool) {
    let n = re.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut len = 2;
    while len <= n {
        let angle = sign * 2.0 * std::f64::consts::PI / len as f64;
        for start in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let (s, c) = (angle * k as f64).sin_cos();
                let (a, b) = (start + k, start + k + len / 2);
                let (br, bi) = (re[b] * c - im[b] * s, re[b] * s + im[b] * c);
                re[b] = re[a] - br;
                im[b] = im[a] - bi;
                re[a] += br;
                im[a] += bi;
            }
        }
        len <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use rand_distr::StandardNormal;

    /// The FFT autocovariance against the direct sums.
    #[test]
    fn autocovariance_matches_the_direct_sums() {
        let mut rng = bdl_tensor::Seed(3).rng();
        let x: Vec<f64> = (0..37).map(|_| rng.random::<f64>()).collect();
        let mean = x.iter().sum::<f64>() / 37.0;
        let fast = autocovariance(&x);
        for k in 0..37 {
            let direct: f64 = (0..37 - k)
                .map(|t| (x[t] - mean) * (x[t + k] - mean))
                .sum::<f64>()
                / 37.0;
            assert!((fast[k] - direct).abs() < 1e-12, "lag {k}");
        }
    }

    /// AR(1) chains x_t = φ x_{t−1} + ε_t have τ = (1 + φ)/(1 − φ): ESS = n(1 − φ)/(1 + φ).
    /// With n = 100,000 the estimator's relative spread is a few percent (it grows with τ), so
    /// each estimate must lie within 10% of the truth, for positive and negative φ.
    #[test]
    fn ar1_chains_have_their_known_ess() {
        let n = 100_000;
        for (seed, phi) in [(1u64, 0.0f64), (2, 0.5), (3, 0.9), (4, -0.5)] {
            let mut rng = bdl_tensor::Seed(seed).rng();
            let mut x = Vec::with_capacity(n);
            let mut v: f64 = rng.sample(StandardNormal);
            for _ in 0..n {
                let e: f64 = rng.sample(StandardNormal);
                v = phi * v + e;
                x.push(v);
            }
            let truth = n as f64 * (1.0 - phi) / (1.0 + phi);
            let ess = effective_sample_size(&x).unwrap();
            assert!(
                (ess / truth - 1.0).abs() < 0.10,
                "φ = {phi}: {ess} vs {truth}"
            );
        }
    }

    #[test]
    fn layers_summarise_their_parameters() {
        let layout = ParamLayout::new([
            ("0.weight", vec![1, 2]),
            ("0.bias", vec![1]),
            ("2.weight", vec![1, 1]),
        ]);
        let mut rng = bdl_tensor::Seed(5).rng();
        // 500 draws of 4 parameters; the bias (index 2) never moves.
        let draws: Vec<f64> = (0..500)
            .flat_map(|_| {
                [
                    rng.random::<f64>(),
                    rng.random::<f64>(),
                    0.25,
                    rng.random::<f64>(),
                ]
            })
            .collect();
        let layers = ess_by_layer(&draws, &layout);
        assert_eq!((layers[0].parameters, layers[0].moved), (3, 2));
        assert_eq!((layers[1].parameters, layers[1].moved), (1, 1));
        assert!(layers[0].min.unwrap() <= layers[0].max.unwrap());
    }
}
