//! The acceptance rate a block's random-walk proposal should have, from the target's curvature.
//!
//! Near a mode the log-target is about −½ (θ − θ̂)ᵀ H (θ − θ̂). For a proposal θ' = θ + √v ε
//! (ε ~ N(0, I) over the block's d parameters) from a state distributed as the target,
//! N(θ̂, H⁻¹), the log acceptance ratio is Δ = −√v εᵀH(θ − θ̂) − ½ v εᵀHε; given ε it is
//! N(−½ v q, v q) with q = εᵀH_bε, which concentrates at tr H_b for large blocks. For
//! Δ ~ N(−σ²/2, σ²), E[min(1, e^Δ)] = 2Φ(−σ/2), so
//!
//! acceptance ≈ 2Φ(−½ √(v · tr H_b)),
//!
//! with H_b the block's curvature: the prior's 1/s² per parameter plus the log-likelihood's
//! over the data the ratio sees (a minibatch: about B/N of the whole set's). What a layer's
//! rate does with depth, or why a large block does or does not collapse, follows from tr H_b
//! (`gibbs-xor` reports it beside the observed rates).

/// 2Φ(−½ √(v · t)): the acceptance rate of a Gaussian random-walk proposal of variance `v`
/// per parameter on a locally Gaussian target whose curvature has trace `t` over the block.
///
/// ```
/// // The prior N(0, 10 I) alone over a block of 2550 parameters at v = 0.04: about 11%.
/// let rate = bdl_mcmc::random_walk_acceptance(0.04, 2550.0 / 10.0);
/// assert!((rate - 0.11).abs() < 0.005);
/// ```
pub fn random_walk_acceptance(variance: f64, curvature_trace: f64) -> f64 {
    2.0 * bdl_tensor::standard_normal_cdf(-0.5 * (variance * curvature_trace).max(0.0).sqrt())
}

#[cfg(test)]
mod tests {
    use bdl_tensor::Seed;
    use rand::Rng;
    use rand_distr::{Distribution, StandardNormal};

    use super::*;

    /// Random-walk Metropolis on N(0, diag(1/h)) in 200 dimensions (curvatures h spread over
    /// [0.5, 5]): the rate over 20,000 proposals from the target against the formula. The
    /// formula's error at d = 200 is the spread of εᵀHε around tr H (a few percent of σ²); the
    /// Monte Carlo standard error of the rate is about 0.004 (measured: within 0.004 of each).
    #[test]
    fn the_formula_predicts_random_walk_metropolis_on_a_gaussian() {
        let mut rng = Seed(3).fork("rwm").rng();
        let d = 200;
        let h: Vec<f64> = (0..d).map(|i| 0.5 + 4.5 * i as f64 / d as f64).collect();
        let trace: f64 = h.iter().sum();
        for target in [0.25, 0.5, 0.75] {
            // v with 2Φ(−√(v tr)/2) = target, by bisection on the formula.
            let (mut lo, mut hi) = (1e-8, 10.0);
            for _ in 0..100 {
                let mid = 0.5 * (lo + hi);
                if random_walk_acceptance(mid, trace) > target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let v = 0.5 * (lo + hi);
            let mut theta: Vec<f64> = h
                .iter()
                .map(|h| {
                    let e: f64 = StandardNormal.sample(&mut rng);
                    e / h.sqrt()
                })
                .collect();
            let log_p = |t: &[f64]| -0.5 * t.iter().zip(&h).map(|(t, h)| h * t * t).sum::<f64>();
            let (mut accepted, n) = (0usize, 20_000);
            for _ in 0..n {
                let proposal: Vec<f64> = theta
                    .iter()
                    .map(|t| {
                        let e: f64 = StandardNormal.sample(&mut rng);
                        t + v.sqrt() * e
                    })
                    .collect();
                if rng.random::<f64>().ln() < log_p(&proposal) - log_p(&theta) {
                    theta = proposal;
                    accepted += 1;
                }
            }
            let rate = accepted as f64 / n as f64;
            assert!(
                (rate - target).abs() < 0.03,
                "target {target}: simulated {rate}"
            );
        }
    }
}
