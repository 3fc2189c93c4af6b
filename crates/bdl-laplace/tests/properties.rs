//! Properties of the Laplace posterior on random small networks (f64).

use bdl_inference::{MapEstimate, Posterior, Valid, Validate};
use bdl_laplace::LinearizedPosterior;
use bdl_laplace::selection::{self, Candidates};
use bdl_laplace::{LaplaceConfig, PriorPrecision, SubnetLaplace, SubsetScaling};
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::{ParamLayout, Seed};
use candle_core::{DType, Device, Tensor};
use proptest::prelude::*;

fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(t).unwrap()
}

/// A random MLP d-h-K (tanh), its parameters, and inputs.
fn setup(seed: Seed, k: usize, n: usize) -> (Mlp, Tensor, Tensor) {
    let model = Mlp::new(MlpSpec::new(&[3, 5, k], Activation::Tanh)).unwrap();
    let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let x = bdl_tensor::normal(
        &mut seed.fork("x").rng(),
        (n, 3),
        0.0,
        1.0,
        DType::F64,
        &Device::Cpu,
    )
    .unwrap();
    (model, theta, x)
}

/// θ̂ = `theta` of `model` under `likelihood`, as the MAP estimate a posterior is fitted at.
fn estimate(model: &Mlp, theta: &Tensor, likelihood: Likelihood) -> MapEstimate {
    MapEstimate::new(Network::from(model.clone()), theta.clone(), likelihood).unwrap()
}

fn valid(config: &LaplaceConfig) -> Valid<LaplaceConfig> {
    config.clone().check().unwrap()
}

fn likelihood(k: usize) -> Likelihood {
    if k == 1 {
        Likelihood::Gaussian { sigma: 0.5 }
    } else {
        Likelihood::Categorical { classes: k }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn ggn_is_symmetric_psd_and_matches_explicit_jacobians(seed in any::<u64>(), k in 1usize..4, batch in 1usize..9) {
        let (model, theta, x) = setup(Seed(seed), k, 12);
        let lik = likelihood(k);
        let d = model.layout().len();
        let all: Vec<usize> = (0..d).collect();
        let h = bdl_laplace::ggn(&model, &theta, &lik, &x, &all, batch).unwrap();

        // The naive reference: Σ_n J_nᵀ Λ_n J_n from the explicit Jacobian and Λ, point by point.
        let cache = model.forward_cached(&theta, &x).unwrap();
        let j = values(&model.jacobian(&theta, &cache, &all).unwrap());
        let lambda = values(&lik.hess_f(&cache.output).unwrap());
        let mut reference = vec![0.0; d * d];
        for n in 0..12 {
            for a in 0..k {
                for b in 0..k {
                    let l = lambda[n * k * k + a * k + b];
                    for p in 0..d {
                        let jp = j[(n * k + a) * d + p] * l;
                        for q in 0..d {
                            reference[p * d + q] += jp * j[(n * k + b) * d + q];
                        }
                    }
                }
            }
        }
        let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
        // Same sums in another order: agreement to 1e-12 of the largest entry.
        for p in 0..d {
            for q in 0..d {
                prop_assert!((h[(p, q)] - reference[p * d + q]).abs() <= 1e-12 * scale);
                prop_assert!((h[(p, q)] - h[(q, p)]).abs() <= 1e-13 * scale);
            }
        }
        // Positive semi-definite: the smallest eigenvalue is no lower than rounding (1e-12 of
        // the largest entry times D).
        let eig = h.self_adjoint_eigenvalues(faer::Side::Lower).unwrap();
        let min = eig.iter().copied().fold(f64::INFINITY, f64::min);
        prop_assert!(min >= -1e-12 * scale * d as f64, "smallest eigenvalue {}", min);

        // The diagonal from K backward passes equals the diagonal of H.
        let diag = bdl_laplace::ggn_diagonal(&model, &theta, &lik, &x, batch).unwrap();
        for p in 0..d {
            prop_assert!((diag[p] - h[(p, p)]).abs() <= 1e-12 * scale);
        }
    }

    #[test]
    fn growing_the_subnetwork_never_shrinks_the_predictive_variance(seed in any::<u64>(), k in 1usize..4) {
        // With fixed λ, Σ_S' ⪰ Σ_S padded with zeros for S ⊂ S' (Loewner order), so
        // J_S' Σ_S' J_S'ᵀ ⪰ J_S Σ_S J_Sᵀ at every test point.
        let seed = Seed(seed);
        let (model, theta, x) = setup(seed, k, 10);
        let lik = likelihood(k);
        let d = model.layout().len();
        let config = LaplaceConfig { prior: PriorPrecision::Scalar(2.0), subset_scaling: SubsetScaling::None, batch_size: 4 };
        let x_test = bdl_tensor::normal(&mut seed.fork("test").rng(), (6, 3), 0.0, 2.0, DType::F64, &Device::Cpu).unwrap();
        let map = estimate(&model, &theta, lik);
        let order = selection::random(model.layout(), Candidates::All, d, seed).unwrap().indices;
        let mut perm = order.clone();
        rand::seq::SliceRandom::shuffle(perm.as_mut_slice(), &mut seed.fork("perm").rng());
        let mut previous: Option<Vec<f64>> = None;
        for s in [1, d / 4, d / 2, d] {
            let subset = perm[..s].to_vec();
            let post = SubnetLaplace::fit(&map, &x, subset, &valid(&config)).unwrap();
            let cov = values(&post.f_covariance(&x_test, config.batch_size).unwrap());
            if let Some(prev) = &previous {
                for p in 0..6 {
                    // The difference of the K × K blocks is PSD: check its eigenvalues.
                    let diff = faer::Mat::from_fn(k, k, |a, b| cov[p * k * k + a * k + b] - prev[p * k * k + a * k + b]);
                    let eig = diff.self_adjoint_eigenvalues(faer::Side::Lower).unwrap();
                    let tol = 1e-10 * (1.0 + cov[p * k * k]);
                    prop_assert!(eig.iter().all(|&e| e >= -tol), "point {}: eigenvalues {:?}", p, eig);
                }
            }
            previous = Some(cov);
        }
    }

    #[test]
    fn wasserstein_keeps_the_largest_variances(seed in any::<u64>(), s in 0usize..20) {
        let layout = ParamLayout::new([("0.weight", vec![4, 3]), ("0.bias", vec![4]), ("2.weight", vec![1, 4]), ("2.bias", vec![1])]);
        let mut rng = Seed(seed).rng();
        // Coarse values so that ties occur.
        let v: Vec<f64> = (0..layout.len()).map(|_| (rand::Rng::random_range(&mut rng, 0..6) as f64) / 4.0).collect();
        let mask = layout.weights_mask();
        let n_weights = mask.iter().filter(|&&m| m).count();
        let sel = selection::wasserstein(&v, &layout, Candidates::WeightsOnly, s.min(n_weights), 1.25).unwrap();
        prop_assert_eq!(sel.indices.len(), s.min(n_weights));
        prop_assert!(sel.indices.windows(2).all(|w| w[0] < w[1]));
        for &i in &sel.indices {
            prop_assert!(mask[i], "a bias was selected");
            for j in (0..layout.len()).filter(|&j| mask[j] && !sel.indices.contains(&j)) {
                prop_assert!(v[i] > v[j] || (v[i] == v[j] && i < j), "{} ({}) selected over {} ({})", i, v[i], j, v[j]);
            }
        }
        prop_assert_eq!(sel.uninformative_selected, sel.indices.iter().filter(|&&i| v[i] == 1.25).count());
    }

    #[test]
    fn informed_wasserstein_takes_signal_first(seed in any::<u64>(), s in 0usize..17) {
        let layout = ParamLayout::new([("0.weight", vec![4, 3]), ("0.bias", vec![4]), ("2.weight", vec![1, 4]), ("2.bias", vec![1])]);
        let mut rng = Seed(seed).rng();
        // Coarse curvatures, a third of them zero, so that ties and signal-free weights occur.
        let h: Vec<f64> = (0..layout.len()).map(|_| (rand::Rng::random_range(&mut rng, 0..3) as f64) / 2.0).collect();
        let v = selection::diagonal_variances(&h, &vec![0.8; layout.len()]);
        let mask = layout.weights_mask();
        let s = s.min(mask.iter().filter(|&&m| m).count());
        let sel = selection::wasserstein_informed(&v, &h, &layout, Candidates::WeightsOnly, s).unwrap();
        prop_assert_eq!(sel.indices.len(), s);
        let informed = |i: usize| mask[i] && h[i] > 0.0;
        let chosen_blind = sel.indices.iter().filter(|&&i| !informed(i)).count();
        prop_assert_eq!(sel.uninformative_selected, chosen_blind);
        // A signal-free weight only once every informed one is taken.
        let n_informed = (0..layout.len()).filter(|&i| informed(i)).count();
        prop_assert_eq!(chosen_blind, s.saturating_sub(n_informed));
        for &i in sel.indices.iter().filter(|&&i| informed(i)) {
            for j in (0..layout.len()).filter(|&j| informed(j) && !sel.indices.contains(&j)) {
                prop_assert!(v[i] > v[j] || (v[i] == v[j] && i < j), "{} selected over {}", i, j);
            }
        }
    }
}

#[test]
fn zero_prior_with_dead_units_is_a_clear_error() {
    // A ReLU network whose hidden units are all dead has a zero GGN for the first layer: with
    // λ = 0 the precision is singular, and the error says so and suggests a prior.
    let model = Mlp::new(MlpSpec::new(&[2, 3, 1], Activation::Relu)).unwrap();
    let mut theta = vec![0.0; model.layout().len()];
    theta[6..9].copy_from_slice(&[-1.0, -1.0, -1.0]); // biases far below zero
    let theta = Tensor::from_vec(theta, model.layout().len(), &Device::Cpu).unwrap();
    let x = Tensor::new(&[[0.1f64, 0.2], [0.3, -0.1]], &Device::Cpu).unwrap();
    let lik = Likelihood::Gaussian { sigma: 1.0 };
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(0.0),
        ..LaplaceConfig::default()
    };
    let map = estimate(&model, &theta, lik);
    let err = SubnetLaplace::fit(&map, &x, (0..6).collect(), &valid(&config)).unwrap_err();
    assert!(
        matches!(err, bdl_laplace::Error::NotPositiveDefinite { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("prior precision"), "{err}");
    // The diagonal Laplace refuses the infinite variances too, naming the first such parameter
    // (the first-layer weights have a zero GGN diagonal).
    let err = bdl_laplace::DiagLaplace::fit(&map, &x, &valid(&config)).unwrap_err();
    assert!(
        matches!(
            err,
            bdl_laplace::Error::NonPositiveDiagonal { index: 0, .. }
        ),
        "{err}"
    );
    // A positive prior repairs it.
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(1.0),
        ..LaplaceConfig::default()
    };
    assert!(SubnetLaplace::fit(&map, &x, (0..6).collect(), &valid(&config)).is_ok());
}

#[test]
fn diagonal_laplace_predictive_is_j_diag_jt() {
    // Against the explicit J diag(1/(h + λ)) Jᵀ with the full Jacobian, per point; and the
    // output variances the probit link reads (computed without the Jacobian) are its diagonal.
    let (model, theta, x) = setup(Seed(8), 2, 15);
    let lik = likelihood(2);
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(0.7),
        subset_scaling: SubsetScaling::None,
        batch_size: 4,
    };
    let map = estimate(&model, &theta, lik);
    let diag = bdl_laplace::DiagLaplace::fit(&map, &x, &valid(&config)).unwrap();
    let x_test = x.narrow(0, 0, 5).unwrap();
    let cov = values(&diag.f_covariance(&x_test, config.batch_size).unwrap());
    let var = values(&diag.f_variance(&x_test, config.batch_size).unwrap());
    let d = model.layout().len();
    let all: Vec<usize> = (0..d).collect();
    let cache = model.forward_cached(&theta, &x_test).unwrap();
    let j = values(&model.jacobian(&theta, &cache, &all).unwrap());
    let h = bdl_laplace::ggn(&model, &theta, &lik, &x, &all, 15).unwrap();
    for p in 0..5 {
        for a in 0..2 {
            for b in 0..2 {
                let expected: f64 = (0..d)
                    .map(|q| j[(p * 2 + a) * d + q] * j[(p * 2 + b) * d + q] / (h[(q, q)] + 0.7))
                    .sum();
                let got = cov[p * 4 + a * 2 + b];
                assert!(
                    (got - expected).abs() <= 1e-12 * (1.0 + expected.abs()),
                    "{got} vs {expected}"
                );
                if a == b {
                    let got = var[p * 2 + a];
                    assert!(
                        (got - expected).abs() <= 1e-12 * (1.0 + expected.abs()),
                        "variance {got} vs {expected}"
                    );
                }
            }
        }
    }
}

/// The diagonal Laplace over a subnetwork S is the subnetwork Laplace whose H_S keeps only the
/// GGN's diagonal: the same λ_S (subset scaling included), output covariances and variances,
/// and log marginal likelihood, to rounding; the parameters outside S have variance 0; its
/// checkpoint gives it back; a repeated index is refused.
#[test]
fn diagonal_laplace_on_a_subset_is_the_subnetwork_laplace_of_the_ggn_diagonal() {
    let (model, theta, x) = setup(Seed(9), 2, 15);
    let lik = likelihood(2);
    let config = valid(&LaplaceConfig {
        prior: PriorPrecision::Scalar(0.7),
        subset_scaling: SubsetScaling::AllParameters,
        batch_size: 4,
    });
    let map = estimate(&model, &theta, lik);
    let d = model.layout().len();
    let subset = vec![1, 4, 7, 20, 30];
    let h = bdl_laplace::ggn_diagonal(&model, &theta, &lik, &x, 4).unwrap();
    let diag = bdl_laplace::DiagLaplace::from_ggn_diagonal_on(
        map.clone(),
        h.clone(),
        subset.clone(),
        &config,
    )
    .unwrap();
    let s = subset.len();
    let h_s = faer::Mat::from_fn(s, s, |a, b| if a == b { h[subset[a]] } else { 0.0 });
    let dense = SubnetLaplace::from_ggn(map, subset.clone(), h_s, &config).unwrap();
    assert_eq!(diag.prior_precision(), dense.prior_precision());
    assert_eq!(diag.prior_precision()[0], 0.7 * s as f64 / d as f64);
    for i in (0..d).filter(|i| !subset.contains(i)) {
        assert_eq!(diag.variances()[i], 0.0, "{i}");
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-10 * (1.0 + b.abs());
    let x_test = x.narrow(0, 0, 6).unwrap();
    let cov = values(&diag.f_covariance(&x_test, 4).unwrap());
    let want = values(&dense.f_covariance(&x_test, 4).unwrap());
    for (a, b) in cov.iter().zip(&want) {
        assert!(close(*a, *b), "covariance {a} vs {b}");
    }
    let var = values(&diag.f_variance(&x_test, 4).unwrap());
    for (n, v) in var.iter().enumerate() {
        let (p, k) = (n / 2, n % 2);
        assert!(close(*v, want[p * 4 + k * 3]), "variance {v}");
    }
    let (lml, want) = (
        diag.log_marginal_likelihood(-3.0).unwrap(),
        dense.log_marginal_likelihood(-3.0),
    );
    assert!(close(lml, want), "{lml} vs {want}");
    // The checkpoint keeps the subset.
    let dir = std::env::temp_dir().join(format!("bdl-laplace-diag-subset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("diag.safetensors");
    diag.save(&path).unwrap();
    let back = bdl_laplace::DiagLaplace::load(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(back.subset(), Some(subset.as_slice()));
    assert_eq!(back.variances(), diag.variances());
    assert_eq!(back.method(), "diagonal subnetwork Laplace");
    let map = back.estimate().clone();
    let err =
        bdl_laplace::DiagLaplace::from_ggn_diagonal_on(map, h, vec![3, 3], &config).unwrap_err();
    assert!(err.to_string().contains("index 3 twice"), "{err}");
}

/// The subnetwork Laplace of the sampling and checkpoint tests: five weights of a random
/// regression MLP, with the model, θ̂, the inputs and the batch size.
fn five_weight_laplace() -> (SubnetLaplace, Mlp, Tensor, Tensor, usize) {
    let (model, theta, x) = setup(Seed(12), 1, 20);
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(1.5),
        subset_scaling: SubsetScaling::None,
        batch_size: 8,
    };
    let map = estimate(&model, &theta, likelihood(1));
    let post = SubnetLaplace::fit(&map, &x, vec![0, 3, 7, 15, 25], &valid(&config)).unwrap();
    (post, model, theta, x, config.batch_size)
}

#[test]
fn samples_have_the_posterior_covariance() {
    let (post, model, theta, _, _) = five_weight_laplace();
    let subset = post.subset().to_vec();
    let n = 40_000;
    let draws = post.sample(n, Seed(5)).unwrap();
    assert_eq!(draws.dims(), &[n, model.layout().len()]);
    let again = post.sample(3, Seed(5)).unwrap();
    assert_eq!(
        values(&again),
        values(&draws.narrow(0, 0, 3).unwrap()),
        "same seed, same draws"
    );
    let v = values(&draws);
    let d = model.layout().len();
    let map = values(&theta);
    // Parameters outside S stay at the MAP.
    assert!(
        (0..d)
            .filter(|p| !subset.contains(p))
            .all(|p| v[p] == map[p] && v[(n - 1) * d + p] == map[p])
    );
    // The sample covariance of n draws has standard error about √(2/n)·σᵢσⱼ ≤ 0.0071·σᵢσⱼ; a
    // tolerance of 0.03·σᵢσⱼ is four such standard errors.
    let cov = post.covariance();
    for (a, &p) in subset.iter().enumerate() {
        for (b, &q) in subset.iter().enumerate() {
            let emp: f64 = (0..n)
                .map(|i| (v[i * d + p] - map[p]) * (v[i * d + q] - map[q]))
                .sum::<f64>()
                / n as f64;
            let scale = (cov[(a, a)] * cov[(b, b)]).sqrt();
            assert!(
                (emp - cov[(a, b)]).abs() <= 0.03 * scale,
                "({a}, {b}): {emp} vs {}",
                cov[(a, b)]
            );
        }
    }
    // Σ P = I.
    let id = &cov * post.precision();
    for i in 0..subset.len() {
        for j in 0..subset.len() {
            assert!((id[(i, j)] - f64::from(u8::from(i == j))).abs() < 1e-10);
        }
    }
}

#[test]
fn checkpoints_round_trip_and_tampered_ones_are_refused() {
    let (post, model, _, x, batch_size) = five_weight_laplace();
    let dir = std::env::temp_dir().join(format!("bdl-laplace-ckpt-{}", std::process::id()));
    let path = dir.join("post.safetensors");
    post.save(&path).unwrap();
    let back = SubnetLaplace::load(&path).unwrap();
    assert_eq!(back.subset(), post.subset());
    assert_eq!(back.log_det_precision(), post.log_det_precision());
    assert_eq!(
        values(&back.f_covariance(&x, batch_size).unwrap()),
        values(&post.f_covariance(&x, batch_size).unwrap())
    );

    // Tampered checkpoints are refused by name: a subset index ≥ D, a repeated index, a NaN in
    // θ̂ (the tensors are rewritten with the same embedded sidecar).
    let sidecar: serde_json::Value = bdl_tensor::read_sidecar(&path).unwrap();
    let original = bdl_tensor::load_safetensors(&path, &Device::Cpu).unwrap();
    let d = model.layout().len() as i64;
    let s = post.subset().len();
    let mut bad_subsets = [post.subset().to_vec(), post.subset().to_vec()];
    bad_subsets[0][0] = d as usize;
    bad_subsets[1][1] = bad_subsets[1][0];
    let mut cases: Vec<(&str, Vec<(String, Tensor)>)> = bad_subsets
        .iter()
        .map(|subset| {
            let idx: Vec<i64> = subset.iter().map(|&i| i as i64).collect();
            let mut t = original.clone();
            t.insert(
                "subset".into(),
                Tensor::from_vec(idx, s, &Device::Cpu).unwrap(),
            );
            ("subset", t.into_iter().collect())
        })
        .collect();
    let mut nan = original.clone();
    let mut theta_v = values(&nan["theta"]);
    theta_v[3] = f64::NAN;
    nan.insert(
        "theta".into(),
        Tensor::from_vec(theta_v, d as usize, &Device::Cpu).unwrap(),
    );
    cases.push(("theta", nan.into_iter().collect()));
    for (what, tensors) in cases {
        bdl_tensor::save_safetensors(&path, &tensors, Some(&sidecar)).unwrap();
        let err = SubnetLaplace::load(&path).unwrap_err();
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn subnet_of_all_parameters_is_the_dense_full_laplace() {
    // The full Laplace computed the naive way: the dense N·K × D Jacobian, H = Σ Jᵀ Λ J,
    // Σ = (H + λI)⁻¹ by a dense inverse, and J* Σ J*ᵀ at test points. Agreement to 1e-9 of the
    // largest entry (different summation orders and factorisations of a well-conditioned
    // matrix: λ = 1 bounds its condition number by 1 + ‖H‖).
    for k in [1, 3] {
        let (model, theta, x) = setup(Seed(21), k, 25);
        let lik = likelihood(k);
        let d = model.layout().len();
        let all: Vec<usize> = (0..d).collect();
        let config = LaplaceConfig {
            prior: PriorPrecision::Scalar(1.0),
            subset_scaling: SubsetScaling::None,
            batch_size: 6,
        };
        let map = estimate(&model, &theta, lik);
        let post = SubnetLaplace::fit(&map, &x, all.clone(), &valid(&config)).unwrap();

        let cache = model.forward_cached(&theta, &x).unwrap();
        let j = bdl_tensor::to_mat(&model.jacobian(&theta, &cache, &all).unwrap()).unwrap();
        let lambda = values(&lik.hess_f(&cache.output).unwrap());
        let blocks = faer::Mat::from_fn(25 * k, 25 * k, |r, c| {
            if r / k == c / k {
                lambda[(r / k) * k * k + (r % k) * k + c % k]
            } else {
                0.0
            }
        });
        let h = j.transpose() * &blocks * &j;
        let p = faer::Mat::from_fn(d, d, |a, b| h[(a, b)] + f64::from(u8::from(a == b)));
        let sigma = {
            use faer::linalg::solvers::DenseSolveCore;
            p.llt(faer::Side::Lower).unwrap().inverse()
        };
        let x_test = bdl_tensor::normal(
            &mut Seed(2).rng(),
            (4, 3),
            0.0,
            1.0,
            DType::F64,
            &Device::Cpu,
        )
        .unwrap();
        let test_cache = model.forward_cached(&theta, &x_test).unwrap();
        let jt = bdl_tensor::to_mat(&model.jacobian(&theta, &test_cache, &all).unwrap()).unwrap();
        let naive = &jt * &sigma * jt.transpose();
        let ours = values(&post.f_covariance(&x_test, config.batch_size).unwrap());
        let scale = (0..4 * k).map(|i| naive[(i, i)]).fold(0.0f64, f64::max);
        for pt in 0..4 {
            for a in 0..k {
                for b in 0..k {
                    let expected = naive[(pt * k + a, pt * k + b)];
                    let got = ours[pt * k * k + a * k + b];
                    assert!(
                        (got - expected).abs() <= 1e-9 * scale,
                        "k = {k}, point {pt}: {got} vs {expected}"
                    );
                }
            }
        }
        let log_det: f64 = p
            .llt(faer::Side::Lower)
            .unwrap()
            .L()
            .diagonal()
            .column_vector()
            .iter()
            .map(|l| 2.0 * l.ln())
            .sum();
        assert!((post.log_det_precision() - log_det).abs() <= 1e-9 * log_det.abs());
    }
}

/// The posterior keeps H_S in the strict upper triangle of its Cholesky factor's matrix: the
/// GGN it returns is the one it was fitted with, bit for bit, and P_S = H_S + diag(λ_S) is
/// reproduced by L Lᵀ (to rounding).
#[test]
fn the_packed_posterior_keeps_the_ggn_and_its_factor() {
    let (model, theta, x) = setup(Seed(21), 2, 25);
    let lik = likelihood(2);
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(0.9),
        subset_scaling: SubsetScaling::None,
        batch_size: 6,
    };
    let subset = vec![1, 2, 5, 8, 13, 21, 30];
    let h = bdl_laplace::ggn(&model, &theta, &lik, &x, &subset, 6).unwrap();
    let post =
        SubnetLaplace::fit(&estimate(&model, &theta, lik), &x, subset, &valid(&config)).unwrap();
    let kept = post.ggn();
    let s = h.nrows();
    for i in 0..s {
        for j in 0..s {
            assert_eq!(kept[(i, j)].to_bits(), h[(i, j)].to_bits(), "({i}, {j})");
        }
    }
    // L Lᵀ from the covariance's inverse: Σ_S P_S = I.
    let (p, sigma) = (post.precision(), post.covariance());
    let product = &sigma * &p;
    for i in 0..s {
        for j in 0..s {
            let expected = if i == j { 1.0 } else { 0.0 };
            assert!(
                (product[(i, j)] - expected).abs() < 1e-10,
                "({i}, {j}): {}",
                product[(i, j)]
            );
        }
    }
}

#[test]
fn diagonal_log_marginal_likelihood_is_the_full_one_for_one_parameter() {
    // With a single parameter the diagonal posterior is the full one, so the two evidences
    // agree (to rounding).
    let model = Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity).without_bias()).unwrap();
    let theta = Tensor::new(&[0.8f64], &Device::Cpu).unwrap();
    let x = Tensor::new(&[[0.5f64], [-1.0], [2.0]], &Device::Cpu).unwrap();
    let map = estimate(&model, &theta, Likelihood::Gaussian { sigma: 0.5 });
    let config = valid(&LaplaceConfig {
        prior: PriorPrecision::Scalar(2.0),
        ..LaplaceConfig::default()
    });
    let diag = bdl_laplace::DiagLaplace::fit(&map, &x, &config).unwrap();
    let full = SubnetLaplace::fit(&map, &x, vec![0], &config).unwrap();
    let (a, b) = (
        diag.log_marginal_likelihood(-3.0).unwrap(),
        full.log_marginal_likelihood(-3.0),
    );
    // h = Σ x²/σ² = 5.25/0.25 = 21: log Z = −3 − ½ [log 23 − log 2 + 2·0.64].
    let expected = -3.0 - 0.5 * ((23.0f64).ln() - 2f64.ln() + 1.28);
    assert!(
        (a - b).abs() < 1e-12 && (a - expected).abs() < 1e-12,
        "{a} {b} {expected}"
    );
}

/// With fewer factor rows than parameters (N·K = 12 < s = 32) `fit` takes the low-rank route
/// (Woodbury on the 12 × 12 matrix I + M D⁻¹ Mᵀ); the dense route (`from_ggn`, a 32 × 32
/// Cholesky) is the same posterior: log det, covariance, marginal variances, the linearized
/// output covariances and the marginal likelihood agree to 1e-10 relative (both exact up to
/// rounding; the covariance's entries are O(1)), the low-rank draws have its covariance, and its
/// checkpoint round-trips bit for bit.
#[test]
fn the_low_rank_and_dense_routes_agree() {
    for k in [1, 2] {
        let (model, theta, x) = setup(Seed(40 + k as u64), k, 12 / k);
        let lik = likelihood(k);
        let config = valid(&LaplaceConfig {
            prior: PriorPrecision::Scalar(0.7),
            subset_scaling: SubsetScaling::None,
            batch_size: 5,
        });
        let map = estimate(&model, &theta, lik);
        let all: Vec<usize> = (0..model.layout().len()).collect();
        let low = SubnetLaplace::fit(&map, &x, all.clone(), &config).unwrap();
        assert!(low.is_low_rank());
        let h = bdl_laplace::ggn(&model, &theta, &lik, &x, &all, 5).unwrap();
        let dense = SubnetLaplace::from_ggn(map.clone(), all.clone(), h.clone(), &config).unwrap();
        assert!(!dense.is_low_rank());
        let close = |a: f64, b: f64, what: &str| {
            assert!(
                (a - b).abs() <= 1e-10 * (1.0 + b.abs()),
                "k = {k}, {what}: {a} vs {b}"
            );
        };
        close(
            low.log_det_precision(),
            dense.log_det_precision(),
            "log det",
        );
        close(
            low.log_marginal_likelihood(-3.0),
            dense.log_marginal_likelihood(-3.0),
            "LML",
        );
        let (cl, cd) = (low.covariance(), dense.covariance());
        let s = all.len();
        for i in 0..s {
            for j in 0..s {
                close(cl[(i, j)], cd[(i, j)], "covariance");
            }
        }
        for (a, b) in low
            .marginal_variances()
            .iter()
            .zip(dense.marginal_variances())
        {
            close(*a, b, "marginal variance");
        }
        let gl = low.ggn();
        for i in 0..s {
            for j in 0..s {
                close(gl[(i, j)], h[(i, j)], "GGN");
            }
        }
        let fl = values(&low.f_covariance(&x, 4).unwrap());
        let fd = values(&dense.f_covariance(&x, 4).unwrap());
        for (a, b) in fl.iter().zip(&fd) {
            close(*a, *b, "output covariance");
        }
        // Draws: the sample covariance of 20,000 draws within 0.05 σᵢσⱼ (standard error
        // √(2/n) σᵢσⱼ ≈ 0.01 σᵢσⱼ) on the first 6 parameters.
        let n = 20_000;
        let v = values(&low.sample(n, Seed(9)).unwrap());
        let mean = values(&theta);
        for a in 0..6 {
            for b in 0..6 {
                let emp: f64 = (0..n)
                    .map(|r| (v[r * s + a] - mean[a]) * (v[r * s + b] - mean[b]))
                    .sum::<f64>()
                    / n as f64;
                let scale = (cd[(a, a)] * cd[(b, b)]).sqrt();
                assert!(
                    (emp - cd[(a, b)]).abs() <= 0.05 * scale,
                    "k = {k}, draw covariance ({a}, {b}): {emp} vs {}",
                    cd[(a, b)]
                );
            }
        }
        let dir = std::env::temp_dir().join(format!("bdl-laplace-low-{}-{k}", std::process::id()));
        let path = dir.join("post.safetensors");
        low.save(&path).unwrap();
        let back = SubnetLaplace::load(&path).unwrap();
        assert!(back.is_low_rank());
        assert_eq!(back.log_det_precision(), low.log_det_precision());
        assert_eq!(values(&back.f_covariance(&x, 4).unwrap()), fl);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
