//! `vadam-uci`: Bayesian neural-network regression on the UCI benchmarks (Khan et al. 2018,
//! §6.2; ALGORITHMS.md §A, experiment 2).
//!
//! Protocol: per standard 90/10 split, inputs and targets standardised with the statistics of the
//! rows a model is trained on; an MLP with one hidden layer of 50 ReLU units; a homoscedastic
//! Gaussian likelihood with a fixed noise precision τ; prior N(0, λ⁻¹ I). Four methods, each for
//! 40 epochs: Vadam (α = 0.01, γ = (0.9, 0.99)), BBVI (Adam, same α and betas), VOGN (α = 0.01,
//! β = 0.01 = 1 − γ₂) and MC dropout (p = 0.05, MAP by Adam with the same settings). Batch 32
//! with 10 training Monte Carlo samples on Boston, Concrete, Energy and Yacht, batch 128 with 5
//! on the others; 100 Monte Carlo samples at test time. The networks compute in f32, as the
//! Vadam authors' PyTorch scripts do (the variational state is f64 whatever the network's dtype).
//! (τ, λ) is chosen per split and method on a grid, by the mean validation log-likelihood over 5
//! folds of the training split, raced (paper profile: every candidate on the first fold, the 5
//! best of them on all five; [`rank`]), or on one 20% holdout (quick and smoke profiles).
//! Reported: test RMSE and test log-likelihood in the original units, the per-point definition
//! and the Vadam code's joint one.
//!
//! The convergence claim is checked on one data set: the test RMSE of the Monte Carlo predictive
//! after every epoch of the final VOGN, Vadam and BBVI fits.
//!
//! The smoke profile runs Boston alone, two splits, a 2 × 1 grid, 2 epochs and 10 test samples.

mod claims;
mod listed;
mod report;
mod settings;

use std::cmp::Ordering;

use anyhow::{Context as _, Result, bail};
use bdl_baselines::McDropout;
use bdl_data::uci::{Benchmark, SplitKind, UciData};
use bdl_data::{Dataset, StandardizedSplit};
use bdl_eval::metrics::{self};
use bdl_inference::{MapConfig, Optimizer, Posterior, PredictOptions, Validate, train_map};
use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use bdl_variational::{MeanField, Method, VariationalConfig, fit_monitored};
use candle_core::{DType, Tensor};
use serde::{Deserialize, Serialize};

use self::claims::claims;
use self::report::{body, convergence_figure};
use self::settings::{Finalists, Selection, Settings, batching};
use crate::concurrency::side_by_side;
use crate::units::Units;
use crate::{Context, Entry, Outcome};

const HIDDEN: usize = 50;
const LEARNING_RATE: f64 = 0.01;
const BETAS: (f64, f64) = (0.9, 0.99);
/// The initial precision of q (Vadam, VOGN) and 1/σ₀² (BBVI): `prec_init` of the Vadam authors'
/// UCI scripts.
const INIT_PRECISION: f64 = 10.0;
const DROPOUT: f64 = 0.05;
/// The dtype of every network's inputs, weights and outputs: PyTorch's default, in which the
/// Vadam authors' scripts ran (and 1.15–1.27× faster here than f64, `docs/REPRODUCTION.md`).
const DTYPE: DType = DType::F32;

/// The data sets of the paper (every UCI benchmark but protein), in its (alphabetical) order.
fn paper_sets() -> Vec<Benchmark> {
    Benchmark::ALL
        .into_iter()
        .filter(|&b| b != Benchmark::Protein)
        .collect()
}

/// The data set of the convergence plot.
const CONVERGENCE_SET: Benchmark = Benchmark::Boston;

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "vadam-uci",
    reproduces: "Khan et al. (2018) §6.2: BNN regression on eight UCI sets with Vadam, BBVI, VOGN and MC \
     dropout, and the convergence of VOGN and Vadam against BBVI",
    run,
    shards: true,
    lists_methods: true,
    profiles: &crate::Profile::ALL,
    any_device: false,
};

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
    Vprop,
    Ivon,
    Dropout,
}

const METHODS: [Which; 6] = [
    Which::Vadam,
    Which::Bbvi,
    Which::Vogn,
    Which::Vprop,
    Which::Ivon,
    Which::Dropout,
];

impl Which {
    fn name(self) -> &'static str {
        match self {
            Self::Vadam => "Vadam",
            Self::Bbvi => "BBVI",
            Self::Vogn => "VOGN",
            Self::Vprop => "Vprop",
            Self::Ivon => "IVON",
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
            Self::Vprop => Some(Method::Vprop {
                learning_rate: LEARNING_RATE,
                beta: 1.0 - beta2,
            }),
            // Its authors' β₁, β₂ and h₀ (Shen et al. 2024), the common step size.
            Self::Ivon => Some(Method::ivon(LEARNING_RATE)),
            Self::Dropout => None,
        }
    }
}

/// One method on one split.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Row {
    dataset: String,
    split: usize,
    method: String,
    /// The chosen noise precision τ and prior precision λ.
    tau: f64,
    lambda: f64,
    /// The mean validation log-likelihood (original units) of the chosen pair ([`rank`]: over
    /// the screened folds alone for a candidate that was not a finalist); none for a listed
    /// method, which chooses nothing on the folds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selection_log_lik: Option<f64>,
    /// Test RMSE of the predictive mean, original units.
    test_rmse: f64,
    /// Per-point test log-likelihood (1/n) Σ_i log((1/S) Σ_s p(y_i | θ_s)), original units.
    test_log_lik: f64,
    /// The Vadam code's joint definition (1/n) log((1/S) Σ_s Π_i p(y_i | θ_s)), original units.
    test_log_lik_joint: f64,
    /// Test RMSE after each epoch (the convergence data set's variational fits only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    test_rmse_by_epoch: Vec<f64>,
    /// Better-ranked candidates whose final fit blew up ([`blew_up`]) or diverged and gave way
    /// to the next.
    #[serde(default, skip_serializing_if = "is_zero")]
    fallbacks: usize,
}

/// Which final fits fell back, by method: "none did", or "IVON 3 (yacht 1, 15, 19)".
fn fallback_summary(rows: &[Row]) -> String {
    let parts: Vec<String> = METHODS
        .iter()
        .filter_map(|which| {
            let fell: Vec<&Row> = rows
                .iter()
                .filter(|r| r.method == which.name() && r.fallbacks > 0)
                .collect();
            (!fell.is_empty()).then(|| {
                let places: Vec<String> = fell
                    .iter()
                    .map(|r| format!("{} {} ({} down)", r.dataset, r.split, r.fallbacks))
                    .collect();
                format!("{} {} ({})", which.name(), fell.len(), places.join(", "))
            })
        })
        .collect();
    if parts.is_empty() {
        "no final fit did".to_owned()
    } else {
        format!("final fits that did: {}", parts.join("; "))
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Whether a fit blew up: its training loss at the end is more than ten times the loss of the
/// untrained network it started from, in size (or not a number). A blown-up fit can stay
/// finite: IVON at the common α = 0.01 and τ = e⁵ on yacht left its mean near 10³ and the
/// training NLL near 10¹¹ (74 untrained) while the fold fits of the same (τ, λ) trained
/// normally. Two stricter rules were tried first, in the quick profile, before any unit ran
/// under them: "above the first epoch's loss" also caught sound Vprop fits on energy whose loss
/// after 40 epochs sat a little above the first epoch's, and "above the untrained loss" caught
/// BBVI on naval, whose mean fits little better than the untrained network (its test RMSE is
/// near the targets' spread) but does not explode.
fn blew_up(untrained: f64, losses: &[f64]) -> bool {
    let bound = 10.0 * untrained.abs();
    losses
        .last()
        .is_some_and(|last| last.partial_cmp(&bound).is_none_or(Ordering::is_gt))
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

/// RMSE, per-point and joint log-likelihood of a predictive on standardised targets, in the
/// original units.
#[derive(Clone, Copy, Debug)]
struct Scores {
    rmse: f64,
    log_lik: f64,
    log_lik_joint: f64,
}

/// One trained and scored model.
struct Fitted {
    scores: Scores,
    /// Test RMSE after each epoch, when tracked.
    by_epoch: Vec<f64>,
    /// The training loss, per example: the mean NLL at the variational mean after the last
    /// epoch, MC dropout's regularised MAP loss after each epoch.
    losses: Vec<f64>,
    /// The same loss of the untrained network.
    untrained: f64,
}

fn score(pred: &Predictive, y: &Tensor, scale: f64) -> Result<Scores> {
    Ok(Scores {
        rmse: metrics::rmse(pred, y)? * scale,
        log_lik: metrics::mean_log_lik(pred, y)? - scale.ln(),
        log_lik_joint: metrics::joint_log_lik(pred, y)? - scale.ln(),
    })
}

/// Trains `which` with (τ, λ) on `train` and scores it on `eval`; with `track`, also the RMSE
/// on `eval` after every epoch (variational methods).
#[allow(clippy::too_many_arguments)]
fn train_and_score(
    settings: &Settings,
    which: Which,
    set: Benchmark,
    (tau, lambda): (f64, f64),
    train: &Dataset,
    eval: &Dataset,
    seed: Seed,
    track: bool,
) -> Result<Fitted> {
    let p = StandardizedSplit::new(train, eval)?.to_dtype(DTYPE)?;
    let scale = p.y_scale.std()[0];
    let (batch_size, mc_samples) = batching(set);
    let likelihood = Likelihood::Gaussian {
        sigma: tau.sqrt().recip(),
    };
    let spec = MlpSpec::new(&[p.x_train.dims()[1], HIDDEN, 1], Activation::Relu);
    let options = PredictOptions {
        samples: settings.test_samples,
        seed: seed.fork("predictive"),
        ..PredictOptions::default()
    };
    let Some(method) = which.method() else {
        let network = Network::from(Mlp::new(spec.with_dropout(DROPOUT))?);
        let theta0 = network.init(seed.fork("init"), DTYPE, p.x_train.device())?;
        let config = adam_map(settings, lambda, batch_size, seed.fork("train"), false)?;
        let fit = train_map(
            &network, &theta0, likelihood, &p.x_train, &p.y_train, &config,
        )?;
        let pred = McDropout::new(fit.estimate).predictive(&p.x_test, &options)?;
        let norm: f64 = bdl_tensor::to_f64_vec(&theta0)?.iter().map(|t| t * t).sum();
        let penalty = 0.5 * lambda * norm / p.x_train.dims()[0] as f64;
        return Ok(Fitted {
            scores: score(&pred, &p.y_test, scale)?,
            by_epoch: Vec::new(),
            losses: fit.losses,
            untrained: mean_nll(&network, &theta0, likelihood, &p.x_train, &p.y_train)? + penalty,
        });
    };
    let network = Network::from(Mlp::new(spec)?);
    let mu0 = network.init(seed.fork("init"), DTYPE, p.x_train.device())?;
    let config = VariationalConfig {
        mc_samples,
        init_precision: Some(INIT_PRECISION),
        seed: seed.fork("train"),
        // Only the last epoch's loss is read (`blew_up`).
        nll_every_epoch: false,
        ..VariationalConfig::new(method, lambda, settings.epochs, batch_size)
    }
    .check()?;
    let predict = |q: &MeanField| -> Result<Predictive> { Ok(q.predictive(&p.x_test, &options)?) };
    let mut by_epoch = Vec::new();
    let fit = fit_monitored(
        &network,
        &mu0,
        likelihood,
        &p.x_train,
        &p.y_train,
        &config,
        |_, q| {
            if track {
                by_epoch
                    .push(predict(q).and_then(|pred| Ok(metrics::rmse(&pred, &p.y_test)? * scale)));
            }
        },
    )?;
    Ok(Fitted {
        scores: score(&predict(&fit.posterior)?, &p.y_test, scale)?,
        by_epoch: by_epoch.into_iter().collect::<Result<Vec<f64>>>()?,
        losses: fit.nll,
        untrained: mean_nll(&network, &mu0, likelihood, &p.x_train, &p.y_train)?,
    })
}

/// The MAP training of the experiment: Adam with its step size and betas for its epochs, prior
/// precision `lambda`, the whole training split (no early stopping), σ fixed or learned.
fn adam_map(
    settings: &Settings,
    lambda: f64,
    batch_size: usize,
    seed: Seed,
    learn_sigma: bool,
) -> Result<bdl_inference::Valid<MapConfig>> {
    Ok(MapConfig {
        optimizer: Optimizer::adam(BETAS.0, BETAS.1),
        learning_rate: LEARNING_RATE,
        prior_precision: lambda,
        epochs: settings.epochs,
        batch_size,
        learn_sigma,
        validation_fraction: 0.0,
        patience: None,
        seed,
    }
    .check()?)
}

/// (1/N) Σ_n −log p(y_n | f(x_n; θ)).
fn mean_nll(
    network: &Network,
    theta: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
) -> Result<f64> {
    let ll = bdl_tensor::to_f64_vec(&likelihood.log_lik(&network.forward(theta, x)?, y)?)?;
    Ok(-ll.iter().sum::<f64>() / ll.len() as f64)
}

/// Every split of the run's data sets with its selection folds and seed.
fn splits(ctx: &Context, settings: &Settings) -> Result<Vec<Job>> {
    let mut jobs = Vec::new();
    for &set in &settings.sets {
        let data = UciData::open(&ctx.data, set).with_context(|| format!("opening {set}"))?;
        let splits = data
            .num_splits(SplitKind::Standard)?
            .min(settings.splits.unwrap_or(usize::MAX));
        for split in 0..splits {
            let (train, test) = data.load(SplitKind::Standard, split)?;
            let seed = Seed(split as u64).fork(set.name());
            let folds = match settings.selection {
                Selection::Race { folds, .. } => {
                    bdl_data::k_fold_indices(train.len(), folds, seed.fork("folds"))?
                }
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
    Ok(jobs)
}

/// Runs the experiment: the fits side by side, one thread each
/// ([`side_by_side`]).
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let grid = settings.grid();
    let jobs = splits(ctx, &settings)?;
    // At most: a race's finalists vary with the scores, so the bar may end short of its total.
    let (screen, finalists) = settings.selection.race();
    let finalists = finalists.at_most(settings.log_tau.len(), settings.log_lambda.len());
    let fits_per_method = |j: &Job| grid.len() * screen + finalists * (j.folds.len() - screen) + 1;
    let total: usize = jobs
        .iter()
        .map(|j| METHODS.len() * fits_per_method(j))
        .sum();
    ctx.log(format!(
        "{} splits × {} methods, {} candidates (τ, λ): {total} fits",
        jobs.len(),
        METHODS.len(),
        grid.len()
    ));
    // Units: one split with every method's selection and final fit, saved as it finishes (the
    // paper profile resumes; shards split the splits); then each listed method's units, with
    // settings of their own (its spec).
    let listed = crate::listed::methods(
        ctx,
        crate::listed::hmc_reference(ctx.profile, listed::MAP_PRIOR_PRECISION)?,
    )?;
    let units = Units::new(ctx, &settings)?;
    let listed_units: Vec<Units> = listed
        .iter()
        .map(|l| Units::new(ctx, &l.settings(&settings)))
        .collect::<Result<_>>()?;
    let key = |&(j, part): &(usize, Option<usize>)| {
        let job: &Job = &jobs[j];
        let own = format!("{}-{}", job.set.name(), job.split);
        match part {
            None => own,
            Some(i) => format!("{own}-listed-{}", listed[i].slug),
        }
    };
    let all_units = jobs.len() * (1 + listed.len());
    let mut mine: Vec<(usize, Option<usize>)> =
        units.share((0..jobs.len()).map(|j| (j, None)).collect());
    for (i, u) in listed_units.iter().enumerate() {
        mine.extend(u.share((0..jobs.len()).map(|j| (j, Some(i))).collect()));
    }
    let fits = |&(j, part): &(usize, Option<usize>)| match part {
        None => METHODS.len() * fits_per_method(&jobs[j]),
        Some(_) => 1,
    };
    let bar = ctx.bar(mine.iter().map(fits).sum::<usize>() as u64, "fits");
    let per_split = side_by_side(&mine, |unit| {
        let job = &jobs[unit.0];
        let rows = match unit.1 {
            None => units.get_or_run(&key(unit), || fit_split(&settings, &grid, job, &bar))?,
            Some(i) => listed_units[i].get_or_run(&key(unit), || {
                let rows = listed::run(&settings, job, &listed[i]);
                bar.inc(1);
                rows.with_context(|| {
                    format!("{} split {}: {}", job.set, job.split, listed[i].label)
                })
            })?,
        };
        bar.set_message(format!("{} split {} done", job.set, job.split));
        Ok(rows)
    })?;
    bar.finish_and_clear();
    if let Some(shard) = units.shard_outcome(mine.iter().map(key).collect(), all_units) {
        return Ok(shard);
    }
    let rows: Vec<Row> = per_split.into_iter().flatten().collect();

    Ok(Outcome::new(
        "vadam-uci: BNN regression on UCI (Khan et al. 2018, §6.2)",
        &crate::listed::with_listed(&settings, &listed),
        &rows,
    )?
    .body(format!(
        "{}{}",
        body(&rows, &settings, ctx.profile, &listed),
        crate::listed::section(
            "vadam-uci",
            "a MAP of the paper's network on each split (Adam, λ = 1, σ learned)",
            &listed
        )
    ))
    .claims(claims(&rows))
    .figure(
        "vadam-uci-convergence.svg",
        convergence_figure(&rows).to_svg(),
    ))
}

/// The candidates ranked for the final fit, best first, each with the mean validation
/// log-likelihood it is ranked by, from `score(c, k)`, candidate c's on fold k of `folds`;
/// candidate c belongs to the stratum `strata[c]` (its τ). Every candidate is scored on folds
/// 0..`screen`; the `finalists.overall` best by their mean there, and the `finalists.per_tau`
/// best of each stratum, on the other folds too. The finalists come first, by their mean over
/// all folds, then the others by their mean over the screened folds; among equal means the
/// earlier candidate goes first. With every candidate a finalist (or `screen = folds`) this is
/// plain cross-validation, each candidate's folds summed in their order; with F finalists it
/// takes `candidates · screen + F · (folds − screen)` scores instead of `candidates · folds`.
fn rank(
    strata: &[usize],
    folds: usize,
    screen: usize,
    finalists: Finalists,
    mut score: impl FnMut(usize, usize) -> Result<f64>,
) -> Result<Vec<(usize, f64)>> {
    let candidates = strata.len();
    // Sums of scores by their mean over `n` folds, best first; among equals the earlier
    // candidate.
    let best_first = |v: &mut Vec<(usize, f64)>, n: usize| {
        v.sort_by_key(|&(c, _)| c);
        v.sort_by(|a, b| (b.1 / n as f64).total_cmp(&(a.1 / n as f64)));
    };
    let mut sums = Vec::with_capacity(candidates);
    for c in 0..candidates {
        let mut sum = 0.0;
        for k in 0..screen {
            sum += score(c, k)?;
        }
        sums.push((c, sum));
    }
    best_first(&mut sums, screen);
    let mut taken = vec![0; strata.iter().max().map_or(0, |&s| s + 1)];
    let (finals, others): (Vec<_>, Vec<_>) =
        sums.into_iter().enumerate().partition(|&(at, (c, _))| {
            let take = at < finalists.overall || taken[strata[c]] < finalists.per_tau;
            taken[strata[c]] += usize::from(take);
            take
        });
    let mut finals: Vec<(usize, f64)> = finals.into_iter().map(|(_, s)| s).collect();
    let others: Vec<(usize, f64)> = others.into_iter().map(|(_, s)| s).collect();
    finals.sort_by_key(|&(c, _)| c);
    for (c, sum) in &mut finals {
        for k in screen..folds {
            *sum += score(*c, k)?;
        }
    }
    best_first(&mut finals, folds);
    let mean = |n: usize| move |(c, sum): (usize, f64)| (c, sum / n as f64);
    Ok(finals
        .into_iter()
        .map(mean(folds))
        .chain(others.into_iter().map(mean(screen)))
        .collect())
}

/// Every method on one split: (τ, λ) by the mean validation log-likelihood over the split's
/// folds, raced as `settings.selection` says ([`rank`]; a diverged candidate loses), then the
/// final fit on the whole training split, scored on the test set; one row per method. Each fit
/// has its own seed, so the rows do not depend on the order of the fits or on how the splits
/// are spread over workers.
fn fit_split(
    settings: &Settings,
    grid: &[(f64, f64)],
    job: &Job,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Row>> {
    let (screen, finalists) = settings.selection.race();
    let tau_of: Vec<usize> = (0..grid.len())
        .map(|c| c / settings.log_lambda.len())
        .collect();
    METHODS
        .iter()
        .map(|&which| {
            let fold_score = |c: usize, k: usize| -> Result<f64> {
                let (fit_rows, val_rows) = &job.folds[k];
                let seed = job
                    .seed
                    .fork(which.name())
                    .fork("selection")
                    .index(k as u64);
                let fitted = train_and_score(
                    settings,
                    which,
                    job.set,
                    grid[c],
                    &job.train.select(fit_rows)?,
                    &job.train.select(val_rows)?,
                    seed,
                    false,
                );
                bar.inc(1);
                match fitted {
                    Ok(f) if f.scores.log_lik.is_finite() => Ok(f.scores.log_lik),
                    Ok(_) => Ok(f64::NEG_INFINITY),
                    Err(e) if diverged(&e) => Ok(f64::NEG_INFINITY),
                    Err(e) => Err(e.context(format!(
                        "{} {} split {} (τ, λ) = {:?} fold {k}",
                        which.name(),
                        job.set,
                        job.split,
                        grid[c],
                    ))),
                }
            };
            let ranked = rank(&tau_of, job.folds.len(), screen, finalists, fold_score)?;
            let track = job.set == CONVERGENCE_SET && which != Which::Dropout;
            let final_fit = |c: usize| {
                train_and_score(
                    settings,
                    which,
                    job.set,
                    grid[c],
                    &job.train,
                    &job.test,
                    job.seed.fork(which.name()).fork("final"),
                    track,
                )
            };
            let (c, selection_ll, fitted, fallbacks) =
                first_that_trains(&ranked, final_fit, |c, how| {
                    bar.println(format!(
                        "{} {} split {}: the final fit at (τ, λ) = {:?} {how}; the next \
                         candidate is fitted",
                        which.name(),
                        job.set,
                        job.split,
                        grid[c],
                    ));
                })
                .with_context(|| format!("{} {} split {}", which.name(), job.set, job.split))?;
            let s = fitted.scores;
            let by_epoch = fitted.by_epoch;
            bar.inc(1);
            Ok(Row {
                dataset: job.set.name().into(),
                split: job.split,
                method: which.name().into(),
                tau: grid[c].0,
                lambda: grid[c].1,
                selection_log_lik: Some(selection_ll),
                test_rmse: s.rmse,
                test_log_lik: s.log_lik,
                test_log_lik_joint: s.log_lik_joint,
                test_rmse_by_epoch: by_epoch,
                fallbacks,
            })
        })
        .collect()
}

/// The first of the `ranked` candidates (best first, each with its selection log-likelihood)
/// whose final fit `fit(c)` trains, with how many better-ranked ones gave way to it: a fit that
/// blew up ([`blew_up`]) or diverged ([`diverged`]) is told to `gave_way(c, how)` and the next
/// candidate is fitted; any other error stops the search, and so does running out of
/// candidates.
fn first_that_trains(
    ranked: &[(usize, f64)],
    mut fit: impl FnMut(usize) -> Result<Fitted>,
    mut gave_way: impl FnMut(usize, &str),
) -> Result<(usize, f64, Fitted, usize)> {
    for (fallbacks, &(c, selection_ll)) in ranked.iter().enumerate() {
        let how = match fit(c) {
            Ok(fitted) if !blew_up(fitted.untrained, &fitted.losses) => {
                return Ok((c, selection_ll, fitted, fallbacks));
            }
            Ok(fitted) => format!(
                "blew up (training loss {:.3e}, untrained {:.3e})",
                fitted.losses.last().copied().unwrap_or(f64::NAN),
                fitted.untrained,
            ),
            Err(e) if diverged(&e) => format!("diverged ({e:#})"),
            Err(e) => return Err(e),
        };
        gave_way(c, &how);
    }
    bail!("the final fit blew up or diverged under every candidate")
}

/// Whether a fit failed by diverging (a non-finite variational mean, curvature or output, or a
/// non-finite MAP training loss for MC dropout), anywhere in the error's chain.
fn diverged(e: &anyhow::Error) -> bool {
    e.chain().any(bdl_methods::diverged)
}

#[cfg(test)]
mod tests {
    use anyhow::Result;
    use bdl_eval::stats::{PairedTTest, t_critical_99};
    use bdl_likelihoods::Predictive;
    use bdl_tensor::Seed;
    use candle_core::Device;
    use candle_core::Tensor;

    use super::claims::{SetComparison, comparable, comparable_per_point};
    use super::*;
    use crate::claim::Decision;

    #[test]
    fn k_folds_validate_on_every_row_once() {
        let folds = bdl_data::k_fold_indices(23, 5, Seed(3)).unwrap();
        assert_eq!(folds.len(), 5);
        let mut seen: Vec<usize> = folds.iter().flat_map(|(_, v)| v.clone()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..23).collect::<Vec<_>>());
        for (fit, val) in &folds {
            assert!(val.len() == 4 || val.len() == 5);
            assert_eq!(fit.len() + val.len(), 23);
            assert!(fit.iter().all(|i| !val.contains(i)));
        }
        assert_eq!(folds, bdl_data::k_fold_indices(23, 5, Seed(3)).unwrap());
    }

    /// Six candidates' validation scores on three folds (the racing tests' table): c2 is the best
    /// by the full mean but poor on fold 0, c1 and c3 tie, so do c0 and c5, and c4 diverged on
    /// fold 0.
    const RACE_SCORES: [[f64; 3]; 6] = [
        [-1.0, -3.0, -3.0],
        [-2.0, -1.0, -1.0],
        [-5.0, 2.0, 2.0],
        [-2.0, -1.0, -1.0],
        [f64::NEG_INFINITY, 0.0, 0.0],
        [-3.0, -2.0, -2.0],
    ];

    /// Racing over [`RACE_SCORES`]. c2 is the best by the full
    /// mean but poor on fold 0, c1 and c3 tie, so do c0 and c5, and c4 diverged on fold 0. With
    /// every candidate a finalist the ranking is plain cross-validation (c2 first, ties to the
    /// earlier candidate); with fold 0 screened and two finalists only c0 and c1 see folds 1
    /// and 2, come first by their full means, and the others follow by fold 0, c2 among them.
    #[test]
    fn racing_scores_only_the_finalists_on_every_fold_and_ranks_them_first() {
        let table = RACE_SCORES;
        let run = |screen, finalists| {
            let mut scored = Vec::new();
            let best = Finalists {
                overall: finalists,
                per_tau: 0,
            };
            let ranked = rank(&[0; 6], 3, screen, best, |c, k| {
                scored.push((c, k));
                Ok(table[c][k])
            })
            .unwrap();
            scored.sort_unstable();
            (ranked, scored)
        };
        let mean = |c: usize| table[c].iter().sum::<f64>() / 3.0;
        let (full, scored) = run(1, 6);
        let expected: Vec<(usize, f64)> = [2, 1, 3, 0, 5, 4].map(|c| (c, mean(c))).to_vec();
        assert_eq!(full, expected);
        assert_eq!(scored.len(), 18);
        assert_eq!(run(3, 2).0, expected, "all folds screened is plain CV too");

        let (raced, scored) = run(1, 2);
        let mut expected: Vec<(usize, f64)> = vec![(1, mean(1)), (0, mean(0))];
        expected.extend([3, 5, 2, 4].map(|c| (c, table[c][0])));
        assert_eq!(raced, expected);
        let mut wanted: Vec<(usize, usize)> = (0..6).map(|c| (c, 0)).collect();
        wanted.extend([(0, 1), (0, 2), (1, 1), (1, 2)]);
        wanted.sort_unstable();
        assert_eq!(scored, wanted, "6 · 1 + 2 · (3 − 1) scores");
        // A failing score stops the ranking.
        assert!(
            rank(&[0; 6], 3, 1, overall(2), |c, _| if c == 4 {
                Err(anyhow::anyhow!("no"))
            } else {
                Ok(0.0)
            })
            .is_err()
        );
    }

    /// The `n` best overall, none per stratum.
    fn overall(n: usize) -> Finalists {
        Finalists {
            overall: n,
            per_tau: 0,
        }
    }

    /// Racing by strata (τ values): with c0..c2 of one τ and c3..c5 of another, the best of
    /// each on fold 0 (c0, and c3 where a race of the best two overall takes c1 instead, by
    /// the earlier of equals) go on to every fold, and the others follow by fold 0; the best
    /// two overall and the best of each stratum together send c0, c1 and c3.
    #[test]
    fn racing_by_strata_sends_the_best_of_every_stratum_to_the_final_round() {
        let table = RACE_SCORES;
        let strata = [0, 0, 0, 1, 1, 1];
        let run = |overall: usize, per_tau: usize| {
            let mut scored = 0;
            let finalists = Finalists { overall, per_tau };
            let ranked = rank(&strata, 3, 1, finalists, |c, k| {
                scored += 1;
                Ok(table[c][k])
            })
            .unwrap();
            (ranked, scored)
        };
        let mean = |c: usize| table[c].iter().sum::<f64>() / 3.0;
        let (ranked, scored) = run(0, 1);
        let mut expected: Vec<(usize, f64)> = vec![(3, mean(3)), (0, mean(0))];
        expected.extend([1, 5, 2, 4].map(|c| (c, table[c][0])));
        assert_eq!(ranked, expected);
        assert_eq!(scored, 6 + 2 * 2, "6 · 1 + 2 · (3 − 1) scores");
        let overall_two = run(2, 0).0;
        assert_eq!(
            [overall_two[0].0, overall_two[1].0],
            [1, 0],
            "the best two overall leave the second stratum out"
        );
        let (union, scored) = run(2, 1);
        let mut expected: Vec<(usize, f64)> = [1, 3, 0].map(|c| (c, mean(c))).to_vec();
        expected.extend([5, 2, 4].map(|c| (c, table[c][0])));
        assert_eq!(union, expected);
        assert_eq!(scored, 6 + 3 * 2);
        assert_eq!(
            Finalists {
                overall: 2,
                per_tau: 1
            }
            .at_most(2, 3),
            4
        );
        assert_eq!(
            Finalists {
                overall: 5,
                per_tau: 1
            }
            .at_most(5, 5),
            10
        );
        assert_eq!(overall(usize::MAX).at_most(5, 5), 25);
    }

    /// The final fit falls back past a candidate that diverged and one that blew up, telling
    /// each, to the first that trains; an error that is not a divergence stops it at once, and
    /// so does a ranking whose every candidate fails.
    #[test]
    fn a_final_fit_that_diverged_or_blew_up_gives_way_to_the_next_candidate() {
        let fitted = |last_loss: f64| Fitted {
            scores: Scores {
                rmse: last_loss,
                log_lik: 0.0,
                log_lik_joint: 0.0,
            },
            by_epoch: Vec::new(),
            losses: vec![last_loss],
            untrained: 1.0,
        };
        let diverging = || {
            anyhow::Error::from(bdl_variational::Error::Diverged {
                method: "Vadam",
                step: 7,
                what: "mean",
            })
        };
        let ranked = [(4, -1.0), (2, -1.5), (0, -2.0), (3, -2.5)];
        let outcome = |fit: &dyn Fn(usize) -> Result<Fitted>| {
            let mut told = Vec::new();
            let chosen = first_that_trains(&ranked, fit, |c, how| told.push((c, how.to_owned())));
            (chosen, told)
        };

        let (chosen, told) = outcome(&|c| match c {
            4 => Err(diverging()),
            2 => Ok(fitted(50.0)),
            _ => Ok(fitted(0.5)),
        });
        let (c, selection_ll, fit, fallbacks) = chosen.unwrap();
        assert_eq!(
            (c, selection_ll, fit.scores.rmse, fallbacks),
            (0, -2.0, 0.5, 2)
        );
        assert_eq!(told.len(), 2);
        assert_eq!(told[0].0, 4);
        assert!(
            told[0].1.starts_with("diverged (Vadam diverged at step 7"),
            "{}",
            told[0].1
        );
        assert_eq!(told[1].0, 2);
        assert!(
            told[1].1.starts_with("blew up (training loss 5.000e1"),
            "{}",
            told[1].1
        );

        let (chosen, told) = outcome(&|c| match c {
            4 => Ok(fitted(f64::NAN)),
            _ => Err(anyhow::anyhow!("a data file went missing")),
        });
        let e = chosen.err().expect("a data error stops the search");
        assert!(format!("{e:#}").contains("went missing"));
        assert_eq!(told.len(), 1, "the search stopped at the first other error");

        let (chosen, told) = outcome(&|_| Err(diverging()));
        let e = chosen.err().expect("no candidate trained");
        assert!(e.to_string().contains("under every candidate"));
        assert_eq!(told.len(), 4);
    }

    /// Ending more than ten times above the untrained network's loss in size (or at NaN) is
    /// blowing up; ending anywhere below that is not, whatever the path (a loss that rose after
    /// the first epoch, one a little above the untrained loss), nor is an empty history.
    #[test]
    fn a_fit_blew_up_when_it_ends_ten_times_above_the_untrained_loss() {
        assert!(blew_up(74.2, &[591.3, 1551.9, 3.2e11, 2.8e11]));
        assert!(blew_up(1.0, &[0.5, f64::NAN]));
        assert!(blew_up(1.0, &[0.5, 10.5]));
        assert!(!blew_up(1.0, &[0.3, 0.35, 1.2]));
        assert!(!blew_up(1.0, &[0.3, 10.0]));
        assert!(!blew_up(-2.0, &[-3.0, 19.0]));
        assert!(!blew_up(1.0, &[]));
    }

    /// A unit saved before the fallback rule (no `fallbacks` field) reads back with none, and
    /// a row without fallbacks is written exactly as before, so such units stay valid.
    #[test]
    fn rows_without_fallbacks_keep_their_old_form() {
        let old = r#"{"dataset":"yacht","split":0,"method":"IVON","tau":1.0,"lambda":2.0,"selection_log_lik":-1.0,"test_rmse":1.5,"test_log_lik":-2.0,"test_log_lik_joint":-2.5}"#;
        let row: Row = serde_json::from_str(old).unwrap();
        assert_eq!(row.fallbacks, 0);
        assert_eq!(serde_json::to_string(&row).unwrap(), old);
        let fell = Row {
            fallbacks: 2,
            ..row
        };
        assert!(
            serde_json::to_string(&fell)
                .unwrap()
                .ends_with(r#","fallbacks":2}"#)
        );
        assert_eq!(
            fallback_summary(&[fell]),
            "final fits that did: IVON 1 (yacht 0 (2 down))"
        );
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

    /// Paired differences (1, 1 + a, 1 − a) over three splits: t = √3 / a against the df = 2
    /// critical value 9.925, so a = 0.18 is comparable and a = 0.17 is not; the test is on the
    /// RMSE and the joint LL, the per-point LL has its own.
    #[test]
    fn comparability_is_the_paired_t_test_at_one_percent() {
        assert_eq!(t_critical_99(2), 9.925);
        assert_eq!(t_critical_99(19), 2.861);
        assert_eq!(t_critical_99(200), 2.576);
        let shifted = |a: f64| PairedTTest::of(&[1.0, 1.0 + a, 1.0 - a], &[0.0; 3]);
        let equal = PairedTTest::of(&[0.0; 3], &[0.0; 3]);
        let comparison = |a: f64| SetComparison {
            set: "boston",
            rmse: shifted(a),
            ll: equal,
            ll_joint: equal,
            dropout: Decision::Fails,
            mean_rmse: [0.0; 3],
            mean_ll: [0.0; 3],
        };
        assert!(comparable(&comparison(0.18)) && comparable_per_point(&comparison(0.18)));
        assert!(!comparable(&comparison(0.17)));
        // The joint LL decides Table 1's verdict, the per-point one only the other reading.
        let joint_differs = SetComparison {
            ll_joint: shifted(0.17),
            ..comparison(0.18)
        };
        assert!(!comparable(&joint_differs) && comparable_per_point(&joint_differs));
        // One split: no test, so not comparable.
        let single = SetComparison {
            rmse: PairedTTest::of(&[1.0], &[1.0]),
            ..comparison(0.18)
        };
        assert!(!comparable(&single) && !comparable_per_point(&single));
    }

    /// Three data sets of three splits: Vadam ≈ BBVI on boston and concrete but not energy
    /// (holds, 2 of 3); MC dropout better on energy only (fails, 1 of 3); on boston VOGN and
    /// Vadam reach the target 2.2 = 1.1 · 2.0 at epoch 2, BBVI at epoch 4 (holds).
    #[test]
    fn claims_follow_the_rows() {
        let row = |set: &str, split, which: Which, rmse, ll, curve: &[f64]| Row {
            dataset: set.into(),
            split,
            method: which.name().into(),
            tau: 1.0,
            lambda: 1.0,
            selection_log_lik: Some(-1.0),
            test_rmse: rmse,
            test_log_lik: ll,
            test_log_lik_joint: ll,
            test_rmse_by_epoch: if set == "boston" && which != Which::Dropout {
                curve.to_vec()
            } else {
                Vec::new()
            },
            fallbacks: 0,
        };
        let mut rows = Vec::new();
        for (set, offset) in [("boston", 0.0), ("concrete", 3.0)] {
            for split in 0..3 {
                let noise = [-0.1, 0.2, -0.1][split];
                rows.push(row(
                    set,
                    split,
                    Which::Vadam,
                    offset + 3.0 + noise,
                    -2.5 + noise,
                    &[6.0, 2.1, 2.0, 2.0],
                ));
                rows.push(row(
                    set,
                    split,
                    Which::Bbvi,
                    offset + 3.0,
                    -2.5,
                    &[8.0, 6.0, 3.0, 2.1],
                ));
                rows.push(row(
                    set,
                    split,
                    Which::Vogn,
                    offset + 3.0,
                    -2.5,
                    &[5.0, 2.0, 2.0, 2.0],
                ));
                rows.push(row(set, split, Which::Dropout, offset + 3.5, -2.7, &[]));
            }
        }
        for split in 0..3 {
            let noise = [0.0, -0.1, 0.1][split];
            rows.push(row("energy", split, Which::Vadam, 1.0 + noise, -1.5, &[]));
            rows.push(row("energy", split, Which::Bbvi, 2.0, -2.0 + noise, &[]));
            rows.push(row("energy", split, Which::Vogn, 1.0, -1.5, &[]));
            rows.push(row("energy", split, Which::Dropout, 0.5, -1.0, &[]));
        }
        let claims = claims(&rows);
        let verdicts: Vec<Decision> = claims.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts,
            [Decision::Holds, Decision::Fails, Decision::Holds]
        );
        assert!(
            claims[0]
                .ours
                .starts_with("comparable on 2 of 3 (boston, concrete)"),
            "{}",
            claims[0].ours
        );
        assert_eq!(
            claims[1].ours,
            "better on 1 of 3 (energy); undecided on 0 of 3"
        );
        assert_eq!(
            claims[2].ours,
            "epochs to test RMSE ≤ 2.20 on boston: VOGN 2, Vadam 2, BBVI 4"
        );
        // Without the convergence curves there is no convergence claim.
        rows.iter_mut().for_each(|r| r.test_rmse_by_epoch.clear());
        assert_eq!(super::claims(&rows).len(), 2);
    }
}
