//! `cargo xtask reproduce [EXPERIMENT|all] [--profile quick|paper]`: the papers' experiments.
//!
//! Each experiment writes `target/reproduce/<experiment>/` with `results.json` (a top-level
//! object with `experiment`, `profile` and `rows`), `table.md` (the paper's claim beside ours)
//! and its SVG plots. The quick profile runs on the data shipped in `fixtures/` in minutes; the
//! paper profile uses the papers' settings on the data that `cargo xtask fetch` installs.

mod gibbs_mnist;
mod gibbs_xor;
mod laplace_toy;
mod laplace_uci;
mod vadam_blr;
mod vadam_uci;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use clap::{Args, ValueEnum};
use serde::Serialize;

/// How much compute an experiment spends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Profile {
    /// Shipped data, shortened training: minutes on two cores.
    Quick,
    /// The papers' settings on fetched data.
    Paper,
}

/// Arguments of `cargo xtask reproduce`.
#[derive(Debug, Args)]
pub(crate) struct ReproduceArgs {
    /// The experiment to run (`all` for every one).
    #[arg(default_value = "all")]
    experiment: String,
    /// Quick (shipped data, short runs) or paper (the papers' settings, fetched data).
    #[arg(long, value_enum, default_value_t = Profile::Quick)]
    profile: Profile,
    /// Where the experiment folders go.
    #[arg(long, default_value_os_t = bdl_data::root::workspace().join("target").join("reproduce"))]
    out: PathBuf,
}

/// What an experiment needs to know about its run.
pub(crate) struct Context {
    /// The profile.
    pub(crate) profile: Profile,
    /// The experiment's output folder (created).
    pub(crate) dir: PathBuf,
    /// The data root: shipped fixtures (quick) or fetched data (paper).
    pub(crate) data: PathBuf,
}

type Experiment = fn(&Context) -> Result<()>;

/// Every experiment, by name.
const EXPERIMENTS: &[(&str, Experiment)] = &[
    ("gibbs-mnist", gibbs_mnist::run),
    ("gibbs-xor", gibbs_xor::run),
    ("laplace-toy", laplace_toy::run),
    ("laplace-uci", laplace_uci::run),
    ("vadam-blr", vadam_blr::run),
    ("vadam-uci", vadam_uci::run),
];

/// Runs the chosen experiments.
pub(crate) fn run(args: &ReproduceArgs) -> Result<()> {
    let chosen: Vec<&(&str, Experiment)> = match args.experiment.as_str() {
        "all" => EXPERIMENTS.iter().collect(),
        name => match EXPERIMENTS.iter().find(|(n, _)| *n == name) {
            Some(e) => vec![e],
            None => bail!(
                "unknown experiment `{name}`; choose one of: all, {}",
                EXPERIMENTS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    };
    let data = match args.profile {
        Profile::Quick => bdl_data::root::fixtures(),
        Profile::Paper => bdl_data::root::fetched(),
    };
    for (name, experiment) in chosen {
        let dir = args.out.join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        eprintln!(
            "reproduce {name} ({:?} profile) → {}",
            args.profile,
            dir.display()
        );
        let start = Instant::now();
        experiment(&Context {
            profile: args.profile,
            dir: dir.clone(),
            data: data.clone(),
        })
        .with_context(|| format!("experiment {name}"))?;
        eprintln!(
            "reproduce {name}: done in {:.1} s",
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Writes `results.json` as `{"experiment", "profile", "rows"}`.
pub(crate) fn write_results(ctx: &Context, experiment: &str, rows: &impl Serialize) -> Result<()> {
    #[derive(Serialize)]
    struct Results<'a, R> {
        experiment: &'a str,
        profile: Profile,
        rows: &'a R,
    }
    let json = serde_json::to_vec_pretty(&Results {
        experiment,
        profile: ctx.profile,
        rows,
    })?;
    write(&ctx.dir.join("results.json"), &json)
}

/// Writes a file of the experiment's folder, atomically.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    bdl_tensor::write_atomically(path, bytes).with_context(|| format!("writing {}", path.display()))
}
