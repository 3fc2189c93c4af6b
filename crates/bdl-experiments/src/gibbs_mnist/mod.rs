//! `gibbs-mnist`: minibatch blocked Gibbs for MLP(784, 10, 10, 10, 10) on MNIST at several
//! batch sizes (Papamarkou 2023, the MNIST experiments).
//!
//! Protocol (ALGORITHMS.md §B): pixels standardised with one mean and standard deviation over
//! all training pixels; sigmoid hidden units, softmax output (categorical likelihood), prior
//! N(0, 10 I), θ₀ drawn from the prior; class-stratified minibatches, one minibatch and one sweep
//! per iteration; per-layer proposal variances falling with depth, from the paper's table; one
//! chain per batch size. Reported: acceptance per layer after the burn-in; the test accuracy of
//! the Bayesian marginal over the last iterations, and over the last K iterations for several K;
//! the accuracy of the chain stopped at several points (the chain-length effect); a trace of the
//! log-target; from the traces, each layer's weight spread along the chain (Fig. 5: it shrinks
//! with depth) and the log-target's variability from one record to the next (Fig. 6: it falls
//! with batch size). Besides: one chain of layer blocks (LBG) at batch 600 with the node-block
//! chain's variances, where a 7850-parameter first-layer block meets the same proposal scale;
//! and the control of the falling variances: the main chain of MNIST with every layer at the
//! first layer's variance (the paper reports the output layer's acceptance vanishing there), a
//! unit with its own settings so that the nine chains saved before it stay valid.
//!
//! The paper profile is the paper's: the full 60,000 / 10,000 images, batch sizes 600, 1800,
//! 3000 and 4200 with the table's variances, 110,000 iterations with the first 10,000 discarded,
//! first-layer nodes split into 10 sub-blocks (the paper's text; `Blocking::FinerNode`).
//!
//! The quick profile runs on the shipped fixture (the first 2000 training and 1000 test images),
//! so the paper's batch sizes do not fit: it uses 200, 600 and 1000 with v₁ = 30 / B (the
//! paper's 600 row exactly, and its other rows to within a factor 1.4), v₂ = v₃ = v₁ / 100 and
//! v₄ = v₁ / 1000 as in every row of the table; whole node blocks; 3000 iterations with the first
//! 1000 discarded and predictions over the last 1000. The smoke profile only shows that this
//! runs: the first 300 training and 200 test images of the fixture, batch sizes 50 and 100 with
//! the same rule for the variances, 50 iterations.
//!
//! Each run's wall time (its chain alone on a core) is in its row of `results.json`, with the
//! iteration the chain was resumed at. Each run is a unit (`units`): its row and its traces
//! (thinned to 2000 points) are saved as soon as its chain is sampled and summarised, so the
//! paper profile's ten chains can be sampled in separate sessions or on separate machines
//! (`--shard K/N`, then `--merge`) and only the small unit files carried between them.

mod claims;
mod report;
mod settings;

use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::mnist::{self, Collection, Part};
use bdl_data::transforms::Transform;
use bdl_data::{Dataset, Standardizer};
use bdl_inference::{Valid, Validate};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    BatchMode, Blocking, Chain, ChainConfig, ChainWindow, GibbsConfig, Keep, Precision,
    ProposalVariance,
};
use bdl_models::{Activation, Mlp, MlpSpec, Model as _, Network};
use bdl_tensor::Seed;
use serde::{Deserialize, Serialize};

use self::report::report;
use self::settings::Settings;
use crate::concurrency::side_by_side;
use crate::gibbs_xor::{ChainProgress, accuracy, summarise};
use crate::units::Units;
use crate::{Context, Entry, Outcome, Profile};

const WIDTHS: &[usize] = &[784, 10, 10, 10, 10];
const LIKELIHOOD: Likelihood = Likelihood::Categorical { classes: 10 };
/// A layer's acceptance below this counts as collapsed.
const COLLAPSED: f64 = 0.01;
/// Every layer's acceptance at least this counts as non-vanishing (the weaker of the paper's
/// two XOR chain filters).
const NON_VANISHING: f64 = 0.05;

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "gibbs-mnist",
    reproduces: "Papamarkou (2023), MNIST: minibatch blocked Gibbs for MLP(784, 10, 10, 10, 10) at \
     several batch sizes, chain length, node against layer blocks",
    run,
    shards: true,
    lists_methods: false,
    profiles: &Profile::ALL,
    any_device: false,
};

/// An accuracy with the iteration count it refers to.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct AccuracyAt {
    iterations: u64,
    accuracy: f64,
}

/// One batch size's chain, in `results.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Row {
    /// The image collection.
    data: Collection,
    batch_size: usize,
    /// Per layer.
    proposal_variances: Vec<f64>,
    blocking: Blocking,
    iterations: u64,
    burn_in: u64,
    /// Acceptance rate of every layer after the burn-in.
    layer_acceptance: Vec<f64>,
    min_block_acceptance: f64,
    /// Acceptance rate of every node after the burn-in, `[layer][node]` (sub-blocks summed).
    node_acceptance: Vec<Vec<f64>>,
    /// Effective sample sizes of the recorded draws after the burn-in, per layer (Geyer's
    /// initial monotone sequence estimator).
    ess: Vec<bdl_mcmc::LayerEss>,
    /// Test accuracy of the Bayesian marginal over the draws of the last `prediction_window`
    /// iterations (one draw recorded every `record_every`).
    test_accuracy: f64,
    prediction_window: u64,
    record_every: u64,
    /// The same over the last K iterations (`iterations` = K).
    accuracy_last: Vec<AccuracyAt>,
    /// The chain stopped at t (`iterations` = t): the draws of [t − window, t).
    accuracy_stopped_at: Vec<AccuracyAt>,
    /// ℓ̂ + log p after the last iteration (on its minibatch).
    final_log_target: f64,
    /// The chain's wall time in seconds (alone on its core), and per iteration sampled.
    wall_s: f64,
    ms_per_iteration: f64,
    /// The iteration the chain was resumed at (0: sampled afresh); the wall time covers only
    /// the iterations after it.
    resumed_at: u64,
    /// The control chain at a common variance (absent from rows saved before it existed).
    #[serde(default)]
    common_variance: bool,
}

/// The training and test images of `collection`, the training images first transformed by
/// `augment` when given (each image once, from the stream `seed.index(image)`), then both
/// standardised with the training images' mean and standard deviation (the standardiser is
/// returned third).
fn load(
    ctx: &Context,
    settings: &Settings,
    collection: Collection,
    augment: Option<(&[Transform], Seed)>,
) -> Result<(Dataset, Dataset, Standardizer)> {
    let first = |data: Dataset, n: Option<usize>| -> Result<Dataset> {
        Ok(match n {
            Some(n) if n < data.len() => data.select(&(0..n).collect::<Vec<_>>())?,
            _ => data,
        })
    };
    let name = collection.folder();
    let train =
        mnist::load(&ctx.data, collection, Part::Train).with_context(|| format!("{name} train"))?;
    let test =
        mnist::load(&ctx.data, collection, Part::Test).with_context(|| format!("{name} test"))?;
    let (mut train, test) = (
        first(train, settings.train_subset)?,
        first(test, settings.test_subset)?,
    );
    if let Some((transforms, seed)) = augment {
        train = train.transformed(transforms, seed)?;
    }
    let scale = Standardizer::fit_global(train.x())?;
    Ok((
        train.with_x(scale.transform(train.x())?)?,
        test.with_x(scale.transform(test.x())?)?,
        scale,
    ))
}

/// How many test images the chains of `collection` are tested on at the context's profile.
pub(crate) fn test_images(ctx: &Context, collection: Collection) -> Result<usize> {
    let settings = Settings::of(ctx.profile);
    let test = mnist::load(&ctx.data, collection, Part::Test)
        .with_context(|| format!("{} test", collection.folder()))?;
    Ok(settings
        .test_subset
        .map_or(test.len(), |n| n.min(test.len())))
}

/// The configuration of the chain at `batch` with `variances` and `blocking`.
fn chain_config(
    settings: &Settings,
    batch: usize,
    variances: [f64; 4],
    blocking: Blocking,
) -> Result<Valid<ChainConfig>> {
    let gibbs = GibbsConfig::new(
        blocking,
        ProposalVariance::PerLayer(variances.to_vec()),
        BatchMode::Minibatch(batch),
    );
    Ok(ChainConfig {
        iterations: settings.iterations,
        chunk_len: settings.chunk_len,
        record_every: settings.record_every,
        precision: Precision::F32,
        // The same seed at every batch size and on both collections: the same θ₀.
        seed: Seed(2023).fork("gibbs-mnist"),
        ..ChainConfig::new(gibbs)
    }
    .check()?)
}

/// The folder of a chain on `collection` at `batch` under `chains_dir`.
fn chain_folder(
    chains_dir: &std::path::Path,
    collection: Collection,
    batch: usize,
    config: &ChainConfig,
) -> std::path::PathBuf {
    chains_dir.join(format!(
        "{}_batch-{batch}_{}",
        collection.folder(),
        config.gibbs.blocking.slug()
    ))
}

/// The profile's main chain on one collection (the paper's best batch size with the profile's
/// blocking), as `gibbs-uq` analyses it.
pub(crate) struct MainChain {
    pub(crate) chain: Chain,
    pub(crate) test: Dataset,
    /// The standardiser of the chain's inputs (fitted on its training images): new raw images
    /// go through it before the chain's predictive.
    pub(crate) scale: Standardizer,
    /// The prediction window: the draws of the last this many iterations.
    pub(crate) window: u64,
    /// Acceptance rates count from this iteration on.
    pub(crate) burn_in: u64,
    pub(crate) batch: usize,
    pub(crate) iterations: u64,
    /// The wall time of this call (sampling what was missing), and the iteration the chain was
    /// resumed at (its length if it was complete).
    pub(crate) wall_s: f64,
    pub(crate) resumed_at: u64,
}

/// The main chain of `gibbs-mnist` on `collection` in the profile of `ctx`: without
/// `augment`, the very chain `gibbs-mnist` samples (same configuration, in its folder under the
/// same output root); with `(name, transforms)`, the same chain on the training images
/// transformed, in the caller's folder `ctx.dir/chains/name`. Sampled or completed here when
/// missing or short.
pub(crate) fn main_chain(
    ctx: &Context,
    collection: Collection,
    augment: Option<(&str, &[Transform])>,
) -> Result<MainChain> {
    let settings = Settings::of(ctx.profile);
    let folder = augment.map(|(name, _)| name);
    let augment = augment.map(|(_, t)| (t, Seed(2023).fork("augment")));
    let (train, test, scale) = load(ctx, &settings, collection, augment)?;
    let mlp = Mlp::new(MlpSpec::new(WIDTHS, Activation::Sigmoid))?;
    let batch = settings.first_batch;
    let &(_, variances) = settings
        .runs
        .iter()
        .find(|(b, _)| *b == batch)
        .context("the first batch size is one of the runs")?;
    let config = chain_config(&settings, batch, variances, settings.blocking.clone())?;
    let chains_dir = if let Some(name) = folder {
        ctx.dir.join("chains").join(name)
    } else {
        ctx.folder_of(EXPERIMENT.name).join("chains")
    };
    let dir = chain_folder(&chains_dir, collection, batch, &config);
    let bar = ctx.bar(settings.iterations, "iterations");
    let progress = ChainProgress::new(&bar, 1);
    let start = Instant::now();
    let report = bdl_mcmc::run_chain(&mlp, LIKELIHOOD, &train, &config, &dir, 0, &|r| {
        progress.report(r)
    })
    .with_context(|| format!("sampling {} at batch size {batch}", collection.folder()))?;
    bar.finish_and_clear();
    Ok(MainChain {
        chain: Chain::open(&bdl_mcmc::chain_dir(&dir, 0))?,
        test,
        scale,
        window: settings.window,
        burn_in: settings.burn_in,
        batch,
        iterations: settings.iterations,
        wall_s: start.elapsed().as_secs_f64(),
        resumed_at: report.resumed_at,
    })
}

/// One chain of the experiment: a collection (index into the loaded data), a batch size with
/// its variances, and the blocking.
struct Run {
    data: usize,
    batch: usize,
    variances: [f64; 4],
    config: Valid<ChainConfig>,
    /// The control chain: every layer at the first layer's variance.
    common: bool,
}

/// The settings of the control chain's unit (its own, so that the chains saved before it stay
/// valid): the main chain of the first collection with every layer at the first layer's
/// proposal variance, where the paper reports the output layer's acceptance vanishing.
#[derive(Debug, Serialize)]
struct CommonSettings {
    batch: usize,
    variance: f64,
}

/// Runs the experiment.
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let data: Vec<(Collection, Dataset, Dataset)> = settings
        .collections
        .iter()
        .map(|&c| {
            let (train, test, _) = load(ctx, &settings, c, None)?;
            Ok((c, train, test))
        })
        .collect::<Result<_>>()?;
    let mlp = Mlp::new(MlpSpec::new(WIDTHS, Activation::Sigmoid))?;
    let chains_dir = ctx.dir.join("chains");
    // As in gibbs-xor: the smoke and quick profiles sample afresh (their wall times are
    // measured), the paper profile resumes.
    if ctx.profile != Profile::Paper && chains_dir.exists() {
        std::fs::remove_dir_all(&chains_dir)
            .with_context(|| format!("removing {}", chains_dir.display()))?;
    }
    let (runs, common) = plan(&settings, data.len())?;
    let dir_of = |run: &Run| {
        let folder = chain_folder(&chains_dir, data[run.data].0, run.batch, &run.config);
        match (run.common, folder.file_name()) {
            (true, Some(name)) => {
                folder.with_file_name(format!("{}_common-variance", name.to_string_lossy()))
            }
            _ => folder,
        }
    };

    // One chain per run, each on its own thread: the paper's best batch size first, then the
    // largest; a run's wall time is its own as long as there are no more workers than cores
    // (`side_by_side`). Each run is a unit (its row and traces): the paper profile saves it as
    // it finishes and a rerun reads it back; a shard takes its share.
    let units = Units::new(ctx, &settings)?;
    let common_units = Units::new(ctx, &common)?;
    let key = |run: &Run| {
        format!(
            "{}-batch-{}-{}{}",
            data[run.data].0.folder(),
            run.batch,
            run.config.gibbs.blocking.slug(),
            if run.common { "-common-variance" } else { "" }
        )
    };
    let mut mine = units.share(main_first(&runs, &settings));
    mine.extend(common_units.share(vec![runs.len() - 1]));
    let bar = ctx.bar(settings.iterations * mine.len() as u64, "iterations");
    bar.set_message(format!("{} chains", mine.len()));
    let done = side_by_side(&mine, |&i| -> Result<(usize, (Row, Traces))> {
        let run = &runs[i];
        let (collection, train, test) = &data[run.data];
        let units = if run.common { &common_units } else { &units };
        let unit = units.get_or_run(&key(run), || {
            let progress = ChainProgress::new(&bar, 1);
            let start = Instant::now();
            let report = bdl_mcmc::run_chain(
                &mlp,
                LIKELIHOOD,
                train,
                &run.config,
                &dir_of(run),
                0,
                &|r| progress.report(r),
            )
            .with_context(|| {
                format!(
                    "sampling {} at batch size {}",
                    collection.folder(),
                    run.batch
                )
            })?;
            progress.finish(run.config.iterations);
            let wall_s = start.elapsed().as_secs_f64();
            let chain = Chain::open(&bdl_mcmc::chain_dir(&dir_of(run), 0))?;
            let (row, traces) = summarise_chain(&chain, &mlp, &settings, test, run, *collection)?;
            let sampled = settings.iterations.saturating_sub(report.resumed_at);
            let row = Row {
                wall_s,
                ms_per_iteration: 1e3 * wall_s / sampled.max(1) as f64,
                resumed_at: report.resumed_at,
                ..row
            };
            Ok((row, traces))
        })?;
        Ok((i, unit))
    })?;
    bar.finish_and_clear();
    if let Some(shard) =
        units.shard_outcome(mine.iter().map(|&i| key(&runs[i])).collect(), runs.len())
    {
        return Ok(shard);
    }
    let mut done = done;
    done.sort_by_key(|(i, _)| *i);
    let (rows, traces): (Vec<Row>, Vec<Traces>) = done.into_iter().map(|(_, unit)| unit).unzip();
    report(ctx, &data, &settings, &rows, &traces)
}

/// The runs but the control in sampling order: the paper's best batch size first, then the
/// largest.
fn main_first(runs: &[Run], settings: &Settings) -> Vec<usize> {
    let mut order: Vec<usize> = (0..runs.len()).filter(|&i| !runs[i].common).collect();
    order.sort_by_key(|&i| {
        let r = &runs[i];
        (
            r.batch != settings.first_batch,
            std::cmp::Reverse(r.batch),
            r.data,
        )
    });
    order
}

/// The chains of a run: every batch size and its proposal variances on every collection, layer
/// blocks (LBG) at one of them on the first collection, and last the common-variance control
/// on the first collection (with its settings, for its units).
fn plan(settings: &Settings, collections: usize) -> Result<(Vec<Run>, CommonSettings)> {
    // Every run on every collection; layer blocks (LBG) on the first collection only.
    let mut plan: Vec<(usize, usize, [f64; 4], Blocking)> = Vec::new();
    for d in 0..collections {
        for &(batch, variances) in &settings.runs {
            plan.push((d, batch, variances, settings.blocking.clone()));
        }
    }
    let (batch, variances) = settings.runs[settings.layer_blocks];
    plan.push((0, batch, variances, Blocking::Layer));
    let mut runs: Vec<Run> = plan
        .into_iter()
        .map(|(data, batch, variances, blocking)| {
            Ok(Run {
                data,
                batch,
                variances,
                config: chain_config(settings, batch, variances, blocking)?,
                common: false,
            })
        })
        .collect::<Result<_>>()?;
    let common = CommonSettings {
        batch: settings.first_batch,
        variance: settings
            .runs
            .iter()
            .find(|(b, _)| *b == settings.first_batch)
            .context("the first batch size is one of the runs")?
            .1[0],
    };
    let variances = [common.variance; 4];
    runs.push(Run {
        data: 0,
        batch: common.batch,
        variances,
        config: chain_config(settings, common.batch, variances, settings.blocking.clone())?,
        common: true,
    });
    Ok((runs, common))
}

/// What a chain's figure panels draw besides its row (each trace thinned to at most
/// [`TRACE_POINTS`] points, evenly).
#[derive(Serialize, Deserialize)]
struct Traces {
    /// The log-target at every recorded iteration.
    log_target: (Vec<u64>, Vec<f64>),
    /// Recorded iterations after the burn-in, and the first weight of each layer (node 0,
    /// input 0) at each.
    iterations: Vec<u64>,
    weights: Vec<Vec<f64>>,
}

/// The row of one finished chain (wall time and resume point left at zero) and its traces.
fn summarise_chain(
    chain: &Chain,
    mlp: &Mlp,
    settings: &Settings,
    test: &Dataset,
    run: &Run,
    collection: Collection,
) -> Result<(Row, Traces)> {
    let last = |k: u64| Keep {
        last: Some(k),
        ..Keep::default()
    };
    let main = summarise(chain, settings.burn_in, &last(settings.window), test)?;
    let accuracy_last = settings
        .last_k
        .iter()
        .map(|&k| {
            Ok(AccuracyAt {
                iterations: k,
                accuracy: accuracy(&chain.window(&last(k))?, test)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let accuracy_stopped_at = settings
        .stops
        .iter()
        .map(|&t| {
            let draws = chain.draws(&Keep {
                burn_in: t.saturating_sub(settings.window),
                ..Keep::default()
            })?;
            let n = draws.iterations.iter().filter(|&&i| i < t).count();
            let window = ChainWindow::new(
                Network::from(mlp.clone()),
                LIKELIHOOD,
                draws.params.narrow(0, 0, n)?,
                draws.iterations[..n].to_vec(),
            )?;
            Ok(AccuracyAt {
                iterations: t,
                accuracy: accuracy(&window, test)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let kept = chain.draws(&Keep {
        burn_in: settings.burn_in,
        ..Keep::default()
    })?;
    let draws = bdl_tensor::to_f64_vec(&kept.params)?;
    let ess = bdl_mcmc::ess_by_layer(&draws, mlp.layout());
    let d = mlp.layout().len();
    let segments = mlp.layout().segments();
    let weights: Vec<Vec<f64>> = mlp
        .layout()
        .layers()
        .iter()
        .map(|layer| {
            let at = segments[layer.weight].offset;
            draws.chunks_exact(d).map(|theta| theta[at]).collect()
        })
        .collect();
    let trace = chain.log_target_trace()?;
    let row = Row {
        data: collection,
        batch_size: run.batch,
        proposal_variances: run.variances.to_vec(),
        blocking: run.config.gibbs.blocking.clone(),
        iterations: settings.iterations,
        burn_in: settings.burn_in,
        layer_acceptance: main.layer_acceptance,
        min_block_acceptance: main.min_block_acceptance,
        node_acceptance: main.node_acceptance,
        ess,
        test_accuracy: main.accuracy,
        prediction_window: settings.window,
        record_every: settings.record_every,
        accuracy_last,
        accuracy_stopped_at,
        final_log_target: trace.1.last().copied().unwrap_or(f64::NAN),
        wall_s: 0.0,
        ms_per_iteration: 0.0,
        resumed_at: 0,
        common_variance: run.common,
    };
    let traces = Traces {
        log_target: (thin(&trace.0), thin(&trace.1)),
        iterations: thin(&kept.iterations),
        weights: weights.iter().map(|w| thin(w)).collect(),
    };
    Ok((row, traces))
}

/// The most points of a trace in a figure (and in a saved unit).
const TRACE_POINTS: usize = 2000;

/// Every k-th of `values`, the smallest k that leaves at most [`TRACE_POINTS`], first included.
fn thin<T: Copy>(values: &[T]) -> Vec<T> {
    let step = values.len().div_ceil(TRACE_POINTS).max(1);
    values.iter().step_by(step).copied().collect()
}

/// The positions of the node-block (or finer node-block) rows, by batch size.
fn main_order(rows: &[&Row]) -> Vec<usize> {
    let mut main: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].blocking != Blocking::Layer && !rows[i].common_variance)
        .collect();
    main.sort_by_key(|&i| rows[i].batch_size);
    main
}

/// The node-block (or finer node-block) rows, by batch size.
fn main_rows<'a>(rows: &[&'a Row]) -> Vec<&'a Row> {
    main_order(rows).into_iter().map(|i| rows[i]).collect()
}

fn first_stop(r: &Row) -> f64 {
    r.accuracy_stopped_at
        .first()
        .map_or(f64::NAN, |a| a.accuracy)
}

fn last_stop(r: &Row) -> f64 {
    r.accuracy_stopped_at
        .last()
        .map_or(f64::NAN, |a| a.accuracy)
}

fn batches(rows: &[&Row]) -> String {
    rows.iter()
        .map(|r| r.batch_size.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::claims::{claims, log_target_variability, per_example_variability, trace_claims};
    use super::settings::scaled_variances;
    use super::*;
    use crate::claim::Decision::{self, Fails, Holds, Undecided};

    #[test]
    fn traces_are_thinned_evenly_to_at_most_the_figure_points() {
        let long: Vec<u64> = (0..4500).collect();
        let thinned = thin(&long);
        // Every third point (two would leave 2250 > 2000), the first included.
        assert_eq!(thinned.len(), 1500);
        assert_eq!(&thinned[..3], &[0, 3, 6]);
        let short: Vec<u64> = (0..10).collect();
        assert_eq!(thin(&short), short);
        assert_eq!(thin::<u64>(&[]), Vec::<u64>::new());
    }

    /// A row at `batch` with `blocking`, per-layer acceptances, the lowest block acceptance,
    /// the test accuracy and the accuracies of the chain stopped at 100 and 200.
    fn row(
        batch: usize,
        blocking: Blocking,
        layers: [f64; 4],
        min_block: f64,
        accuracy: f64,
        stopped: [f64; 2],
    ) -> Row {
        Row {
            data: Collection::Mnist,
            batch_size: batch,
            proposal_variances: scaled_variances(batch).to_vec(),
            blocking,
            iterations: 200,
            burn_in: 50,
            layer_acceptance: layers.to_vec(),
            min_block_acceptance: min_block,
            node_acceptance: Vec::new(),
            ess: Vec::new(),
            test_accuracy: accuracy,
            prediction_window: 100,
            record_every: 10,
            accuracy_last: Vec::new(),
            accuracy_stopped_at: [100, 200]
                .into_iter()
                .zip(stopped)
                .map(|(iterations, accuracy)| AccuracyAt {
                    iterations,
                    accuracy,
                })
                .collect(),
            final_log_target: -1.0,
            wall_s: 1.0,
            ms_per_iteration: 5.0,
            resumed_at: 0,
            common_variance: false,
        }
    }

    /// Accuracy rises over the batch sizes without a collapsed layer (the largest batch
    /// collapses, so its lower accuracy does not count) and does not fall again at the largest
    /// live one, every chain improves with length, the
    /// lowest layer acceptance vanishes at the collapsed batch, and layer blocks collapse where
    /// node blocks do not.
    #[test]
    fn claims_follow_the_rows() {
        let rows = [
            row(
                200,
                Blocking::Node,
                [0.3, 0.4, 0.5, 0.6],
                0.1,
                0.80,
                [0.7, 0.8],
            ),
            row(
                600,
                Blocking::Node,
                [0.2, 0.3, 0.4, 0.5],
                0.08,
                0.85,
                [0.8, 0.85],
            ),
            row(
                1000,
                Blocking::Node,
                [0.005, 0.3, 0.4, 0.5],
                0.0,
                0.70,
                [0.6, 0.7],
            ),
            row(
                600,
                Blocking::Layer,
                [0.0, 0.2, 0.3, 0.4],
                0.0,
                0.5,
                [0.4, 0.5],
            ),
        ];
        assert_eq!(
            verdicts(&rows, 10_000),
            [Holds, Fails, Holds, Fails, Holds, Holds],
            "10,000 test images: the differences are many standard errors"
        );
        assert_eq!(
            verdicts(&rows, 100),
            [Undecided, Undecided, Undecided, Fails, Holds, Holds],
            "100 test images: a 0.05 difference is within one standard error"
        );
    }

    fn verdicts(rows: &[Row], n_test: usize) -> Vec<Decision> {
        claims(&rows.iter().collect::<Vec<_>>(), n_test)
            .iter()
            .map(|c| c.verdict)
            .collect()
    }

    /// Accuracy falls between two live batch sizes (so it falls again at the largest), one chain
    /// gets worse with length, every
    /// layer stays above 0.05, and the layer blocks do not collapse.
    #[test]
    fn claims_fail_on_contrary_rows() {
        let rows = [
            row(
                200,
                Blocking::Node,
                [0.3, 0.4, 0.5, 0.6],
                0.1,
                0.85,
                [0.8, 0.7],
            ),
            row(
                600,
                Blocking::Node,
                [0.2, 0.3, 0.4, 0.5],
                0.08,
                0.80,
                [0.8, 0.85],
            ),
            row(
                600,
                Blocking::Layer,
                [0.02, 0.2, 0.3, 0.4],
                0.02,
                0.5,
                [0.4, 0.5],
            ),
        ];
        assert_eq!(
            verdicts(&rows, 10_000),
            [Fails, Holds, Fails, Holds, Holds, Fails]
        );
    }

    /// Traces of `n` recorded iterations after a burn-in of 50: layer l's weight alternates
    /// ±`spreads[l]` (standard deviation ≈ the spread), the log-target alternates ±`noise`
    /// about a rising line (variability ≈ √2 · noise, whatever the slope).
    fn traces(spreads: [f64; 4], noise: f64, n: usize) -> Traces {
        let sign = |i: usize| if i.is_multiple_of(2) { 1.0 } else { -1.0 };
        let iterations: Vec<u64> = (0..n as u64).map(|i| 50 + 10 * i).collect();
        let mut log_iterations: Vec<u64> = (0..5).map(|i| 10 * i).collect();
        log_iterations.extend(&iterations);
        let log_values = (0..log_iterations.len())
            .map(|i| -1e4 + 3.0 * i as f64 + noise * sign(i) + if i < 5 { 1e3 } else { 0.0 })
            .collect();
        Traces {
            log_target: (log_iterations, log_values),
            weights: spreads
                .iter()
                .map(|&s| (0..n).map(|i| s * sign(i)).collect())
                .collect(),
            iterations,
        }
    }

    fn trace_verdicts(chains: &[(Row, Traces)]) -> Vec<Decision> {
        let main: Vec<(&Row, &Traces)> = chains.iter().map(|(r, t)| (r, t)).collect();
        trace_claims(&main, 6000)
            .iter()
            .map(|c| c.verdict)
            .collect()
    }

    /// Spreads shrinking tenfold per layer in every chain, and a log-target whose fluctuation
    /// falls with the batch size, hold; the burn-in's records (off the line by 1000) are left
    /// out of the variability.
    #[test]
    fn trace_claims_follow_the_traces() {
        let live = [0.3, 0.4, 0.5, 0.6];
        let at = |batch| row(batch, Blocking::Node, live, 0.1, 0.8, [0.7, 0.8]);
        let chain = |batch, scale: f64, noise| {
            (
                at(batch),
                traces([1.0, 0.1, 0.01, 0.001].map(|s| s * scale), noise, 1000),
            )
        };
        let chains = [
            chain(200, 1.0, 30.0),
            chain(600, 1.5, 20.0),
            chain(1000, 0.8, 10.0),
        ];
        let v = log_target_variability(&chains[0].1, 50);
        assert!(
            (v.mean - 30.0 * 2.0 / std::f64::consts::SQRT_2).abs() < 0.1,
            "{v:?}"
        );
        assert_eq!(trace_verdicts(&chains), [Holds, Holds, Holds]);

        // One layer wider than the one before it in every chain; variability rising.
        let chains = [
            (at(200), traces([1.0, 2.0, 0.01, 0.001], 10.0, 1000)),
            (at(600), traces([1.0, 3.0, 0.01, 0.001], 20.0, 1000)),
        ];
        // The raw variability doubles, the per-example one falls by a third.
        assert_eq!(trace_verdicts(&chains), [Fails, Fails, Holds]);
        // Variabilities 10 and 10.2 over 20 records: within one standard error, but not per
        // example (10/200 against 10.2/600).
        let chains = [
            (at(200), traces([1.0, 0.1, 0.01, 0.001], 10.0, 20)),
            (at(600), traces([1.0, 0.1, 0.01, 0.001], 10.2, 20)),
        ];
        assert_eq!(trace_verdicts(&chains), [Holds, Undecided, Holds]);
    }

    /// A log-target of exactly −1 per example is constant per example once the records on an
    /// epoch's shorter last batch (100 of 1,000 examples at batch 300: every fourth iteration)
    /// are left out; the raw trace jumps there.
    #[test]
    fn per_example_variability_leaves_out_the_short_batches() {
        let (n_train, batch) = (1000, 300);
        let iterations: Vec<u64> = (0..400).collect();
        let size = |t: u64| if t % 4 == 3 { 100.0 } else { 300.0 };
        let traces = Traces {
            log_target: (
                iterations.clone(),
                iterations.iter().map(|&t| -size(t)).collect(),
            ),
            iterations: Vec::new(),
            weights: Vec::new(),
        };
        let per_example = per_example_variability(&traces, 100, batch, n_train);
        assert!(per_example.mean.abs() < 1e-12, "{per_example:?}");
        assert!(log_target_variability(&traces, 100).mean > 50.0);
        // A batch size dividing the training set leaves every record in.
        let v = per_example_variability(&traces, 100, 250, n_train);
        assert!(v.mean > 0.1, "{v:?}");
    }

    #[test]
    fn variances_scale_with_the_batch() {
        let v = scaled_variances(600);
        for (a, b) in v.iter().zip([0.05, 5e-4, 5e-4, 5e-5]) {
            assert!((a - b).abs() < 1e-15, "{v:?}");
        }
    }
}
