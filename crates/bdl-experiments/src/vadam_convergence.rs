//! `vadam-convergence`: how fast VOGN, Vadam, BBVI and IVON train a classification MLP, and
//! Vadam between inference and optimisation (Khan et al. 2018, §6.3 and §5).
//!
//! Protocol (ALGORITHMS.md §A, experiment 3): the presplit Australian credit set (345 training,
//! 345 test examples, 14 scaled features), an MLP with one hidden layer of 64 ReLU units and one
//! logit (Bernoulli likelihood), prior precision λ = 1, initial precision 10 (the Vadam code's
//! `prec_init`), minibatches of 32, one weight sample per step, α = 0.01 for every method
//! (Vadam's γ₁, γ₂ = 0.9, 0.999; VOGN's β = 0.01; BBVI's Adam with σ₀ = 10^{-1/2}, the
//! initial precision's; IVON with its authors' β₁, β₂, h₀), fixed before any run. After every
//! epoch: the test log-loss and accuracy of the predictive (16 weight samples) and the training
//! time so far (evaluation excluded). Several restarts (seeds), mean ± standard error.
//!
//! Between inference and optimisation: Vadam with the KL weighted by τ ∈ {0, 0.25, 0.5, 0.75,
//! 1} (τ = 1 variational inference, τ = 0 variational optimisation, σ = 0), its final test
//! log-loss and accuracy against τ.

use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::blr::{self, BlrSet};
use bdl_eval::metrics::{self, MeanSe};
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_inference::{Posterior, PredictOptions, Validate};
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec, Network};
use bdl_tensor::Seed;
use bdl_variational::{Method, VariationalConfig, fit_monitored};
use candle_core::DType;
use serde::Serialize;

use crate::claim::{Claim, Verdict};
use crate::concurrency::side_by_side;
use crate::{Context, Entry, Outcome, Profile};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "vadam-convergence",
    reproduces: "Khan et al. (2018) §6.3 and §5: VOGN, Vadam, BBVI and IVON training an MLP on \
     Australian (test log-loss and accuracy against epochs and time), and Vadam between \
     inference and optimisation (τ)",
    run,
    shards: false,
};

/// The settings of a profile.
#[derive(Debug, Serialize)]
struct Settings {
    widths: [usize; 3],
    prior_precision: f64,
    init_precision: f64,
    batch_size: usize,
    epochs: usize,
    restarts: usize,
    methods: Vec<Method>,
    /// The KL weights of Vadam's τ runs.
    kl_weights: Vec<f64>,
    /// Weight samples of the test predictive.
    test_samples: usize,
    /// The claim compares the methods at this epoch (from 1).
    compare_at: usize,
}

impl Settings {
    fn of(profile: Profile) -> Self {
        let (epochs, restarts, kl_weights) = match profile {
            Profile::Smoke => (4, 1, vec![0.0, 1.0]),
            Profile::Quick => (60, 3, vec![0.0, 0.25, 0.5, 0.75, 1.0]),
            Profile::Paper => (200, 10, vec![0.0, 0.25, 0.5, 0.75, 1.0]),
        };
        let alpha = 0.01;
        Self {
            widths: [14, 64, 1],
            prior_precision: 1.0,
            init_precision: 10.0,
            batch_size: 32,
            epochs,
            restarts,
            methods: vec![
                Method::Vogn {
                    learning_rate: alpha,
                    beta: 0.01,
                },
                Method::vadam(alpha),
                Method::Bbvi {
                    learning_rate: alpha,
                    beta1: 0.9,
                    beta2: 0.999,
                    init_std: 10f64.powf(-0.5),
                },
                Method::ivon(alpha),
            ],
            kl_weights,
            test_samples: 16,
            compare_at: (epochs / 10).max(1),
        }
    }
}

/// One training run: a method (at a KL weight) and a restart, its curves.
#[derive(Debug, Serialize)]
struct Row {
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
    // Every method at τ = 1, then Vadam at every other τ.
    let mut jobs: Vec<(Method, f64, usize)> = Vec::new();
    for restart in 0..settings.restarts {
        for method in &settings.methods {
            jobs.push((method.clone(), 1.0, restart));
        }
        for &tau in settings.kl_weights.iter().filter(|&&t| t != 1.0) {
            jobs.push((
                Method::vadam(settings.methods[1].learning_rate()),
                tau,
                restart,
            ));
        }
    }
    let bar = ctx.bar(jobs.len() as u64, "fits");
    let options = PredictOptions {
        samples: settings.test_samples,
        ..PredictOptions::default()
    }
    .check()?;
    let rows = side_by_side(&jobs, |(method, tau, restart)| -> Result<Row> {
        let seed = Seed(*restart as u64).fork("vadam-convergence");
        let mu0 = network.init(seed.fork("init"), DType::F64, x.device())?;
        let config = VariationalConfig {
            init_precision: Some(settings.init_precision),
            seed: seed.fork("train"),
            kl_weight: *tau,
            ..VariationalConfig::new(
                method.clone(),
                settings.prior_precision,
                settings.epochs,
                settings.batch_size,
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
        .with_context(|| format!("{} τ = {tau}, restart {restart}", method.name()))?;
        if let Some(e) = failure {
            return Err(e);
        }
        bar.inc(1);
        Ok(Row {
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

/// The rows of `method` at KL weight `tau`.
fn runs_of<'a>(rows: &'a [Row], method: &str, tau: f64) -> impl Iterator<Item = &'a Row> {
    let method = method.to_owned();
    rows.iter()
        .filter(move |r| r.method == method && r.kl_weight == tau)
}

/// Mean ± standard error over restarts of `curve` at epoch index `e` (NaN when absent).
fn at_epoch(rows: &[Row], method: &str, tau: f64, e: usize, curve: fn(&Row) -> &[f64]) -> MeanSe {
    let values: Vec<f64> = runs_of(rows, method, tau)
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

/// The method names in the rows' order.
fn method_names(settings: &Settings) -> Vec<&'static str> {
    settings.methods.iter().map(Method::name).collect()
}

fn body(rows: &[Row], settings: &Settings, n_train: usize, n_test: usize) -> String {
    let (early, last) = (settings.compare_at - 1, settings.epochs - 1);
    let mut t = Table::new([
        "method".to_owned(),
        format!("test log-loss, epoch {}", settings.compare_at),
        format!("test log-loss, epoch {}", settings.epochs),
        format!("accuracy, epoch {}", settings.epochs),
        format!("training time of {} epochs (s)", settings.epochs),
    ]);
    for name in method_names(settings) {
        t.row([
            name.to_owned(),
            format!("{:.4}", at_epoch(rows, name, 1.0, early, log_loss)),
            format!("{:.4}", at_epoch(rows, name, 1.0, last, log_loss)),
            format!("{:.3}", at_epoch(rows, name, 1.0, last, accuracy)),
            format!("{:.2}", at_epoch(rows, name, 1.0, last, seconds)),
        ]);
    }
    let mut tau = Table::new(["τ", "test log-loss", "accuracy"]);
    for &k in &settings.kl_weights {
        tau.row([
            format!("{k}"),
            format!("{:.4}", at_epoch(rows, "Vadam", k, last, log_loss)),
            format!("{:.3}", at_epoch(rows, "Vadam", k, last, accuracy)),
        ]);
    }
    format!(
        "{n_train} training and {n_test} test examples; MLP {:?} (ReLU, one logit), λ = {}, \
         initial precision {}, minibatches of {}, {} epochs, {} restarts (mean ± standard error); \
         the test predictive averages {} weight samples.\n\n{}\n\
         ## Vadam between inference (τ = 1) and optimisation (τ = 0), after {} epochs\n\n{}",
        settings.widths,
        settings.prior_precision,
        settings.init_precision,
        settings.batch_size,
        settings.epochs,
        settings.restarts,
        settings.test_samples,
        t.to_markdown(),
        settings.epochs,
        tau.to_markdown()
    )
}

/// The paper's convergence claim: at the comparison epoch (a tenth of the run), VOGN's and
/// Vadam's mean test log-loss are below BBVI's.
fn claims(rows: &[Row], settings: &Settings) -> Vec<Claim> {
    let e = settings.compare_at - 1;
    let loss = |name: &str| at_epoch(rows, name, 1.0, e, log_loss).mean;
    let (vogn, vadam, bbvi) = (loss("VOGN"), loss("Vadam"), loss("BBVI"));
    vec![Claim::new(
        "VOGN and Vadam converge faster than BBVI",
        format!(
            "test log-loss after {} of {} epochs: VOGN {vogn:.4}, Vadam {vadam:.4}, BBVI {bbvi:.4}",
            settings.compare_at, settings.epochs
        ),
        Verdict::new(
            vogn < bbvi && vadam < bbvi,
            format!(
                "after a tenth of the epochs ({}), VOGN's and Vadam's mean test log-loss both \
                 below BBVI's",
                settings.compare_at
            ),
        ),
    )]
}

const COLORS: [&str; 4] = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"];

fn figure(rows: &[Row], settings: &Settings) -> Figure {
    let epochs: Vec<f64> = (1..=settings.epochs).map(|e| e as f64).collect();
    let mut by_epoch = Panel::new("test log-loss against epochs");
    by_epoch.labels("epoch", "test log-loss");
    let mut acc = Panel::new("test accuracy against epochs");
    acc.labels("epoch", "accuracy");
    let mut by_time = Panel::new("test log-loss against training time");
    by_time.labels("seconds (one thread)", "test log-loss");
    for (name, color) in method_names(settings).into_iter().zip(COLORS) {
        let curve = |c: fn(&Row) -> &[f64]| -> (Vec<f64>, Vec<f64>, Vec<f64>) {
            let stats: Vec<MeanSe> = (0..settings.epochs)
                .map(|e| at_epoch(rows, name, 1.0, e, c))
                .collect();
            (
                stats.iter().map(|s| s.mean).collect(),
                stats.iter().map(|s| s.mean - s.se).collect(),
                stats.iter().map(|s| s.mean + s.se).collect(),
            )
        };
        let (loss, lo, hi) = curve(log_loss);
        by_epoch
            .band(&epochs, &lo, &hi, color)
            .line(&epochs, &loss, color)
            .legend(name, color);
        let (a, lo, hi) = curve(accuracy);
        acc.band(&epochs, &lo, &hi, color)
            .line(&epochs, &a, color)
            .legend(name, color);
        let (time, _, _) = curve(seconds);
        by_time.line(&time, &loss, color).legend(name, color);
    }
    let taus = &settings.kl_weights;
    let last = settings.epochs - 1;
    let tau_curve = |c: fn(&Row) -> &[f64]| -> Vec<f64> {
        taus.iter()
            .map(|&k| at_epoch(rows, "Vadam", k, last, c).mean)
            .collect()
    };
    let mut tau_loss = Panel::new("Vadam: test log-loss against τ");
    tau_loss
        .labels("τ (0 optimisation, 1 inference)", "test log-loss")
        .line(taus, &tau_curve(log_loss), COLORS[1])
        .points(taus, &tau_curve(log_loss), COLORS[1]);
    let mut tau_acc = Panel::new("Vadam: test accuracy against τ");
    tau_acc
        .labels("τ (0 optimisation, 1 inference)", "accuracy")
        .line(taus, &tau_curve(accuracy), COLORS[1])
        .points(taus, &tau_curve(accuracy), COLORS[1]);
    Figure::new(3)
        .panel(by_epoch)
        .panel(acc)
        .panel(by_time)
        .panel(tau_loss)
        .panel(tau_acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(method: &str, losses: &[f64]) -> Row {
        Row {
            method: method.into(),
            kl_weight: 1.0,
            restart: 0,
            test_log_loss: losses.to_vec(),
            test_accuracy: vec![0.5; losses.len()],
            train_seconds: vec![1.0; losses.len()],
        }
    }

    /// At the comparison epoch (the first of ten here) VOGN and Vadam below BBVI holds; one of
    /// them above fails, whatever happens later.
    #[test]
    fn the_claim_compares_at_the_early_epoch() {
        let settings = Settings::of(Profile::Quick);
        let e = settings.compare_at;
        let curve = |early: f64| {
            let mut c = vec![0.9; settings.epochs];
            c[e - 1] = early;
            c
        };
        let rows = [
            row("VOGN", &curve(0.4)),
            row("Vadam", &curve(0.45)),
            row("BBVI", &curve(0.5)),
        ];
        assert!(claims(&rows, &settings)[0].holds);
        let rows = [
            row("VOGN", &curve(0.4)),
            row("Vadam", &curve(0.55)),
            row("BBVI", &curve(0.5)),
        ];
        assert!(!claims(&rows, &settings)[0].holds);
    }
}
