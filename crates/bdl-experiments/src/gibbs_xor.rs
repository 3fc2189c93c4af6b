//! `gibbs-xor`: minibatch and exact Metropolis-within-blocked-Gibbs on noisy XOR (Papamarkou
//! 2023, the XOR experiments).
//!
//! Protocol (ALGORITHMS.md §B): the paper's noisy XOR set (5000 training, 1200 test points);
//! MLPs (2, 2, 1) and (2, 2, 2, 2, 2, 2, 2, 1), sigmoid hidden units and one logit output with
//! the Bernoulli likelihood, prior N(0, 10 I), θ₀ drawn from the prior. Scenarios, each over
//! several chains: (1) minibatch node blocks (NBG), batch 100, proposal variance 0.04; (2) exact
//! NBG (the whole training set every iteration), variance 0.001; (3), (4) the chains of (2) whose
//! every block accepts at least 20% / 5% of its proposals. Per scenario: acceptance per layer
//! after the burn-in, the test accuracy of each chain's Bayesian marginal over its last
//! iterations, wall time. Besides: layer blocks (LBG) against node blocks at the common variance
//! 0.04, on both networks and on a wide (2, 50, 50, 1) network, whose 2550-parameter layer
//! block is where a layer block's acceptance can collapse; on the wide network also both
//! blockings at 0.04 with the whole training set in every ratio (one chain each), since a
//! block's acceptance follows its curvature, which grows with the data a ratio sees. Every row
//! shows beside the observed rates the rates the curvature predicts
//! ([`bdl_mcmc::random_walk_acceptance`]).
//!
//! Chains of one network share their seed across scenarios, so chain c starts from the same θ₀
//! in every scenario. The wall time of every run (all its chains in parallel) is in its row of
//! `results.json`, with the iteration each chain was resumed at. The smoke profile runs the same
//! scenarios on the small noisy XOR set (500 training, 120 test points) with 2 chains of 50
//! iterations.

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::Dataset;
use bdl_data::toy::{self, NoisyXor};
use bdl_eval::metrics::{self, MeanSe};
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_inference::{Posterior, PredictOptions, Valid, Validate};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    BatchMode, Blocking, Chain, ChainConfig, ChunkReport, GibbsConfig, Keep, Kernel, Precision,
    ProposalVariance,
};
use bdl_models::{Activation, Mlp, MlpSpec, Model};
use bdl_tensor::Seed;
use candle_core::DType;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use crate::claim::{self, Cite, Claim, Decision, Measured, Paper, Verdict};
use crate::units::Units;
use crate::{Context, Entry, Outcome, Profile};

/// The proposal variance of minibatch sampling (and of the blocking comparison).
const MINIBATCH_VARIANCE: f64 = 0.04;
/// The proposal variance of exact sampling.
const EXACT_VARIANCE: f64 = 0.001;
const BATCH: usize = 100;
/// The acceptance filters of scenarios (3) and (4): every block at least this rate.
const FILTERS: [(&str, f64); 2] = [("(3)", 0.2), ("(4)", 0.05)];
/// A layer's acceptance below this counts as collapsed; node blocks count as non-vanishing at
/// the weaker of the paper's filters, 0.05.
const COLLAPSED: f64 = 0.01;

const SHALLOW: &[usize] = &[2, 2, 1];
const DEEP: &[usize] = &[2, 2, 2, 2, 2, 2, 2, 1];
const WIDE: &[usize] = &[2, 50, 50, 1];

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "gibbs-xor",
    reproduces: "Papamarkou (2023), noisy XOR: minibatch against exact blocked Gibbs, node against layer \
     blocks, acceptance by depth",
    run,
    shards: true,
    lists_methods: false,
};

/// The settings of a profile.
#[derive(Debug, Serialize)]
struct Settings {
    /// The noisy XOR set.
    data: NoisyXor,
    /// The paper's two networks and the wide network of the blocking comparison.
    networks: [&'static [usize]; 3],
    /// The proposal variance of minibatch sampling and of the blocking comparison.
    minibatch_variance: f64,
    /// The proposal variance of exact sampling.
    exact_variance: f64,
    /// The minibatch size.
    batch_size: usize,
    /// Scenarios (3) and (4): the chains of (2) whose every block accepts at least this.
    acceptance_filters: [(&'static str, f64); 2],
    /// A layer's acceptance below this counts as collapsed.
    collapsed_below: f64,
    /// Chains per scenario on the paper's two networks.
    chains: usize,
    /// Chains per blocking on the wide network.
    wide_chains: usize,
    iterations: u64,
    /// Iterations of the wide network's exact runs (one chain each): node against layer blocks
    /// at the same variance with the whole training set in every ratio.
    wide_exact_iterations: u64,
    /// Acceptance rates count from this iteration (a multiple of `chunk_len`).
    burn_in: u64,
    /// The Bayesian marginal averages the draws of the last this many iterations...
    predict_last: u64,
    /// ...recorded every this many iterations.
    thin: u64,
    chunk_len: u64,
}

impl Settings {
    fn of(profile: Profile) -> Self {
        let quick = Settings {
            data: NoisyXor::Paper,
            networks: [SHALLOW, DEEP, WIDE],
            minibatch_variance: MINIBATCH_VARIANCE,
            exact_variance: EXACT_VARIANCE,
            batch_size: BATCH,
            acceptance_filters: FILTERS,
            collapsed_below: COLLAPSED,
            chains: 10,
            wide_chains: 2,
            iterations: 2000,
            wide_exact_iterations: 2000,
            burn_in: 500,
            predict_last: 500,
            thin: 5,
            chunk_len: 500,
        };
        match profile {
            // That it runs end to end: the small set, 2 chains of 50 iterations.
            Profile::Smoke => Settings {
                data: NoisyXor::Small,
                chains: 2,
                wide_chains: 2,
                iterations: 50,
                wide_exact_iterations: 50,
                burn_in: 25,
                predict_last: 25,
                thin: 5,
                chunk_len: 25,
                ..quick
            },
            Profile::Quick => quick,
            // The paper: 110,000 iterations, acceptance after the first 10,000, predictions
            // over the last 10,000 (here every 10th draw of them).
            Profile::Paper => Settings {
                chains: 10,
                wide_chains: 10,
                iterations: 110_000,
                // 20,000: the burn-in and the marginal's window, at about 12 ms per iteration.
                wide_exact_iterations: 20_000,
                burn_in: 10_000,
                predict_last: 10_000,
                thin: 10,
                chunk_len: 10_000,
                ..quick
            },
        }
    }
}

/// One sampler run: a network, a blocking, a variance, a data mode, several chains.
struct Run {
    network: &'static [usize],
    scenario: &'static str,
    blocking: Blocking,
    variance: f64,
    batch: BatchMode,
    chains: usize,
    iterations: u64,
}

/// The runs of a profile: scenarios (1), (2) and layer blocks on the paper's two networks, and
/// node against layer blocks on the wide network.
fn runs(settings: &Settings) -> Vec<Run> {
    let minibatch = BatchMode::Minibatch(BATCH);
    let mut runs = Vec::new();
    for network in [SHALLOW, DEEP] {
        runs.push(Run {
            network,
            scenario: "(1) minibatch NBG",
            blocking: Blocking::Node,
            variance: MINIBATCH_VARIANCE,
            batch: minibatch,
            chains: settings.chains,
            iterations: settings.iterations,
        });
        runs.push(Run {
            network,
            scenario: "(2) exact NBG",
            blocking: Blocking::Node,
            variance: EXACT_VARIANCE,
            batch: BatchMode::Exact,
            chains: settings.chains,
            iterations: settings.iterations,
        });
        runs.push(Run {
            network,
            scenario: "minibatch LBG",
            blocking: Blocking::Layer,
            variance: MINIBATCH_VARIANCE,
            batch: minibatch,
            chains: settings.chains,
            iterations: settings.iterations,
        });
    }
    for (scenario, blocking) in [
        ("minibatch NBG", Blocking::Node),
        ("minibatch LBG", Blocking::Layer),
    ] {
        runs.push(Run {
            network: WIDE,
            scenario,
            blocking,
            variance: MINIBATCH_VARIANCE,
            batch: minibatch,
            chains: settings.wide_chains,
            iterations: settings.iterations,
        });
    }
    // The same blockings with the whole training set in every ratio: a block's curvature, and
    // so its acceptance, scales with the data its ratio sees.
    for (scenario, blocking) in [
        ("exact NBG, v = 0.04", Blocking::Node),
        ("exact LBG, v = 0.04", Blocking::Layer),
    ] {
        runs.push(Run {
            network: WIDE,
            scenario,
            blocking,
            variance: MINIBATCH_VARIANCE,
            batch: BatchMode::Exact,
            chains: 1,
            iterations: settings.wide_exact_iterations,
        });
    }
    runs
}

/// What one chain gave.
#[derive(Clone, Debug)]
pub(super) struct ChainSummary {
    /// Acceptance rate of every layer after the burn-in.
    pub(super) layer_acceptance: Vec<f64>,
    /// The lowest acceptance rate of any block after the burn-in.
    pub(super) min_block_acceptance: f64,
    /// The acceptance rate of every node after the burn-in, `[layer][node]`.
    pub(super) node_acceptance: Vec<Vec<f64>>,
    /// Test accuracy of the Bayesian marginal.
    pub(super) accuracy: f64,
}

/// The wall time of one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Timing {
    /// Seconds for all chains of the run, sampled in parallel on this machine's cores.
    pub(super) wall_s: f64,
    /// Per chain, the iteration it was resumed at (0: sampled afresh); the wall time covers only
    /// the iterations after it.
    pub(super) resumed_at: Vec<u64>,
}

/// One scenario (or blocking) on one network, in `results.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Row {
    network: String,
    scenario: String,
    blocking: String,
    /// `None`: exact (the whole training set every iteration).
    batch_size: Option<usize>,
    proposal_variance: f64,
    /// Scenarios (3), (4): the chains kept are those whose every block accepts at least this.
    min_block_acceptance_filter: Option<f64>,
    /// Chains run, and the indices of those kept.
    chains_run: usize,
    chains_kept: Vec<usize>,
    /// Per kept chain: acceptance per layer, lowest block acceptance, test accuracy.
    layer_acceptance: Vec<Vec<f64>>,
    min_block_acceptance: Vec<f64>,
    test_accuracy: Vec<f64>,
    /// Means over the kept chains (`None` when no chain is kept).
    mean_layer_acceptance: Option<Vec<f64>>,
    /// Per kept chain, the acceptance per layer its curvature predicts
    /// ([`bdl_mcmc::random_walk_acceptance`] at the GGN of the data one ratio sees, averaged
    /// over [`CURVATURE_DRAWS`] of the kept draws), and the mean over kept chains.
    predicted_layer_acceptance: Vec<Vec<f64>>,
    mean_predicted_layer_acceptance: Option<Vec<f64>>,
    mean_test_accuracy: Option<f64>,
    se_test_accuracy: Option<f64>,
    /// Examples scored per iteration (blocks × batch): the cost of a sweep.
    examples_scored_per_iteration: usize,
    /// The run's wall time (`None` for scenarios (3), (4): their chains are those of (2)).
    timing: Option<Timing>,
}

fn name(widths: &[usize]) -> String {
    widths
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join("-")
}

/// Advances one progress bar by the iterations that chains report, chunk by chunk: each report
/// counts the difference to the chain's previous one, so a resumed chain's first report also
/// counts the iterations it resumed from.
pub(super) struct ChainProgress<'a> {
    bar: &'a ProgressBar,
    done: Mutex<Vec<u64>>,
}

impl<'a> ChainProgress<'a> {
    /// Progress of chains 0..`chains` on `bar`.
    pub(super) fn new(bar: &'a ProgressBar, chains: usize) -> Self {
        Self {
            bar,
            done: Mutex::new(vec![0; chains]),
        }
    }

    /// The callback of `run_chain(s)`.
    pub(super) fn report(&self, report: ChunkReport) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = done.get_mut(report.chain) {
            let before = std::mem::replace(d, report.done);
            self.bar.inc(report.done.saturating_sub(before));
        }
    }

    /// Counts every chain as done to `iterations` (chains that were complete before reported
    /// nothing).
    pub(super) fn finish(&self, iterations: u64) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        for d in done.iter_mut() {
            self.bar.inc(iterations.saturating_sub(*d));
            *d = (*d).max(iterations);
        }
    }
}

/// Runs chains 0..`chains` of `config` under `dir` in parallel (rayon), advancing `bar`;
/// returns the wall time.
fn sample(
    mlp: &Mlp,
    likelihood: Likelihood,
    train: &Dataset,
    config: &Valid<ChainConfig>,
    dir: &Path,
    chains: usize,
    bar: &ProgressBar,
) -> Result<Timing> {
    let progress = ChainProgress::new(bar, chains);
    let start = Instant::now();
    let reports = bdl_mcmc::run_chains(mlp, likelihood, train, config, dir, chains, &|r| {
        progress.report(r)
    })?;
    let wall_s = start.elapsed().as_secs_f64();
    progress.finish(config.iterations);
    Ok(Timing {
        wall_s,
        resumed_at: reports.iter().map(|r| r.resumed_at).collect(),
    })
}

/// Acceptance after `burn_in` and the test accuracy of the Bayesian marginal over `keep`.
pub(super) fn summarise(
    chain: &Chain,
    burn_in: u64,
    keep: &Keep,
    test: &Dataset,
) -> Result<ChainSummary> {
    let (acceptance, _) = chain.acceptance(burn_in)?;
    let accuracy = accuracy(&chain.window(keep)?, test)?;
    Ok(ChainSummary {
        layer_acceptance: acceptance.layer_rates(chain.blocks()),
        min_block_acceptance: acceptance.rates().into_iter().fold(1.0, f64::min),
        node_acceptance: acceptance.node_rates(chain.blocks()),
        accuracy,
    })
}

/// Kept draws of a chain at which [`predicted_layer_acceptance`] evaluates the curvature.
const CURVATURE_DRAWS: usize = 10;

/// The acceptance per layer that the target's curvature predicts for `kernel`'s blocks
/// ([`Kernel::predicted_acceptance`]: 2Φ(−½√(v · tr H_b)) with H_b the prior's 1/s² plus the
/// GGN diagonal of the log-likelihood over the fraction `seen` of the training set that one
/// ratio sums over), averaged over the blocks of each layer and over [`CURVATURE_DRAWS`] of the
/// chain's kept draws, evenly spaced.
fn predicted_layer_acceptance(
    chain: &Chain,
    keep: &Keep,
    mlp: &Mlp,
    kernel: &Kernel,
    train: &Dataset,
    seen: f64,
) -> Result<Vec<f64>> {
    let draws = chain.draws(keep)?.params.to_dtype(DType::F64)?;
    let n = draws.dims()[0];
    let x = train.x().to_dtype(DType::F64)?;
    let picks: Vec<usize> = (0..CURVATURE_DRAWS.min(n))
        .map(|k| (k * n) / CURVATURE_DRAWS.min(n))
        .collect();
    let layers = kernel
        .blocks()
        .iter()
        .map(|b| b.layer)
        .max()
        .map_or(0, |l| l + 1);
    let mut sums = vec![0.0; layers];
    let mut counts = vec![0usize; layers];
    for &i in &picks {
        let theta = draws.get(i)?;
        let ggn = bdl_laplace::ggn_diagonal(mlp, &theta, &Likelihood::Bernoulli, &x, 1000)?;
        let curvature: Vec<f64> = ggn.iter().map(|h| h * seen).collect();
        for (block, rate) in kernel
            .blocks()
            .iter()
            .zip(kernel.predicted_acceptance(&curvature))
        {
            sums[block.layer] += rate;
            counts[block.layer] += 1;
        }
    }
    Ok(sums
        .iter()
        .zip(&counts)
        .map(|(s, &c)| s / c.max(1) as f64)
        .collect())
}

/// Test accuracy of the posterior's predictive (for a chain window, the Bayesian marginal
/// (1/S) Σ_s p(y | x, θ_s) over its draws).
pub(super) fn accuracy(posterior: &impl Posterior, test: &Dataset) -> Result<f64> {
    let predictive = posterior.predictive(test.x(), &PredictOptions::default())?;
    Ok(metrics::accuracy(&predictive, test.y())?)
}

/// Runs the experiment.
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let (train, test) = toy::noisy_xor(&ctx.data, settings.data).context("loading noisy XOR")?;
    let chains_dir = ctx.dir.join("chains");
    // The smoke and quick profiles always sample afresh, so that their wall times are measured;
    // the paper profile resumes interrupted chains (run_chains checks that the settings match;
    // every profile has its own folder).
    if ctx.profile != Profile::Paper && chains_dir.exists() {
        std::fs::remove_dir_all(&chains_dir)
            .with_context(|| format!("removing {}", chains_dir.display()))?;
    }
    let runs = runs(&settings);
    let likelihood = Likelihood::Bernoulli;
    let keep = Keep {
        burn_in: 0,
        thin: settings.thin,
        last: Some(settings.predict_last),
    };
    let total = runs
        .iter()
        .map(|r| r.chains as u64 * r.iterations)
        .sum::<u64>();
    let bar = ctx.bar(total, "iterations");
    // Each run (its chains and their rows) is a unit: the paper profile saves it as it finishes,
    // so that a rerun (new claims, say) reads the rows and their wall times back instead of
    // finding complete chains and timing nothing; a shard takes its share.
    let units = Units::new(ctx, &settings)?;
    let key = |run: &Run| format!("{}_{}", name(run.network), folder_name(run.scenario));
    let all_units = runs.len();
    let runs = units.share(runs);
    let mut rows = Vec::new();
    for run in &runs {
        rows.extend(units.get_or_run(&key(run), || -> Result<Vec<Row>> {
            let mut rows = Vec::new();
            let network = name(run.network);
            let mlp = Mlp::new(MlpSpec::new(run.network, Activation::Sigmoid))?;
            let config = chain_config(&settings, run, &network)?;
            let dir = chains_dir.join(format!("{network}_{}", folder_name(run.scenario)));
            let label = format!("{network} {}", run.scenario);
            bar.set_message(label.clone());
            let timing = sample(&mlp, likelihood, &train, &config, &dir, run.chains, &bar)
                .with_context(|| format!("sampling {label}"))?;
            bar.suspend(|| {
                ctx.log(format!(
                    "{label}: {} chain(s) × {} iterations in {:.1} s",
                    run.chains, run.iterations, timing.wall_s
                ))
            });
            let kernel = config.gibbs.kernel(mlp.layout())?;
            let seen = match run.batch {
                BatchMode::Exact => 1.0,
                BatchMode::Minibatch(b) => b.min(train.len()) as f64 / train.len() as f64,
            };
            let (summaries, predicted): (Vec<_>, Vec<_>) = (0..run.chains)
                .map(|c| {
                    let chain = Chain::open(&bdl_mcmc::chain_dir(&dir, c))?;
                    Ok((
                        summarise(&chain, settings.burn_in, &keep, &test)?,
                        predicted_layer_acceptance(&chain, &keep, &mlp, &kernel, &train, seen)?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .unzip();
            let sampled = Sampled {
                run,
                network: &network,
                summaries: &summaries,
                predicted: &predicted,
                timing: &timing,
                n_blocks: kernel.blocks().len(),
                n_train: train.len(),
            };
            let row = |scenario: &str, filter| sampled.row(scenario, filter);
            rows.push(row(run.scenario, None));
            if run.scenario.starts_with("(2)") {
                for (number, filter) in FILTERS {
                    rows.push(row(
                        &format!("{number} exact NBG, every block ≥ {filter}"),
                        Some(filter),
                    ));
                }
            }
            Ok(rows)
        })?);
    }
    bar.finish_and_clear();
    if let Some(shard) = units.shard_outcome(runs.iter().map(key).collect(), all_units) {
        return Ok(shard);
    }
    Ok(
        Outcome::new("gibbs-xor: blocked Gibbs on noisy XOR", &settings, &rows)?
            .body(table(&rows, &settings, train.len(), test.len()))
            .claims(claims(&rows, &settings))
            .figure("gibbs-xor.svg", figure(&rows).to_svg()),
    )
}

/// The chains' configuration of `run` on `network`: its blocks, common proposal variance and
/// batch, in f32, from the network's stream.
fn chain_config(settings: &Settings, run: &Run, network: &str) -> Result<Valid<ChainConfig>> {
    let gibbs = GibbsConfig::new(
        run.blocking.clone(),
        ProposalVariance::Common(run.variance),
        run.batch,
    );
    Ok(ChainConfig {
        iterations: run.iterations,
        chunk_len: settings.chunk_len,
        record_every: settings.thin,
        precision: Precision::F32,
        seed: Seed(2023).fork("gibbs-xor").fork(network),
        ..ChainConfig::new(gibbs)
    }
    .check()?)
}

/// What the chains of one run gave, from which its rows are formed.
struct Sampled<'a> {
    run: &'a Run,
    network: &'a str,
    summaries: &'a [ChainSummary],
    /// Per chain, the layer acceptance the chain's own draws predict.
    predicted: &'a [Vec<f64>],
    timing: &'a Timing,
    n_blocks: usize,
    n_train: usize,
}

impl Sampled<'_> {
    /// The row of the chains whose every block accepted at least `filter` (all with `None`),
    /// under the name `scenario`.
    fn row(&self, scenario: &str, filter: Option<f64>) -> Row {
        let kept: Vec<usize> = (0..self.run.chains)
            .filter(|&c| filter.is_none_or(|f| self.summaries[c].min_block_acceptance >= f))
            .collect();
        let pick = |f: &dyn Fn(&ChainSummary) -> f64| -> Vec<f64> {
            kept.iter().map(|&c| f(&self.summaries[c])).collect()
        };
        let layer_acceptance: Vec<Vec<f64>> = kept
            .iter()
            .map(|&c| self.summaries[c].layer_acceptance.clone())
            .collect();
        let predicted_layer_acceptance: Vec<Vec<f64>> =
            kept.iter().map(|&c| self.predicted[c].clone()).collect();
        let test_accuracy = pick(&|s| s.accuracy);
        let accuracy = (!kept.is_empty()).then(|| MeanSe::of(&test_accuracy));
        Row {
            network: self.network.to_owned(),
            scenario: scenario.to_owned(),
            blocking: self.run.blocking.slug().to_owned(),
            batch_size: match self.run.batch {
                BatchMode::Exact => None,
                BatchMode::Minibatch(b) => Some(b),
            },
            proposal_variance: self.run.variance,
            min_block_acceptance_filter: filter,
            chains_run: self.run.chains,
            mean_layer_acceptance: (!kept.is_empty()).then(|| column_means(&layer_acceptance)),
            layer_acceptance,
            mean_predicted_layer_acceptance: (!kept.is_empty())
                .then(|| column_means(&predicted_layer_acceptance)),
            predicted_layer_acceptance,
            min_block_acceptance: pick(&|s| s.min_block_acceptance),
            test_accuracy,
            mean_test_accuracy: accuracy.map(|a| a.mean),
            se_test_accuracy: accuracy.map(|a| a.se),
            chains_kept: kept,
            examples_scored_per_iteration: self.n_blocks
                * match self.run.batch {
                    BatchMode::Exact => self.n_train,
                    BatchMode::Minibatch(b) => b.min(self.n_train),
                },
            timing: filter.is_none().then(|| self.timing.clone()),
        }
    }
}

/// The mean of every column of equally long rows.
pub(super) fn column_means(rows: &[Vec<f64>]) -> Vec<f64> {
    let n = rows.len() as f64;
    (0..rows.first().map_or(0, Vec::len))
        .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect()
}

pub(super) fn list(values: &[f64], digits: usize) -> String {
    values
        .iter()
        .map(|v| format!("{v:.digits$}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn find<'a>(rows: &'a [Row], network: &[usize], scenario: &str) -> &'a Row {
    let network = name(network);
    rows.iter()
        .find(|r| r.network == network && r.scenario.starts_with(scenario))
        .expect("every run has a row")
}

/// The wall time of a row's run (NaN for the filtered scenarios).
fn wall(row: &Row) -> f64 {
    row.timing.as_ref().map_or(f64::NAN, |t| t.wall_s)
}

/// The paper's statements the claims test.
pub(crate) const BLOCKING: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "§1",
    quote: "a sampling mechanism that takes into account the neural network structure and that \
            partitions the parameter space into smaller parameter blocks retains higher \
            acceptance rate",
};
pub(crate) const DEPTH: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "Abstract",
    quote: "It is also possible to alleviate vanishing acceptance rates for increasing depth by \
            reducing the proposal variance in deeper layers.",
};
const DEEPER: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "noisy XOR experiment, Fig. 7",
    quote: "",
};
const MINIBATCH: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "noisy XOR experiment",
    quote: "",
};

/// The paper's claims, decided on the rows (`settings` give the iterations each acceptance
/// rate counts, for the standard error of a single chain's).
fn claims(rows: &[Row], settings: &Settings) -> Vec<Claim> {
    let kept = settings.iterations.saturating_sub(settings.burn_in);
    let exact_kept = settings
        .wide_exact_iterations
        .saturating_sub(settings.burn_in);
    vec![
        blocking_claim(rows, kept),
        exact_blocking_claim(rows, exact_kept),
        depth_claim(rows, kept),
        minibatch_claim(rows),
        minibatch_acceptance_claim(rows, kept),
        deeper_claim(rows),
    ]
}

/// Minibatch against exact node blocks in acceptance (the paper's Fig. 3a): every layer's rate
/// in scenario (1) above its rate in (2), on both networks.
fn minibatch_acceptance_claim(rows: &[Row], kept: u64) -> Claim {
    let mut parts = Vec::new();
    let mut ours = Vec::new();
    for network in [SHALLOW, DEEP] {
        let (m, e) = (find(rows, network, "(1)"), find(rows, network, "(2)"));
        let layers = m.mean_layer_acceptance.as_ref().map_or(0, Vec::len);
        let shown = |r: &Row| {
            (0..layers)
                .map(|j| format!("{:.3}", layer_rate(r, j, kept)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        parts.extend(
            (0..layers)
                .map(|j| claim::greater(layer_rate(m, j, kept), layer_rate(e, j, kept)).decision),
        );
        ours.push(format!(
            "{}: (1) {} vs (2) {}",
            name(network),
            shown(m),
            shown(e)
        ));
    }
    Claim::new(
        MINIBATCH,
        "minibatch NBG accepts more than exact NBG (Fig. 3a; each at its scenario's variance)",
        ours.join("; "),
        Verdict::new(
            claim::all(&parts),
            "on both networks, every layer's mean acceptance over chains in (1) above its rate \
             in (2) by more than one standard error of the difference (undecided where one is \
             within it and none is contrary)",
        ),
    )
}

/// The deep network against the shallow one in scenario (1): the mean test accuracy over
/// chains (the paper's Fig. 7; its "less volatile" half needs an accuracy trace over the chain,
/// which the run does not record).
fn deeper_claim(rows: &[Row]) -> Claim {
    let accuracy = |network: &[usize]| Measured::of(&find(rows, network, "(1)").test_accuracy);
    let (deep, shallow) = (accuracy(DEEP), accuracy(SHALLOW));
    Claim::new(
        DEEPER,
        "the deeper MLP is more accurate (minibatch NBG)",
        format!(
            "test accuracy over chains {}: {deep:.3}; {}: {shallow:.3}",
            name(DEEP),
            name(SHALLOW)
        ),
        claim::greater(deep, shallow).described(
            "scenario (1)'s mean test accuracy over chains higher on the deep network than on \
             the shallow one by more than one standard error of the difference (undecided \
             within one)",
        ),
    )
}

/// The acceptance of layer `j` over the chains of `row` (between chains; a single chain's rate
/// has the binomial standard error over its kept iterations).
fn layer_rate(row: &Row, j: usize, kept_iterations: u64) -> Measured {
    let rates: Vec<f64> = row.layer_acceptance.iter().map(|c| c[j]).collect();
    match rates.as_slice() {
        [one] => Measured::proportion(*one, kept_iterations as usize),
        _ => Measured::of(&rates),
    }
}

/// Node against layer blocks at the common variance: on the wide network, layer blocks collapse
/// and node blocks do not. LBG's lowest layer acceptance (that layer's rate over chains) and
/// NBG's lowest block acceptance over all chains, on the wide network, for the runs whose
/// scenarios start with `nbg` and `lbg`.
fn wide_lows(rows: &[Row], nbg: &str, lbg: &str, kept: u64) -> (Measured, f64, String) {
    let (wide_nbg, wide_lbg) = (find(rows, WIDE, nbg), find(rows, WIDE, lbg));
    let lbg_layers = wide_lbg.mean_layer_acceptance.as_deref().unwrap_or(&[]);
    let lbg_low = lbg_layers
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map_or(Measured::exact(f64::NAN), |(j, _)| {
            layer_rate(wide_lbg, j, kept)
        });
    let nbg_low = wide_nbg
        .min_block_acceptance
        .iter()
        .copied()
        .fold(1.0, f64::min);
    let ours = format!(
        "2-50-50-1: LBG per layer {} (lowest {lbg_low:.4}); NBG's lowest block over all chains \
         {nbg_low:.3}",
        list(lbg_layers, 4)
    );
    (lbg_low, nbg_low, ours)
}

/// The collapse criterion: LBG's lowest layer below [`COLLAPSED`] by more than its standard
/// error, and NBG's lowest block over all chains at least the weaker filter (a minimum over
/// every chain and block, decided as it is).
fn collapse_verdict(lbg_low: Measured, nbg_low: f64, data: &str) -> Verdict {
    let non_vanishing = FILTERS[1].1;
    let collapsed = claim::decide_positive(Measured::exact(COLLAPSED).minus(lbg_low));
    Verdict::new(
        claim::all(&[collapsed, Decision::of(nbg_low >= non_vanishing)]),
        format!(
            "on {} ({data}), LBG's lowest layer acceptance is below {COLLAPSED} by more than \
             one standard error (over chains; undecided within one) and NBG's lowest block \
             acceptance over all chains is at least {non_vanishing}",
            name(WIDE)
        ),
    )
}

fn blocking_claim(rows: &[Row], kept: u64) -> Claim {
    let (lbg_low, nbg_low, wide) = wide_lows(rows, "minibatch NBG", "minibatch LBG", kept);
    let small = |network: &[usize]| {
        let (n, l) = (
            find(rows, network, "(1)"),
            find(rows, network, "minibatch LBG"),
        );
        format!(
            "{}: NBG {} vs LBG {}",
            name(network),
            list(n.mean_layer_acceptance.as_deref().unwrap_or(&[]), 2),
            list(l.mean_layer_acceptance.as_deref().unwrap_or(&[]), 2)
        )
    };
    Claim::new(
        BLOCKING,
        format!(
            "node blocking keeps acceptance non-zero where layer blocking collapses (variance \
             {MINIBATCH_VARIANCE}, batch {BATCH})"
        ),
        format!("{wide}. Per layer, {}; {}", small(SHALLOW), small(DEEP)),
        collapse_verdict(lbg_low, nbg_low, &format!("batch {BATCH}")),
    )
}

/// The same at the same variance with the whole training set in every ratio, where a block's
/// curvature, and so the collapse, is largest.
fn exact_blocking_claim(rows: &[Row], kept: u64) -> Claim {
    let (lbg_low, nbg_low, wide) = wide_lows(rows, "exact NBG, v", "exact LBG, v", kept);
    Claim::new(
        BLOCKING,
        format!(
            "node blocking keeps acceptance non-zero where layer blocking collapses (variance \
             {MINIBATCH_VARIANCE}, the whole training set per ratio)"
        ),
        wide,
        collapse_verdict(lbg_low, nbg_low, "exact"),
    )
}

/// Whether a network's layer acceptance (scenario (1)) falls with depth: the last layer below
/// the first by more than a standard error of the difference (undecided within one), and no
/// layer above the previous one by more than one; with the rates shown.
fn falls_with_depth(rows: &[Row], network: &[usize], kept: u64) -> (Decision, String) {
    let r = find(rows, network, "(1)");
    let layers = r.mean_layer_acceptance.as_ref().map_or(0, Vec::len);
    let rates: Vec<Measured> = (0..layers).map(|j| layer_rate(r, j, kept)).collect();
    let rises = rates
        .windows(2)
        .any(|w| claim::decide_positive(w[1].minus(w[0])) == Decision::Holds);
    let fall = match (rates.first(), rates.last()) {
        (Some(&first), Some(&last)) if layers >= 2 => claim::decide_positive(first.minus(last)),
        _ => Decision::Fails,
    };
    let shown = rates
        .iter()
        .map(|m| format!("{m:.3}"))
        .collect::<Vec<_>>()
        .join(", ");
    (claim::all(&[Decision::of(!rises), fall]), shown)
}

/// Depth at the common variance, on both networks.
fn depth_claim(rows: &[Row], kept: u64) -> Claim {
    let ((shallow_falls, shallow), (deep_falls, deep)) = (
        falls_with_depth(rows, SHALLOW, kept),
        falls_with_depth(rows, DEEP, kept),
    );
    Claim::new(
        DEPTH,
        format!(
            "acceptance falls with depth at a common variance (scenario (1), variance \
             {MINIBATCH_VARIANCE})"
        ),
        format!(
            "per layer, mean ± se over chains: {}: {shallow}; {}: {deep}",
            name(SHALLOW),
            name(DEEP),
        ),
        Verdict::new(
            claim::all(&[shallow_falls, deep_falls]),
            "on both networks, the last layer's rate below the first's by more than one standard \
             error of the difference (undecided within one), and no layer's rate above the \
             previous layer's by more than one",
        ),
    )
}

/// Minibatch against exact node blocks, on both networks.
fn minibatch_claim(rows: &[Row]) -> Claim {
    let mut parts = Vec::new();
    let mut ours = Vec::new();
    for network in [SHALLOW, DEEP] {
        let (m, e) = (find(rows, network, "(1)"), find(rows, network, "(2)"));
        let (tm, te) = (wall(m), wall(e));
        let accuracy = |r: &Row| Measured::of(&r.test_accuracy);
        let (am, ae) = (accuracy(m), accuracy(e));
        parts.push(Decision::of(tm < te));
        parts.push(claim::greater(am, ae).decision);
        ours.push(format!(
            "{}: {tm:.1} s vs {te:.1} s, accuracy {am:.3} vs {ae:.3}",
            name(network)
        ));
    }
    Claim::new(
        MINIBATCH,
        "minibatch NBG is faster and more accurate than exact NBG (same iterations)",
        ours.join("; "),
        Verdict::new(
            claim::all(&parts),
            "on both networks, (1) has a smaller wall time than (2), and a larger mean test \
             accuracy over chains by more than one standard error of the difference (undecided \
             within one)",
        ),
    )
}

/// The data table and what it shows (the claims are the report's).
fn table(rows: &[Row], settings: &Settings, n_train: usize, n_test: usize) -> String {
    let mut t = Table::new([
        "network",
        "scenario",
        "chains kept",
        "acceptance per layer (mean over chains)",
        "predicted from the curvature",
        "lowest block acceptance (range over chains)",
        "test accuracy (mean ± se over chains)",
        "wall time, all chains (s)",
    ]);
    for r in rows {
        let range = if r.min_block_acceptance.is_empty() {
            "–".to_owned()
        } else {
            let lo = r.min_block_acceptance.iter().copied().fold(1.0, f64::min);
            let hi = r.min_block_acceptance.iter().copied().fold(0.0, f64::max);
            format!("{lo:.3} – {hi:.3}")
        };
        let time = r
            .timing
            .as_ref()
            .map_or_else(|| "–".to_owned(), |t| format!("{:.1}", t.wall_s));
        t.row([
            r.network.clone(),
            r.scenario.clone(),
            format!("{} of {}", r.chains_kept.len(), r.chains_run),
            r.mean_layer_acceptance
                .as_ref()
                .map_or_else(|| "–".to_owned(), |a| list(a, 3)),
            r.mean_predicted_layer_acceptance
                .as_ref()
                .map_or_else(|| "–".to_owned(), |a| list(a, 2)),
            range,
            match (r.mean_test_accuracy, r.se_test_accuracy) {
                (Some(m), Some(se)) => format!("{m:.3} ± {se:.3}"),
                _ => "–".to_owned(),
            },
            time,
        ]);
    }
    format!(
        "{n_train} training and {n_test} test points; sigmoid MLPs with a Bernoulli (logit) \
         output, prior N(0, 10 I), θ₀ from the prior, f32. {} iterations per chain (one sweep \
         over all blocks each); acceptance from iteration {} on; test accuracy of each chain's \
         Bayesian marginal over its last {} iterations (every {}th draw). Scenarios (3) and (4) \
         are the chains of (2) whose every block accepts at least {} / {}. Wall times: all \
         chains of a run in parallel on this machine's cores. The wide network's exact runs: \
         one chain of {} iterations each. Predicted from the curvature: \
         2Φ(−½√(v · tr H_b)) per block, H_b the prior's 1/s² plus the GGN diagonal of the \
         log-likelihood over the data one ratio sees (B/N of the training set's), averaged over \
         each layer's blocks and {CURVATURE_DRAWS} kept draws per chain: the rate of a random walk \
         on a locally Gaussian target.\n\n{}",
        settings.iterations,
        settings.burn_in,
        settings.predict_last,
        settings.thin,
        FILTERS[0].1,
        FILTERS[1].1,
        settings.wide_exact_iterations,
        t.to_markdown(),
    )
}

const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

fn figure(rows: &[Row]) -> Figure {
    let layers = |r: &Row| -> (Vec<f64>, Vec<f64>) {
        let a = r.mean_layer_acceptance.clone().unwrap_or_default();
        ((1..=a.len()).map(|l| l as f64).collect(), a)
    };
    // Acceptance by layer at the common variance.
    let mut depth = Panel::new(format!("minibatch NBG, v = {MINIBATCH_VARIANCE}"));
    depth.labels("layer", "acceptance rate").y_range(0.0, 1.0);
    for (network, color) in [SHALLOW, DEEP].into_iter().zip(COLORS) {
        let (xs, ys) = layers(find(rows, network, "(1)"));
        depth
            .line(&xs, &ys, color)
            .points(&xs, &ys, color)
            .legend(name(network), color);
    }
    // Layer against node blocks.
    let mut blocking = Panel::new(format!(
        "NBG (lines) vs LBG (points), v = {MINIBATCH_VARIANCE}"
    ));
    blocking
        .labels("layer", "acceptance rate")
        .y_range(0.0, 1.0);
    for (network, color) in [SHALLOW, DEEP, WIDE].into_iter().zip(COLORS) {
        let (xs, ys) = layers(find(
            rows,
            network,
            if network == WIDE {
                "minibatch NBG"
            } else {
                "(1)"
            },
        ));
        blocking.line(&xs, &ys, color).legend(name(network), color);
        let (xs, ys) = layers(find(rows, network, "minibatch LBG"));
        blocking.points(&xs, &ys, color);
    }
    // Test accuracy of every chain by scenario.
    let mut accuracy = Panel::new("test accuracy per chain");
    accuracy.labels("scenario (1)–(4)", "accuracy");
    for (k, (network, color)) in [SHALLOW, DEEP].into_iter().zip(COLORS).enumerate() {
        let net = name(network);
        for (s, scenario) in ["(1)", "(2)", "(3)", "(4)"].iter().enumerate() {
            let r = find(rows, network, scenario);
            let x = s as f64 + 1.0 + if k == 0 { -0.1 } else { 0.1 };
            let xs = vec![x; r.test_accuracy.len()];
            accuracy.points(&xs, &r.test_accuracy, color);
        }
        accuracy.legend(net, color);
    }
    Figure::new(3).panel(depth).panel(blocking).panel(accuracy)
}

/// A scenario's label as a folder name: from its first letter on, letters, digits and `.` kept,
/// every run of anything else one `-` ("(2) exact NBG, v = 0.04" → "exact-NBG-v-0.04").
fn folder_name(scenario: &str) -> String {
    let mut name = String::new();
    for c in scenario
        .trim_start_matches(|c: char| !c.is_alphabetic())
        .chars()
    {
        if c.is_ascii_alphanumeric() || c == '.' {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    name.trim_end_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_folders_are_plain_names() {
        assert_eq!(folder_name("(1) minibatch NBG"), "minibatch-NBG");
        assert_eq!(folder_name("exact NBG, v = 0.04"), "exact-NBG-v-0.04");
        assert_eq!(folder_name("minibatch LBG"), "minibatch-LBG");
    }

    /// A row of `network` and `scenario` with per-chain layer acceptances, lowest block
    /// acceptances and accuracies, and a wall time.
    fn row(
        network: &[usize],
        scenario: &str,
        layers: &[&[f64]],
        min_block: &[f64],
        accuracy: &[f64],
        wall_s: f64,
    ) -> Row {
        let layer_acceptance: Vec<Vec<f64>> = layers.iter().map(|l| l.to_vec()).collect();
        let a = MeanSe::of(accuracy);
        Row {
            network: name(network),
            scenario: scenario.into(),
            blocking: if scenario.contains("LBG") {
                "layer"
            } else {
                "node"
            }
            .into(),
            batch_size: Some(BATCH),
            proposal_variance: MINIBATCH_VARIANCE,
            min_block_acceptance_filter: None,
            chains_run: layers.len(),
            chains_kept: (0..layers.len()).collect(),
            mean_layer_acceptance: Some(column_means(&layer_acceptance)),
            mean_predicted_layer_acceptance: None,
            predicted_layer_acceptance: Vec::new(),
            layer_acceptance,
            min_block_acceptance: min_block.to_vec(),
            test_accuracy: accuracy.to_vec(),
            mean_test_accuracy: Some(a.mean),
            se_test_accuracy: Some(a.se),
            examples_scored_per_iteration: 0,
            timing: Some(Timing {
                wall_s,
                resumed_at: vec![0; layers.len()],
            }),
        }
    }

    /// Rows where the wide network's layer blocks collapse and its node blocks do not; the
    /// shallow network's acceptance falls with depth, the deep one's rises in the middle by more
    /// than two standard errors; minibatch beats exact on both networks unless `slow_minibatch`.
    fn rows(deep_rise: f64, slow_minibatch: bool, wide_lbg_low: f64) -> Vec<Row> {
        let deep_1 = [0.6, 0.5, 0.4 + deep_rise, 0.4, 0.35, 0.3, 0.25];
        let deep_2 = [0.62, 0.52, 0.42 + deep_rise, 0.41, 0.34, 0.31, 0.24];
        vec![
            row(
                SHALLOW,
                "(1) minibatch NBG",
                &[&[0.5, 0.3], &[0.52, 0.28]],
                &[0.2, 0.2],
                &[0.9, 0.92],
                1.0,
            ),
            row(
                SHALLOW,
                "(2) exact NBG",
                &[&[0.4, 0.3], &[0.4, 0.3]],
                &[0.2, 0.2],
                &[0.8, 0.82],
                5.0,
            ),
            row(
                SHALLOW,
                "minibatch LBG",
                &[&[0.2, 0.3], &[0.2, 0.3]],
                &[0.2, 0.2],
                &[0.8, 0.8],
                1.0,
            ),
            row(
                DEEP,
                "(1) minibatch NBG",
                &[&deep_1, &deep_2],
                &[0.2, 0.2],
                &[0.9, 0.9],
                if slow_minibatch { 9.0 } else { 2.0 },
            ),
            row(
                DEEP,
                "(2) exact NBG",
                &[&deep_1, &deep_2],
                &[0.2, 0.2],
                &[0.7, 0.7],
                8.0,
            ),
            row(
                DEEP,
                "minibatch LBG",
                &[&deep_1, &deep_2],
                &[0.2, 0.2],
                &[0.7, 0.7],
                1.0,
            ),
            row(
                WIDE,
                "minibatch NBG",
                &[&[0.3, 0.2, 0.4], &[0.3, 0.2, 0.4]],
                &[0.06, 0.1],
                &[0.9, 0.9],
                1.0,
            ),
            row(
                WIDE,
                "minibatch LBG",
                &[&[0.3, wide_lbg_low, 0.4], &[0.3, wide_lbg_low, 0.4]],
                &[0.0, 0.0],
                &[0.5, 0.5],
                1.0,
            ),
            // The exact runs: LBG always collapsed here, NBG's lowest block at the filter.
            row(
                WIDE,
                "exact NBG, v = 0.04",
                &[&[0.7, 0.6, 0.2]],
                &[0.05],
                &[1.0],
                1.0,
            ),
            row(
                WIDE,
                "exact LBG, v = 0.04",
                &[&[0.003, 0.001, 0.1]],
                &[0.001],
                &[1.0],
                1.0,
            ),
        ]
    }

    fn holds(rows: &[Row]) -> Vec<bool> {
        claims(rows, &Settings::of(Profile::Quick))
            .iter()
            .map(|c| c.verdict == Decision::Holds)
            .collect()
    }

    #[test]
    fn claims_follow_the_rows() {
        assert_eq!(
            holds(&rows(0.2, false, 0.001)),
            [true, true, false, true, false, false]
        );
        assert_eq!(
            holds(&rows(0.0, true, 0.02)),
            [false, true, true, false, false, false]
        );
        // Deep 0.9 ± 0 against shallow 0.91 ± 0.01: within one standard error, undecided; a
        // deep network at 0.95 is more accurate.
        let settings = Settings::of(Profile::Quick);
        let mut r = rows(0.0, true, 0.02);
        assert_eq!(claims(&r, &settings)[5].verdict, Decision::Undecided);
        r[3].test_accuracy = vec![0.95, 0.95];
        assert_eq!(claims(&r, &settings)[5].verdict, Decision::Holds);
        // Fig. 3a: the shallow network's minibatch chains accept more in its first layer
        // (0.51 against 0.4) and the same in the second; the deep network's equally: no layer
        // contrary, so undecided; exact chains accepting more in a layer fail it.
        assert_eq!(claims(&r, &settings)[4].verdict, Decision::Undecided);
        r[1].layer_acceptance = vec![vec![0.6, 0.3], vec![0.6, 0.3]];
        assert_eq!(claims(&r, &settings)[4].verdict, Decision::Fails);
        // The exact claim reads only the exact rows: NBG's lowest block below the filter fails it.
        let mut r = rows(0.0, true, 0.02);
        let exact_nbg = r.len() - 2;
        r[exact_nbg].min_block_acceptance = vec![0.04];
        assert!(!holds(&r)[1]);
    }

    #[test]
    fn column_means_average_over_rows() {
        assert_eq!(column_means(&[vec![1.0, 2.0], vec![3.0, 6.0]]), [2.0, 4.0]);
        assert!(column_means(&[]).is_empty());
    }
}
