//! The potential scale reduction R̂ across chains (Gelman & Rubin 1992), in the split form of
//! Gelman et al. (BDA3, §11.4): every chain is cut into two halves, so that a chain drifting
//! within itself shows as well as chains that disagree.
//!
//! For m′ half-chains of n′ draws, with W the mean of their variances and B/n′ the variance of
//! their means, var⁺ = (n′ − 1)/n′ · W + B/n′ and R̂ = √(var⁺ / W): 1 when the chains agree,
//! above 1 (1.01 is the usual bar) when they have not mixed.

/// Split R̂ of one scalar over `chains` (each the draws of one chain, in order; an odd draw at
/// the middle of a chain is dropped); `None` with fewer than two chains' halves of at least two
/// draws, or with no within-chain variation.
///
/// ```
/// use bdl_mcmc::split_rhat;
/// use rand::Rng;
/// let mut rng = bdl_tensor::Seed(0).rng();
/// let mut chain = |shift: f64| -> Vec<f64> { (0..1000).map(|_| shift + rng.random::<f64>()).collect() };
/// let (a, b) = (chain(0.0), chain(0.0));
/// let agree = split_rhat(&[&a, &b]).unwrap();
/// assert!((agree - 1.0).abs() < 0.01, "{agree}");
/// let c = chain(1.0); // a chain elsewhere
/// assert!(split_rhat(&[&a, &c]).unwrap() > 1.2);
/// ```
pub fn split_rhat(chains: &[&[f64]]) -> Option<f64> {
    let n = chains.iter().map(|c| c.len() / 2).min()?;
    if n < 2 {
        return None;
    }
    let halves: Vec<&[f64]> = chains
        .iter()
        .flat_map(|c| {
            let skip = c.len() % 2; // the middle draw of an odd chain
            let (first, rest) = c.split_at(c.len() / 2);
            [&first[first.len() - n..], &rest[skip..][..n]]
        })
        .collect();
    let m = halves.len() as f64;
    let nf = n as f64;
    let means: Vec<f64> = halves.iter().map(|h| h.iter().sum::<f64>() / nf).collect();
    let w = halves
        .iter()
        .zip(&means)
        .map(|(h, mean)| h.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0))
        .sum::<f64>()
        / m;
    if w <= 0.0 || !w.is_finite() {
        return None;
    }
    let grand = means.iter().sum::<f64>() / m;
    let b_over_n = means.iter().map(|x| (x - grand).powi(2)).sum::<f64>() / (m - 1.0);
    let var_plus = (nf - 1.0) / nf * w + b_over_n;
    Some((var_plus / w).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One chain's two halves disagree when the chain drifts; a chain of constants has none.
    #[test]
    fn a_drifting_chain_alone_shows_and_constants_have_no_rhat() {
        let drift: Vec<f64> = (0..200).map(|i| i as f64 / 10.0 + (i % 2) as f64).collect();
        assert!(split_rhat(&[&drift]).unwrap() > 2.0);
        assert_eq!(split_rhat(&[&[1.0; 10][..]]), None);
        assert_eq!(
            split_rhat(&[&[1.0, 2.0, 3.0][..]]),
            None,
            "halves of one draw"
        );
        assert_eq!(split_rhat(&[]), None);
    }

    /// `n` draws of the AR(1) chain x_t = φ x_{t−1} + ε_t, ε_t ~ N(0, 1), from stationarity
    /// (x₀ ~ N(0, 1/(1 − φ²))), shifted by `shift`.
    fn ar1(phi: f64, n: usize, shift: f64, seed: u64) -> Vec<f64> {
        use rand_distr::{Distribution, StandardNormal};
        let mut rng = bdl_tensor::Seed(seed).rng();
        let mut normal = || -> f64 { StandardNormal.sample(&mut rng) };
        let mut x = normal() / (1.0 - phi * phi).sqrt();
        (0..n)
            .map(|_| {
                x = phi * x + normal();
                x + shift
            })
            .collect()
    }

    /// Four stationary AR(1) chains at φ = 0.9 (about 260 effective draws each) agree: R̂ within
    /// 0.01 of 1. One of them two stationary sds off the others gives R̂ ≈ √(1 + 1) ≈ 1.4; the
    /// 1.1 rule of thumb flags it.
    #[test]
    fn ar1_chains_agree_unless_one_is_shifted() {
        let (phi, n) = (0.9, 5000);
        let sd = 1.0 / (1.0f64 - phi * phi).sqrt();
        let chains: Vec<Vec<f64>> = (0..4).map(|k| ar1(phi, n, 0.0, k)).collect();
        let refs: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
        let r = split_rhat(&refs).unwrap();
        assert!((r - 1.0).abs() < 0.01, "{r}");
        let shifted = ar1(phi, n, 2.0 * sd, 3);
        let refs = [refs[0], refs[1], refs[2], shifted.as_slice()];
        let r = split_rhat(&refs).unwrap();
        assert!(r > 1.1 && r < 2.0, "{r}");
    }

    /// var⁺ by hand on two chains of four: halves (0, 2), (1, 3), (4, 6), (5, 7).
    #[test]
    fn matches_the_formula_by_hand() {
        let (a, b) = ([0.0, 2.0, 1.0, 3.0], [4.0, 6.0, 5.0, 7.0]);
        // Each half has variance 2 (n′ − 1 = 1), W = 2; means 1, 2, 5, 6, grand 3.5,
        // B/n′ = (6.25 + 2.25 + 2.25 + 6.25)/3 = 17/3; var⁺ = W/2 + 17/3.
        let expected = ((1.0 + 17.0 / 3.0) / 2.0f64).sqrt();
        assert!((split_rhat(&[&a, &b]).unwrap() - expected).abs() < 1e-12);
    }
}
