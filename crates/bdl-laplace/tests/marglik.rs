//! Online marginal-likelihood training against the post-hoc optimum: the (λ, σ) it settles on
//! is the evidence maximum at its own MAP, and a MAP trained afresh at that λ has its post-hoc
//! evidence maximum there too (a fixed point of MAP training and evidence maximisation).

use bdl_inference::{MapConfig, Validate, train_map};
use bdl_laplace::{Evidence, MarglikConfig, marglik_training};
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};

#[test]
fn online_training_reaches_the_post_hoc_fixed_point() {
    let dev = &Device::Cpu;
    let net = Network::from(Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh)).unwrap());
    let x = Tensor::arange(0u32, 80, dev)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .affine(1.0 / 40.0, -1.0)
        .unwrap()
        .unsqueeze(1)
        .unwrap();
    let noise = bdl_tensor::normal(&mut Seed(3).rng(), (80, 1), 0.0, 0.1, DType::F64, dev).unwrap();
    let y = ((x.clone() * 3.0).unwrap().sin().unwrap() + noise).unwrap();
    let theta0 = net.init(Seed(0), DType::F64, dev).unwrap();
    let map = MapConfig {
        learning_rate: 1e-2,
        epochs: 150,
        batch_size: 80,
        prior_precision: 1e-3,
        ..MapConfig::default()
    };
    let config = MarglikConfig {
        map: map.clone(),
        rounds: 8,
        ggn_batch_size: 256,
    }
    .check()
    .unwrap();
    let fit = marglik_training(
        &net,
        &theta0,
        Likelihood::Gaussian { sigma: 1.0 },
        &x,
        &y,
        &config,
    )
    .unwrap();
    let (lambda, sigma) = (fit.lambdas[8], fit.sigmas[8]);
    // Settled: the last two rounds' λ within 10%, σ near the noise.
    assert!(
        (fit.lambdas[7] / lambda - 1.0).abs() < 0.1,
        "{:?}",
        fit.lambdas
    );
    assert!((0.07..0.15).contains(&sigma), "{:?}", fit.sigmas);
    // Its own MAP's evidence maximum.
    let d = net.layout().len();
    let own = Evidence::new(&fit.map, &x, &y, (0..d).collect(), 256)
        .unwrap()
        .maximize(lambda, sigma)
        .unwrap();
    assert!(
        (own.lambda / lambda - 1.0).abs() < 1e-3,
        "{} vs {lambda}",
        own.lambda
    );

    // A MAP trained from θ₀ for as many epochs at the online (λ, σ), tuned post hoc.
    let fresh = MapConfig {
        epochs: 150 * 8,
        prior_precision: lambda,
        ..map
    }
    .check()
    .unwrap();
    let lik = Likelihood::Gaussian { sigma };
    let post_hoc_map = train_map(&net, &theta0, lik, &x, &y, &fresh)
        .unwrap()
        .estimate;
    let post_hoc = Evidence::new(&post_hoc_map, &x, &y, (0..d).collect(), 256)
        .unwrap()
        .maximize(lambda, sigma)
        .unwrap();
    assert!(
        (post_hoc.lambda / lambda - 1.0).abs() < 0.25,
        "post hoc λ {} against online {lambda} ({:?})",
        post_hoc.lambda,
        fit.lambdas
    );
    assert!(
        (post_hoc.sigma / sigma - 1.0).abs() < 0.1,
        "σ {} vs {sigma}",
        post_hoc.sigma
    );
}
