//! Tuning by marginal likelihood and validation log-likelihood from one eigendecomposition,
//! checked against finite differences and against refitting from scratch.

use bdl_inference::{MapEstimate, Posterior, Validate};
use bdl_laplace::LinearizedPosterior;
use bdl_laplace::{Evidence, LaplaceConfig, PriorPrecision, SubnetLaplace, SubsetScaling};
use bdl_likelihoods::{ClassLink, Likelihood};
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use proptest::prelude::*;

fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(t).unwrap()
}

struct Problem {
    model: Network,
    theta: Tensor,
    x: Tensor,
    y: Tensor,
    likelihood: Likelihood,
    subset: Vec<usize>,
    /// Examples 20–29, for the validation predictive (outside the training rows of a
    /// rank-deficient problem).
    validation: (Tensor, Tensor),
}

/// A random tanh MLP 2-6-K at random parameters with data: regression targets for K = 1,
/// labels for K > 1; a random subnetwork of 15 parameters.
fn problem(seed: u64, k: usize) -> Problem {
    let seed = Seed(seed);
    let model = Network::from(Mlp::new(MlpSpec::new(&[2, 6, k], Activation::Tanh)).unwrap());
    let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let x = bdl_tensor::normal(
        &mut seed.fork("x").rng(),
        (30, 2),
        0.0,
        1.0,
        DType::F64,
        &Device::Cpu,
    )
    .unwrap();
    let (y, likelihood) = if k == 1 {
        let y = bdl_tensor::normal(
            &mut seed.fork("y").rng(),
            (30, 1),
            0.0,
            1.0,
            DType::F64,
            &Device::Cpu,
        )
        .unwrap();
        (y, Likelihood::Gaussian { sigma: 0.7 })
    } else {
        let labels: Vec<u32> = (0..30).map(|i| (i % k) as u32).collect();
        (
            Tensor::from_vec(labels, 30, &Device::Cpu).unwrap(),
            Likelihood::Categorical { classes: k },
        )
    };
    let subset = bdl_laplace::selection::random(
        model.layout(),
        bdl_laplace::selection::Candidates::All,
        15,
        seed,
    )
    .unwrap()
    .indices;
    Problem {
        validation: (x.narrow(0, 20, 10).unwrap(), y.narrow(0, 20, 10).unwrap()),
        model,
        theta,
        x,
        y,
        likelihood,
        subset,
    }
}

impl Problem {
    /// The same network on its first 8 examples with every parameter in the subnetwork: fewer
    /// Jacobian rows (8 or 24) than parameters (25 or 39), so G is rank-deficient and the
    /// evidence takes its spectrum from the Gram matrix.
    fn rank_deficient(mut self) -> Self {
        self.x = self.x.narrow(0, 0, 8).unwrap();
        self.y = self.y.narrow(0, 0, 8).unwrap();
        self.subset = (0..self.model.layout().len()).collect();
        self
    }

    /// The MAP estimate (θ̂, here random parameters) under `likelihood`.
    fn estimate(&self, likelihood: Likelihood) -> MapEstimate {
        MapEstimate::new(self.model.clone(), self.theta.clone(), likelihood).unwrap()
    }
}

fn evidence(p: &Problem) -> Evidence {
    Evidence::new(&p.estimate(p.likelihood), &p.x, &p.y, p.subset.clone(), 7).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn gradient_matches_central_differences(seed in any::<u64>(), k in prop_oneof![Just(1usize), Just(3)], log_l in -2.0f64..2.0, log_s in -1.5f64..0.5, deficient in any::<bool>()) {
        let p = if deficient { problem(seed, k).rank_deficient() } else { problem(seed, k) };
        let ev = evidence(&p);
        let g = ev.gradient(log_l.exp(), log_s.exp());
        // Central differences in the log parameters with h = 1e-5: truncation O(h²) and
        // rounding O(ε |log Z| / h) are both below 1e-6 (1 + |g|).
        let h = 1e-5;
        let f = |a: f64, b: f64| ev.log_evidence(a.exp(), b.exp());
        let fd = [
            (f(log_l + h, log_s) - f(log_l - h, log_s)) / (2.0 * h),
            (f(log_l, log_s + h) - f(log_l, log_s - h)) / (2.0 * h),
        ];
        for i in 0..2 {
            prop_assert!((g[i] - fd[i]).abs() <= 1e-6 * (1.0 + fd[i].abs()), "component {}: {} vs {}", i, g[i], fd[i]);
        }
    }

    #[test]
    fn spectrum_agrees_with_refitting(seed in any::<u64>(), k in prop_oneof![Just(1usize), Just(3)], lambda in 0.1f64..10.0, sigma in 0.2f64..2.0, deficient in any::<bool>()) {
        // The O(s) evidence and the posterior rebuilt from the eigendecomposition equal a fresh
        // Cholesky fit at (λ, σ), to 1e-9 relative (one eigendecomposition's rounding), both
        // with a full-rank G and with a rank-deficient one (spectrum from the Gram matrix).
        let p = if deficient { problem(seed, k).rank_deficient() } else { problem(seed, k) };
        let s = p.subset.len();
        let ev = evidence(&p);
        let likelihood = match p.likelihood { Likelihood::Gaussian { .. } => Likelihood::Gaussian { sigma }, other => other };
        let config = LaplaceConfig { prior: PriorPrecision::Scalar(lambda), subset_scaling: SubsetScaling::None, batch_size: 7 }.check().unwrap();
        let fresh = SubnetLaplace::fit(&p.estimate(likelihood), &p.x, p.subset.clone(), &config).unwrap();
        let f = p.model.forward(&p.theta, &p.x).unwrap();
        let log_lik: f64 = values(&likelihood.log_lik(&f, &p.y).unwrap()).iter().sum();
        let direct = fresh.log_marginal_likelihood(log_lik);
        let fast = ev.log_evidence(lambda, if k == 1 { sigma } else { 1.0 });
        prop_assert!((fast - direct).abs() <= 1e-9 * (1.0 + direct.abs()), "{} vs {}", fast, direct);

        let rebuilt_post = ev.posterior(lambda, sigma).unwrap();
        // The rebuilt posterior owns the tuned noise.
        prop_assert_eq!(rebuilt_post.likelihood(), likelihood);
        let (rebuilt, fresh_p) = (rebuilt_post.precision(), fresh.precision());
        let scale = (0..s).map(|i| fresh_p[(i, i)]).fold(0.0f64, f64::max);
        for i in 0..s {
            for j in 0..s {
                prop_assert!((rebuilt[(i, j)] - fresh_p[(i, j)]).abs() <= 1e-9 * scale);
            }
        }

        // The validation log-likelihood from the projected spectrum equals the predictive of the
        // fresh posterior (diagonal of the output covariance, probit for classification).
        let (x_val, y_val) = p.validation.clone();
        let val = ev.validation(&x_val, &y_val).unwrap();
        let fast_ll = ev.validation_log_lik(&val, lambda, sigma).unwrap();
        let cov = fresh.f_covariance(&x_val, config.batch_size).unwrap();
        let diag = cov.broadcast_mul(&Tensor::eye(k, DType::F64, &Device::Cpu).unwrap()).unwrap().sum(2).unwrap();
        let mean = p.model.forward(&p.theta, &x_val).unwrap();
        let pred = likelihood
            .predictive(&mean, &bdl_likelihoods::FunctionVariance::Diagonal(diag), ClassLink::Probit)
            .unwrap();
        let slow_ll = values(&pred.log_lik(&y_val).unwrap()).iter().sum::<f64>() / 10.0;
        prop_assert!((fast_ll - slow_ll).abs() <= 1e-9 * (1.0 + slow_ll.abs()), "{} vs {}", fast_ll, slow_ll);
    }
}

#[test]
fn maximize_finds_a_stationary_maximum() {
    for k in [1, 3] {
        let p = problem(42, k);
        let ev = evidence(&p);
        let best = ev.maximize(1.0, 1.0).unwrap();
        let g = ev.gradient(best.lambda, best.sigma);
        assert!(
            g.iter().all(|c| c.abs() < 1e-3),
            "gradient at the optimum: {g:?}"
        );
        // No point of a surrounding grid in the log parameters is better.
        for a in [-0.5, -0.1, 0.0, 0.1, 0.5] {
            for b in [-0.5, -0.1, 0.0, 0.1, 0.5] {
                let other = ev.log_evidence(best.lambda * f64::exp(a), best.sigma * f64::exp(b));
                assert!(
                    other <= best.log_evidence + 1e-9,
                    "k = {k}: ({a}, {b}) beats the optimum"
                );
            }
        }
    }
}

#[test]
fn grid_search_picks_the_best_candidate() {
    let p = problem(3, 1);
    let ev = evidence(&p);
    let val = ev.validation(&p.x, &p.y).unwrap();
    let candidates: Vec<(f64, f64)> = [0.1, 1.0, 10.0]
        .iter()
        .flat_map(|&l| [0.5, 1.0, 2.0].map(|s| (l, s)))
        .collect();
    let (l, s, ll) = ev.grid_search(&val, &candidates).unwrap();
    for &(a, b) in &candidates {
        assert!(ev.validation_log_lik(&val, a, b).unwrap() <= ll);
    }
    assert!(candidates.contains(&(l, s)));
}

/// The tuned (λ, σ) of a 700-parameter subnetwork (an MLP 8-50-50-1 on 400 points; faer
/// threads a decomposition this size) are the same bits on one and on two threads.
#[test]
fn evidence_maximisation_does_not_depend_on_the_thread_count() {
    let dev = Device::Cpu;
    let net = Network::from(Mlp::new(MlpSpec::new(&[8, 50, 50, 1], Activation::Relu)).unwrap());
    let theta = net.init(Seed(2), DType::F64, &dev).unwrap();
    let x = bdl_tensor::normal(&mut Seed(3).rng(), (400, 8), 0.0, 1.0, DType::F64, &dev).unwrap();
    let y = bdl_tensor::normal(&mut Seed(4).rng(), (400, 1), 0.0, 1.0, DType::F64, &dev).unwrap();
    let map = MapEstimate::new(net.clone(), theta, Likelihood::Gaussian { sigma: 0.5 }).unwrap();
    let subset = bdl_laplace::selection::random(
        net.layout(),
        bdl_laplace::selection::Candidates::WeightsOnly,
        700,
        Seed(5),
    )
    .unwrap()
    .indices;
    let tune = |threads: usize| {
        bdl_tensor::Threads::new(threads).unwrap().install(|| {
            let ev = Evidence::new(&map, &x, &y, subset.clone(), 100).unwrap();
            let t = ev.maximize(1.0, 0.5).unwrap();
            [t.lambda, t.sigma, t.log_evidence].map(f64::to_bits)
        })
    };
    assert_eq!(tune(1), tune(2));
}
