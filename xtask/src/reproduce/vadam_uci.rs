//! `vadam-uci`: Bayesian neural-network regression on the UCI benchmarks (Khan et al. 2018,
//! §6.2; ALGORITHMS.md §A, experiment 2).
//!
//! Protocol: per standard 90/10 split, inputs and targets standardised with the statistics of the
//! rows a model is trained on; an MLP with one hidden layer of 50 ReLU units; a homoscedastic
//! Gaussian likelihood with a fixed noise precision τ; prior N(0, λ⁻¹ I). Four methods, each for
//! 40 epochs: Vadam (α = 0.01, γ = (0.9, 0.99)), BBVI (Adam, same α and betas), VOGN (α = 0.01,
//! β = 0.01 = 1 − γ₂) and MC dropout (p = 0.05, MAP by Adam with the same settings). Batch 32
//! with 10 training Monte Carlo samples on Boston, Concrete, Energy and Yacht, batch 128 with 5
//! on the others; 100 Monte Carlo samples at test time. (τ, λ) is chosen per split and method on
//! a grid, by the mean validation log-likelihood over 5 folds of the training split (paper
//! profile) or one 20% holdout (quick profile). Reported: test RMSE and test log-likelihood in
//! the original units, the per-point definition and the Vadam code's joint one.
//!
//! The convergence claim is checked on one data set: the test RMSE of the Monte Carlo predictive
//! after every epoch of the final VOGN, Vadam and BBVI fits.

use std::fmt::Write as _;

use anyhow::{Context as _, Result};
use bdl_baselines::{MapConfig, Optimizer, Sampling, mc_dropout_predictive, train_map};
use bdl_data::uci::{Benchmark, SplitKind, UciData};
use bdl_data::{Dataset, Standardizer};
use bdl_eval::metrics::{self, MeanSe};
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::{Activation, Mlp, MlpSpec};
use bdl_tensor::Seed;
use bdl_variational::{DiagGaussian, Method, VariationalConfig, fit_monitored};
use candle_core::{DType, Tensor};
use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rayon::prelude::*;
use serde::Serialize;

use super::{Context, Profile};

const HIDDEN: usize = 50;
const EPOCHS: usize = 40;
const LEARNING_RATE: f64 = 0.01;
const BETAS: (f64, f64) = (0.9, 0.99);
/// The initial precision of q (Vadam, VOGN) and 1/σ₀² (BBVI): `prec_init` of the Vadam authors'
/// UCI scripts.
const INIT_PRECISION: f64 = 10.0;
const DROPOUT: f64 = 0.05;
const TEST_SAMPLES: usize = 100;

/// The data sets of the paper, in its order.
const PAPER_SETS: [Benchmark; 8] = [
    Benchmark::Boston,
    Benchmark::Concrete,
    Benchmark::Energy,
    Benchmark::Kin8nm,
    Benchmark::Naval,
    Benchmark::Power,
    Benchmark::Wine,
    Benchmark::Yacht,
];

/// The data set of the convergence plot.
const CONVERGENCE_SET: Benchmark = Benchmark::Boston;

/// The reference numbers of ALGORITHMS.md §A: MC dropout's RMSE and test log-likelihood (mean,
/// standard error; Gal & Ghahramani 2016), Vadam's and BBVI's RMSE read off the paper's figure
/// at epoch 40.
struct Reference {
    set: Benchmark,
    dropout_rmse: (f64, f64),
    dropout_ll: (f64, f64),
    vadam_rmse: f64,
    bbvi_rmse: f64,
}

const REFERENCE: [Reference; 8] = [
    reference(Benchmark::Boston, (2.97, 0.19), (-2.46, 0.06), 3.9, 3.6),
    reference(Benchmark::Concrete, (5.23, 0.12), (-3.04, 0.02), 6.9, 6.2),
    reference(Benchmark::Energy, (1.66, 0.04), (-1.99, 0.02), 1.6, 2.8),
    reference(Benchmark::Kin8nm, (0.10, 0.00), (0.95, 0.01), 0.105, 0.093),
    reference(Benchmark::Naval, (0.01, 0.00), (3.80, 0.01), 0.0020, 0.0028),
    reference(Benchmark::Power, (4.02, 0.04), (-2.80, 0.01), 4.28, 4.31),
    reference(Benchmark::Wine, (0.62, 0.01), (-0.93, 0.01), 0.655, 0.655),
    reference(Benchmark::Yacht, (1.11, 0.09), (-1.55, 0.03), 1.3, 2.1),
];

const fn reference(
    set: Benchmark,
    dropout_rmse: (f64, f64),
    dropout_ll: (f64, f64),
    vadam_rmse: f64,
    bbvi_rmse: f64,
) -> Reference {
    Reference {
        set,
        dropout_rmse,
        dropout_ll,
        vadam_rmse,
        bbvi_rmse,
    }
}

/// The compared methods, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Vadam,
    Bbvi,
    Vogn,
    Dropout,
}

const METHODS: [Which; 4] = [Which::Vadam, Which::Bbvi, Which::Vogn, Which::Dropout];

impl Which {
    fn name(self) -> &'static str {
        match self {
            Self::Vadam => "Vadam",
            Self::Bbvi => "BBVI",
            Self::Vogn => "VOGN",
            Self::Dropout => "MC dropout",
        }
    }

    /// The variational method, `None` for MC dropout.
    fn method(self) -> Option<Method> {
        let (beta1, beta2) = BETAS;
        match self {
            Self::Vadam => Some(Method::Vadam {
                learning_rate: LEARNING_RATE,
                beta1,
                beta2,
            }),
            Self::Bbvi => Some(Method::Bbvi {
                learning_rate: LEARNING_RATE,
                beta1,
                beta2,
                init_std: INIT_PRECISION.sqrt().recip(),
            }),
            Self::Vogn => Some(Method::Vogn {
                learning_rate: LEARNING_RATE,
                beta: 1.0 - beta2,
            }),
            Self::Dropout => None,
        }
    }
}

/// How (τ, λ) is chosen inside a training split.
#[derive(Clone, Copy, Debug)]
enum Selection {
    /// K-fold cross-validation.
    Folds(usize),
    /// One seeded holdout of this fraction.
    Holdout(f64),
}

struct Settings {
    sets: Vec<Benchmark>,
    splits: usize,
    /// Candidate log τ and log λ (natural logarithms); every pair is tried.
    log_tau: Vec<f64>,
    log_lambda: Vec<f64>,
    selection: Selection,
}

impl Settings {
    fn of(profile: Profile) -> Self {
        match profile {
            Profile::Quick => Self {
                sets: PAPER_SETS.to_vec(),
                splits: 3,
                log_tau: vec![1.0, 3.0],
                log_lambda: vec![-2.0, 1.0],
                selection: Selection::Holdout(0.2),
            },
            // The ranges of the Vadam authors' Bayesian optimisation (log τ ∈ [0, 5],
            // log λ ∈ [−4, 4]) on a 5 × 5 grid: 25 candidates against their 30 evaluations.
            Profile::Paper => Self {
                sets: PAPER_SETS.to_vec(),
                splits: usize::MAX,
                log_tau: vec![0.0, 1.25, 2.5, 3.75, 5.0],
                log_lambda: vec![-4.0, -2.0, 0.0, 2.0, 4.0],
                selection: Selection::Folds(5),
            },
        }
    }

    fn grid(&self) -> Vec<(f64, f64)> {
        self.log_tau
            .iter()
            .flat_map(|&t| self.log_lambda.iter().map(move |&l| (t.exp(), l.exp())))
            .collect()
    }
}

/// Batch size and training Monte Carlo samples of a data set.
fn batching(set: Benchmark) -> (usize, usize) {
    match set {
        Benchmark::Boston | Benchmark::Concrete | Benchmark::Energy | Benchmark::Yacht => (32, 10),
        _ => (128, 5),
    }
}

/// One method on one split.
#[derive(Clone, Debug, Serialize)]
struct Row {
    dataset: String,
    split: usize,
    method: String,
    /// The chosen noise precision τ and prior precision λ.
    tau: f64,
    lambda: f64,
    /// The mean validation log-likelihood (original units) of the chosen pair.
    selection_log_lik: f64,
    /// Test RMSE of the predictive mean, original units.
    test_rmse: f64,
    /// Per-point test log-likelihood (1/n) Σ_i log((1/S) Σ_s p(y_i | θ_s)), original units.
    test_log_lik: f64,
    /// The Vadam code's joint definition (1/n) log((1/S) Σ_s Π_i p(y_i | θ_s)), original units.
    test_log_lik_joint: f64,
    /// Test RMSE after each epoch (the convergence data set's variational fits only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    test_rmse_by_epoch: Vec<f64>,
}

/// One training split with its test set.
struct Job {
    set: Benchmark,
    split: usize,
    train: Dataset,
    test: Dataset,
    /// The (fit, validation) row sets of the selection.
    folds: Vec<(Vec<usize>, Vec<usize>)>,
    seed: Seed,
}

/// Standardised training data and an evaluation part in the training part's units.
struct Prepared {
    x: Tensor,
    y: Tensor,
    x_eval: Tensor,
    y_eval: Tensor,
    /// The standard deviation of the training targets.
    scale: f64,
}

fn prepare(train: &Dataset, eval: &Dataset) -> Result<Prepared> {
    let (sx, sy) = (Standardizer::fit(train.x())?, Standardizer::fit(train.y())?);
    let f64_of = |s: &Standardizer, t: &Tensor| -> Result<Tensor> {
        Ok(s.transform(t)?.to_dtype(DType::F64)?)
    };
    Ok(Prepared {
        x: f64_of(&sx, train.x())?,
        y: f64_of(&sy, train.y())?,
        x_eval: f64_of(&sx, eval.x())?,
        y_eval: f64_of(&sy, eval.y())?,
        scale: sy.std()[0],
    })
}

/// RMSE, per-point and joint log-likelihood of a predictive on standardised targets, in the
/// original units.
#[derive(Clone, Copy, Debug)]
struct Scores {
    rmse: f64,
    log_lik: f64,
    log_lik_joint: f64,
}

fn score(pred: &Predictive, y: &Tensor, scale: f64) -> Result<Scores> {
    let n = y.dims()[0] as f64;
    let components: Vec<Vec<f64>> = pred.component_log_lik(y)?.to_vec2()?;
    let totals: Vec<f64> = components.iter().map(|c| c.iter().sum()).collect();
    let top = totals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = top + totals.iter().map(|t| (t - top).exp()).sum::<f64>().ln();
    let joint = (lse - (totals.len() as f64).ln()) / n;
    Ok(Scores {
        rmse: metrics::rmse(pred, y)? * scale,
        log_lik: metrics::mean_log_lik(pred, y)? - scale.ln(),
        log_lik_joint: joint - scale.ln(),
    })
}

/// The seeded K-fold partition of `n` rows: fold j validates on the j-th of K near-equal parts
/// of a seeded permutation and fits on the rest (each part sorted).
fn k_folds(n: usize, k: usize, seed: Seed) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut seed.rng());
    (0..k)
        .map(|j| {
            let (lo, hi) = (j * n / k, (j + 1) * n / k);
            let mut val = perm[lo..hi].to_vec();
            let mut fit: Vec<usize> = perm[..lo].iter().chain(&perm[hi..]).copied().collect();
            val.sort_unstable();
            fit.sort_unstable();
            (fit, val)
        })
        .collect()
}

/// Trains `which` with (τ, λ) on `train` and scores it on `eval`; with `track`, also the RMSE
/// on `eval` after every epoch (variational methods).
fn train_and_score(
    which: Which,
    set: Benchmark,
    (tau, lambda): (f64, f64),
    train: &Dataset,
    eval: &Dataset,
    seed: Seed,
    track: bool,
) -> Result<(Scores, Vec<f64>)> {
    let p = prepare(train, eval)?;
    let (batch_size, mc_samples) = batching(set);
    let likelihood = Likelihood::Gaussian {
        sigma: tau.sqrt().recip(),
    };
    let spec = MlpSpec::new(&[p.x.dims()[1], HIDDEN, 1], Activation::Relu);
    let sampling = Sampling {
        samples: TEST_SAMPLES,
        seed: seed.fork("predictive"),
    };
    let Some(method) = which.method() else {
        let model = Mlp::new(spec.with_dropout(DROPOUT))?;
        let theta0 = model.init(seed.fork("init"), DType::F64, p.x.device())?;
        let config = MapConfig {
            optimizer: Optimizer::Adam {
                beta1: BETAS.0,
                beta2: BETAS.1,
                eps: 1e-8,
            },
            learning_rate: LEARNING_RATE,
            prior_precision: lambda,
            epochs: EPOCHS,
            batch_size,
            learn_sigma: false,
            validation_fraction: 0.0,
            patience: None,
            seed: seed.fork("train"),
        };
        let fit = train_map(&model, &theta0, likelihood, &p.x, &p.y, &config)?;
        let pred = mc_dropout_predictive(&model, &fit.theta, likelihood, &p.x_eval, &sampling)?;
        return Ok((score(&pred, &p.y_eval, p.scale)?, Vec::new()));
    };
    let model = Mlp::new(spec)?;
    let mu0 = model.init(seed.fork("init"), DType::F64, p.x.device())?;
    let mut config = VariationalConfig::new(method, lambda, EPOCHS, batch_size);
    config.mc_samples = mc_samples;
    config.init_precision = Some(INIT_PRECISION);
    config.seed = seed.fork("train");
    let predict = |q: &DiagGaussian| -> Result<Predictive> {
        Ok(q.predictive(&model, &likelihood, &p.x_eval, TEST_SAMPLES, sampling.seed)?)
    };
    let mut by_epoch = Vec::new();
    let fit = fit_monitored(&model, &mu0, likelihood, &p.x, &p.y, &config, |_, q| {
        if track {
            by_epoch
                .push(predict(q).and_then(|pred| Ok(metrics::rmse(&pred, &p.y_eval)? * p.scale)));
        }
    })?;
    let by_epoch = by_epoch.into_iter().collect::<Result<Vec<f64>>>()?;
    Ok((
        score(&predict(&fit.posterior)?, &p.y_eval, p.scale)?,
        by_epoch,
    ))
}

/// Sets candle's products to one thread while it lives and restores the previous setting.
///
/// Each fit multiplies matrices of at most 128 × 50: candle's threaded product costs more than it
/// gains there (measured: a sequential run on two threads took 3.4× the time of one thread), so
/// the parallelism comes from running fits side by side. The experiments run one after another,
/// so no other thread reads the environment while it changes (`set_num_threads`'s condition).
struct OneThreadPerProduct {
    /// The thread count before (0: unset).
    candle: usize,
    faer: faer::Par,
}

impl OneThreadPerProduct {
    fn new() -> Self {
        let candle = std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let faer = faer::get_global_parallelism();
        bdl_tensor::set_num_threads(1);
        Self { candle, faer }
    }
}

impl Drop for OneThreadPerProduct {
    fn drop(&mut self) {
        bdl_tensor::set_num_threads(self.candle);
        faer::set_global_parallelism(self.faer);
    }
}

/// Runs the experiment.
pub(crate) fn run(ctx: &Context) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _single = OneThreadPerProduct::new();
    // A pool of its own: the global one may not exist yet and would read the setting above.
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?
        .install(|| run_fits(ctx))
}

fn run_fits(ctx: &Context) -> Result<()> {
    let settings = Settings::of(ctx.profile);
    let grid = settings.grid();
    let mut jobs = Vec::new();
    for &set in &settings.sets {
        let data = UciData::open(&ctx.data, set).with_context(|| format!("opening {set}"))?;
        for split in 0..data.num_splits(SplitKind::Standard)?.min(settings.splits) {
            let (train, test) = data.load(SplitKind::Standard, split)?;
            let seed = Seed(split as u64).fork(set.name());
            let folds = match settings.selection {
                Selection::Folds(k) => k_folds(train.len(), k, seed.fork("folds")),
                Selection::Holdout(fraction) => vec![bdl_data::holdout_indices(
                    train.len(),
                    fraction,
                    seed.fork("holdout"),
                )?],
            };
            jobs.push(Job {
                set,
                split,
                train,
                test,
                folds,
                seed,
            });
        }
    }
    let fits_per_method = |j: &Job| grid.len() * j.folds.len() + 1;
    let total: usize = jobs
        .iter()
        .map(|j| METHODS.len() * fits_per_method(j))
        .sum();
    let bar = ProgressBar::new(total as u64).with_style(
        ProgressStyle::with_template(
            "  {bar:30} {pos}/{len} fits  {msg}  [{elapsed_precise}, eta {eta}]",
        )
        .expect("a valid template"),
    );

    // Selection: every (job, method, candidate, fold) fit, in parallel, in a fixed order.
    bar.set_message("choosing (τ, λ)");
    let tasks: Vec<(usize, Which, usize, usize)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| {
            let (g, f) = (grid.len(), job.folds.len());
            METHODS
                .iter()
                .flat_map(move |&m| (0..g).flat_map(move |c| (0..f).map(move |k| (j, m, c, k))))
        })
        .collect();
    let val_ll: Vec<f64> = tasks
        .par_iter()
        .map(|&(j, which, c, k)| -> Result<f64> {
            let job = &jobs[j];
            let (fit_rows, val_rows) = &job.folds[k];
            let seed = job
                .seed
                .fork(which.name())
                .fork("selection")
                .index(k as u64);
            let fitted = train_and_score(
                which,
                job.set,
                grid[c],
                &job.train.select(fit_rows)?,
                &job.train.select(val_rows)?,
                seed,
                false,
            );
            bar.inc(1);
            // A diverged or degenerate candidate loses the selection instead of failing it.
            match fitted {
                Ok((s, _)) if s.log_lik.is_finite() => Ok(s.log_lik),
                Ok(_) => Ok(f64::NEG_INFINITY),
                Err(e) if diverged(&e) => Ok(f64::NEG_INFINITY),
                Err(e) => Err(e.context(format!(
                    "{} {} split {} (τ, λ) = {:?} fold {k}",
                    which.name(),
                    job.set,
                    job.split,
                    grid[c]
                ))),
            }
        })
        .collect::<Result<_>>()?;

    // Final fits on each whole training split with the chosen pair.
    bar.set_message("final fits");
    // Where job j's selection fits start in `tasks`.
    let offsets: Vec<usize> = jobs
        .iter()
        .scan(0, |acc, job| {
            let start = *acc;
            *acc += METHODS.len() * grid.len() * job.folds.len();
            Some(start)
        })
        .collect();
    let finals: Vec<(usize, Which, usize, f64)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(j, _)| {
            METHODS
                .iter()
                .enumerate()
                .map(move |(m, &which)| (j, m, which))
        })
        .map(|(j, m, which)| {
            let folds = jobs[j].folds.len();
            let mean = |c: usize| {
                let start = offsets[j] + (m * grid.len() + c) * folds;
                debug_assert_eq!(tasks[start], (j, which, c, 0));
                val_ll[start..start + folds].iter().sum::<f64>() / folds as f64
            };
            let (best, best_ll) = (0..grid.len())
                .map(|c| (c, mean(c)))
                .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            (j, which, best, best_ll)
        })
        .collect();
    let rows: Vec<Row> = finals
        .par_iter()
        .map(|&(j, which, c, selection_ll)| -> Result<Row> {
            let job = &jobs[j];
            let track = job.set == CONVERGENCE_SET && which != Which::Dropout;
            let (s, by_epoch) = train_and_score(
                which,
                job.set,
                grid[c],
                &job.train,
                &job.test,
                job.seed.fork(which.name()).fork("final"),
                track,
            )
            .with_context(|| format!("{} {} split {}", which.name(), job.set, job.split))?;
            bar.inc(1);
            Ok(Row {
                dataset: job.set.name().into(),
                split: job.split,
                method: which.name().into(),
                tau: grid[c].0,
                lambda: grid[c].1,
                selection_log_lik: selection_ll,
                test_rmse: s.rmse,
                test_log_lik: s.log_lik,
                test_log_lik_joint: s.log_lik_joint,
                test_rmse_by_epoch: by_epoch,
            })
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();

    super::write_results(ctx, "vadam-uci", &rows)?;
    super::write(
        &ctx.dir.join("table.md"),
        table(&rows, &settings).as_bytes(),
    )?;
    super::write(
        &ctx.dir.join("vadam-uci-convergence.svg"),
        convergence_figure(&rows).to_svg().as_bytes(),
    )?;
    Ok(())
}

/// Whether a fit failed by diverging (a non-finite mean, curvature or loss).
fn diverged(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<bdl_variational::Error>(),
        Some(bdl_variational::Error::Diverged { .. })
    ) || matches!(
        e.downcast_ref::<bdl_baselines::Error>(),
        Some(bdl_baselines::Error::Diverged { .. })
    )
}

/// The two-sided 1% critical value of Student's t with `df` degrees of freedom (the normal's
/// 2.576 beyond 30, which errs towards "comparable" by under 7%).
fn t_critical_99(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
        2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
        2.771, 2.763, 2.756, 2.750,
    ];
    TABLE.get(df.max(1) - 1).copied().unwrap_or(2.576)
}

fn pick<'a>(rows: &'a [Row], set: &str, which: Which) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| r.dataset == set && r.method == which.name())
        .collect()
}

fn stat(rows: &[&Row], field: impl Fn(&Row) -> f64) -> MeanSe {
    MeanSe::of(&rows.iter().map(|r| field(r)).collect::<Vec<_>>())
}

/// Mean ± standard error over splits of the paired difference a − b of `field`.
fn paired(a: &[&Row], b: &[&Row], field: impl Fn(&Row) -> f64) -> MeanSe {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| {
            debug_assert_eq!(a.split, b.split);
            field(a) - field(b)
        })
        .collect();
    MeanSe::of(&d)
}

/// Significant digits for a data set's RMSE (Naval's is ~0.002).
fn rmse_digits(set: &str) -> usize {
    match set {
        "naval" => 4,
        "kin8nm" | "wine" => 3,
        _ => 2,
    }
}

/// Mean test RMSE over the convergence set's splits after each epoch, per method.
fn curves(rows: &[Row]) -> Vec<(Which, Vec<f64>)> {
    [Which::Vogn, Which::Vadam, Which::Bbvi]
        .into_iter()
        .filter_map(|which| {
            let here = pick(rows, CONVERGENCE_SET.name(), which);
            let epochs = here.first()?.test_rmse_by_epoch.len();
            let mean = (0..epochs)
                .map(|e| {
                    here.iter().map(|r| r.test_rmse_by_epoch[e]).sum::<f64>() / here.len() as f64
                })
                .collect();
            Some((which, mean))
        })
        .collect()
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn table(rows: &[Row], settings: &Settings) -> String {
    let mut sets: Vec<&str> = rows.iter().map(|r| r.dataset.as_str()).collect();
    sets.dedup();
    let mut t = Table::new([
        "dataset",
        "splits",
        "method",
        "test RMSE",
        "paper RMSE",
        "test LL (per point)",
        "paper LL",
        "test LL (joint, Vadam code)",
        "τ chosen (median)",
        "λ chosen (median)",
    ]);
    let mut same = Table::new([
        "dataset",
        "Vadam − BBVI, RMSE",
        "Vadam − BBVI, LL",
        "comparable (paired t, p = 0.01)",
        "within 2 SE",
    ]);
    let mut dropout = Table::new([
        "dataset",
        "RMSE: dropout / Vadam / BBVI",
        "LL: dropout / Vadam / BBVI",
        "dropout better",
    ]);
    let (mut n_same, mut n_two_se, mut n_dropout) = (0, 0, 0);
    for set in &sets {
        let digits = rmse_digits(set);
        let reference = REFERENCE.iter().find(|r| r.set.name() == *set);
        for which in METHODS {
            let here = pick(rows, set, which);
            if here.is_empty() {
                continue;
            }
            let paper_rmse = match (reference, which) {
                (Some(r), Which::Dropout) => {
                    format!(
                        "{:.d$} ± {:.d$}",
                        r.dropout_rmse.0,
                        r.dropout_rmse.1,
                        d = digits
                    )
                }
                (Some(r), Which::Vadam) => format!("≈ {}", r.vadam_rmse),
                (Some(r), Which::Bbvi) => format!("≈ {}", r.bbvi_rmse),
                _ => "—".into(),
            };
            let paper_ll = match (reference, which) {
                (Some(r), Which::Dropout) => {
                    format!("{:.2} ± {:.2}", r.dropout_ll.0, r.dropout_ll.1)
                }
                _ => "—".into(),
            };
            t.row([
                (*set).to_owned(),
                here.len().to_string(),
                which.name().into(),
                format!("{:.digits$}", stat(&here, |r| r.test_rmse)),
                paper_rmse,
                format!("{:.2}", stat(&here, |r| r.test_log_lik)),
                paper_ll,
                format!("{:.2}", stat(&here, |r| r.test_log_lik_joint)),
                format!("{:.3}", median(&here, |r| r.tau)),
                format!("{:.3}", median(&here, |r| r.lambda)),
            ]);
        }
        let (vadam, bbvi, drop) = (
            pick(rows, set, Which::Vadam),
            pick(rows, set, Which::Bbvi),
            pick(rows, set, Which::Dropout),
        );
        let (d_rmse, d_ll) = (
            paired(&vadam, &bbvi, |r| r.test_rmse),
            paired(&vadam, &bbvi, |r| r.test_log_lik),
        );
        let within = |m: MeanSe, k: f64| m.mean.abs() <= k * m.se;
        let t = t_critical_99(vadam.len().saturating_sub(1));
        let comparable = within(d_rmse, t) && within(d_ll, t);
        let two_se = within(d_rmse, 2.0) && within(d_ll, 2.0);
        n_same += usize::from(comparable);
        n_two_se += usize::from(two_se);
        same.row([
            (*set).to_owned(),
            format!("{d_rmse:.digits$}"),
            format!("{d_ll:.2}"),
            yes(comparable).into(),
            yes(two_se).into(),
        ]);
        let mean = |rows: &[&Row], f: fn(&Row) -> f64| stat(rows, f).mean;
        let (r, l) = (|r: &Row| r.test_rmse, |r: &Row| r.test_log_lik);
        let better = mean(&drop, r) < mean(&vadam, r).min(mean(&bbvi, r))
            && mean(&drop, l) > mean(&vadam, l).max(mean(&bbvi, l));
        n_dropout += usize::from(better);
        dropout.row([
            (*set).to_owned(),
            format!(
                "{:.d$} / {:.d$} / {:.d$}",
                mean(&drop, r),
                mean(&vadam, r),
                mean(&bbvi, r),
                d = digits
            ),
            format!(
                "{:.2} / {:.2} / {:.2}",
                mean(&drop, l),
                mean(&vadam, l),
                mean(&bbvi, l)
            ),
            yes(better).into(),
        ]);
    }

    let mut out = String::new();
    let selection = match settings.selection {
        Selection::Folds(k) => format!("{k}-fold cross-validation inside each training split"),
        Selection::Holdout(f) => format!(
            "one seeded {:.0}% holdout of each training split (quick-profile deviation: the paper \
             uses 5-fold cross-validation)",
            100.0 * f
        ),
    };
    let splits = match settings.splits {
        usize::MAX => "all standard splits".to_owned(),
        k => format!("the first {k} standard splits (quick-profile deviation: the paper uses 20)"),
    };
    let _ = write!(
        out,
        "# vadam-uci: BNN regression on UCI (Khan et al. 2018, §6.2)\n\n\
         One hidden layer of {HIDDEN} ReLU units; Gaussian likelihood with a fixed noise precision τ; \
         inputs and targets standardised with the statistics of the rows each model is trained on; \
         {EPOCHS} epochs, α = {LEARNING_RATE}, betas {BETAS:?}; batch 32 with 10 training MC samples \
         (boston, concrete, energy, yacht), batch 128 with 5 (the others); {TEST_SAMPLES} test MC \
         samples. Vadam and VOGN start at precision {INIT_PRECISION}, BBVI at σ₀ = 1/√{INIT_PRECISION} \
         (the Vadam code's `prec_init`); VOGN uses β = 1 − γ₂ = 0.01; MC dropout: p = {DROPOUT} on the \
         hidden units, MAP by Adam with the same α, betas, batches and epochs, weight decay λ. \
         (τ, λ) chosen per split and method from log τ ∈ {:?} × log λ ∈ {:?} by the mean validation \
         log-likelihood on {selection}. Data: {splits}; {}. Mean ± standard error over splits; \
         RMSE and log-likelihood in the original units. Paper columns: MC dropout from Gal & \
         Ghahramani (2016) (their own training: 40 epochs, p tuned); Vadam and BBVI RMSEs read \
         off the paper's figure (approximate).\n\n{}\n",
        settings.log_tau,
        settings.log_lambda,
        match settings.splits {
            usize::MAX => "full data sets",
            _ =>
                "kin8nm, naval and power subsampled to 1,000 rows (the shipped fixtures; quick-profile deviation)",
        },
        t.to_markdown()
    );
    let n = sets.len();
    let _ = write!(
        out,
        "## The paper's claims\n\n\
         ### Vadam ≈ BBVI\n\nComparable when a paired t-test over splits at p = 0.01 (the test of \
         the Vadam authors' comparison script) rejects equality neither of the test RMSEs nor of \
         the test LLs; with few splits it has little power, so the stricter \"both paired \
         differences within two standard errors of zero\" is shown too ({n_two_se} of {n}). \
         Holds on {n_same} of {n} data sets: **{}**.\n\n{}\n\
         ### MC dropout is better\n\nBetter when its mean test RMSE is below and its mean test LL \
         above both Vadam's and BBVI's. Holds on {n_dropout} of {n} data sets: **{}**.\n\n{}\n",
        yes(2 * n_same > n),
        same.to_markdown(),
        yes(2 * n_dropout > n),
        dropout.to_markdown()
    );
    out.push_str(&convergence_claim(rows));
    out
}

fn median(rows: &[&Row], field: impl Fn(&Row) -> f64) -> f64 {
    let mut v: Vec<f64> = rows.iter().map(|r| field(r)).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// 110% of the best final RMSE of the three methods (`None` without all three curves).
fn target(curves: &[(Which, Vec<f64>)]) -> Option<f64> {
    let finals: Vec<f64> = curves
        .iter()
        .filter_map(|(_, c)| c.last().copied())
        .collect();
    (finals.len() == 3).then(|| 1.1 * finals.iter().copied().fold(f64::INFINITY, f64::min))
}

/// Epochs to reach 110% of the best final RMSE of the three methods, per method.
fn convergence_claim(rows: &[Row]) -> String {
    let curves = curves(rows);
    let Some(target) = target(&curves) else {
        return String::new();
    };
    let reach = |c: &[f64]| c.iter().position(|&v| v <= target).map(|e| e + 1);
    let mut t = Table::new([
        "method",
        "RMSE after 1 / 5 / 10 / 20 / 40 epochs",
        "epochs to ≤ 110% of the best final RMSE",
    ]);
    for (which, c) in &curves {
        t.row([
            which.name().to_owned(),
            [1, 5, 10, 20, 40]
                .iter()
                .filter_map(|&e| c.get(e - 1))
                .map(|v| format!("{v:.2}"))
                .collect::<Vec<_>>()
                .join(" / "),
            reach(c).map_or("not reached".into(), |e| e.to_string()),
        ]);
    }
    let epochs = |w: Which| {
        curves
            .iter()
            .find(|(x, _)| *x == w)
            .and_then(|(_, c)| reach(c))
            .unwrap_or(usize::MAX)
    };
    let bbvi = epochs(Which::Bbvi);
    let holds = epochs(Which::Vogn) < bbvi && epochs(Which::Vadam) < bbvi;
    format!(
        "### VOGN and Vadam converge faster than BBVI\n\n\
         Test RMSE of the final fits on {} after each epoch (mean over splits; \
         `vadam-uci-convergence.svg`); the target is 110% of the best final RMSE of the three \
         ({target:.2}). Faster = fewer epochs to the target. Holds: **{}**.\n\n{}",
        CONVERGENCE_SET.name(),
        yes(holds),
        t.to_markdown()
    )
}

fn convergence_figure(rows: &[Row]) -> Figure {
    let colors = [
        (Which::Vogn, "#d62728"),
        (Which::Vadam, "#1f77b4"),
        (Which::Bbvi, "#2ca02c"),
    ];
    let mut panel = Panel::new(format!(
        "{}: test RMSE during training",
        CONVERGENCE_SET.name()
    ));
    panel.labels("epoch", "test RMSE");
    let curves = curves(rows);
    if let Some(target) = target(&curves) {
        let grey = "#7f7f7f";
        panel
            .line(&[1.0, EPOCHS as f64], &[target, target], grey)
            .legend("110% of the best final", grey);
    }
    for (which, c) in curves {
        let color = colors
            .iter()
            .find(|(w, _)| *w == which)
            .map_or("#000000", |(_, c)| c);
        let xs: Vec<f64> = (1..=c.len()).map(|e| e as f64).collect();
        panel.line(&xs, &c, color).legend(which.name(), color);
    }
    Figure::new(1).panel(panel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn k_folds_validate_on_every_row_once() {
        let folds = k_folds(23, 5, Seed(3));
        assert_eq!(folds.len(), 5);
        let mut seen: Vec<usize> = folds.iter().flat_map(|(_, v)| v.clone()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..23).collect::<Vec<_>>());
        for (fit, val) in &folds {
            assert!(val.len() == 4 || val.len() == 5);
            assert_eq!(fit.len() + val.len(), 23);
            assert!(fit.iter().all(|i| !val.contains(i)));
        }
        assert_eq!(folds, k_folds(23, 5, Seed(3)));
    }

    #[test]
    fn scores_follow_both_definitions_in_the_original_units() {
        // Two components N(0, 1) and N(2, 1) at two points y = (0, 2), targets scaled by 3.
        let dev = Device::Cpu;
        let means = Tensor::new(&[[[0.0f64], [0.0]], [[2.0], [2.0]]], &dev).unwrap();
        let pred = Predictive::gaussian_mixture(&means, &means.ones_like().unwrap()).unwrap();
        let y = Tensor::new(&[[0.0f64], [2.0]], &dev).unwrap();
        let s = score(&pred, &y, 3.0).unwrap();
        let log_n = |z: f64| -0.5 * z * z - 0.5 * (2.0 * std::f64::consts::PI).ln();
        // Per point: log(½N(0;0,1) + ½N(0;2,1)), the same at both points by symmetry.
        let point = (0.5 * log_n(0.0).exp() + 0.5 * log_n(2.0).exp()).ln();
        assert!((s.log_lik - (point - 3f64.ln())).abs() < 1e-12);
        // Joint: each component explains one point well and the other badly, so both have the
        // product N(0; 0, 1)·N(2; 0, 1), and so has their average.
        let joint = (log_n(0.0) + log_n(2.0)) / 2.0;
        assert!((s.log_lik_joint - (joint - 3f64.ln())).abs() < 1e-12);
        // The mixture mean is 1 at both points: RMSE 1, times the scale.
        assert!((s.rmse - 3.0).abs() < 1e-12);
    }

    #[test]
    fn critical_values_fall_towards_the_normal() {
        assert_eq!(t_critical_99(2), 9.925);
        assert_eq!(t_critical_99(19), 2.861);
        assert_eq!(t_critical_99(200), 2.576);
    }
}
