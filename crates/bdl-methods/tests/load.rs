//! `load` brings every method's saved posterior back with the same predictive, and refuses a
//! damaged file with an error naming it.

mod common;

use bdl_inference::{MapConfig, PredictOptions};
use bdl_likelihoods::Likelihood;
use bdl_methods::{MethodSpec, Problem, fit, load};
use bdl_models::{Activation, Mlp, MlpSpec, Network, ResNet, ResNetSpec, Stem};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};

fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(&t.flatten_all().unwrap()).unwrap()
}

#[test]
fn every_method_comes_back_with_the_same_predictive() {
    let dev = &Device::Cpu;
    let (x, y) = common::sine(24, 1.0 / 12.0);
    let lik = Likelihood::Gaussian { sigma: 0.2 };
    let specs: Vec<MethodSpec> = serde_json::from_str(
        r#"[
        {"method": "map", "config": {"learning_rate": 0.01, "epochs": 20, "batch_size": 8}},
        {"method": "laplace", "config": {}},
        {"method": "laplace", "config": {"hessian": "diagonal"}},
        {"method": "laplace", "config": {"hessian": "kron"}},
        {"method": "laplace", "config": {"hessian": "kron", "subnetwork": {"rule": "last-layer",
            "candidates": "all"}}},
        {"method": "variational", "config": {"method": {"kind": "vogn", "learning_rate": 0.01,
            "beta": 0.1}, "prior_precision": 1, "init_precision": null, "epochs": 2,
            "batch_size": 8, "mc_samples": 1, "lr_decay": null, "seed": 1}},
        {"method": "swag", "config": {"batch_size": 8, "snapshots": 4, "rank": 2}},
        {"method": "ensemble", "config": {"members": 2, "map": {"epochs": 5}}},
        {"method": "sgmcmc", "config": {"dynamics": {"kind": "sgld"}, "step_size": 1e-5,
            "prior_precision": 1, "epochs": 4, "batch_size": 8, "burn_in": 2}}
    ]"#,
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("bdl-methods-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut nets = vec![(
        Network::from(Mlp::new(MlpSpec::new(&[1, 6, 1], Activation::Tanh)).unwrap()),
        specs,
    )];
    // MC dropout saves as a point estimate of a network with dropout.
    let dropout = MlpSpec::new(&[1, 6, 1], Activation::Tanh).with_dropout(0.2);
    nets.push((
        Network::from(Mlp::new(dropout).unwrap()),
        vec![MethodSpec::McDropout(MapConfig {
            epochs: 5,
            ..MapConfig::default()
        })],
    ));
    for (net, specs) in nets {
        let theta = net.init(Seed(0), DType::F32, dev).unwrap();
        let tag = format!("{}", net.dropout());
        assert_round_trips(&Problem::new(&net, &theta, lik, &x, &y), &specs, &dir, &tag);
    }
    // A truncated tensor file is refused, naming it.
    let path = dir.join("0-0.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = load(&path).err().expect("a truncated file");
    let chain = format!("{:?}", anyhow_like(&err));
    assert!(chain.contains("0-0.safetensors"), "{chain}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Fits every spec on `problem`, saves the posterior under `dir` (file names led by `tag`),
/// loads it back with [`load`] and checks that the predictive is the same, bit for bit.
fn assert_round_trips(
    problem: &Problem<'_>,
    specs: &[MethodSpec],
    dir: &std::path::Path,
    tag: &str,
) {
    let options = PredictOptions {
        samples: 4,
        ..PredictOptions::default()
    };
    for (k, spec) in specs.iter().enumerate() {
        let fitted = fit(spec, problem).unwrap();
        let path = dir.join(format!("{tag}-{k}.safetensors"));
        fitted.posterior.save(&path).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back.method(), fitted.posterior.method(), "{}", spec.name());
        let (a, b) = (
            fitted.posterior.predictive(problem.x, &options).unwrap(),
            back.predictive(problem.x, &options).unwrap(),
        );
        for (what, ours, theirs) in [
            ("mean", a.mean().unwrap(), b.mean().unwrap()),
            ("variance", a.variance().unwrap(), b.variance().unwrap()),
        ] {
            assert_eq!(values(&ours), values(&theirs), "{} {what}", spec.name());
        }
    }
}

/// A residual network with batch normalisation goes through the same `fit` and `load` as the
/// MLP: every method that takes any network, on 3-class images (KFAC over the whole network:
/// its convolutions' Kronecker factors and its normalisations' exact blocks, saved and read
/// back).
#[test]
fn a_resnet_fits_and_comes_back_by_every_method_for_any_network() {
    let dev = &Device::Cpu;
    let net = Network::from(
        ResNet::new(ResNetSpec {
            input: [1, 6, 6],
            widths: vec![3, 4],
            blocks: vec![1, 1],
            classes: 3,
            stem: Stem::Cifar,
            statistics: None,
            dropout: 0.0,
        })
        .unwrap(),
    );
    let theta = net.init(Seed(0), DType::F32, dev).unwrap();
    let x =
        bdl_tensor::normal(&mut Seed(1).rng(), (18, 1, 6, 6), 0.0, 1.0, DType::F32, dev).unwrap();
    let labels: Vec<u32> = (0..18).map(|i| i % 3).collect();
    let y = Tensor::new(labels.as_slice(), dev).unwrap();
    let problem = Problem::new(&net, &theta, Likelihood::Categorical { classes: 3 }, &x, &y);
    let specs: Vec<MethodSpec> = serde_json::from_str(
        r#"[
        {"method": "map", "config": {"learning_rate": 0.01, "epochs": 3, "batch_size": 6}},
        {"method": "laplace", "config": {}},
        {"method": "laplace", "config": {"hessian": "diagonal"}},
        {"method": "laplace", "config": {"subnetwork": {"rule": "wasserstein", "size": 30,
            "variances": {"diagonal-laplace": {"prior_precision": 1}}}}},
        {"method": "laplace", "config": {"hessian": "kron"}},
        {"method": "laplace", "config": {"hessian": "kron", "subnetwork": {"rule": "last-layer",
            "candidates": "all"}}},
        {"method": "variational", "config": {"method": {"kind": "vogn", "learning_rate": 0.01,
            "beta": 0.1}, "prior_precision": 1, "init_precision": null, "epochs": 2,
            "batch_size": 6, "mc_samples": 1, "lr_decay": null, "seed": 1}},
        {"method": "swag", "config": {"batch_size": 6, "snapshots": 3, "rank": 2}},
        {"method": "ensemble", "config": {"members": 2, "map": {"epochs": 2}}}
    ]"#,
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("bdl-methods-resnet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert_round_trips(&problem, &specs, &dir, "resnet");
    std::fs::remove_dir_all(&dir).ok();
}

/// The error and its causes, one line each.
fn anyhow_like(e: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push(c.to_string());
        cause = c.source();
    }
    out
}
