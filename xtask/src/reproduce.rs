//! `cargo xtask reproduce [EXPERIMENT|all] [--profile smoke|quick|paper] [--shard K/N | --merge]`:
//! a thin command line over the `bdl-experiments` library.

use std::path::PathBuf;

use anyhow::Result;
use bdl_experiments::{Experiment, Profile, Sharding};
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
    /// Run only shard K of N (`K/N`, K from 1) of the experiment's independent units, for a
    /// run spread over machines (a job array: `--shard $((SLURM_ARRAY_TASK_ID + 1))/N`); it
    /// saves its units under `OUT/<experiment>/<profile>/units/` and writes no results.
    #[arg(long, value_parser = parse_shard, conflicts_with = "merge")]
    shard: Option<(usize, usize)>,
    /// Combine the saved units of every shard (their `units/` folders copied into this run's)
    /// into the usual results, computing nothing.
    #[arg(long)]
    merge: bool,
    /// A JSON list of method specs (`bdl_methods::MethodSpec`) to fit beside the experiment's
    /// own methods, in place of its default list (experiments that list methods:
    /// shift-mnist, laplace-uci); saved as `methods.json` in the run's folder, which later runs there read.
    #[arg(long)]
    methods: Option<PathBuf>,
    /// Where the networks and data go: cpu, or cuda:N for CUDA device N (experiments that run
    /// on any device: cifar-c, and shift-mnist for its ResNet rows; needs `cargo run -p xtask
    /// --features cuda -- reproduce …`).
    #[arg(long, default_value = "cpu")]
    device: String,
}

/// `K/N` with 1 ≤ K ≤ N.
fn parse_shard(text: &str) -> Result<(usize, usize), String> {
    let (k, n) = text
        .split_once('/')
        .ok_or_else(|| format!("`{text}`: expected K/N, e.g. 2/8"))?;
    let (k, n): (usize, usize) = (
        k.trim().parse().map_err(|e| format!("shard `{k}`: {e}"))?,
        n.trim().parse().map_err(|e| format!("count `{n}`: {e}"))?,
    );
    if n == 0 || k == 0 || k > n {
        return Err(format!("`{text}`: need 1 ≤ K ≤ N"));
    }
    Ok((k, n))
}

/// The experiments and what each reproduces, for `--help`.
fn experiment_list() -> String {
    let mut text = String::from("Experiments:\n");
    for e in bdl_experiments::experiments() {
        let only = if e.profiles().len() < Profile::ALL.len() {
            let names: Vec<&str> = e.profiles().iter().map(|p| p.name()).collect();
            format!(" [profiles: {}]", names.join(", "))
        } else {
            String::new()
        };
        text.push_str(&format!("  {:<14} {}{only}\n", e.name(), e.reproduces()));
    }
    text
}

/// Why `all` skips `experiment` in `profile` (on the CPU, or on another device): it has no
/// such profile, or it runs on the CPU only; `None` when it runs.
fn skipped(experiment: &dyn Experiment, profile: Profile, on_cpu: bool) -> Option<String> {
    if !experiment.profiles().contains(&profile) {
        Some(format!("it has no {} profile", profile.name()))
    } else if !on_cpu && !experiment.any_device() {
        Some("it runs on the CPU only".to_owned())
    } else {
        None
    }
}

/// Runs the chosen experiments, then rewrites the claims index.
pub(crate) fn run(args: &ReproduceArgs) -> Result<()> {
    let chosen = match args.experiment.as_str() {
        "all" => bdl_experiments::experiments(),
        name => vec![bdl_experiments::find(name)?],
    };
    let device = bdl_experiments::device(&args.device)?;
    let methods = (args.methods.as_deref())
        .map(bdl_experiments::listed::read)
        .transpose()?;
    for experiment in chosen {
        if args.experiment == "all"
            && let Some(why) = skipped(experiment, args.profile, device.is_cpu())
        {
            eprintln!(
                "reproduce {}: skipped, {why} (see `cargo xtask reproduce --help`)",
                experiment.name()
            );
            continue;
        }
        let dir = args.out.join(experiment.name()).join(args.profile.name());
        if let Some(text) = &methods {
            if !experiment.lists_methods() {
                anyhow::bail!("{} fits no listed methods (--methods)", experiment.name());
            }
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(bdl_experiments::listed::FILE), text)?;
        }
        eprintln!(
            "reproduce {} ({} profile) → {}",
            experiment.name(),
            args.profile.name(),
            dir.display()
        );
        let sharding = match (args.shard, args.merge) {
            (Some((k, n)), _) => Sharding::Shard {
                index: k - 1,
                count: n,
            },
            (None, true) => Sharding::Merge,
            (None, false) => Sharding::All,
        };
        let (outcome, wall) = bdl_experiments::run_on(
            experiment,
            args.profile,
            &args.out,
            false,
            sharding,
            device.clone(),
        )?;
        if let Some(shard) = &outcome.shard {
            eprintln!(
                "reproduce {}: shard {} of {} computed {} of {} units in {wall:.1} s",
                experiment.name(),
                shard.shard,
                shard.of,
                shard.units.len(),
                shard.total
            );
            continue;
        }
        eprintln!(
            "reproduce {}: {}; done in {wall:.1} s",
            experiment.name(),
            bdl_experiments::claim::summary(&outcome.claims)
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

#[cfg(test)]
mod tests {
    use bdl_experiments::{Profile, find};

    use super::{parse_shard, skipped};

    #[test]
    fn all_skips_what_has_not_the_profile_or_the_device() {
        let cifar = find("cifar-c").unwrap();
        let toy = find("laplace-toy").unwrap();
        let why = skipped(cifar, Profile::Quick, true).unwrap();
        assert!(why.contains("no quick profile"), "{why}");
        assert_eq!(skipped(cifar, Profile::Smoke, true), None);
        assert_eq!(skipped(cifar, Profile::Paper, false), None);
        assert_eq!(skipped(toy, Profile::Quick, true), None);
        let why = skipped(toy, Profile::Quick, false).unwrap();
        assert!(why.contains("CPU only"), "{why}");
    }

    #[test]
    fn shards_are_k_of_n_from_one() {
        assert_eq!(parse_shard("2/8"), Ok((2, 8)));
        assert_eq!(parse_shard("1/1"), Ok((1, 1)));
        for bad in ["0/3", "4/3", "3", "a/3", "1/0", "-1/3"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
