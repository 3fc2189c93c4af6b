//! `fit` against the method crates called directly: the same posterior from the same settings,
//! bit for bit; subnetworks that leave the rest of θ fixed; one error kind for divergence.

mod common;

use bdl_baselines::SwagConfig;
use bdl_inference::{MapConfig, Posterior, PredictOptions, Validate};
use bdl_laplace::selection::{self, Candidates};
use bdl_laplace::{Evidence, LaplaceConfig, PriorPrecision, SubnetLaplace};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{BatchMode, Blocking, GibbsConfig, HmcConfig, NutsConfig, ProposalVariance};
use bdl_methods::{
    Error, GibbsSpec, Hessian, LaplaceSpec, MethodSpec, Problem, SubsetRule, VariancesFrom,
    VariationalSpec, fit,
};
use bdl_models::{Activation, Cnn, CnnSpec, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use bdl_variational::VariationalConfig;
use candle_core::{DType, Device, Tensor};

const LIK: Likelihood = Likelihood::Gaussian { sigma: 0.2 };

/// The training examples.
struct Data {
    x: Tensor,
    y: Tensor,
}

impl Data {
    fn x(&self) -> &Tensor {
        &self.x
    }

    fn y(&self) -> &Tensor {
        &self.y
    }
}

/// y = sin(3x) on 40 points of [−1, 1), an MLP 1-8-1 and its initial θ.
fn problem() -> (Network, Tensor, Data) {
    let dev = &Device::Cpu;
    let (x, y) = common::sine(40, 0.05);
    let data = Data { x, y };
    let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh)).unwrap());
    let theta = net.init(Seed(0), DType::F32, dev).unwrap();
    (net, theta, data)
}

fn map_config() -> MapConfig {
    MapConfig {
        learning_rate: 0.01,
        epochs: 100,
        batch_size: 8,
        ..MapConfig::default()
    }
}

fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(&t.flatten_all().unwrap()).unwrap()
}

/// The predictive mean and variance of a posterior at the training inputs.
fn moments(post: &dyn Posterior, x: &Tensor) -> (Vec<f64>, Vec<f64>) {
    let pred = post.predictive(x, &PredictOptions::default()).unwrap();
    (
        values(&pred.mean().unwrap()),
        values(&pred.variance().unwrap()),
    )
}

/// The MAP of the problem, trained directly.
fn map_theta(net: &Network, theta: &Tensor, data: &Data) -> Tensor {
    let config = map_config().check().unwrap();
    bdl_inference::train_map(net, theta, LIK, data.x(), data.y(), &config)
        .unwrap()
        .estimate
        .theta()
        .clone()
}

#[test]
fn map_is_train_map() {
    let (net, theta, data) = problem();
    let fitted = fit(
        &MethodSpec::Map(map_config()),
        &Problem::new(&net, &theta, LIK, data.x(), data.y()),
    )
    .unwrap();
    let direct = map_theta(&net, &theta, &data);
    let via = fitted.posterior.sample(1, Seed(0)).unwrap().unwrap();
    assert_eq!(values(&via), values(&direct));
    assert_eq!(fitted.diagnostics.losses.len(), 100);
    assert_eq!(fitted.posterior.method(), "MAP");
}

/// A diagonal Laplace over a subnetwork S: σ_d² = 1/(h_dd + λ) on S from the network's GGN
/// diagonal, θ exactly outside S; over every index it is the diagonal Laplace over everything.
#[test]
fn diagonal_laplace_over_a_subnetwork() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let problem = Problem::new(&net, &theta, LIK, data.x(), data.y());
    let lambda = 2.0;
    let diagonal = |subnetwork| {
        MethodSpec::Laplace(LaplaceSpec {
            hessian: Hessian::Diagonal,
            subnetwork,
            config: LaplaceConfig {
                prior: PriorPrecision::Scalar(lambda),
                ..LaplaceConfig::default()
            },
            ..LaplaceSpec::default()
        })
    };
    let last = SubsetRule::LastLayer {
        candidates: Candidates::All,
    };
    let fitted = fit(&diagonal(last), &problem).unwrap();
    let subset = fitted.diagnostics.subnetwork.clone().unwrap();
    assert_eq!(subset, (16..25).collect::<Vec<_>>());
    let draws = fitted.posterior.sample(4000, Seed(3)).unwrap().unwrap();
    let draws: Vec<Vec<f64>> = draws.to_dtype(DType::F64).unwrap().to_vec2().unwrap();
    let mean = values(&theta);
    let h = bdl_laplace::ggn_diagonal(&net, &theta, &LIK, data.x(), 256).unwrap();
    for d in 0..mean.len() {
        let at: Vec<f64> = draws.iter().map(|w| w[d]).collect();
        if subset.contains(&d) {
            let var = at.iter().map(|w| (w - mean[d]).powi(2)).sum::<f64>() / at.len() as f64;
            let want = 1.0 / (h[d] + lambda);
            // The variance about θ of 4,000 Gaussian draws: relative sd √(2/4000) ≈ 0.022.
            assert!((var / want - 1.0).abs() < 0.1, "{d}: {var} vs {want}");
        } else {
            assert!(at.iter().all(|&w| w == mean[d]), "{d} moved");
        }
    }
    // Over every index, the same predictive as the diagonal Laplace over everything.
    let every = SubsetRule::Indices {
        indices: (0..mean.len()).collect(),
    };
    let (m_sub, v_sub) = moments(
        fit(&diagonal(every), &problem).unwrap().posterior.as_ref(),
        data.x(),
    );
    let (m_all, v_all) = moments(
        fit(&diagonal(SubsetRule::All), &problem)
            .unwrap()
            .posterior
            .as_ref(),
        data.x(),
    );
    assert_eq!(m_sub, m_all);
    for (a, b) in v_sub.iter().zip(&v_all) {
        assert!((a - b).abs() <= 1e-6 * b, "{a} vs {b}");
    }
}

/// A Wasserstein subnetwork with diagonal-Laplace variances: the indices of the selection rule
/// and the posterior of `SubnetLaplace::fit` on them.
#[test]
fn subnetwork_laplace_is_selection_then_fit() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let spec = MethodSpec::Laplace(LaplaceSpec {
        subnetwork: SubsetRule::Wasserstein {
            size: 6,
            candidates: Candidates::WeightsOnly,
            variances: VariancesFrom::DiagonalLaplace {
                prior_precision: 1.0,
            },
        },
        config: LaplaceConfig {
            prior: PriorPrecision::Scalar(1.0),
            ..LaplaceConfig::default()
        },
        ..LaplaceSpec::default()
    });
    assert_eq!(spec.name(), "subnetwork Laplace");
    let fitted = fit(&spec, &Problem::new(&net, &theta, LIK, data.x(), data.y())).unwrap();
    assert_eq!(fitted.diagnostics.subnetwork.map(|s| s.len()), Some(6));

    let map = bdl_inference::MapEstimate::new(net.clone(), theta.clone(), LIK).unwrap();
    let h = bdl_laplace::ggn_diagonal(&net, &theta, &LIK, data.x(), 256).unwrap();
    let v = selection::diagonal_variances(&h, &vec![1.0; h.len()]);
    let chosen = selection::wasserstein(&v, net.layout(), Candidates::WeightsOnly, 6, 1.0).unwrap();
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(1.0),
        ..LaplaceConfig::default()
    }
    .check()
    .unwrap();
    let direct = SubnetLaplace::fit(&map, data.x(), chosen.indices, &config).unwrap();
    assert_eq!(
        moments(fitted.posterior.as_ref(), data.x()),
        moments(&direct, data.x())
    );
}

/// λ by the marginal likelihood: the grid's argmax of the evidence, and the posterior there.
#[test]
fn prior_grid_takes_the_evidence_argmax() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let grid = vec![0.01, 0.1, 1.0, 10.0, 100.0];
    let spec = MethodSpec::Laplace(LaplaceSpec {
        prior_grid: Some(grid.clone()),
        ..LaplaceSpec::default()
    });
    let fitted = fit(&spec, &Problem::new(&net, &theta, LIK, data.x(), data.y())).unwrap();
    assert_eq!(fitted.posterior.method(), "full Laplace");

    let map = bdl_inference::MapEstimate::new(net.clone(), theta.clone(), LIK).unwrap();
    let d = net.layout().len();
    let evidence = Evidence::new(&map, data.x(), data.y(), (0..d).collect(), 256).unwrap();
    let scores: Vec<f64> = grid
        .iter()
        .map(|&l| evidence.log_evidence(l, 0.2))
        .collect();
    let argmax = (0..grid.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap();
    assert_eq!(fitted.diagnostics.prior_precision, Some(grid[argmax]));
    // Not an edge of the grid, so the choice is a real maximum.
    assert!(argmax > 0 && argmax + 1 < grid.len(), "{scores:?}");
    let direct = evidence.posterior(grid[argmax], 0.2).unwrap();
    assert_eq!(
        moments(fitted.posterior.as_ref(), data.x()),
        moments(&direct, data.x())
    );
}

/// The KFAC Laplace through the method layer: `KronLaplace::fit` bit for bit, λ from a grid by
/// its marginal likelihood over the candidates, the last layer as a scope, and the subnetwork
/// rules it cannot take refused.
#[test]
fn kron_laplace_is_the_direct_fit_and_its_grid_argmax() {
    use bdl_laplace::{KronConfig, KronLaplace, KronScope};
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let problem = Problem::new(&net, &theta, LIK, data.x(), data.y());
    let map = bdl_inference::MapEstimate::new(net.clone(), theta.clone(), LIK).unwrap();
    let spec: MethodSpec = serde_json::from_str(
        r#"{"method": "laplace", "config": {"hessian": "kron", "prior": {"scalar": 2.0}}}"#,
    )
    .unwrap();
    let fitted = fit(&spec, &problem).unwrap();
    assert_eq!(fitted.posterior.method(), "KFAC Laplace");
    let config = KronConfig {
        scope: KronScope::All,
        prior_precision: 2.0,
        batch_size: 256,
    }
    .check()
    .unwrap();
    let direct = KronLaplace::fit(&map, data.x(), &config).unwrap();
    assert_eq!(
        moments(fitted.posterior.as_ref(), data.x()),
        moments(&direct, data.x())
    );

    let grid = vec![0.01, 0.1, 1.0, 10.0, 100.0];
    let spec: MethodSpec = serde_json::from_value(serde_json::json!({"method": "laplace",
        "config": {"hessian": "kron", "prior_grid": grid,
        "subnetwork": {"rule": "last-layer", "candidates": "all"}}}))
    .unwrap();
    let fitted = fit(&spec, &problem).unwrap();
    assert_eq!(fitted.posterior.method(), "last-layer KFAC Laplace");
    let last = KronLaplace::fit(
        &map,
        data.x(),
        &KronConfig {
            scope: KronScope::LastLayer,
            ..KronConfig::default()
        }
        .check()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        fitted.diagnostics.subnetwork.as_deref(),
        Some(last.subset())
    );
    let scores: Vec<f64> = grid
        .iter()
        .map(|&l| {
            last.with_prior_precision(l)
                .unwrap()
                .log_marginal_likelihood(0.0)
                .unwrap()
        })
        .collect();
    let argmax = (0..grid.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap();
    assert_eq!(fitted.diagnostics.prior_precision, Some(grid[argmax]));

    for rule in [
        r#"{"rule": "last-layer"}"#,
        r#"{"rule": "random", "size": 3}"#,
    ] {
        let spec: MethodSpec = serde_json::from_str(&format!(
            r#"{{"method": "laplace", "config": {{"hessian": "kron", "subnetwork": {rule}}}}}"#
        ))
        .unwrap();
        let err = fit(&spec, &problem).err().unwrap();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    }
}

/// VOGN over a random subnetwork: `bdl_variational::fit` with the rule's indices as its subset,
/// and every other parameter's σ zero.
#[test]
fn variational_subnetwork_is_fit_with_the_rule_subset() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let config = VariationalConfig {
        seed: Seed(5),
        ..VariationalConfig::new(
            bdl_variational::Method::Vogn {
                learning_rate: 0.01,
                beta: 0.01,
            },
            1.0,
            5,
            8,
        )
    };
    let rule = SubsetRule::Random {
        size: 5,
        candidates: Candidates::All,
        seed: Seed(9),
    };
    let spec = MethodSpec::Variational(VariationalSpec {
        config: config.clone(),
        subnetwork: rule,
    });
    let fitted = fit(&spec, &Problem::new(&net, &theta, LIK, data.x(), data.y())).unwrap();
    assert_eq!(fitted.posterior.method(), "VOGN");

    let subset = selection::random(net.layout(), Candidates::All, 5, Seed(9))
        .unwrap()
        .indices;
    let direct_config = VariationalConfig {
        subset: Some(subset.clone()),
        ..config
    }
    .check()
    .unwrap();
    let direct = bdl_variational::fit(&net, &theta, LIK, data.x(), data.y(), &direct_config)
        .unwrap()
        .posterior;
    let draws = fitted.posterior.sample(4, Seed(1)).unwrap().unwrap();
    assert_eq!(
        values(&draws),
        values(&direct.sample(4, Seed(1)).unwrap().unwrap())
    );
    // Outside the subset every draw is θ.
    let theta = values(&theta);
    let d = theta.len();
    for (k, row) in values(&draws).chunks_exact(d).enumerate() {
        for i in (0..d).filter(|i| !subset.contains(i)) {
            assert_eq!(row[i], theta[i], "draw {k}, parameter {i}");
        }
    }
}

/// A Gibbs chain over the last layer: its draws move only the last layer's parameters.
#[test]
fn gibbs_over_a_subnetwork_moves_only_it() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let spec = MethodSpec::Gibbs(GibbsSpec {
        gibbs: GibbsConfig::new(
            Blocking::Node,
            ProposalVariance::Common(1e-3),
            BatchMode::Exact,
        ),
        sweeps: 60,
        burn_in: 20,
        keep_every: 4,
        pilot: None,
        seed: Seed(2),
        subnetwork: SubsetRule::LastLayer {
            candidates: Candidates::All,
        },
    });
    let fitted = fit(&spec, &Problem::new(&net, &theta, LIK, data.x(), data.y())).unwrap();
    assert_eq!(fitted.diagnostics.subnetwork.map(|s| s.len()), Some(9));
    let draws = fitted.posterior.sample(10, Seed(0)).unwrap().unwrap();
    let theta = values(&theta);
    let d = theta.len();
    let last: Vec<usize> = (d - 9..d).collect();
    let mut moved = false;
    for row in values(&draws).chunks_exact(d) {
        for i in 0..d {
            if last.contains(&i) {
                moved |= row[i] != theta[i];
            } else {
                assert_eq!(
                    row[i], theta[i],
                    "parameter {i} outside the subnetwork moved"
                );
            }
        }
    }
    assert!(moved, "no draw moved the last layer");
    let acceptance = &fitted.diagnostics.acceptance;
    assert!(acceptance.iter().any(|&a| a > 0.0), "{acceptance:?}");
}

#[test]
fn divergence_is_one_error_kind() {
    let (net, theta, data) = problem();
    let problem = Problem::new(&net, &theta, LIK, data.x(), data.y());
    let huge = MapConfig {
        learning_rate: 1e12,
        optimizer: bdl_inference::Optimizer::Sgd { momentum: 0.0 },
        ..map_config()
    };
    let vogn = VariationalConfig::new(
        bdl_variational::Method::Vogn {
            learning_rate: 1e12,
            beta: 0.5,
        },
        1.0,
        5,
        8,
    );
    for spec in [
        MethodSpec::Map(huge),
        MethodSpec::Variational(VariationalSpec {
            config: vogn,
            subnetwork: SubsetRule::All,
        }),
    ] {
        let Err(e) = fit(&spec, &problem) else {
            panic!("{} did not diverge", spec.name())
        };
        assert!(e.is_divergence(), "{}: {e}", spec.name());
        assert!(matches!(e, Error::Diverged { .. }));
    }
}

#[test]
fn what_a_method_cannot_do_is_unsupported() {
    let (net, theta, data) = problem();
    let problem = Problem::new(&net, &theta, LIK, data.x(), data.y());
    let kron_subnet = MethodSpec::Laplace(LaplaceSpec {
        hessian: Hessian::Kron,
        subnetwork: SubsetRule::Indices {
            indices: vec![0, 3],
        },
        ..LaplaceSpec::default()
    });
    let no_dropout = MethodSpec::McDropout(map_config());
    for spec in [kron_subnet, no_dropout] {
        let e = fit(&spec, &problem).err().expect("unsupported");
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    }
    // Gibbs is for MLPs.
    let cnn = Network::from(Cnn::new(CnnSpec::lenet5(10)).unwrap());
    let theta = cnn.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let gibbs = MethodSpec::Gibbs(GibbsSpec {
        gibbs: GibbsConfig::new(
            Blocking::Node,
            ProposalVariance::Common(1e-3),
            BatchMode::Exact,
        ),
        sweeps: 1,
        burn_in: 0,
        keep_every: 1,
        pilot: None,
        seed: Seed(0),
        subnetwork: SubsetRule::All,
    });
    // Images the CNN reads (its inputs as rows of 784), so that only the sampler objects.
    let images = Tensor::zeros((2, 784), DType::F32, &Device::Cpu).unwrap();
    let labels = Tensor::new(&[0u32, 1], &Device::Cpu).unwrap();
    let classes = Likelihood::Categorical { classes: 10 };
    let e = fit(
        &gibbs,
        &Problem::new(&cnn, &theta, classes, &images, &labels),
    )
    .err()
    .expect("a CNN");
    assert_eq!(
        e.to_string(),
        "blocked Gibbs cannot sample a network that is not an MLP"
    );
}

/// Bad settings reach the user as the method's failure naming the parameter.
#[test]
fn invalid_settings_name_the_parameter() {
    let (net, theta, data) = problem();
    let spec = MethodSpec::Map(MapConfig {
        batch_size: 0,
        ..map_config()
    });
    let e = fit(&spec, &Problem::new(&net, &theta, LIK, data.x(), data.y()))
        .err()
        .expect("batch size 0");
    assert!(matches!(e, Error::Failed { method: "MAP", .. }), "{e}");
    assert_eq!(e.to_string(), "MAP failed");
    let cause = std::error::Error::source(&e).expect("the MAP trainer's error");
    assert!(cause.to_string().contains("batch_size"), "{cause}");
}

/// SGHMC over the last layer: `sample_sgmcmc` with the rule's indices, bit for bit, from JSON.
#[test]
fn sgmcmc_subnetwork_is_sample_sgmcmc_with_the_rule_subset() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let spec: MethodSpec = serde_json::from_str(
        r#"{"method": "sgmcmc", "config": {"dynamics": {"kind": "sghmc", "friction": 0.1},
            "step_size": 1e-5, "prior_precision": 1.0, "epochs": 20, "batch_size": 8,
            "burn_in": 50, "keep_every": 5, "seed": 4,
            "subnetwork": {"rule": "last-layer", "candidates": "all"}}}"#,
    )
    .unwrap();
    assert_eq!(spec.name(), "SGHMC");
    let fitted = fit(&spec, &Problem::new(&net, &theta, LIK, data.x(), data.y())).unwrap();
    assert_eq!(fitted.diagnostics.subnetwork.map(|s| s.len()), Some(9));
    let MethodSpec::Sgmcmc(s) = &spec else {
        unreachable!()
    };
    let d = net.layout().len();
    let config = bdl_mcmc::SgmcmcConfig {
        subset: Some((d - 9..d).collect()),
        ..s.config.clone()
    }
    .check()
    .unwrap();
    let direct = bdl_mcmc::sample_sgmcmc(&net, &theta, LIK, data.x(), data.y(), &config)
        .unwrap()
        .posterior;
    assert_eq!(
        moments(fitted.posterior.as_ref(), data.x()),
        moments(&direct, data.x())
    );
    assert_eq!(fitted.posterior.method(), "SGHMC");
}

/// SWAG, HMC and NUTS over the last layer from JSON: the method crate's call with the rule's
/// indices as its `subset`, bit for bit, and every draw θ off the last layer.
#[test]
fn swag_hmc_and_nuts_take_a_subnetwork_rule() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let problem = Problem::new(&net, &theta, LIK, data.x(), data.y());
    let last = r#""subnetwork": {"rule": "last-layer", "candidates": "all"}"#;
    let specs: Vec<MethodSpec> = serde_json::from_str(&format!(
        r#"[{{"method": "swag", "config": {{"learning_rate": 0.01, "snapshots": 5, "rank": 2,
               "batch_size": 8, {last}}}}},
            {{"method": "hmc", "config": {{"step_size": 1e-3, "leapfrog_steps": 5,
               "iterations": 40, "burn_in": 20, "prior_precision": 1.0, {last}}}}},
            {{"method": "nuts", "config": {{"step_size": 1e-3, "max_depth": 4,
               "iterations": 40, "burn_in": 20, "prior_precision": 1.0, {last}}}}}]"#
    ))
    .unwrap();
    let d = net.layout().len();
    let subset = Some((d - 9..d).collect::<Vec<_>>());
    let (x, y) = (data.x(), data.y());
    for spec in &specs {
        let fitted = fit(spec, &problem).unwrap();
        assert_eq!(fitted.diagnostics.subnetwork, subset, "{}", spec.name());
        let direct: Box<dyn Posterior> = match spec {
            MethodSpec::Swag(s) => {
                let config = SwagConfig {
                    subset: subset.clone(),
                    ..s.config.clone()
                };
                let config = config.check().unwrap();
                Box::new(
                    bdl_baselines::train_swag(&net, &theta, LIK, x, y, &config)
                        .unwrap()
                        .posterior,
                )
            }
            MethodSpec::Hmc(s) => {
                let config = HmcConfig {
                    subset: subset.clone(),
                    ..s.config.clone()
                };
                let config = config.check().unwrap();
                Box::new(
                    bdl_mcmc::sample_hmc(&net, &theta, LIK, x, y, &config)
                        .unwrap()
                        .posterior,
                )
            }
            MethodSpec::Nuts(s) => {
                let config = NutsConfig {
                    subset: subset.clone(),
                    ..s.config.clone()
                };
                let config = config.check().unwrap();
                Box::new(
                    bdl_mcmc::sample_nuts(&net, &theta, LIK, x, y, &config)
                        .unwrap()
                        .posterior,
                )
            }
            _ => unreachable!(),
        };
        let draws = |p: &dyn Posterior| values(&p.sample(8, Seed(2)).unwrap().unwrap());
        let via = draws(fitted.posterior.as_ref());
        assert_eq!(via, draws(direct.as_ref()), "{}", spec.name());
        let at = values(&theta);
        for (k, w) in via.iter().enumerate() {
            if k % d < d - 9 {
                assert_eq!(*w, at[k % d], "{} moved {}", spec.name(), k % d);
            }
        }
        assert!(
            via.iter().enumerate().any(|(k, w)| *w != at[k % d]),
            "{}",
            spec.name()
        );
    }
}

/// λ per layer through the spec: `layerwise_prior`'s posterior and precisions.
#[test]
fn layerwise_prior_is_the_fixed_point() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let spec: MethodSpec = serde_json::from_str(
        r#"{"method": "laplace", "config": {"prior": {"scalar": 1.0}, "layerwise_prior": true}}"#,
    )
    .unwrap();
    let fitted = fit(&spec, &Problem::new(&net, &theta, LIK, data.x(), data.y())).unwrap();
    let map = bdl_inference::MapEstimate::new(net.clone(), theta.clone(), LIK).unwrap();
    let all: Vec<usize> = (0..net.layout().len()).collect();
    let direct = bdl_laplace::layerwise_prior(&map, data.x(), all, 1.0, 500).unwrap();
    assert_eq!(fitted.diagnostics.layer_prior_precisions, direct.lambdas);
    assert_eq!(
        moments(fitted.posterior.as_ref(), data.x()),
        moments(&direct.posterior, data.x())
    );
    let diagonal: MethodSpec = serde_json::from_str(
        r#"{"method": "laplace", "config": {"hessian": "diagonal", "layerwise_prior": true}}"#,
    )
    .unwrap();
    let problem = Problem::new(&net, &theta, LIK, data.x(), data.y());
    assert!(matches!(
        fit(&diagonal, &problem),
        Err(Error::Unsupported { .. })
    ));
}

/// λ on held-out examples: the grid's argmax of `Evidence::validation_log_lik`; without
/// validation examples, an error saying what is missing.
#[test]
fn prior_by_validation_takes_the_held_out_argmax() {
    let (net, theta0, data) = problem();
    let theta = map_theta(&net, &theta0, &data);
    let (x_val, y_val) = (
        data.x().narrow(0, 0, 10).unwrap(),
        data.y().narrow(0, 0, 10).unwrap(),
    );
    let (x_val, y_val) = ((x_val + 0.025).unwrap(), (y_val.clone() + 0.05).unwrap());
    let grid = vec![0.01, 0.1, 1.0, 10.0, 100.0];
    let spec: MethodSpec = serde_json::from_value(serde_json::json!({
        "method": "laplace",
        "config": {"prior_grid": grid, "prior_by": "validation"}
    }))
    .unwrap();
    let problem = Problem::new(&net, &theta, LIK, data.x(), data.y());
    let e = fit(&spec, &problem).err().expect("no validation examples");
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    let fitted = fit(&spec, &problem.with_validation(&x_val, &y_val)).unwrap();

    let map = bdl_inference::MapEstimate::new(net.clone(), theta.clone(), LIK).unwrap();
    let d = net.layout().len();
    let evidence = Evidence::new(&map, data.x(), data.y(), (0..d).collect(), 256).unwrap();
    let val = evidence.validation(&x_val, &y_val).unwrap();
    let scores: Vec<f64> = grid
        .iter()
        .map(|&l| evidence.validation_log_lik(&val, l, 0.2).unwrap())
        .collect();
    let argmax = (0..grid.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap();
    assert_eq!(fitted.diagnostics.prior_precision, Some(grid[argmax]));
    let diagonal: MethodSpec = serde_json::from_value(serde_json::json!({
        "method": "laplace",
        "config": {"hessian": "diagonal", "prior_grid": grid, "prior_by": "validation"}
    }))
    .unwrap();
    let chosen = fit(&diagonal, &problem.with_validation(&x_val, &y_val))
        .unwrap()
        .diagnostics
        .prior_precision
        .unwrap();
    assert!(grid.contains(&chosen));
}
