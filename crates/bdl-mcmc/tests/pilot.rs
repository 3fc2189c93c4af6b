//! Pilot tuning finds the proposal variance that the theory of random-walk Metropolis gives.

use bdl_data::{Dataset, Provenance, Task};
use bdl_inference::Validate;
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    BatchMode, Blocking, Chain, ChainConfig, GibbsConfig, Pilot, ProposalVariance, Sampler,
};
use bdl_models::{Activation, Mlp, MlpSpec};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};

/// y_n = 0.7 x_n + ε_n on 40 fixed inputs, σ = 1; returns the data and the posterior standard
/// deviation s of the one weight w under the prior N(0, 10): s² = 1 / (Σ x² / σ² + 1/10).
fn regression() -> (Dataset, f64) {
    let xs: Vec<f32> = (0..40).map(|n| (n as f32 - 19.5) / 10.0).collect();
    let ys: Vec<f32> = xs
        .iter()
        .enumerate()
        .map(|(n, x)| 0.7 * x + ((n * 37 % 11) as f32 - 5.0) / 5.0)
        .collect();
    let sum_sq: f64 = xs.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    let x = Tensor::from_vec(xs, (40, 1), &Device::Cpu).unwrap();
    let y = Tensor::from_vec(ys, (40, 1), &Device::Cpu).unwrap();
    let task = Task::Regression {
        targets: vec!["y".into()],
    };
    let data = Dataset::new(x, y, task, vec!["x".into()], Provenance::default()).unwrap();
    (data, (1.0 / (sum_sq + 0.1)).sqrt())
}

/// The stationary acceptance rate of a random walk with step variance v on N(0, s²):
/// (2/π) arctan(2s / √v) (Gelman, Roberts and Gilks 1996).
fn theory(v: f64, s: f64) -> f64 {
    2.0 / std::f64::consts::PI * (2.0 * s / v.sqrt()).atan()
}

/// The model w · x with the Gaussian likelihood: its posterior over the single weight is
/// N(m, s²), so the acceptance of any variance is known. From a variance 100 s² (acceptance
/// 0.13) and from 0.01 s² (0.99), the pilot must freeze a variance whose theoretical acceptance
/// is inside the band [0.40, 0.50] widened by 0.05 (rounds of 2,000 sweeps estimate a rate to
/// about ±0.02; the pilot freezes on the estimate).
#[test]
fn pilot_finds_the_theoretical_variance() {
    let (train, s) = regression();
    let mlp = Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity).without_bias()).unwrap();
    let likelihood = Likelihood::Gaussian { sigma: 1.0 };
    let theta0 = mlp.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let pilot = Pilot {
        sweeps: 2000,
        ..Pilot::new([0.40, 0.50])
    }
    .check()
    .unwrap();
    for start in [100.0 * s * s, 0.01 * s * s] {
        let proposal = ProposalVariance::Common(start);
        let config = GibbsConfig::new(Blocking::Layer, proposal.clone(), BatchMode::Exact)
            .check()
            .unwrap();
        let mut sampler =
            Sampler::new(&mlp, likelihood, &train, &config, &theta0, Seed(1)).unwrap();
        let report = sampler
            .tune(&pilot, &proposal, 1, &mut Seed(2).rng())
            .unwrap();
        assert!(report.converged, "{report:?}");
        let v = report.variances[0];
        let expected = theory(v, s);
        assert!(
            (0.35..=0.55).contains(&expected),
            "from {start:.3e}: tuned v = {v:.3e} = {:.2} s², theoretical acceptance {expected:.3} \
             (measured {:.3}, {} rounds)",
            v / (s * s),
            report.rates[0],
            report.rounds
        );
        assert!((0.40..=0.50).contains(&report.rates[0]));
    }
}

/// A chain with a pilot records the tuned variances in its manifest and samples with them; run
/// again, it resumes with the same ones (the pilot is not repeated).
#[test]
fn chain_records_its_pilot() {
    let (train, _) = regression();
    let mlp = Mlp::new(MlpSpec::new(&[1, 3, 1], Activation::Tanh)).unwrap();
    let likelihood = Likelihood::Gaussian { sigma: 1.0 };
    let config = ChainConfig {
        iterations: 200,
        chunk_len: 100,
        record_every: 10,
        pilot: Some(Pilot {
            sweeps: 300,
            ..Pilot::new([0.2, 0.6])
        }),
        ..ChainConfig::new(GibbsConfig::new(
            Blocking::Node,
            ProposalVariance::Common(5.0),
            BatchMode::Exact,
        ))
    }
    .check()
    .unwrap();
    let dir = std::env::temp_dir().join(format!("bdl-mcmc-{}-pilot", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let none = |_| {};
    bdl_mcmc::run_chain(&mlp, likelihood, &train, &config, &dir, 0, &none).unwrap();
    let chain = Chain::open(&bdl_mcmc::chain_dir(&dir, 0)).unwrap();
    let report = chain.pilot().expect("a pilot report").clone();
    assert_eq!(report.variances.len(), 2);
    assert!(report.variances.iter().all(|&v| v < 5.0), "{report:?}");
    let longer = ChainConfig {
        iterations: 300,
        ..(*config).clone()
    }
    .check()
    .unwrap();
    let resumed = bdl_mcmc::run_chain(&mlp, likelihood, &train, &longer, &dir, 0, &none).unwrap();
    assert_eq!(resumed.resumed_at, 200);
    let chain = Chain::open(&bdl_mcmc::chain_dir(&dir, 0)).unwrap();
    assert_eq!(chain.pilot(), Some(&report));
    std::fs::remove_dir_all(&dir).unwrap();
}
