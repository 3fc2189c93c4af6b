//! Every posterior type through the one trait: fitted on one small regression problem, saved,
//! loaded, and the same predictive bit for bit; and the same seeded fits at 1 and 2 threads.

use std::path::{Path, PathBuf};

use anyhow::Result;
use bdl_baselines::{EnsembleConfig, McDropout, SwagConfig, train_ensemble, train_swag};
use bdl_data::{Dataset, Provenance, Task};
use bdl_inference::{Link, MapConfig, MapEstimate, Posterior, PredictOptions, Validate, train_map};
use bdl_laplace::selection::{self, Candidates};
use bdl_laplace::{DiagLaplace, LaplaceConfig, PriorPrecision, SubnetLaplace};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    BatchMode, Blocking, Chain, ChainConfig, ChainWindow, GibbsConfig, Keep, ProposalVariance,
};
use bdl_models::{Activation, Mlp, MlpSpec, Network};
use bdl_tensor::{Seed, Threads};
use bdl_variational::{MeanField, Method, VariationalConfig};
use candle_core::{DType, Device, Tensor};

/// 60 points of y = sin 3x + noise on [−1, 1] (f64), and 7 test inputs.
fn data() -> (Tensor, Tensor, Tensor) {
    let dev = Device::Cpu;
    let x = Tensor::arange(0u32, 60, &dev)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .affine(2.0 / 59.0, -1.0)
        .unwrap()
        .unsqueeze(1)
        .unwrap();
    let noise =
        bdl_tensor::normal(&mut Seed(9).rng(), (60, 1), 0.0, 0.1, DType::F64, &dev).unwrap();
    let y = ((x.clone() * 3.0).unwrap().sin().unwrap() + noise).unwrap();
    let x_test = Tensor::new(
        &[[-1.3f64], [-0.7], [-0.2], [0.0], [0.4], [0.9], [1.5]],
        &dev,
    )
    .unwrap();
    (x, y, x_test)
}

fn network(dropout: f64) -> Network {
    Network::from(
        Mlp::new(MlpSpec::new(&[1, 12, 1], Activation::Tanh).with_dropout(dropout)).unwrap(),
    )
}

fn map(net: &Network, x: &Tensor, y: &Tensor) -> Result<MapEstimate> {
    let config = MapConfig {
        learning_rate: 1e-2,
        epochs: 60,
        batch_size: 20,
        learn_sigma: true,
        ..MapConfig::default()
    }
    .check()?;
    let theta0 = net.init(Seed(1), DType::F64, &Device::Cpu)?;
    Ok(train_map(
        net,
        &theta0,
        Likelihood::Gaussian { sigma: 1.0 },
        x,
        y,
        &config,
    )?
    .estimate)
}

fn laplace_config(lambda: f64) -> LaplaceConfig {
    LaplaceConfig {
        prior: PriorPrecision::Scalar(lambda),
        batch_size: 16,
        ..LaplaceConfig::default()
    }
}

/// One posterior of every type, with the name its type's test reports.
fn posteriors(
    x: &Tensor,
    y: &Tensor,
    dir: &Path,
) -> Result<Vec<(&'static str, Box<dyn Posterior>)>> {
    let net = network(0.0);
    let map = map(&net, x, y)?;
    let d = bdl_models::Model::layout(&net).len();
    let subset = selection::random(
        bdl_models::Model::layout(&net),
        Candidates::WeightsOnly,
        10,
        Seed(3),
    )?
    .indices;
    let subnet = SubnetLaplace::fit(&map, x, subset, &laplace_config(2.0).check()?)?;
    let full = SubnetLaplace::fit(&map, x, (0..d).collect(), &laplace_config(2.0).check()?)?;
    let diag = DiagLaplace::fit(&map, x, &laplace_config(2.0).check()?)?;
    let vi_config = VariationalConfig::new(Method::vadam(0.02), 1.0, 5, 10).check()?;
    let vadam =
        bdl_variational::fit(&net, map.theta(), map.likelihood(), x, y, &vi_config)?.posterior;
    let swag_config = SwagConfig {
        batch_size: 10,
        snapshots: 6,
        rank: 4,
        ..SwagConfig::default()
    }
    .check()?;
    let swag = train_swag(&net, map.theta(), map.likelihood(), x, y, &swag_config)?.posterior;
    let ensemble_config = EnsembleConfig {
        members: 3,
        map: MapConfig {
            epochs: 5,
            batch_size: 20,
            ..MapConfig::default()
        },
        parallel: false,
    }
    .check()?;
    let ensemble =
        train_ensemble(&net, map.likelihood(), x, y, DType::F64, &ensemble_config)?.posterior;
    let dropout_net = network(0.2);
    let dropout = McDropout::new(self::map(&dropout_net, x, y)?);
    let chain = gibbs(&net, map.likelihood(), x, y, dir)?;
    Ok(vec![
        ("MAP", Box::new(map)),
        ("subnetwork Laplace", Box::new(subnet)),
        ("full Laplace", Box::new(full)),
        ("diagonal Laplace", Box::new(diag)),
        ("Vadam", Box::new(vadam)),
        ("SWAG", Box::new(swag)),
        ("deep ensemble", Box::new(ensemble)),
        ("MC dropout", Box::new(dropout)),
        ("blocked Gibbs", Box::new(chain)),
    ])
}

/// A short node-block chain, its last 20 draws.
fn gibbs(
    net: &Network,
    lik: Likelihood,
    x: &Tensor,
    y: &Tensor,
    dir: &Path,
) -> Result<ChainWindow> {
    let train = Dataset::new(
        x.to_dtype(DType::F32)?,
        y.to_dtype(DType::F32)?,
        Task::Regression {
            targets: vec!["y".into()],
        },
        vec!["x".into()],
        Provenance {
            description: "sin 3x".into(),
            files: vec![],
        },
    )?;
    let gibbs = GibbsConfig::new(
        Blocking::Node,
        ProposalVariance::Common(0.01),
        BatchMode::Minibatch(20),
    );
    let config = ChainConfig {
        iterations: 60,
        chunk_len: 30,
        precision: bdl_mcmc::Precision::F64,
        ..ChainConfig::new(gibbs)
    }
    .check()?;
    let mlp = net.as_mlp().expect("an MLP");
    let report = bdl_mcmc::run_chain(mlp, lik, &train, &config, dir, 0, &|_| {})?;
    Ok(Chain::open(&report.dir)?.window(&Keep {
        last: Some(20),
        ..Keep::default()
    })?)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bdl-posteriors-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bits(t: &Tensor) -> Vec<u64> {
    bdl_tensor::to_f64_vec(t)
        .unwrap()
        .into_iter()
        .map(f64::to_bits)
        .collect()
}

/// Mean, variance and the per-point log-likelihood of a predictive, as bits.
fn predictive_bits(
    p: &dyn Posterior,
    x: &Tensor,
    y: &Tensor,
    options: &PredictOptions,
) -> Vec<u64> {
    let pred = p.predictive(x, options).unwrap();
    [
        pred.mean().unwrap(),
        pred.variance().unwrap(),
        pred.log_lik(y).unwrap(),
    ]
    .iter()
    .flat_map(bits)
    .collect()
}

/// Loads a saved posterior back by its method (each type has its own `load`).
fn load(method: &str, path: &Path) -> Box<dyn Posterior> {
    match method {
        "MAP" => Box::new(MapEstimate::load(path).unwrap()),
        "subnetwork Laplace" | "full Laplace" => Box::new(SubnetLaplace::load(path).unwrap()),
        "diagonal Laplace" => Box::new(DiagLaplace::load(path).unwrap()),
        "Vadam" => Box::new(MeanField::load(path).unwrap()),
        "SWAG" => Box::new(bdl_baselines::SwagPosterior::load(path).unwrap()),
        "deep ensemble" => Box::new(bdl_baselines::Ensemble::load(path).unwrap()),
        "MC dropout" => Box::new(McDropout::load(path).unwrap()),
        "blocked Gibbs" => Box::new(ChainWindow::load(path).unwrap()),
        other => panic!("no loader for {other}"),
    }
}

#[test]
fn every_posterior_saves_loads_and_predicts_the_same_bits() {
    let (x, y, x_test) = data();
    let y_test = Tensor::zeros((7, 1), DType::F64, &Device::Cpu).unwrap();
    let dir = temp_dir("round-trip");
    let options = PredictOptions {
        samples: 5,
        seed: Seed(4),
        batch_size: 3, // several batches: the batch size must not change the result either
        link: Link::Probit,
    };
    for (method, posterior) in posteriors(&x, &y, &dir).unwrap() {
        assert_eq!(posterior.method(), method);
        let path = dir.join(format!("{}.safetensors", method.replace(' ', "-")));
        posterior.save(&path).unwrap();
        // The sidecar records the network, its layout, the likelihood, the method's
        // configuration, the version and the fit's seed (an ensemble's are its members').
        let sidecar: serde_json::Value = bdl_tensor::read_sidecar(&path).unwrap();
        for key in [
            "format",
            "kind",
            "version",
            "network",
            "layout",
            "likelihood",
            "config",
        ] {
            assert!(
                !sidecar[key].is_null(),
                "{method}: no `{key}` in the sidecar"
            );
        }
        assert_eq!(
            sidecar["seed"].is_null(),
            method == "deep ensemble",
            "{method}: seed"
        );
        let back = load(method, &path);
        assert_eq!(back.method(), method);
        assert_eq!(
            back.likelihood(),
            posterior.likelihood(),
            "{method}: the likelihood (σ) is saved"
        );
        assert_eq!(
            predictive_bits(back.as_ref(), &x_test, &y_test, &options),
            predictive_bits(posterior.as_ref(), &x_test, &y_test, &options),
            "{method}: the reloaded predictive differs"
        );
        let draws = posterior.sample(4, Seed(5)).unwrap();
        let again = back.sample(4, Seed(5)).unwrap();
        match (draws, again) {
            (Some(a), Some(b)) => assert_eq!(bits(&a), bits(&b), "{method}: samples differ"),
            (None, None) => assert_eq!(method, "MC dropout"),
            _ => panic!("{method}: one has samples and the other not"),
        }
        // Loading as the wrong type is a typed error, not a wrong posterior.
        if method != "MAP" && method != "MC dropout" {
            assert!(MapEstimate::load(&path).is_err(), "{method} loaded as MAP");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn seeded_fits_are_the_same_bits_on_one_and_two_threads() {
    let (x, y, x_test) = data();
    let y_test = Tensor::zeros((7, 1), DType::F64, &Device::Cpu).unwrap();
    let options = PredictOptions {
        samples: 20,
        ..PredictOptions::default()
    };
    let run = |threads: usize| -> Vec<(&'static str, Vec<u64>)> {
        let dir = temp_dir(&format!("threads-{threads}"));
        let out = Threads::new(threads).unwrap().install(|| {
            posteriors(&x, &y, &dir)
                .unwrap()
                .into_iter()
                .map(|(m, p)| (m, predictive_bits(p.as_ref(), &x_test, &y_test, &options)))
                .collect()
        });
        std::fs::remove_dir_all(dir).ok();
        out
    };
    let (one, two) = (run(1), run(2));
    for ((method, a), (_, b)) in one.iter().zip(&two) {
        assert_eq!(a, b, "{method}: 1 and 2 threads differ");
    }
}

/// A Laplace large enough for faer and gemm to split their work (a 600-weight subnetwork of
/// an MLP 8-50-50-1 on 400 points: a 600 × 600 rank-k update, Cholesky and triangular solves)
/// gives the same predictive bits on one and two threads.
#[test]
fn a_large_laplace_is_the_same_bits_on_one_and_two_threads() {
    let dev = Device::Cpu;
    let net = Network::from(Mlp::new(MlpSpec::new(&[8, 50, 50, 1], Activation::Relu)).unwrap());
    let theta = net.init(Seed(2), DType::F64, &dev).unwrap();
    let x = bdl_tensor::normal(&mut Seed(3).rng(), (400, 8), 0.0, 1.0, DType::F64, &dev).unwrap();
    let x_test = x.narrow(0, 0, 50).unwrap();
    let y_test = Tensor::zeros((50, 1), DType::F64, &dev).unwrap();
    let map = MapEstimate::new(net.clone(), theta, Likelihood::Gaussian { sigma: 0.3 }).unwrap();
    let layout = bdl_models::Model::layout(&net);
    let subset = selection::random(layout, Candidates::WeightsOnly, 600, Seed(4))
        .unwrap()
        .indices;
    let run = |threads: usize| {
        Threads::new(threads).unwrap().install(|| {
            let config = LaplaceConfig {
                batch_size: 100,
                ..laplace_config(1.0)
            };
            let post =
                SubnetLaplace::fit(&map, &x, subset.clone(), &config.check().unwrap()).unwrap();
            let options = PredictOptions::default();
            (
                predictive_bits(&post, &x_test, &y_test, &options),
                post.log_det_precision().to_bits(),
            )
        })
    };
    assert_eq!(run(1), run(2));
}
