//! `vadam-blr`: Bayesian logistic regression on Breast-Cancer (Khan et al. 2018, §6.1).
//!
//! Protocol (ALGORITHMS.md §A, experiment 1): the presplit Breast-Cancer set (341 training, 342
//! test examples, 10 features, no intercept), prior precision λ = 1. The baseline MF-Exact is the
//! optimal mean-field Gaussian (exact ELBO by Gauss–Hermite quadrature, maximised to a gradient
//! below 1e-8). Vadam runs at minibatch sizes M ∈ {1, 8, 16, 32, 64} and VOGN at M = 1, each for
//! the same number of steps with α_t = α/(1 + t^0.55), over several restarts. Reported: the exact
//! ELBO on the training set, the test log-loss of the exact predictive E_q[σ(xᵀw)], and the
//! symmetric KL divergence to MF-Exact. The paper's claim: as M shrinks Vadam approaches VOGN-1,
//! which approaches MF-Exact.

use anyhow::{Context as _, Result};
use bdl_data::blr::{self, BlrSet};
use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_inference::Validate;
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use bdl_variational::exact::{GaussHermite, LogisticData};
use bdl_variational::{DiagGaussian, Method, VariationalConfig, fit};
use candle_core::{DType, Tensor};
use serde::Serialize;

use crate::claim::{self, Claim, Verdict};
use crate::{Context, Entry, Outcome, Profile};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "vadam-blr",
    reproduces: "Khan et al. (2018) §6.1: Vadam and VOGN against the exact mean-field posterior of a \
     Bayesian logistic regression on Breast-Cancer",
    run,
    shards: false,
};

/// The settings of a profile.
#[derive(Debug, Serialize)]
struct Settings {
    /// The prior precision λ.
    lambda: f64,
    /// Vadam's minibatch sizes M, smallest first.
    batch_sizes: Vec<usize>,
    /// VOGN's minibatch size.
    vogn_batch_size: usize,
    /// Restarts (seeds 0, 1, …) of every method and minibatch size.
    restarts: usize,
    /// Update steps of every run (rounded up to whole epochs).
    steps: usize,
    /// The step-size decay κ of α_t = α/(1 + t^κ).
    lr_decay: f64,
    /// Vadam and its hyper-parameters.
    vadam: Method,
    /// VOGN and its hyper-parameters.
    vogn: Method,
    /// Gauss–Hermite points of the exact ELBO and predictive.
    quadrature_points: usize,
    /// MF-Exact is maximised until the ELBO gradient is below this.
    mf_exact_tolerance: f64,
}

impl Settings {
    fn of(profile: Profile) -> Self {
        let (batch_sizes, restarts, steps) = match profile {
            Profile::Smoke => (vec![1, 64], 1, 200),
            Profile::Quick => (vec![1, 8, 16, 32, 64], 5, 10_000),
            Profile::Paper => (vec![1, 8, 16, 32, 64], 20, 50_000),
        };
        Self {
            lambda: 1.0,
            batch_sizes,
            vogn_batch_size: 1,
            restarts,
            steps,
            lr_decay: 0.55,
            vadam: Method::vadam(0.1),
            vogn: Method::Vogn {
                learning_rate: 0.1,
                beta: 0.01,
            },
            quadrature_points: 32,
            mf_exact_tolerance: 1e-8,
        }
    }

    /// Every (name, method, minibatch size) run of one restart: VOGN, then Vadam by M.
    fn runs(&self) -> Vec<(&'static str, Method, usize)> {
        std::iter::once(("VOGN", self.vogn.clone(), self.vogn_batch_size))
            .chain(
                self.batch_sizes
                    .iter()
                    .map(|&m| ("Vadam", self.vadam.clone(), m)),
            )
            .collect()
    }
}

/// One method and minibatch size on one restart.
#[derive(Debug, Serialize)]
struct Row {
    method: String,
    batch_size: usize,
    restart: usize,
    /// The exact ELBO of q on the training set.
    elbo: f64,
    /// −(1/N) Σ log p(y | x) on the test set, p = E_q[σ(xᵀw)].
    test_log_loss: f64,
    /// ½[KL(q ‖ q*) + KL(q* ‖ q)] to MF-Exact q*.
    symmetric_kl: f64,
}

fn rows_of(t: &Tensor) -> Result<Vec<Vec<f64>>> {
    Ok(t.to_dtype(DType::F64)?.to_vec2()?)
}

/// Runs the experiment.
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let lambda = settings.lambda;
    let (train, test) =
        blr::load(&ctx.data, BlrSet::BreastCancer).context("loading Breast-Cancer")?;
    let gh = GaussHermite::new(settings.quadrature_points);
    let train_data = LogisticData::new(rows_of(train.x())?, &train.labels()?)?;
    let test_x = rows_of(test.x())?;
    let test_labels = test.labels()?;
    let exact = train_data.mf_exact(lambda, &gh, settings.mf_exact_tolerance)?;
    ctx.log(format!(
        "MF-Exact: training ELBO {:.3}",
        train_data.elbo(&exact, lambda, &gh)
    ));

    let network = Network::from(Mlp::new(
        MlpSpec::new(&[train.num_features(), 1], Activation::Identity).without_bias(),
    )?);
    let x = train.x().to_dtype(DType::F64)?;
    let y = train.y().clone();
    let n = train.len();
    let score = |method: &str, m: usize, restart: usize, q: &DiagGaussian| {
        let p = LogisticData::predict(q, &test_x, &gh);
        let loss = -p
            .iter()
            .zip(&test_labels)
            .map(|(p, &l)| if l == 1 { p.ln() } else { (1.0 - p).ln() })
            .sum::<f64>()
            / p.len() as f64;
        Row {
            method: method.into(),
            batch_size: m,
            restart,
            elbo: train_data.elbo(q, lambda, &gh),
            test_log_loss: loss,
            symmetric_kl: q.symmetric_kl(&exact),
        }
    };
    let mut rows = vec![score("MF-Exact", n, 0, &exact)];
    let runs = settings.runs();
    let bar = ctx.bar((settings.restarts * runs.len()) as u64, "fits");
    for restart in 0..settings.restarts {
        bar.set_message(format!("restart {} of {}", restart + 1, settings.restarts));
        for (name, method, m) in &runs {
            let config = VariationalConfig {
                lr_decay: Some(settings.lr_decay),
                seed: Seed(restart as u64),
                ..VariationalConfig::new(
                    method.clone(),
                    lambda,
                    (settings.steps * m).div_ceil(n),
                    *m,
                )
            }
            .check()?;
            let mu0 = Tensor::zeros(network.layout().len(), DType::F64, x.device())?;
            let q = fit(&network, &mu0, Likelihood::Bernoulli, &x, &y, &config)
                .with_context(|| format!("{name} M = {m}, restart {restart}"))?
                .posterior;
            rows.push(score(name, *m, restart, q.q()));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();

    Ok(Outcome::new(
        "vadam-blr: Bayesian logistic regression on Breast-Cancer",
        &settings,
        &rows,
    )?
    .body(body(
        &rows,
        &settings,
        train.len(),
        test.len(),
        train.num_features(),
    ))
    .claims(claims(&rows))
    .figure("vadam-blr.svg", figure(&rows).to_svg()))
}

fn stat(rows: &[Row], method: &str, m: usize, field: impl Fn(&Row) -> f64) -> MeanSe {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.method == method && r.batch_size == m)
        .map(field)
        .collect();
    MeanSe::of(&v)
}

/// Vadam's minibatch sizes in the rows, smallest first.
fn vadam_sizes(rows: &[Row]) -> Vec<usize> {
    let mut sizes: Vec<usize> = rows
        .iter()
        .filter(|r| r.method == "Vadam")
        .map(|r| r.batch_size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The mean symmetric KL to MF-Exact of `method` at minibatch size `m` over restarts.
fn mean_kl(rows: &[Row], method: &str, m: usize) -> f64 {
    stat(rows, method, m, |r| r.symmetric_kl).mean
}

/// The paper's claims, decided on the rows by the mean symmetric KL to MF-Exact over restarts.
fn claims(rows: &[Row]) -> Vec<Claim> {
    let sizes = vadam_sizes(rows);
    let vadam: Vec<f64> = sizes.iter().map(|&m| mean_kl(rows, "Vadam", m)).collect();
    let (smallest, largest) = (
        sizes.first().copied().unwrap_or(0),
        sizes.last().copied().unwrap_or(0),
    );
    let (kl_small, kl_large) = (
        vadam.first().copied().unwrap_or(f64::NAN),
        vadam.last().copied().unwrap_or(f64::NAN),
    );
    let vogn = mean_kl(rows, "VOGN", 1);
    vec![
        Claim::new(
            "Vadam gets closer to MF-Exact as the minibatch shrinks",
            format!(
                "sym. KL at M = {}: {}",
                sizes
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                vadam
                    .iter()
                    .map(|v| format!("{v:.4}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Verdict::new(
                claim::less(kl_small, kl_large).holds,
                format!(
                    "mean symmetric KL to MF-Exact at the smallest M ({smallest}) strictly \
                     smaller than at the largest ({largest})"
                ),
            ),
        ),
        Claim::new(
            "VOGN with M = 1 is closer to MF-Exact than Vadam",
            format!("sym. KL {vogn:.4} vs Vadam-{smallest} {kl_small:.4}"),
            Verdict::new(
                claim::less(vogn, kl_small).holds,
                format!(
                    "mean symmetric KL to MF-Exact strictly smaller than Vadam's at M = {smallest}"
                ),
            ),
        ),
    ]
}

/// The Markdown body: the setting and the table of every method and minibatch size.
fn body(
    rows: &[Row],
    settings: &Settings,
    n_train: usize,
    n_test: usize,
    features: usize,
) -> String {
    let mut t = Table::new([
        "method",
        "M",
        "train ELBO",
        "test log-loss",
        "sym. KL to MF-Exact",
    ]);
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in rows {
        if !keys
            .iter()
            .any(|(m, b)| *m == r.method && *b == r.batch_size)
        {
            keys.push((r.method.clone(), r.batch_size));
        }
    }
    for (method, m) in &keys {
        t.row([
            method.clone(),
            if method == "MF-Exact" {
                "full".into()
            } else {
                m.to_string()
            },
            format!("{:.3}", stat(rows, method, *m, |r| r.elbo)),
            format!("{:.4}", stat(rows, method, *m, |r| r.test_log_loss)),
            format!("{:.4}", stat(rows, method, *m, |r| r.symmetric_kl)),
        ]);
    }
    format!(
        "{n_train} training and {n_test} test examples, {features} features, λ = {}; {} \
         restarts of {} steps each, α_t = α/(1 + t^{}); mean ± standard error over restarts; \
         MF-Exact maximises the exact ELBO (Gauss–Hermite, {} points).\n\n{}",
        settings.lambda,
        settings.restarts,
        settings.steps,
        settings.lr_decay,
        settings.quadrature_points,
        t.to_markdown()
    )
}

fn figure(rows: &[Row]) -> Figure {
    let sizes = vadam_sizes(rows);
    let xs: Vec<f64> = sizes.iter().map(|&m| (m as f64).log2()).collect();
    let ys: Vec<f64> = sizes.iter().map(|&m| mean_kl(rows, "Vadam", m)).collect();
    let vogn = mean_kl(rows, "VOGN", 1);
    let mut panel = Panel::new("distance to MF-Exact");
    panel
        .labels("log2 minibatch size M", "symmetric KL")
        .y_range(0.0, 1.1 * ys.iter().copied().fold(vogn, f64::max))
        .line(&xs, &ys, "#1f77b4")
        .points(&xs, &ys, "#1f77b4")
        .legend("Vadam", "#1f77b4")
        .points(&[0.0], &[vogn], "#d62728")
        .legend("VOGN, M = 1", "#d62728");
    Figure::new(1).panel(panel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(method: &str, batch_size: usize, restart: usize, symmetric_kl: f64) -> Row {
        Row {
            method: method.into(),
            batch_size,
            restart,
            elbo: -100.0,
            test_log_loss: 0.1,
            symmetric_kl,
        }
    }

    /// Vadam's KL falls with M (mean 0.15 at M = 1 against 0.5 at M = 64: holds), but VOGN-1
    /// (0.3) is farther from MF-Exact than Vadam-1 (fails).
    #[test]
    fn claims_follow_the_rows() {
        let rows = vec![
            row("MF-Exact", 341, 0, 0.0),
            row("VOGN", 1, 0, 0.3),
            row("Vadam", 1, 0, 0.1),
            row("Vadam", 64, 0, 0.6),
            row("VOGN", 1, 1, 0.3),
            row("Vadam", 1, 1, 0.2),
            row("Vadam", 64, 1, 0.4),
        ];
        let claims = claims(&rows);
        let holds: Vec<bool> = claims.iter().map(|c| c.holds).collect();
        assert_eq!(holds, [true, false]);
        assert_eq!(claims[0].ours, "sym. KL at M = 1, 64: 0.1500, 0.5000");
        assert!(
            claims[1].criterion.contains("M = 1"),
            "{}",
            claims[1].criterion
        );
    }

    /// Equal KLs are not "closer" (strict), and missing rows never make a claim hold.
    #[test]
    fn ties_and_missing_rows_fail() {
        let tie = vec![
            row("VOGN", 1, 0, 0.2),
            row("Vadam", 1, 0, 0.2),
            row("Vadam", 64, 0, 0.2),
        ];
        assert_eq!(
            claims(&tie).iter().map(|c| c.holds).collect::<Vec<_>>(),
            [false, false]
        );
        let empty = claims(&[]);
        assert!(empty.iter().all(|c| !c.holds));
    }
}
