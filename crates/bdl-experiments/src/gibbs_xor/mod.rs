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

mod claims;
mod report;
mod settings;

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::Dataset;
use bdl_data::toy::{self};
use bdl_eval::metrics::{self, MeanSe};
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

use self::claims::claims;
pub(crate) use self::claims::{BLOCKING, DEPTH};
use self::report::{figure, folder_name, table};
use self::settings::Settings;
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
    profiles: &Profile::ALL,
    any_device: false,
};

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

#[cfg(test)]
mod tests {
    use bdl_eval::metrics::MeanSe;

    use super::*;
    use crate::Profile;
    use crate::claim::Decision;

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
