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
//! block is where a layer block's acceptance can collapse.
//!
//! Chains of one network share their seed across scenarios, so chain c starts from the same θ₀
//! in every scenario. Wall times go to `timing.json` and `table.md`, not to `results.json`, which
//! is identical from run to run.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::Dataset;
use bdl_data::toy::{self, NoisyXor};
use bdl_eval::metrics::{self, MeanSe};
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    BatchMode, Blocking, Chain, ChainConfig, ChunkReport, GibbsConfig, Keep, Precision,
    ProposalVariance,
};
use bdl_models::{Activation, Mlp, MlpSpec};
use bdl_tensor::Seed;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::{Context, Profile};

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

struct Settings {
    /// Chains per scenario on the paper's two networks.
    chains: usize,
    /// Chains per blocking on the wide network.
    wide_chains: usize,
    iterations: u64,
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
        match profile {
            Profile::Quick => Settings {
                chains: 10,
                wide_chains: 2,
                iterations: 2000,
                burn_in: 500,
                predict_last: 500,
                thin: 5,
                chunk_len: 500,
            },
            // The paper: 110,000 iterations, acceptance after the first 10,000, predictions
            // over the last 10,000 (here every 10th draw of them).
            Profile::Paper => Settings {
                chains: 10,
                wide_chains: 10,
                iterations: 110_000,
                burn_in: 10_000,
                predict_last: 10_000,
                thin: 10,
                chunk_len: 10_000,
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
}

/// What one chain gave.
#[derive(Clone, Debug)]
pub(super) struct ChainSummary {
    /// Acceptance rate of every layer after the burn-in.
    pub(super) layer_acceptance: Vec<f64>,
    /// The lowest acceptance rate of any block after the burn-in.
    pub(super) min_block_acceptance: f64,
    /// Test accuracy of the Bayesian marginal.
    pub(super) accuracy: f64,
}

/// One scenario (or blocking) on one network, in `results.json`.
#[derive(Debug, Serialize)]
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
    mean_test_accuracy: Option<f64>,
    se_test_accuracy: Option<f64>,
    /// Examples scored per iteration (blocks × batch): the cost of a sweep.
    examples_scored_per_iteration: usize,
}

/// The wall time of one run (not in `results.json`: it differs between runs).
#[derive(Debug, Serialize)]
struct Timing {
    network: String,
    scenario: String,
    chains: usize,
    iterations: u64,
    wall_s: f64,
}

fn name(widths: &[usize]) -> String {
    widths
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join("-")
}

/// Runs chains 0..`chains` of `config` under `dir` in parallel, with a progress bar; returns the
/// wall time in seconds.
pub(super) fn run_timed(
    mlp: &Mlp,
    likelihood: Likelihood,
    train: &Dataset,
    config: &ChainConfig,
    dir: &Path,
    chains: usize,
    label: &str,
) -> Result<f64> {
    let bar = progress_bar(config.iterations * chains as u64, label);
    let start = Instant::now();
    bdl_mcmc::run_chains(mlp, likelihood, train, config, dir, chains, &|r| {
        bar.inc(chunk_done(r, config.chunk_len))
    })
    .with_context(|| format!("sampling {label}"))?;
    let secs = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    eprintln!(
        "  {label}: {chains} chain(s) × {} iterations in {secs:.1} s",
        config.iterations
    );
    Ok(secs)
}

/// A progress bar over `total` iterations.
pub(super) fn progress_bar(total: u64, label: &str) -> ProgressBar {
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template(
            "  {bar:30} {pos}/{len} iterations  {msg}  [{elapsed_precise}, eta {eta}]",
        )
        .expect("a valid template"),
    );
    bar.set_message(label.to_owned());
    bar
}

/// The iterations of the chunk that `report` announces.
pub(super) fn chunk_done(report: ChunkReport, chunk_len: u64) -> u64 {
    report.done - (report.done - 1) / chunk_len * chunk_len
}

/// Acceptance after `burn_in` and the test accuracy of the Bayesian marginal over `keep`.
pub(super) fn summarise(
    mlp: &Mlp,
    likelihood: &Likelihood,
    chain: &Chain,
    burn_in: u64,
    keep: &Keep,
    test: &Dataset,
) -> Result<ChainSummary> {
    let (acceptance, _) = chain.acceptance(burn_in)?;
    let draws = chain.draws(keep)?;
    let accuracy = accuracy(mlp, likelihood, &draws.params, test)?;
    Ok(ChainSummary {
        layer_acceptance: acceptance.layer_rates(chain.blocks()),
        min_block_acceptance: acceptance.rates().into_iter().fold(1.0, f64::min),
        accuracy,
    })
}

/// Test accuracy of the Bayesian marginal (1/S) Σ_s p(y | x, θ_s) over `draws` `[S, D]`.
pub(super) fn accuracy(
    mlp: &Mlp,
    likelihood: &Likelihood,
    draws: &candle_core::Tensor,
    test: &Dataset,
) -> Result<f64> {
    let predictive = bdl_mcmc::predictive(mlp, likelihood, draws, test.x())?;
    Ok(metrics::accuracy(&predictive, test.y())?)
}

/// Runs the experiment.
pub(crate) fn run(ctx: &Context) -> Result<()> {
    let settings = Settings::of(ctx.profile);
    let (train, test) = toy::noisy_xor(&ctx.data, NoisyXor::Paper).context("loading noisy XOR")?;
    let chains_dir = ctx.dir.join("chains");
    // The quick profile always samples afresh, so that its wall times are measured; the paper
    // profile resumes interrupted chains (run_chains checks that the settings match).
    if ctx.profile == Profile::Quick && chains_dir.exists() {
        std::fs::remove_dir_all(&chains_dir)
            .with_context(|| format!("removing {}", chains_dir.display()))?;
    }
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
        });
        runs.push(Run {
            network,
            scenario: "(2) exact NBG",
            blocking: Blocking::Node,
            variance: EXACT_VARIANCE,
            batch: BatchMode::Exact,
            chains: settings.chains,
        });
        runs.push(Run {
            network,
            scenario: "minibatch LBG",
            blocking: Blocking::Layer,
            variance: MINIBATCH_VARIANCE,
            batch: minibatch,
            chains: settings.chains,
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
        });
    }

    let likelihood = Likelihood::Bernoulli;
    let keep = Keep {
        burn_in: 0,
        thin: settings.thin,
        last: Some(settings.predict_last),
    };
    let (mut rows, mut timings) = (Vec::new(), Vec::new());
    for run in &runs {
        let network = name(run.network);
        let mlp = Mlp::new(MlpSpec::new(run.network, Activation::Sigmoid))?;
        let gibbs = GibbsConfig::new(
            run.blocking.clone(),
            ProposalVariance::Common(run.variance),
            run.batch,
        );
        let config = ChainConfig {
            iterations: settings.iterations,
            chunk_len: settings.chunk_len,
            record_every: settings.thin,
            precision: Precision::F32,
            seed: Seed(2023).fork("gibbs-xor").fork(&network),
            ..ChainConfig::new(gibbs)
        };
        let dir = chains_dir.join(format!(
            "{network}_{}",
            run.scenario
                .trim_start_matches(|c: char| !c.is_alphabetic())
                .replace(' ', "-")
        ));
        let label = format!("{network} {}", run.scenario);
        let wall_s = run_timed(&mlp, likelihood, &train, &config, &dir, run.chains, &label)?;
        timings.push(Timing {
            network: network.clone(),
            scenario: run.scenario.to_owned(),
            chains: run.chains,
            iterations: settings.iterations,
            wall_s,
        });
        let summaries = (0..run.chains)
            .map(|c| {
                let chain = Chain::open(&bdl_mcmc::chain_dir(&dir, c))?;
                summarise(&mlp, &likelihood, &chain, settings.burn_in, &keep, &test)
            })
            .collect::<Result<Vec<_>>>()?;
        let n_blocks = config
            .gibbs
            .kernel(bdl_models::Model::layout(&mlp))?
            .blocks()
            .len();
        let row = |scenario: &str, filter: Option<f64>| {
            let kept: Vec<usize> = (0..run.chains)
                .filter(|&c| filter.is_none_or(|f| summaries[c].min_block_acceptance >= f))
                .collect();
            let pick = |f: &dyn Fn(&ChainSummary) -> f64| -> Vec<f64> {
                kept.iter().map(|&c| f(&summaries[c])).collect()
            };
            let layer_acceptance: Vec<Vec<f64>> = kept
                .iter()
                .map(|&c| summaries[c].layer_acceptance.clone())
                .collect();
            let test_accuracy = pick(&|s| s.accuracy);
            let accuracy = (!kept.is_empty()).then(|| MeanSe::of(&test_accuracy));
            Row {
                network: network.clone(),
                scenario: scenario.to_owned(),
                blocking: match run.blocking {
                    Blocking::Layer => "layer",
                    _ => "node",
                }
                .to_owned(),
                batch_size: match run.batch {
                    BatchMode::Exact => None,
                    BatchMode::Minibatch(b) => Some(b),
                },
                proposal_variance: run.variance,
                min_block_acceptance_filter: filter,
                chains_run: run.chains,
                mean_layer_acceptance: (!kept.is_empty()).then(|| column_means(&layer_acceptance)),
                layer_acceptance,
                min_block_acceptance: pick(&|s| s.min_block_acceptance),
                test_accuracy,
                mean_test_accuracy: accuracy.map(|a| a.mean),
                se_test_accuracy: accuracy.map(|a| a.se),
                chains_kept: kept,
                examples_scored_per_iteration: n_blocks
                    * match run.batch {
                        BatchMode::Exact => train.len(),
                        BatchMode::Minibatch(b) => b.min(train.len()),
                    },
            }
        };
        rows.push(row(run.scenario, None));
        if run.scenario.starts_with("(2)") {
            for (number, filter) in FILTERS {
                rows.push(row(
                    &format!("{number} exact NBG, every block ≥ {filter}"),
                    Some(filter),
                ));
            }
        }
    }
    super::write_results(ctx, "gibbs-xor", &rows)?;
    super::write(
        &ctx.dir.join("timing.json"),
        &serde_json::to_vec_pretty(&timings)?,
    )?;
    super::write(
        &ctx.dir.join("table.md"),
        table(&rows, &timings, &settings).as_bytes(),
    )?;
    super::write(
        &ctx.dir.join("gibbs-xor.svg"),
        figure(&rows).to_svg().as_bytes(),
    )?;
    Ok(())
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

fn wall(timings: &[Timing], network: &str, scenario: &str) -> f64 {
    timings
        .iter()
        .find(|t| t.network == network && t.scenario.starts_with(scenario))
        .map_or(f64::NAN, |t| t.wall_s)
}

fn table(rows: &[Row], timings: &[Timing], settings: &Settings) -> String {
    let mut t = Table::new([
        "network",
        "scenario",
        "chains kept",
        "acceptance per layer (mean over chains)",
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
        let time = if r.min_block_acceptance_filter.is_some() {
            "–".to_owned()
        } else {
            format!("{:.1}", wall(timings, &r.network, &r.scenario))
        };
        t.row([
            r.network.clone(),
            r.scenario.clone(),
            format!("{} of {}", r.chains_kept.len(), r.chains_run),
            r.mean_layer_acceptance
                .as_ref()
                .map_or_else(|| "–".to_owned(), |a| list(a, 3)),
            range,
            match (r.mean_test_accuracy, r.se_test_accuracy) {
                (Some(m), Some(se)) => format!("{m:.3} ± {se:.3}"),
                _ => "–".to_owned(),
            },
            time,
        ]);
    }

    let mut claims = Table::new(["paper's claim", "ours", "holds"]);
    // Node against layer blocks at the common variance.
    let (wide_nbg, wide_lbg) = (
        find(rows, WIDE, "minibatch NBG"),
        find(rows, WIDE, "minibatch LBG"),
    );
    let lbg_low = wide_lbg
        .mean_layer_acceptance
        .as_ref()
        .map_or(f64::NAN, |a| a.iter().copied().fold(1.0, f64::min));
    let nbg_low = wide_nbg
        .min_block_acceptance
        .iter()
        .copied()
        .fold(1.0, f64::min);
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
    claims.row([
        format!(
            "node blocking keeps acceptance non-zero where layer blocking collapses (variance \
             {MINIBATCH_VARIANCE}, batch {BATCH})"
        ),
        format!(
            "2-50-50-1: LBG per layer {} (lowest {lbg_low:.4}); NBG's lowest block over all \
             chains {nbg_low:.3}. Per layer, {}; {}",
            list(wide_lbg.mean_layer_acceptance.as_deref().unwrap_or(&[]), 4),
            small(SHALLOW),
            small(DEEP)
        ),
        yes(lbg_low < COLLAPSED && nbg_low >= FILTERS[1].1).into(),
    ]);
    // Depth at the common variance: no layer's rate above the previous layer's by more than
    // two standard errors (over chains) of the difference, and the last layer's below the
    // first's.
    let falls = |network: &[usize]| {
        let r = find(rows, network, "(1)");
        let mean = r.mean_layer_acceptance.clone().unwrap_or_default();
        let se: Vec<f64> = (0..mean.len())
            .map(|j| {
                let column: Vec<f64> = r.layer_acceptance.iter().map(|c| c[j]).collect();
                MeanSe::of(&column).se
            })
            .collect();
        let never_rises = (1..mean.len())
            .all(|j| mean[j] - mean[j - 1] <= 2.0 * (se[j].powi(2) + se[j - 1].powi(2)).sqrt());
        let falls = never_rises && mean.last() < mean.first();
        let shown = mean
            .iter()
            .zip(&se)
            .map(|(m, s)| format!("{m:.3} ± {s:.3}"))
            .collect::<Vec<_>>()
            .join(", ");
        (falls, shown)
    };
    let ((shallow_falls, shallow), (deep_falls, deep)) = (falls(SHALLOW), falls(DEEP));
    claims.row([
        format!(
            "acceptance falls with depth at a common variance (scenario (1), variance \
             {MINIBATCH_VARIANCE}; yes if the last layer's rate is below the first's and no \
             layer's rate exceeds the previous layer's by more than two standard errors)"
        ),
        format!(
            "per layer, mean ± se over chains: {}: {shallow}; {}: {deep}",
            name(SHALLOW),
            name(DEEP),
        ),
        yes(shallow_falls && deep_falls).into(),
    ]);
    // Minibatch against exact.
    let mut faster_and_better = true;
    let mut ours = Vec::new();
    for network in [SHALLOW, DEEP] {
        let (m, e) = (find(rows, network, "(1)"), find(rows, network, "(2)"));
        let (tm, te) = (
            wall(timings, &name(network), "(1)"),
            wall(timings, &name(network), "(2)"),
        );
        let (am, ae) = (
            m.mean_test_accuracy.unwrap_or(f64::NAN),
            e.mean_test_accuracy.unwrap_or(f64::NAN),
        );
        faster_and_better &= tm < te && am > ae;
        ours.push(format!(
            "{}: {tm:.1} s vs {te:.1} s, accuracy {am:.3} vs {ae:.3}",
            name(network)
        ));
    }
    claims.row([
        "minibatch NBG is faster and more accurate than exact NBG (same iterations)".to_owned(),
        ours.join("; "),
        yes(faster_and_better).into(),
    ]);

    format!(
        "# gibbs-xor: blocked Gibbs on noisy XOR\n\n\
         5000 training and 1200 test points; sigmoid MLPs with a Bernoulli (logit) output, prior \
         N(0, 10 I), θ₀ from the prior, f32. {} iterations per chain (one sweep over all blocks \
         each); acceptance from iteration {} on; test accuracy of each chain's Bayesian marginal \
         over its last {} iterations (every {}th draw). Scenarios (3) and (4) are the chains of \
         (2) whose every block accepts at least 0.2 / 0.05. Wall times: all chains of a run in \
         parallel on this machine's cores.\n\n{}\n## The paper's claims\n\n{}",
        settings.iterations,
        settings.burn_in,
        settings.predict_last,
        settings.thin,
        t.to_markdown(),
        claims.to_markdown()
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

pub(super) fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
