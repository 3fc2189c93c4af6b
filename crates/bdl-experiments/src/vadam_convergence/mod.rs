//! `vadam-convergence`: how fast VOGN, Vadam, BBVI and IVON train a classification MLP, and
//! Vadam between inference and optimisation (Khan et al. 2018, §6.3 and §5).
//!
//! Data and model (ALGORITHMS.md §A, experiment 3): the presplit Australian credit set (345
//! training, 345 test examples, 14 scaled features), an MLP with one hidden layer of 64 ReLU
//! units and one logit (Bernoulli likelihood), prior precision λ = 1. Two training protocols
//! ([`Protocol`]), each with its own copy of the claim:
//!
//! - **common** (fixed before any run): initial precision 10 (the Vadam code's `prec_init` of
//!   its UCI runs), minibatches of 32, one weight sample per step, α = 0.01 for every method
//!   (Vadam's γ₁, γ₂ = 0.9, 0.999; VOGN's β = 0.01; BBVI's Adam with σ₀ = 10^{-1/2}, the
//!   initial precision's; IVON with its authors' β₁, β₂, h₀), 16 test samples;
//! - **authors'** (added after the common protocol's claim failed, its criterion fixed before
//!   its first run): the settings of the Vadam authors' own example on this data set, initial
//!   precision 1, minibatches of 128, 20 weight samples per step and 20 for the predictive,
//!   α = 0.005 and γ₂ = 0.995 for every method (VOGN's β = 1 − γ₂; BBVI's Adam with betas
//!   (0.9, 0.995) and σ₀ = 1; IVON its defaults but α).
//!
//! After every epoch: the test log-loss and accuracy of the predictive and the training time
//! so far (evaluation excluded). Several restarts (seeds, the same initial means for both
//! protocols), mean ± standard error.
//!
//! Between inference and optimisation (common protocol): Vadam with the KL weighted by
//! τ ∈ {0, 0.25, 0.5, 0.75, 1} (τ = 1 variational inference, τ = 0 variational optimisation,
//! σ = 0), its final test log-loss and accuracy against τ.

mod claims;
mod report;
mod settings;

use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::blr::{self, BlrSet};
use bdl_eval::metrics::{self, MeanSe};
use bdl_inference::{Posterior, PredictOptions, Validate};
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec, Network};
use bdl_tensor::Seed;
use bdl_variational::{Method, VariationalConfig, fit_monitored};
use candle_core::DType;
use serde::Serialize;

use self::claims::claims;
use self::report::{body, figure};
use self::settings::{Protocol, Settings};
use crate::concurrency::side_by_side;
use crate::{Context, Entry, Outcome};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "vadam-convergence",
    reproduces: "Khan et al. (2018) §6.3 and §5: VOGN, Vadam, BBVI and IVON training an MLP on \
     Australian (test log-loss and accuracy against epochs and time), and Vadam between \
     inference and optimisation (τ)",
    run,
    shards: false,
    lists_methods: false,
    profiles: &crate::Profile::ALL,
    any_device: false,
};

/// One training run: a method (at a KL weight) and a restart, its curves.
#[derive(Debug, Serialize)]
struct Row {
    protocol: String,
    method: String,
    kl_weight: f64,
    restart: usize,
    /// After each epoch.
    test_log_loss: Vec<f64>,
    test_accuracy: Vec<f64>,
    /// Training time so far in seconds (the test evaluations excluded).
    train_seconds: Vec<f64>,
}

/// Runs the experiment.
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let (train, test) = blr::load(&ctx.data, BlrSet::Australian).context("loading Australian")?;
    let x = train.x().to_dtype(DType::F64)?;
    let x_test = test.x().to_dtype(DType::F64)?;
    let network = Network::from(Mlp::new(MlpSpec::new(&settings.widths, Activation::Relu))?);
    let jobs = fits(&settings);
    let bar = ctx.bar(jobs.len() as u64, "fits");
    let rows = side_by_side(&jobs, |(protocol, method, tau, restart)| -> Result<Row> {
        let options = PredictOptions {
            samples: protocol.test_samples,
            ..PredictOptions::default()
        }
        .check()?;
        let seed = Seed(*restart as u64).fork("vadam-convergence");
        let mu0 = network.init(seed.fork("init"), DType::F64, x.device())?;
        let config = VariationalConfig {
            init_precision: Some(protocol.init_precision),
            seed: seed.fork("train"),
            kl_weight: *tau,
            mc_samples: protocol.mc_samples,
            ..VariationalConfig::new(
                method.clone(),
                settings.prior_precision,
                settings.epochs,
                protocol.batch_size,
            )
        }
        .check()?;
        let (mut losses, mut accuracies, mut seconds) = (Vec::new(), Vec::new(), Vec::new());
        let (mut evaluating, start) = (0.0, Instant::now());
        let mut failure = None;
        fit_monitored(
            &network,
            &mu0,
            Likelihood::Bernoulli,
            &x,
            train.y(),
            &config,
            |_, q| {
                let at = Instant::now();
                seconds.push(at.duration_since(start).as_secs_f64() - evaluating);
                match q
                    .predict(&x_test, &options)
                    .map_err(anyhow::Error::from)
                    .and_then(|p| {
                        Ok((
                            -metrics::mean_log_lik(&p, test.y())?,
                            metrics::accuracy(&p, test.y())?,
                        ))
                    }) {
                    Ok((loss, accuracy)) => {
                        losses.push(loss);
                        accuracies.push(accuracy);
                    }
                    Err(e) => failure = Some(e),
                }
                evaluating += at.elapsed().as_secs_f64();
            },
        )
        .with_context(|| {
            format!(
                "{} ({} protocol) τ = {tau}, restart {restart}",
                method.name(),
                protocol.name
            )
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        bar.inc(1);
        Ok(Row {
            protocol: protocol.name.to_owned(),
            method: method.name().to_owned(),
            kl_weight: *tau,
            restart: *restart,
            test_log_loss: losses,
            test_accuracy: accuracies,
            train_seconds: seconds,
        })
    })?;
    bar.finish_and_clear();
    Ok(Outcome::new(
        "vadam-convergence: VOGN, Vadam, BBVI and IVON on Australian, and Vadam against τ",
        &settings,
        &rows,
    )?
    .body(body(&rows, &settings, train.len(), test.len()))
    .claims(claims(&rows, &settings))
    .figure("vadam-convergence.svg", figure(&rows, &settings).to_svg()))
}

/// The fits of a run, per restart: every protocol's methods at τ = 1, then Vadam at every
/// other τ in the common protocol.
fn fits(settings: &Settings) -> Vec<(&Protocol, Method, f64, usize)> {
    let mut jobs = Vec::new();
    for restart in 0..settings.restarts {
        for protocol in &settings.protocols {
            for method in &protocol.methods {
                jobs.push((protocol, method.clone(), 1.0, restart));
            }
        }
        let common = &settings.protocols[0];
        for &tau in settings.kl_weights.iter().filter(|&&t| t != 1.0) {
            jobs.push((common, common.vadam().clone(), tau, restart));
        }
    }
    jobs
}

/// The rows of `method` at KL weight `tau` in `protocol`.
fn runs_of<'a>(
    rows: &'a [Row],
    protocol: &'a Protocol,
    method: &'a str,
    tau: f64,
) -> impl Iterator<Item = &'a Row> {
    rows.iter()
        .filter(move |r| r.protocol == protocol.name && r.method == method && r.kl_weight == tau)
}

/// Mean ± standard error over restarts of `curve` at epoch index `e` (NaN when absent).
fn at_epoch(
    rows: &[Row],
    protocol: &Protocol,
    method: &str,
    tau: f64,
    e: usize,
    curve: fn(&Row) -> &[f64],
) -> MeanSe {
    let values: Vec<f64> = runs_of(rows, protocol, method, tau)
        .map(|r| curve(r).get(e).copied().unwrap_or(f64::NAN))
        .collect();
    MeanSe::of(&values)
}

fn log_loss(r: &Row) -> &[f64] {
    &r.test_log_loss
}

fn accuracy(r: &Row) -> &[f64] {
    &r.test_accuracy
}

fn seconds(r: &Row) -> &[f64] {
    &r.train_seconds
}

/// The method names of `protocol` in the rows' order.
fn method_names(protocol: &Protocol) -> Vec<&'static str> {
    protocol.methods.iter().map(Method::name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;
    use crate::claim::Decision;

    fn row(protocol: &Protocol, method: &str, restart: usize, losses: &[f64]) -> Row {
        Row {
            protocol: protocol.name.into(),
            method: method.into(),
            kl_weight: 1.0,
            restart,
            test_log_loss: losses.to_vec(),
            test_accuracy: vec![0.5; losses.len()],
            train_seconds: vec![1.0; losses.len()],
        }
    }

    /// At the comparison epoch (the sixth of sixty here), over two restarts (±0.01), VOGN and
    /// Vadam below BBVI holds; one of them above fails, whatever happens later; one of them
    /// within a standard error of BBVI is undecided; each protocol is judged on its own rows.
    #[test]
    fn the_claim_compares_at_the_early_epoch_in_each_protocol() {
        let settings = Settings::of(Profile::Quick);
        let [common, authors] = [&settings.protocols[0], &settings.protocols[1]];
        let e = settings.compare_at;
        let rows = |authors_vadam: f64| {
            let mut rows = Vec::new();
            for (restart, noise) in [(0, -0.01), (1, 0.01)] {
                let curve = |early: f64| {
                    let mut c = vec![0.9; settings.epochs];
                    c[e - 1] = early + noise;
                    c
                };
                for (protocol, vadam) in [(common, 0.45), (authors, authors_vadam)] {
                    rows.push(row(protocol, "VOGN", restart, &curve(0.4)));
                    rows.push(row(protocol, "Vadam", restart, &curve(vadam)));
                    rows.push(row(protocol, "BBVI", restart, &curve(0.5)));
                }
            }
            rows
        };
        let verdicts = |rows: &[Row]| -> Vec<Decision> {
            claims(rows, &settings).iter().map(|c| c.verdict).collect()
        };
        use Decision::*;
        assert_eq!(verdicts(&rows(0.55)), [Holds, Fails]);
        assert_eq!(verdicts(&rows(0.505)), [Holds, Undecided]);
    }
}
