//! The function-space view of every posterior: moments of f that agree with the predictive,
//! and draws of f whose moments agree with the exact ones.

mod common;

use bdl_inference::{FunctionMoments, MapConfig, Posterior, PredictOptions};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::ChainWindow;
use bdl_methods::{LaplaceSpec, MethodSpec, Problem, fit};
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};

const SIGMA: f64 = 0.2;
const LIK: Likelihood = Likelihood::Gaussian { sigma: SIGMA };

fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(&t.flatten_all().unwrap()).unwrap()
}

/// y = sin(3x) on 30 points of [−1, 0.5), and `net`.
fn data() -> (Tensor, Tensor) {
    common::sine(30, 0.05)
}

fn mlp(dropout: f64) -> Network {
    let spec = MlpSpec::new(&[1, 8, 1], Activation::Tanh).with_dropout(dropout);
    Network::from(Mlp::new(spec).unwrap())
}

fn map_config() -> MapConfig {
    MapConfig {
        learning_rate: 0.01,
        epochs: 60,
        batch_size: 10,
        ..MapConfig::default()
    }
}

/// The MAP θ̂ of `net` on the data.
fn map_theta(net: &Network, x: &Tensor, y: &Tensor) -> Tensor {
    let theta0 = net.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let map = fit(
        &MethodSpec::Map(map_config()),
        &Problem::new(net, &theta0, LIK, x, y),
    )
    .unwrap();
    map.posterior
        .sample(1, Seed(0))
        .unwrap()
        .unwrap()
        .squeeze(0)
        .unwrap()
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    for (i, (a, b)) in a.iter().zip(b).enumerate() {
        assert!(
            (a - b).abs() <= tol * b.abs().max(1e-3),
            "{what}[{i}]: {a} vs {b}"
        );
    }
}

/// The linearized Gaussian: its f variance plus σ² is the predictive variance, its mean the
/// predictive mean; 4000 draws of f reproduce both within a few Monte Carlo standard errors.
#[test]
fn laplace_moments_are_the_predictive_and_its_draws_match_them() {
    let (x, y) = data();
    let net = mlp(0.0);
    let theta = map_theta(&net, &x, &y);
    let laplace = fit(
        &MethodSpec::Laplace(LaplaceSpec::default()),
        &Problem::new(&net, &theta, LIK, &x, &y),
    )
    .unwrap()
    .posterior;
    let options = PredictOptions {
        samples: 4000,
        seed: Seed(11),
        ..PredictOptions::default()
    };
    let m = laplace.f_moments(&x, &options).unwrap();
    let pred = laplace.predictive(&x, &options).unwrap();
    let f_var = values(&m.variance().unwrap());
    let with_noise: Vec<f64> = f_var.iter().map(|v| v + SIGMA * SIGMA).collect();
    close(
        &with_noise,
        &values(&pred.variance().unwrap()),
        1e-9,
        "variance",
    );
    close(
        &values(&m.mean),
        &values(&pred.mean().unwrap()),
        1e-9,
        "mean",
    );

    let draws = laplace.f_samples(&x, &options).unwrap().unwrap();
    assert_eq!(draws.dims(), &[4000, 30, 1]);
    let empirical = FunctionMoments::of_draws(&draws).unwrap();
    let (mean, var) = (
        values(&empirical.mean),
        values(&empirical.variance().unwrap()),
    );
    for (i, (&exact_var, &exact_mean)) in f_var.iter().zip(&values(&m.mean)).enumerate() {
        let se_mean = (exact_var / 4000.0).sqrt();
        assert!(
            (mean[i] - exact_mean).abs() < 5.0 * se_mean + 1e-9,
            "mean at {i}: {} vs {exact_mean} (se {se_mean})",
            mean[i]
        );
        // The variance of a Gaussian sample variance: 2σ⁴/(S − 1).
        let se_var = exact_var * (2.0 / 3999.0f64).sqrt();
        assert!(
            (var[i] - exact_var).abs() < 5.0 * se_var + 1e-12,
            "variance at {i}: {} vs {exact_var} (se {se_var})",
            var[i]
        );
    }
}

/// A chain window's moments are those of every draw: the outputs at each, averaged by hand.
#[test]
fn chain_window_moments_are_over_every_draw() {
    let (x, _) = data();
    let net = mlp(0.0);
    let draws: Vec<Tensor> = (0..3)
        .map(|s| net.init(Seed(s), DType::F32, &Device::Cpu).unwrap())
        .collect();
    let window = ChainWindow::new(
        net.clone(),
        LIK,
        Tensor::stack(&draws, 0).unwrap(),
        vec![0, 1, 2],
    )
    .unwrap();
    let m = window.f_moments(&x, &PredictOptions::default()).unwrap();
    let f: Vec<Vec<f64>> = draws
        .iter()
        .map(|theta| values(&net.forward(theta, &x).unwrap()))
        .collect();
    let mean: Vec<f64> = (0..30)
        .map(|i| f.iter().map(|f| f[i]).sum::<f64>() / 3.0)
        .collect();
    let var: Vec<f64> = (0..30)
        .map(|i| f.iter().map(|f| (f[i] - mean[i]).powi(2)).sum::<f64>() / 3.0)
        .collect();
    close(&values(&m.mean), &mean, 1e-12, "mean");
    close(&values(&m.variance().unwrap()), &var, 1e-12, "variance");
}

/// MC dropout's draws are f at the predictive's masks, and an ensemble's moments cover every
/// member: each mean is the Gaussian predictive's mean.
#[test]
fn dropout_and_ensemble_means_are_the_predictive_means() {
    let (x, y) = data();
    let options = PredictOptions {
        samples: 8,
        seed: Seed(3),
        ..PredictOptions::default()
    };
    let dropout = mlp(0.2);
    let theta0 = dropout.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let problem = Problem::new(&dropout, &theta0, LIK, &x, &y);
    let mc = fit(&MethodSpec::McDropout(map_config()), &problem)
        .unwrap()
        .posterior;
    let draws = mc.f_samples(&x, &options).unwrap().unwrap();
    assert_eq!(draws.dims(), &[8, 30, 1]);
    let m = mc.f_moments(&x, &options).unwrap();
    let pred_mean = values(&mc.predictive(&x, &options).unwrap().mean().unwrap());
    close(&values(&m.mean), &pred_mean, 1e-9, "MC dropout mean");
    assert!(values(&m.variance().unwrap()).iter().any(|&v| v > 0.0));

    let net = mlp(0.0);
    let theta0 = net.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let config = bdl_baselines::EnsembleConfig {
        members: 3,
        map: map_config(),
        parallel: false,
    };
    let ensemble = fit(
        &MethodSpec::Ensemble(config),
        &Problem::new(&net, &theta0, LIK, &x, &y),
    )
    .unwrap()
    .posterior;
    let m = ensemble.f_moments(&x, &options).unwrap();
    let pred_mean = values(&ensemble.predictive(&x, &options).unwrap().mean().unwrap());
    close(&values(&m.mean), &pred_mean, 1e-9, "ensemble mean");
}

/// A point mass has no spread in function space.
#[test]
fn map_moments_are_a_point() {
    let (x, y) = data();
    let net = mlp(0.0);
    let theta = map_theta(&net, &x, &y);
    let map = fit(
        &MethodSpec::Map(MapConfig {
            epochs: 1,
            ..map_config()
        }),
        &Problem::new(&net, &theta, LIK, &x, &y),
    )
    .unwrap()
    .posterior;
    let m = map.f_moments(&x, &PredictOptions::default()).unwrap();
    assert!(values(&m.variance().unwrap()).iter().all(|&v| v == 0.0));
}
