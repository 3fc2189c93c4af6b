//! The papers' experiments of bdl as a tested library; `cargo xtask reproduce` is a thin
//! command line over it.
//!
//! - [`Experiment`]: a name, what it reproduces, and a run in a [`Profile`] (`smoke`: seconds
//!   on tiny data, run by `cargo test`; `quick`: minutes on the shipped fixtures; `paper`: the
//!   papers' settings on fetched data), giving an [`Outcome`].
//! - [`Claim`]: a paper's statement, our value, the criterion and whether it held, decided by
//!   the tested functions of [`claim`].
//! - [`report`]: the one writer of `results.json` (settings, profile, source revision, wall
//!   time, claims, rows), `table.md` and the figures, and of the claims index `index.md`.
//! - [`progress`]: the one progress-bar style; [`concurrency`]: the one concurrency policy
//!   (independent units side by side, one thread each); [`units`]: paper-profile units saved as
//!   they finish, so that a stopped run resumes.
//!
//! Each experiment writes `OUT/<experiment>/<profile>/`, so the profiles never share a folder.

pub mod bench;
pub mod claim;
pub mod concurrency;
pub mod listed;
pub mod progress;
pub mod report;
pub mod units;

mod cifar_c;
mod fits;
mod gibbs_augment;
mod gibbs_mnist;
mod gibbs_uq;
mod gibbs_xor;
mod laplace_toy;
mod laplace_uci;
mod shift_mnist;
mod vadam_convergence;
mod vadam_logreg;
mod vadam_rl;
mod vadam_uci;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use candle_core::Device;
use serde::{Deserialize, Serialize};

pub use bdl_tensor::device;
pub use claim::{Claim, Verdict};
pub use report::Outcome;

/// How much compute an experiment spends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Seconds, on tiny subsets of the shipped fixtures: that the experiment runs end to end
    /// (`cargo test` runs it). Its numbers mean nothing.
    Smoke,
    /// Minutes, on the shipped fixtures with shortened training.
    Quick,
    /// The papers' settings on the data `cargo xtask fetch` installs.
    Paper,
}

impl Profile {
    /// Every profile, cheapest first.
    pub const ALL: [Profile; 3] = [Profile::Smoke, Profile::Quick, Profile::Paper];

    /// The profile's name, as the command line and the output folders spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Smoke => "smoke",
            Self::Quick => "quick",
            Self::Paper => "paper",
        }
    }

    /// The data root of the profile: the shipped fixtures, or the fetched data for `paper`.
    pub fn data_root(self) -> PathBuf {
        match self {
            Self::Smoke | Self::Quick => bdl_data::root::fixtures(),
            Self::Paper => bdl_data::root::fetched(),
        }
    }
}

/// What an experiment's run knows about itself.
#[derive(Clone, Debug)]
pub struct Context {
    /// The profile.
    pub profile: Profile,
    /// The run's own output folder (created), `OUT/<experiment>/<profile>`.
    pub dir: PathBuf,
    /// The output root `OUT`, where the folders of the other experiments' runs are.
    pub out: PathBuf,
    /// The data root.
    pub data: PathBuf,
    /// No progress bars or log lines (smoke runs, tests).
    pub quiet: bool,
    /// Whether this run is one shard of a run spread over machines, or their merge.
    pub sharding: Sharding,
    /// The saved units this run computed and read back, for its report.
    pub tally: std::sync::Arc<units::Tally>,
    /// Where the experiment puts its networks and data (the CPU unless it runs on any device,
    /// [`Experiment::any_device`]).
    pub device: Device,
}

impl Context {
    /// A progress bar over `len` units of `what`, hidden when quiet.
    pub fn bar(&self, len: u64, what: &str) -> indicatif::ProgressBar {
        progress::bar(len, what, self.quiet)
    }

    /// The folder of experiment `name`'s run in this profile, `OUT/<name>/<profile>` (where
    /// one experiment finds what another's run saved, such as `gibbs-mnist`'s chains).
    pub fn folder_of(&self, name: &str) -> PathBuf {
        self.out.join(name).join(self.profile.name())
    }

    /// A log line on stderr, unless quiet.
    pub fn log(&self, line: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("  {}", line.as_ref());
        }
    }
}

/// One reproduced experiment of a paper.
pub trait Experiment: Sync {
    /// The name, as `cargo xtask reproduce NAME` spells it.
    fn name(&self) -> &'static str;

    /// One line: the paper and what of it this reproduces.
    fn reproduces(&self) -> &'static str;

    /// The profiles it can run in (all three unless it says otherwise).
    fn profiles(&self) -> &'static [Profile] {
        &Profile::ALL
    }

    /// Runs the experiment in `ctx.profile`, writing any large side outputs (chains) under
    /// `ctx.dir`.
    fn run(&self, ctx: &Context) -> Result<Outcome>;

    /// Whether its work is split into independent units ([`units::Units`]) that
    /// [`Sharding::Shard`] can spread over machines.
    fn shards(&self) -> bool {
        false
    }

    /// Whether it fits a list of method specs beside its own methods ([`listed`]), which a
    /// `methods.json` in its run folder replaces.
    fn lists_methods(&self) -> bool {
        false
    }

    /// Whether it puts its networks and data on [`Context::device`] (a GPU), rather than
    /// always on the CPU.
    fn any_device(&self) -> bool {
        false
    }
}

/// How a run takes part in a run spread over machines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sharding {
    /// The whole run on this machine.
    #[default]
    All,
    /// Only the units of shard `index` of `count` (every unit whose position in the
    /// experiment's list is `index` modulo `count`; 0-based), saved under `units/` for a later
    /// merge; no results, table or claims.
    Shard {
        /// Which shard, from 0.
        index: usize,
        /// How many shards.
        count: usize,
    },
    /// The results from the saved units of every shard (copied into this run's `units/`); a
    /// missing unit is an error, none is computed.
    Merge,
}

/// An experiment given by its name, what it reproduces and its run: how the workspace's own
/// experiments register (each module holds one `EXPERIMENT`).
#[derive(Clone, Copy)]
pub struct Entry {
    /// The name, as `cargo xtask reproduce NAME` spells it.
    pub name: &'static str,
    /// One line: the paper and what of it this reproduces.
    pub reproduces: &'static str,
    /// The run.
    pub run: fn(&Context) -> Result<Outcome>,
    /// Whether its runs are made of [`units::Units`], so that it can be sharded.
    pub shards: bool,
    /// Whether it fits listed methods ([`listed`]).
    pub lists_methods: bool,
    /// The profiles it can run in ([`Profile::ALL`] unless its data rules one out).
    pub profiles: &'static [Profile],
    /// Whether it runs on [`Context::device`].
    pub any_device: bool,
}

impl Experiment for Entry {
    fn name(&self) -> &'static str {
        self.name
    }

    fn reproduces(&self) -> &'static str {
        self.reproduces
    }

    fn profiles(&self) -> &'static [Profile] {
        self.profiles
    }

    fn run(&self, ctx: &Context) -> Result<Outcome> {
        (self.run)(ctx)
    }

    fn shards(&self) -> bool {
        self.shards
    }

    fn lists_methods(&self) -> bool {
        self.lists_methods
    }

    fn any_device(&self) -> bool {
        self.any_device
    }
}

/// Every experiment, in the order `all` runs them.
pub fn experiments() -> Vec<&'static dyn Experiment> {
    vec![
        &gibbs_mnist::EXPERIMENT,
        &gibbs_augment::EXPERIMENT,
        &gibbs_uq::EXPERIMENT,
        &gibbs_xor::EXPERIMENT,
        &laplace_toy::EXPERIMENT,
        &laplace_uci::EXPERIMENT,
        &shift_mnist::EXPERIMENT,
        &cifar_c::EXPERIMENT,
        &vadam_convergence::EXPERIMENT,
        &vadam_logreg::EXPERIMENT,
        &vadam_rl::EXPERIMENT,
        &vadam_uci::EXPERIMENT,
    ]
}

/// The experiment called `name`, or an error listing the choices.
pub fn find(name: &str) -> Result<&'static dyn Experiment> {
    let all = experiments();
    match all.iter().find(|e| e.name() == name) {
        Some(e) => Ok(*e),
        None => bail!(
            "unknown experiment `{name}`; choose one of: all, {}",
            all.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The names of the experiments with property `has`, comma separated (for error messages).
fn names_of(has: impl Fn(&dyn Experiment) -> bool) -> String {
    let names: Vec<&str> = (experiments().into_iter())
        .filter(|e| has(*e))
        .map(|e| e.name())
        .collect();
    names.join(", ")
}

/// Runs `experiment` in `profile` with its outputs under `out/<experiment>/<profile>/`, and
/// returns the outcome and the wall time in seconds.
pub fn run(
    experiment: &dyn Experiment,
    profile: Profile,
    out: &Path,
    quiet: bool,
) -> Result<(Outcome, f64)> {
    run_sharded(experiment, profile, out, quiet, Sharding::All)
}

/// [`run`] as one shard of a run spread over machines, or as the merge of the shards' units
/// (see [`Sharding`]). A shard writes `shard-K-of-N.json` (the units it computed) instead of
/// the results; the merge writes the results as an unsharded run would.
///
/// Errors when the experiment is not made of units, when a shard's index is not below the
/// count, and (merge) when a unit is missing.
pub fn run_sharded(
    experiment: &dyn Experiment,
    profile: Profile,
    out: &Path,
    quiet: bool,
    sharding: Sharding,
) -> Result<(Outcome, f64)> {
    run_on(experiment, profile, out, quiet, sharding, Device::Cpu)
}

/// [`run_sharded`] with the experiment's networks and data on `device` (`cargo xtask
/// reproduce --device cuda:0`; [`bdl_tensor::device`] reads the name).
///
/// Errors as [`run_sharded`], and when `device` is not the CPU for an experiment that runs on
/// the CPU only ([`Experiment::any_device`]).
pub fn run_on(
    experiment: &dyn Experiment,
    profile: Profile,
    out: &Path,
    quiet: bool,
    sharding: Sharding,
    device: Device,
) -> Result<(Outcome, f64)> {
    if !device.is_cpu() && !experiment.any_device() {
        bail!(
            "experiment {} runs on the CPU only (experiments that run on any device: {})",
            experiment.name(),
            names_of(|e| e.any_device())
        );
    }
    if !experiment.profiles().contains(&profile) {
        bail!(
            "experiment {} has no {} profile (it has: {})",
            experiment.name(),
            profile.name(),
            (experiment.profiles().iter())
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if sharding != Sharding::All && !experiment.shards() {
        bail!(
            "experiment {} is not made of independent units and cannot be sharded or merged \
             (experiments that can: {})",
            experiment.name(),
            names_of(|e| e.shards())
        );
    }
    if let Sharding::Shard { index, count } = sharding
        && index >= count
    {
        bail!(
            "shard {} of {count}: the shard must be 1 to {count}",
            index + 1
        );
    }
    let dir = out.join(experiment.name()).join(profile.name());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ctx = Context {
        profile,
        dir: dir.clone(),
        out: out.to_path_buf(),
        data: profile.data_root(),
        quiet,
        sharding,
        tally: Default::default(),
        device,
    };
    let start = Instant::now();
    let outcome = experiment.run(&ctx).with_context(|| {
        format!(
            "experiment {} ({} profile)",
            experiment.name(),
            profile.name()
        )
    })?;
    let wall = start.elapsed().as_secs_f64();
    let run = report::RunStats {
        wall_time_s: wall,
        units: ctx.tally.counts(),
    };
    report::write(&dir, experiment.name(), profile, run, &outcome)?;
    Ok((outcome, wall))
}

/// The README's examples, compiled and run as doctests (this crate depends on every other).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
