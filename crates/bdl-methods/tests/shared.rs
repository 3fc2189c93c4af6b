//! Fits that share a problem's [`SharedFits`] train each SWAG configuration once and give what
//! the same fits give alone: the Wasserstein subnetwork ranked by a SWAG fit's kept variances is
//! the one it ranks by its own SWAG run, and so is every posterior.

mod common;

use bdl_inference::PredictOptions;
use bdl_likelihoods::Likelihood;
use bdl_methods::{MethodSpec, Problem, SharedFits, fit};
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device};

/// SWAG of `swag`'s configuration, then the Wasserstein subnetworks of 6 weights ranked by SWAG
/// variances of `swag` and of `other`.
fn specs(swag: &str, other: &str) -> Vec<MethodSpec> {
    let wasserstein = |config: &str| {
        format!(
            r#"{{"method": "laplace", "config": {{"subnetwork": {{"rule": "wasserstein",
                "size": 6, "variances": {{"swag": {config}}}}}}}}}"#
        )
    };
    let text = format!(
        r#"[{{"method": "swag", "config": {swag}}}, {}, {}]"#,
        wasserstein(swag),
        wasserstein(other)
    );
    serde_json::from_str(&text).unwrap()
}

#[test]
fn shared_swag_runs_are_trained_once_and_change_nothing() {
    let (x, y) = common::sine(24, 1.0 / 12.0);
    let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 8, 1], Activation::Tanh)).unwrap());
    let theta = net.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let lik = Likelihood::Gaussian { sigma: 0.3 };
    let specs = specs(
        r#"{"batch_size": 8, "snapshots": 4, "rank": 2, "seed": 1}"#,
        r#"{"batch_size": 8, "snapshots": 4, "rank": 2, "seed": 2}"#,
    );
    let options = PredictOptions::default();
    let run = |problem: &Problem<'_>| -> Vec<(Option<Vec<usize>>, Vec<f32>)> {
        (specs.iter())
            .map(|spec| {
                let fitted = fit(spec, problem).unwrap();
                let pred = fitted.posterior.predictive(&x, &options).unwrap();
                let mean = pred.mean().unwrap().flatten_all().unwrap();
                let mean = mean.to_dtype(DType::F32).unwrap().to_vec1().unwrap();
                (fitted.diagnostics.subnetwork, mean)
            })
            .collect()
    };
    let alone = run(&Problem::new(&net, &theta, lik, &x, &y));
    let shared = SharedFits::default();
    let together = run(&Problem::new(&net, &theta, lik, &x, &y).with_shared(&shared));
    assert_eq!(
        alone, together,
        "sharing changes no subnetwork and no predictive"
    );
    assert_eq!(
        shared.swag_runs(),
        2,
        "one run per configuration, the first one shared"
    );
    // The two configurations rank differently here, so the second did not take the first's.
    assert_ne!(alone[1].0, alone[2].0);
    assert_eq!(alone[1].0.as_ref().map(Vec::len), Some(6));
    let d = net.layout().len();
    assert!(alone[1].0.as_ref().unwrap().iter().all(|&i| i < d));
}
