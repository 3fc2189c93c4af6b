//! `cargo xtask reproduce [EXPERIMENT|all] [--profile smoke|quick|paper]`: a thin command line
//! over the `bdl-experiments` library.

use std::path::PathBuf;

use anyhow::Result;
use bdl_experiments::Profile;
use clap::Args;

/// Arguments of `cargo xtask reproduce`.
#[derive(Debug, Args)]
#[command(after_help = experiment_list())]
pub(crate) struct ReproduceArgs {
    /// The experiment to run (`all` for every one; see the list below).
    #[arg(default_value = "all")]
    experiment: String,
    /// smoke (seconds, tiny data), quick (minutes, shipped data) or paper (the papers'
    /// settings, fetched data).
    #[arg(long, value_enum, default_value_t = Profile::Quick)]
    profile: Profile,
    /// Where the experiment folders go (`OUT/<experiment>/<profile>/`, and `OUT/index.md`).
    #[arg(long, default_value_os_t = bdl_data::root::workspace().join("target").join("reproduce"))]
    out: PathBuf,
}

/// The experiments and what each reproduces, for `--help`.
fn experiment_list() -> String {
    let mut text = String::from("Experiments:\n");
    for e in bdl_experiments::experiments() {
        text.push_str(&format!("  {:<14} {}\n", e.name(), e.reproduces()));
    }
    text
}

/// Runs the chosen experiments, then rewrites the claims index.
pub(crate) fn run(args: &ReproduceArgs) -> Result<()> {
    let chosen = match args.experiment.as_str() {
        "all" => bdl_experiments::experiments(),
        name => vec![bdl_experiments::find(name)?],
    };
    for experiment in chosen {
        let dir = args.out.join(experiment.name()).join(args.profile.name());
        eprintln!(
            "reproduce {} ({} profile) → {}",
            experiment.name(),
            args.profile.name(),
            dir.display()
        );
        let (outcome, wall) = bdl_experiments::run(experiment, args.profile, &args.out, false)?;
        let held = outcome.claims.iter().filter(|c| c.holds).count();
        eprintln!(
            "reproduce {}: {held} of {} claims hold; done in {wall:.1} s",
            experiment.name(),
            outcome.claims.len()
        );
    }
    let names: Vec<&str> = bdl_experiments::experiments()
        .iter()
        .map(|e| e.name())
        .collect();
    let index = bdl_experiments::report::write_index(&args.out, &names)?;
    eprintln!("claims index → {}", index.display());
    Ok(())
}
