//! SGLD, SGHMC, HMC and NUTS against an exact posterior: Bayesian linear regression with a known
//! noise, whose posterior is Gaussian with precision A = XᵀX/σ² + λI and mean A⁻¹Xᵀy/σ²; and
//! HMC, NUTS and SGHMC on a subset against a non-Gaussian posterior by quadrature (a tanh
//! ridge).

use bdl_inference::Validate;
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    Blocking, Dynamics, HmcConfig, NutsConfig, Schedule, SgmcmcConfig, sample_hmc, sample_nuts,
    sample_sgmcmc,
};
use bdl_models::{Activation, Mlp, MlpSpec, Network};
use bdl_tensor::Seed;
use bdl_tensor::SubBlocks;
use candle_core::{DType, Device, Tensor};

/// A 3 × 3 matrix.
type Mat3 = [[f64; 3]; 3];

/// The inverse of a symmetric positive-definite 3 × 3 matrix, by cofactors.
fn inverse(a: &Mat3) -> Mat3 {
    let c = |i: usize, j: usize| {
        let (r0, r1) = ((i + 1) % 3, (i + 2) % 3);
        let (c0, c1) = ((j + 1) % 3, (j + 2) % 3);
        a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0]
    };
    let det: f64 = (0..3).map(|j| a[0][j] * c(0, j)).sum();
    let mut inv = [[0.0; 3]; 3];
    for (i, row) in inv.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = c(j, i) / det;
        }
    }
    inv
}

const SIGMA: f64 = 0.5;
const LAMBDA: f64 = 1.0;
const N: usize = 50;

/// Two features and a bias: θ = (w₁, w₂, b), the MLP's `0.weight` then `0.bias`.
struct Problem {
    net: Network,
    x: Tensor,
    y: Tensor,
    mean: Vec<f64>,
    cov: Mat3,
}

fn problem() -> Problem {
    let dev = &Device::Cpu;
    let x = bdl_tensor::normal(&mut Seed(1).rng(), (N, 2), 0.0, 1.0, DType::F64, dev).unwrap();
    let e = bdl_tensor::normal(&mut Seed(2).rng(), (N, 1), 0.0, SIGMA, DType::F64, dev).unwrap();
    let xs: Vec<Vec<f64>> = x.to_vec2().unwrap();
    let y: Vec<f64> = xs
        .iter()
        .zip(e.flatten_all().unwrap().to_vec1::<f64>().unwrap())
        .map(|(r, e)| 1.5 * r[0] - 0.5 * r[1] + 0.3 + e)
        .collect();
    // A = XaᵀXa/σ² + λI, b = Xaᵀy/σ², Xa = [x, 1].
    let row = |n: usize| [xs[n][0], xs[n][1], 1.0];
    let mut a = [[0.0; 3]; 3];
    for (i, r) in a.iter_mut().enumerate() {
        for (j, v) in r.iter_mut().enumerate() {
            *v = (0..N).map(|n| row(n)[i] * row(n)[j]).sum::<f64>() / (SIGMA * SIGMA)
                + if i == j { LAMBDA } else { 0.0 };
        }
    }
    let b: Vec<f64> = (0..3)
        .map(|i| (0..N).map(|n| row(n)[i] * y[n]).sum::<f64>() / (SIGMA * SIGMA))
        .collect();
    let cov = inverse(&a);
    let mean = (0..3)
        .map(|i| (0..3).map(|j| cov[i][j] * b[j]).sum())
        .collect();
    let net = Network::from(Mlp::new(MlpSpec::new(&[2, 1], Activation::Identity)).unwrap());
    Problem {
        net,
        x,
        y: Tensor::from_vec(y, (N, 1), dev).unwrap(),
        mean,
        cov,
    }
}

fn config(dynamics: Dynamics, step_size: f64, epochs: usize) -> SgmcmcConfig {
    SgmcmcConfig {
        dynamics,
        step_size,
        schedule: Schedule::Constant,
        prior_precision: LAMBDA,
        temperature: 1.0,
        epochs,
        batch_size: N,
        burn_in: 1000,
        keep_every: 1,
        subset: None,
        blocking: None,
        seed: Seed(7),
    }
}

/// The draws' mean and covariance.
fn moments(draws: &Tensor) -> (Vec<f64>, Mat3) {
    let rows: Vec<Vec<f64>> = draws.to_vec2().unwrap();
    let s = rows.len() as f64;
    let mean: Vec<f64> = (0..3)
        .map(|i| rows.iter().map(|r| r[i]).sum::<f64>() / s)
        .collect();
    let mut cov = [[0.0; 3]; 3];
    for (i, c) in cov.iter_mut().enumerate() {
        for (j, v) in c.iter_mut().enumerate() {
            *v = rows
                .iter()
                .map(|r| (r[i] - mean[i]) * (r[j] - mean[j]))
                .sum::<f64>()
                / s;
        }
    }
    (mean, cov)
}

/// Each mean within 0.05 posterior sds of the exact one (about four Monte Carlo errors at the
/// chains' effective sizes), each variance within 6% and each correlation within 0.05: the
/// discretisation bias of these step sizes is about 2% of a variance.
fn assert_close(p: &Problem, draws: &Tensor, what: &str) {
    let (mean, cov) = moments(draws);
    for i in 0..3 {
        let sd = p.cov[i][i].sqrt();
        assert!(
            (mean[i] - p.mean[i]).abs() < 0.05 * sd,
            "{what}: mean {i} {} vs {} (sd {sd})",
            mean[i],
            p.mean[i]
        );
        let ratio = cov[i][i] / p.cov[i][i];
        assert!(
            (ratio - 1.0).abs() < 0.06,
            "{what}: variance {i} ratio {ratio}"
        );
        for j in 0..i {
            let r = |c: &Mat3| c[i][j] / (c[i][i] * c[j][j]).sqrt();
            assert!(
                (r(&cov) - r(&p.cov)).abs() < 0.05,
                "{what}: correlation {i},{j} {} vs {}",
                r(&cov),
                r(&p.cov)
            );
        }
    }
}

#[test]
fn sgld_samples_the_linear_gaussian_posterior() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let config = config(Dynamics::Sgld, 1e-4, 60_000).check().unwrap();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let fit = sample_sgmcmc(&p.net, &theta0, lik, &p.x, &p.y, &config).unwrap();
    assert_eq!(fit.steps, 60_000);
    assert_eq!(bdl_inference::Posterior::method(&fit.posterior), "SGLD");
    assert_close(&p, fit.posterior.draws(), "SGLD");
}

#[test]
fn sghmc_samples_the_linear_gaussian_posterior() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let config = config(Dynamics::Sghmc { friction: 0.1 }, 1e-5, 60_000)
        .check()
        .unwrap();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let fit = sample_sgmcmc(&p.net, &theta0, lik, &p.x, &p.y, &config).unwrap();
    assert_close(&p, fit.posterior.draws(), "SGHMC");
}

/// SGLD-within-Gibbs: the node's three parameters as three blocks, each a Langevin step on its
/// conditional after a fresh gradient, sample the same posterior.
#[test]
fn sgld_within_gibbs_samples_the_linear_gaussian_posterior() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let config = SgmcmcConfig {
        blocking: Some(Blocking::FinerNode {
            split: vec![Some(SubBlocks::Count(3))],
        }),
        ..config(Dynamics::Sgld, 1e-4, 60_000)
    }
    .check()
    .unwrap();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let fit = sample_sgmcmc(&p.net, &theta0, lik, &p.x, &p.y, &config).unwrap();
    assert_eq!(
        bdl_inference::Posterior::method(&fit.posterior),
        "SGLD-within-Gibbs"
    );
    assert_close(&p, fit.posterior.draws(), "SGLD-within-Gibbs");
}

/// A cyclical schedule keeps draws only in the sampling stage of its cycles; a subset leaves
/// every other coordinate at θ₀; the same seed gives the same draws.
#[test]
fn cycles_keep_only_sampling_steps_and_subsets_fix_the_rest() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let cyclical = SgmcmcConfig {
        schedule: Schedule::Cyclical {
            cycles: 4,
            exploration: 0.75,
        },
        burn_in: 0,
        subset: Some(vec![0, 2]),
        ..config(Dynamics::Sgld, 1e-3, 400)
    }
    .check()
    .unwrap();
    let fit = sample_sgmcmc(&p.net, &theta0, lik, &p.x, &p.y, &cyclical).unwrap();
    // Cycles of 100 steps: steps 75..100, 175..200, … sample.
    let kept = fit.posterior.iterations();
    assert_eq!(kept.len(), 100);
    assert!(kept.iter().all(|k| k % 100 >= 75), "{kept:?}");
    let start: Vec<f64> = theta0.to_vec1().unwrap();
    let draws: Vec<Vec<f64>> = fit.posterior.draws().to_vec2().unwrap();
    assert!(draws.iter().all(|d| d[1] == start[1]));
    assert!(draws.iter().any(|d| d[0] != start[0]));
    let again = sample_sgmcmc(&p.net, &theta0, lik, &p.x, &p.y, &cyclical).unwrap();
    assert_eq!(again.posterior.draws().to_vec2::<f64>().unwrap(), draws);
}

/// A step far too large for the curvature diverges, as the inference layer's divergence.
#[test]
fn a_step_too_large_diverges() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let config = config(Dynamics::Sgld, 1.0, 200).check().unwrap();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let err = sample_sgmcmc(&p.net, &theta0, lik, &p.x, &p.y, &config).unwrap_err();
    match err {
        bdl_mcmc::Error::Inference(e) => assert!(e.is_divergence(), "{e}"),
        e => panic!("not a divergence: {e}"),
    }
}

/// HMC (with its step size adapted during the burn-in, trajectories of 1 … 20 steps) samples
/// the same posterior exactly: no discretisation bias survives the Metropolis correction. (With
/// a fixed 10 steps, two seeds of eight gave variances 0.71 and 1.16 of the truth: a trajectory
/// near a period of the dynamics; drawn lengths gave 0.97–1.02 on all eight.)
#[test]
fn hmc_samples_the_linear_gaussian_posterior() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let config = HmcConfig {
        step_size: 0.01,
        leapfrog_steps: 20,
        iterations: 21_000,
        burn_in: 1000,
        keep_every: 1,
        prior_precision: LAMBDA,
        target_acceptance: Some(0.8),
        seed: Seed(5),
        subset: None,
    }
    .check()
    .unwrap();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let fit = sample_hmc(&p.net, &theta0, lik, &p.x, &p.y, &config).unwrap();
    assert_eq!(bdl_inference::Posterior::method(&fit.posterior), "HMC");
    assert!((0.6..0.95).contains(&fit.acceptance), "{}", fit.acceptance);
    assert_close(&p, fit.posterior.draws(), "HMC");
    // A step far too large is rejected, not an error: the chain stays where it was.
    let stuck = HmcConfig {
        step_size: 10.0,
        target_acceptance: None,
        iterations: 50,
        burn_in: 10,
        ..(*config).clone()
    }
    .check()
    .unwrap();
    let fit = sample_hmc(&p.net, &theta0, lik, &p.x, &p.y, &stuck).unwrap();
    assert_eq!(fit.acceptance, 0.0);
}

/// NUTS needs no trajectory length and samples the same posterior exactly.
#[test]
fn nuts_samples_the_linear_gaussian_posterior() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let config = NutsConfig {
        step_size: 0.01,
        max_depth: 10,
        iterations: 11_000,
        burn_in: 1000,
        keep_every: 1,
        prior_precision: LAMBDA,
        target_acceptance: Some(0.8),
        seed: Seed(5),
        subset: None,
    }
    .check()
    .unwrap();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let fit = sample_nuts(&p.net, &theta0, lik, &p.x, &p.y, &config).unwrap();
    assert_eq!(bdl_inference::Posterior::method(&fit.posterior), "NUTS");
    assert!((0.65..0.95).contains(&fit.acceptance), "{}", fit.acceptance);
    assert!(
        fit.mean_depth >= 1.0 && fit.mean_depth < 10.0,
        "{}",
        fit.mean_depth
    );
    assert_close(&p, fit.posterior.draws(), "NUTS");
}

/// With a subset S = {w₁, b}, HMC and NUTS sample the conditional posterior of θ_S given w₂
/// fixed at θ₀: N(μ_S + Σ_S2 Σ₂₂⁻¹ (c − μ₂), Σ_SS − Σ_S2 Σ₂₂⁻¹ Σ₂S) of the exact Gaussian, and
/// every draw keeps w₂ = c exactly.
#[test]
fn hmc_and_nuts_on_a_subset_sample_the_conditional_posterior() {
    let p = problem();
    let theta0 = p.net.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let c = theta0.to_vec1::<f64>().unwrap()[1];
    let (s, fixed) = ([0, 2], 1);
    let mean: Vec<f64> = s
        .iter()
        .map(|&i| p.mean[i] + p.cov[i][fixed] / p.cov[fixed][fixed] * (c - p.mean[fixed]))
        .collect();
    let cov =
        |i: usize, j: usize| p.cov[i][j] - p.cov[i][fixed] * p.cov[fixed][j] / p.cov[fixed][fixed];
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let hmc = HmcConfig {
        step_size: 0.01,
        leapfrog_steps: 20,
        iterations: 11_000,
        burn_in: 1000,
        keep_every: 1,
        prior_precision: LAMBDA,
        target_acceptance: Some(0.8),
        seed: Seed(5),
        subset: Some(s.to_vec()),
    };
    let nuts = NutsConfig {
        step_size: 0.01,
        max_depth: 10,
        iterations: 11_000,
        burn_in: 1000,
        keep_every: 1,
        prior_precision: LAMBDA,
        target_acceptance: Some(0.8),
        seed: Seed(5),
        subset: Some(s.to_vec()),
    };
    // Indices past D are refused before sampling.
    let bad = HmcConfig {
        subset: Some(vec![0, 3]),
        ..hmc.clone()
    };
    assert!(sample_hmc(&p.net, &theta0, lik, &p.x, &p.y, &bad.check().unwrap()).is_err());
    let hmc = sample_hmc(&p.net, &theta0, lik, &p.x, &p.y, &hmc.check().unwrap()).unwrap();
    let nuts = sample_nuts(&p.net, &theta0, lik, &p.x, &p.y, &nuts.check().unwrap()).unwrap();
    for (what, draws) in [
        ("HMC", hmc.posterior.draws()),
        ("NUTS", nuts.posterior.draws()),
    ] {
        let rows: Vec<Vec<f64>> = draws.to_vec2().unwrap();
        assert!(rows.iter().all(|r| r[fixed] == c), "{what} moved w₂");
        let (m, v) = moments(draws);
        for (k, &i) in s.iter().enumerate() {
            let sd = cov(i, i).sqrt();
            // The conditional sd is below the marginal one: sampling the joint would fail this.
            assert!(
                (m[i] - mean[k]).abs() < 0.05 * sd,
                "{what}: mean {i} {} vs {}",
                m[i],
                mean[k]
            );
            let ratio = v[i][i] / cov(i, i);
            assert!(
                (ratio - 1.0).abs() < 0.06,
                "{what}: variance {i} ratio {ratio}"
            );
        }
    }
}

/// A non-Gaussian target: f(x) = w₂ tanh(w₁ x) (the MLP 1-1-1 with both biases fixed at 0 by a
/// subset), ten points, σ = 0.5, prior N(0, I) on (w₁, w₂). Its posterior is a curved ridge
/// w₂ tanh(w₁ x) ≈ y with two mirror modes (w₁, w₂) ↔ (−w₁, −w₂); the moments below are the same
/// in both, so a chain that keeps to one mode still has them.
struct Ridge {
    net: Network,
    x: Tensor,
    y: Tensor,
    theta0: Tensor,
    /// E[w₁²], E[w₂²], E[w₁w₂] by quadrature.
    moments: [f64; 3],
}

fn ridge() -> Ridge {
    let dev = &Device::Cpu;
    let xs: Vec<f64> = (0..10).map(|i| -1.8 + 0.4 * i as f64).collect();
    let noise = bdl_tensor::normal(&mut Seed(3).rng(), 10, 0.0, SIGMA, DType::F64, dev).unwrap();
    let ys: Vec<f64> = xs
        .iter()
        .zip(noise.to_vec1::<f64>().unwrap())
        .map(|(x, e)| 0.8 * (1.5 * x).tanh() + e)
        .collect();
    let log_post = |w1: f64, w2: f64| {
        let sse: f64 = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (y - w2 * (w1 * x).tanh()).powi(2))
            .sum();
        -sse / (2.0 * SIGMA * SIGMA) - (w1 * w1 + w2 * w2) / 2.0
    };
    // The midpoint rule on [−6, 6]², 1,200² cells: the density is below e⁻¹⁵ of its peak at
    // the edges.
    let (cells, half) = (1200, 6.0);
    let h = 2.0 * half / cells as f64;
    let at = |k: usize| -half + (k as f64 + 0.5) * h;
    let peak = (0..cells)
        .flat_map(|i| (0..cells).map(move |j| (i, j)))
        .map(|(i, j)| log_post(at(i), at(j)))
        .fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut m) = (0.0, [0.0; 3]);
    for i in 0..cells {
        for j in 0..cells {
            let (w1, w2) = (at(i), at(j));
            let p = (log_post(w1, w2) - peak).exp();
            z += p;
            m[0] += p * w1 * w1;
            m[1] += p * w2 * w2;
            m[2] += p * w1 * w2;
        }
    }
    let net = Network::from(Mlp::new(MlpSpec::new(&[1, 1, 1], Activation::Tanh)).unwrap());
    Ridge {
        net,
        x: Tensor::from_vec(xs, (10, 1), dev).unwrap(),
        y: Tensor::from_vec(ys, (10, 1), dev).unwrap(),
        // (w₁, b₁, w₂, b₂): the start in a mode, the biases at 0.
        theta0: Tensor::new(&[1.0f64, 0.0, 1.0, 0.0], dev).unwrap(),
        moments: m.map(|v| v / z),
    }
}

/// Batches of the batch-means standard error.
const BATCHES: usize = 40;

/// The mean of a chain's values and its batch-means standard error over `batches` batches.
fn batch_means(values: &[f64], batches: usize) -> (f64, f64) {
    let size = values.len() / batches;
    let means: Vec<f64> = values
        .chunks_exact(size)
        .map(|b| b.iter().sum::<f64>() / size as f64)
        .collect();
    let b = means.len() as f64;
    let mean = means.iter().sum::<f64>() / b;
    let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (b - 1.0);
    (mean, (var / b).sqrt())
}

/// A chain's E[w₁²], E[w₂²] and E[w₁w₂] on the ridge within four batch-means standard errors
/// of the quadrature's, each error below 4% of its moment (else the chain is too short to
/// decide anything).
fn assert_quadrature_moments(r: &Ridge, draws: &Tensor, what: &str) {
    let rows: Vec<Vec<f64>> = draws.to_vec2().unwrap();
    let moments: [fn(&[f64]) -> f64; 3] = [|r| r[0] * r[0], |r| r[2] * r[2], |r| r[0] * r[2]];
    for (k, (g, q)) in moments.iter().zip(&r.moments).enumerate() {
        let values: Vec<f64> = rows.iter().map(|r| g(r)).collect();
        let (mean, se) = batch_means(&values, BATCHES);
        assert!(
            se < 0.04 * q,
            "{what}: moment {k}'s error {se} is too large to decide"
        );
        assert!(
            (mean - q).abs() < 4.0 * se,
            "{what}: moment {k} {mean} ± {se} vs {q}"
        );
    }
}

/// HMC and NUTS on the ridge's weights alone give its quadrature moments
/// ([`assert_quadrature_moments`]; their errors are 0.2–3.3%; sampling at λ = 1.3 instead of 1
/// puts E[w₁²] 30 errors off).
#[test]
fn hmc_and_nuts_match_the_quadrature_posterior_of_a_tanh_ridge() {
    let r = ridge();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let subset = Some(vec![0, 2]);
    let hmc = HmcConfig {
        step_size: 0.05,
        leapfrog_steps: 20,
        iterations: 80_000,
        burn_in: 1000,
        keep_every: 1,
        prior_precision: 1.0,
        target_acceptance: Some(0.8),
        seed: Seed(8),
        subset: subset.clone(),
    };
    let nuts = NutsConfig {
        step_size: 0.05,
        max_depth: 8,
        iterations: 40_000,
        burn_in: 1000,
        keep_every: 1,
        prior_precision: 1.0,
        target_acceptance: Some(0.8),
        seed: Seed(8),
        subset,
    };
    let (net, x, y, theta0) = (&r.net, &r.x, &r.y, &r.theta0);
    let hmc = sample_hmc(net, theta0, lik, x, y, &hmc.check().unwrap()).unwrap();
    let nuts = sample_nuts(net, theta0, lik, x, y, &nuts.check().unwrap()).unwrap();
    assert_quadrature_moments(&r, hmc.posterior.draws(), "HMC");
    assert_quadrature_moments(&r, nuts.posterior.draws(), "NUTS");
}

/// SGHMC (full batch, friction 0.1, ε = 5·10⁻⁴, a million steps) on the same ridge matches its
/// quadrature moments as HMC and NUTS do: within four batch-means errors, each below 4% of the
/// moment (they are 1.4%, 1.4% and 0.5%). SGLD mixes along the ridge too slowly to decide at
/// this cost: at ε = 2·10⁻⁴ and 5·10⁻⁴ its errors on E[w₁²] are 5–10%.
#[test]
fn sghmc_matches_the_quadrature_posterior_of_a_tanh_ridge() {
    let r = ridge();
    let lik = Likelihood::Gaussian { sigma: SIGMA };
    let sghmc = SgmcmcConfig {
        batch_size: 10,
        burn_in: 2000,
        keep_every: 5,
        subset: Some(vec![0, 2]),
        ..config(Dynamics::Sghmc { friction: 0.1 }, 5e-4, 1_000_000)
    }
    .check()
    .unwrap();
    let fit = sample_sgmcmc(&r.net, &r.theta0, lik, &r.x, &r.y, &sghmc).unwrap();
    assert_quadrature_moments(&r, fit.posterior.draws(), "SGHMC");
}
