//! Per-layer prior precisions by the marginal likelihood: the evidence is stationary in every
//! λ_l at the fixed point, and at least as high as at the best single λ.

use bdl_inference::{MapConfig, MapEstimate, Posterior, Validate, train_map};
use bdl_laplace::{LaplaceConfig, PriorPrecision, SubnetLaplace, layerwise_prior};
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};

/// An MLP 1-8-8-1 trained on y = sin(3x) + noise: three layers, D = 97.
fn map() -> (MapEstimate, Tensor) {
    let dev = &Device::Cpu;
    let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 8, 1], Activation::Tanh)).unwrap());
    let x = Tensor::arange(0u32, 60, dev)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .affine(1.0 / 30.0, -1.0)
        .unwrap()
        .unsqueeze(1)
        .unwrap();
    let noise = bdl_tensor::normal(&mut Seed(3).rng(), (60, 1), 0.0, 0.1, DType::F64, dev).unwrap();
    let y = ((x.clone() * 3.0).unwrap().sin().unwrap() + noise).unwrap();
    let theta0 = net.init(Seed(0), DType::F64, dev).unwrap();
    let config = MapConfig {
        learning_rate: 1e-2,
        epochs: 400,
        batch_size: 60,
        prior_precision: 1.0,
        ..MapConfig::default()
    }
    .check()
    .unwrap();
    let lik = Likelihood::Gaussian { sigma: 0.1 };
    (
        train_map(&net, &theta0, lik, &x, &y, &config)
            .unwrap()
            .estimate,
        x,
    )
}

/// log Z − log p(D | θ̂) of the full Laplace with precision `per_parameter`.
fn evidence(map: &MapEstimate, x: &Tensor, per_parameter: Vec<f64>) -> f64 {
    let d = per_parameter.len();
    let config = LaplaceConfig {
        prior: PriorPrecision::PerParameter(per_parameter),
        ..LaplaceConfig::default()
    }
    .check()
    .unwrap();
    SubnetLaplace::fit(map, x, (0..d).collect(), &config)
        .unwrap()
        .log_marginal_likelihood(0.0)
}

#[test]
fn the_evidence_is_stationary_and_above_any_single_lambda() {
    let (map, x) = map();
    let layout = map.network().layout().clone();
    let d = layout.len();
    let tuned = layerwise_prior(&map, &x, (0..d).collect(), 1.0, 500).unwrap();
    assert!(tuned.converged, "{:?}", tuned.log_evidence.len());
    assert_eq!(tuned.lambdas.len(), 3);
    let best = *tuned.log_evidence.last().unwrap();
    assert!(best >= tuned.log_evidence[0], "{:?}", tuned.log_evidence);

    // The flat λ of each parameter at per-layer values `lambdas`.
    let segments = layout.segments();
    let expand = |lambdas: &[f64]| -> Vec<f64> {
        let mut v = vec![0.0; d];
        for (l, layer) in layout.layers().iter().enumerate() {
            for seg in std::iter::once(layer.weight).chain(layer.bias) {
                v[segments[seg].range()].fill(lambdas[l]);
            }
        }
        v
    };
    assert!((evidence(&map, &x, expand(&tuned.lambdas)) - best).abs() < 1e-9);
    // ∂ log Z / ∂ log λ_l by central differences: zero at the fixed point.
    let h: f64 = 1e-4;
    for l in 0..3 {
        let at = |f: f64| {
            let mut lambdas = tuned.lambdas.clone();
            lambdas[l] *= f;
            evidence(&map, &x, expand(&lambdas))
        };
        let slope = (at(h.exp()) - at((-h).exp())) / (2.0 * h);
        assert!(
            slope.abs() < 1e-4,
            "layer {l}: slope {slope} at {:?}",
            tuned.lambdas
        );
    }
    // Every single λ on a fine grid does no better.
    for k in -40..=40 {
        let lambda = 10f64.powf(k as f64 / 10.0);
        let single = evidence(&map, &x, vec![lambda; d]);
        assert!(single <= best + 1e-9, "λ = {lambda}: {single} > {best}");
    }
    // The layers want different precisions (else the test says little).
    let (lo, hi) = tuned
        .lambdas
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &l| {
            (lo.min(l), hi.max(l))
        });
    assert!(hi / lo > 1.5, "{:?}", tuned.lambdas);
}
