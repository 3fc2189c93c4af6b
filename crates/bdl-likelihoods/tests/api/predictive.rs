//! The Predictive type: mixtures, law of total variance, per-point log-likelihoods.

use std::f64::consts::PI;

use bdl_likelihoods::{Likelihood, Predictive, Seed};
use candle_core::{DType, Device, Tensor};
use proptest::prelude::*;
use rand::Rng;

use crate::common::{randn, softmax, tensor, values};

/// A random Gaussian mixture with S components over N points and K outputs; means N(0, 2²),
/// variances in [0.1, 3).
fn random_mixture(seed: u64, s: usize, n: usize, k: usize) -> (Vec<f64>, Vec<f64>, Predictive) {
    let mut rng = Seed(seed).rng();
    let means = values(&randn(&mut rng, &[s, n, k], 2.0));
    let vars: Vec<f64> = (0..s * n * k).map(|_| rng.random_range(0.1..3.0)).collect();
    let pred = Predictive::gaussian_mixture(
        &tensor(means.clone(), &[s, n, k]),
        &tensor(vars.clone(), &[s, n, k]),
    )
    .unwrap();
    (means, vars, pred)
}

/// log N(y; m, v).
fn log_normal(y: f64, m: f64, v: f64) -> f64 {
    -0.5 * (2.0 * PI * v).ln() - (y - m) * (y - m) / (2.0 * v)
}

proptest! {
    /// A mixture of one component is that component, and a mixture of copies of one predictive
    /// equals it: means, variances and log-likelihoods to 1e-12 (averaging identical numbers).
    #[test]
    fn mixture_of_copies_is_itself(seed in any::<u64>(), s in 1usize..4, n in 1usize..5, k in 1usize..4, copies in 1usize..4) {
        let (_, _, pred) = random_mixture(seed, s, n, k);
        let y = randn(&mut Seed(seed).fork("y").rng(), &[n, k], 2.0);
        let mixed = Predictive::mixture(&vec![pred.clone(); copies]).unwrap();
        for (a, b) in [
            (pred.mean().unwrap(), mixed.mean().unwrap()),
            (pred.variance().unwrap(), mixed.variance().unwrap()),
            (pred.log_lik(&y).unwrap(), mixed.log_lik(&y).unwrap()),
        ] {
            for (x, z) in values(&a).iter().zip(values(&b)) {
                prop_assert!((x - z).abs() <= 1e-12 * (1.0 + x.abs()), "{x} vs {z}");
            }
        }
        let probs = tensor(
            values(&randn(&mut Seed(seed).fork("p").rng(), &[n, k + 1], 1.0)).chunks(k + 1).flat_map(softmax).collect(),
            &[n, k + 1],
        );
        let cat = Predictive::categorical(&probs).unwrap();
        let mixed = Predictive::mixture(&vec![cat.clone(); copies]).unwrap();
        for (x, z) in values(&cat.probs().unwrap()).iter().zip(values(&mixed.probs().unwrap())) {
            prop_assert!((x - z).abs() <= 1e-15);
        }
    }

    /// Mixture moments by the law of total variance, against the second-moment form written
    /// out: mean (1/S) Σ μ_s, variance (1/S) Σ (v_s + μ_s²) − mean². The second-moment form
    /// loses digits to cancellation (error ~1e-16 × the second moment); tolerance 1e-10 relative
    /// to the second moment, 1e-12 for the mean.
    #[test]
    fn mixture_variance_is_law_of_total_variance(seed in any::<u64>(), s in 1usize..6, n in 1usize..5, k in 1usize..4) {
        let (means, vars, pred) = random_mixture(seed, s, n, k);
        let (mean, var) = (values(&pred.mean().unwrap()), values(&pred.variance().unwrap()));
        for i in 0..n * k {
            let m: f64 = (0..s).map(|c| means[c * n * k + i]).sum::<f64>() / s as f64;
            let second: f64 = (0..s).map(|c| vars[c * n * k + i] + means[c * n * k + i].powi(2)).sum::<f64>() / s as f64;
            prop_assert!((mean[i] - m).abs() <= 1e-12 * (1.0 + m.abs()));
            prop_assert!((var[i] - (second - m * m)).abs() <= 1e-10 * (1.0 + second));
        }
    }

    /// The mixture's per-point log-likelihood is log((1/S) Σ_s Π_k N(y_k; μ_sk, v_sk)), written
    /// out without log-sum-exp (values are moderate, so this is accurate to 1e-12 relative), and
    /// it is the log-sum-exp of the component log-likelihoods with log weights.
    #[test]
    fn mixture_log_lik_is_log_mean_density(seed in any::<u64>(), s in 1usize..6, n in 1usize..5, k in 1usize..3) {
        let (means, vars, pred) = random_mixture(seed, s, n, k);
        let y = values(&randn(&mut Seed(seed).fork("y").rng(), &[n, k], 2.0));
        let yt = tensor(y.clone(), &[n, k]);
        let ll = values(&pred.log_lik(&yt).unwrap());
        let comp = values(&pred.component_log_lik(&yt).unwrap());
        prop_assert_eq!(comp.len(), s * n);
        for row in 0..n {
            let density: f64 = (0..s)
                .map(|c| (0..k).map(|j| { let i = c * n * k + row * k + j; log_normal(y[row * k + j], means[i], vars[i]) }).sum::<f64>().exp())
                .sum::<f64>()
                / s as f64;
            prop_assert!((ll[row] - density.ln()).abs() <= 1e-12 * (1.0 + ll[row].abs()), "{} vs {}", ll[row], density.ln());
            let from_components = (0..s).map(|c| comp[c * n + row].exp()).sum::<f64>() / s as f64;
            prop_assert!((from_components.ln() - ll[row]).abs() <= 1e-12 * (1.0 + ll[row].abs()));
        }
    }
}

/// Nested mixtures weight each top-level component equally: mixture([mixture([a, b]), c]) is
/// ¼ a + ¼ b + ½ c, in mean and in density.
#[test]
fn nested_mixtures_keep_weights() {
    let point = |m: f64| {
        Predictive::gaussian(&tensor(vec![m], &[1, 1]), &tensor(vec![1.0], &[1, 1])).unwrap()
    };
    let (a, b, c) = (point(0.0), point(4.0), point(8.0));
    let nested = Predictive::mixture(&[Predictive::mixture(&[a, b]).unwrap(), c]).unwrap();
    assert_eq!(values(&nested.mean().unwrap()), [5.0]);
    let ll = values(&nested.log_lik(&tensor(vec![1.0], &[1])).unwrap())[0];
    let density = 0.25 * log_normal(1.0, 0.0, 1.0).exp()
        + 0.25 * log_normal(1.0, 4.0, 1.0).exp()
        + 0.5 * log_normal(1.0, 8.0, 1.0).exp();
    assert!((ll - density.ln()).abs() < 1e-12);
    let Predictive::GaussianMixture { weights, .. } = nested else {
        panic!("not a mixture")
    };
    assert_eq!(values(&weights), [0.25, 0.25, 0.5]);
}

/// Categorical predictives: a mixture averages the probabilities; the mean is the probability
/// vector, the variance p(1 − p), the log-likelihood log p_y.
#[test]
fn categorical_predictive() {
    let a = Predictive::categorical(&tensor(vec![0.2, 0.8, 0.6, 0.4], &[2, 2])).unwrap();
    let b = Predictive::categorical(&tensor(vec![0.6, 0.4, 0.0, 1.0], &[2, 2])).unwrap();
    let mix = Predictive::mixture(&[a, b]).unwrap();
    let p = values(&mix.probs().unwrap());
    let expected = [0.4, 0.6, 0.3, 0.7];
    assert!(
        p.iter().zip(expected).all(|(x, y)| (x - y).abs() < 1e-15),
        "{p:?}"
    );
    assert_eq!(values(&mix.mean().unwrap()), p);
    let var = values(&mix.variance().unwrap());
    assert!(
        var.iter()
            .zip(&p)
            .all(|(v, q)| (v - q * (1.0 - q)).abs() < 1e-15)
    );
    let y = Tensor::new(&[1u32, 0], &Device::Cpu).unwrap();
    let ll = values(&mix.log_lik(&y).unwrap());
    assert!((ll[0] - 0.6f64.ln()).abs() < 1e-15 && (ll[1] - 0.3f64.ln()).abs() < 1e-15);
    assert_eq!(values(&mix.component_log_lik(&y).unwrap()), ll);
}

/// Inputs in f32 are held in f64; plug-in predictives of an ensemble form a mixture whose
/// log-likelihood is the log mean of the members' densities.
#[test]
fn ensemble_of_point_predictives() {
    let lik = Likelihood::Gaussian { sigma: 0.5 };
    let members = [0.0f32, 1.0, 3.0].map(|m| {
        lik.point_predictive(&Tensor::new(&[[m]], &Device::Cpu).unwrap())
            .unwrap()
    });
    let Predictive::Gaussian { mean, var, .. } = &members[0] else {
        panic!("not Gaussian")
    };
    assert_eq!((mean.dtype(), var.dtype()), (DType::F64, DType::F64));
    assert_eq!(values(var), [0.25]);
    let ens = Predictive::mixture(&members).unwrap();
    let ll = values(
        &ens.log_lik(&Tensor::new(&[0.5f32], &Device::Cpu).unwrap())
            .unwrap(),
    )[0];
    let density = [0.0, 1.0, 3.0]
        .iter()
        .map(|m| log_normal(0.5, *m, 0.25).exp())
        .sum::<f64>()
        / 3.0;
    assert!((ll - density.ln()).abs() < 1e-12);
    let var = values(&ens.variance().unwrap())[0];
    let expected = 0.25 + ([0.0f64, 1.0, 9.0].iter().sum::<f64>() / 3.0 - (4.0f64 / 3.0).powi(2));
    assert!((var - expected).abs() < 1e-12);
}
