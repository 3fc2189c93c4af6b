//! vadam-uci's listed methods (`crate::listed`): each fitted by `bdl_methods::fit` from a MAP
//! of the experiment's network on the split, and scored like the experiment's own methods.
//!
//! The MAP they start from: the paper's MLP (one hidden layer of 50 ReLU units, f32) trained
//! by Adam with the experiment's step size and betas for its epochs and batch size, prior
//! precision λ = 1 and the noise σ learned with the weights (the listed methods choose no
//! (τ, λ) on the folds: a sampler's prior is its own spec's). By default the list is HMC
//! ([`crate::listed::hmc_reference`] at λ = 1).

use anyhow::{Context as _, Result};
use bdl_data::StandardizedSplit;
use bdl_inference::{Posterior as _, PredictOptions, train_map};
use bdl_models::{Activation, Mlp, MlpSpec, Network};

use super::{DTYPE, HIDDEN, Job, Row, Settings, adam_map, batching, score};
use crate::listed::Listed;

/// The MAP's prior precision λ.
pub(super) const MAP_PRIOR_PRECISION: f64 = 1.0;

/// Listed method `listed` on the split of `job`: the MAP, then `bdl_methods::fit` from it on
/// the whole training split, scored on the test split in the original units.
pub(super) fn run(settings: &Settings, job: &Job, listed: &Listed) -> Result<Vec<Row>> {
    let p = StandardizedSplit::new(&job.train, &job.test)?.to_dtype(DTYPE)?;
    let scale = p.y_scale.std()[0];
    let (batch_size, _) = batching(job.set);
    let network = Network::from(Mlp::new(MlpSpec::new(
        &[p.x_train.dims()[1], HIDDEN, 1],
        Activation::Relu,
    ))?);
    let seed = job.seed.fork("listed");
    let theta0 = network.init(seed.fork("init"), DTYPE, p.x_train.device())?;
    let config = adam_map(
        settings,
        MAP_PRIOR_PRECISION,
        batch_size,
        seed.fork("map"),
        true,
    )?;
    let likelihood = bdl_likelihoods::Likelihood::Gaussian { sigma: 1.0 };
    let map = train_map(
        &network, &theta0, likelihood, &p.x_train, &p.y_train, &config,
    )
    .context("the MAP the listed methods start from")?
    .estimate;
    let problem = bdl_methods::Problem::new(
        &network,
        map.theta(),
        map.likelihood(),
        &p.x_train,
        &p.y_train,
    );
    let fitted = bdl_methods::fit(&listed.spec, &problem)?;
    let options = PredictOptions {
        samples: settings.test_samples,
        seed: seed.fork("predictive"),
        ..PredictOptions::default()
    };
    let pred = fitted.posterior.predictive(&p.x_test, &options)?;
    let s = score(&pred, &p.y_test, scale)?;
    let sigma = match map.likelihood() {
        bdl_likelihoods::Likelihood::Gaussian { sigma } => sigma,
        _ => unreachable!("a regression MAP"),
    };
    Ok(vec![Row {
        dataset: job.set.name().into(),
        split: job.split,
        method: listed.label.clone(),
        tau: sigma.powi(-2),
        lambda: fitted
            .diagnostics
            .prior_precision
            .unwrap_or(MAP_PRIOR_PRECISION),
        selection_log_lik: None,
        test_rmse: s.rmse,
        test_log_lik: s.log_lik,
        test_log_lik_joint: s.log_lik_joint,
        test_rmse_by_epoch: Vec::new(),
        fallbacks: 0,
    }])
}
