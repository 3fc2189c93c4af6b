//! Project automation for bdl, run as `cargo xtask <command>`.

mod fetch;
mod reproduce;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Project automation for bdl.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Download (or copy from a mirror) the data sets and verify their SHA-256 digests.
    Fetch(fetch::FetchArgs),
    /// Reproduce the papers' experiments (results under target/reproduce/).
    Reproduce(reproduce::ReproduceArgs),
    /// Run the performance suite: each line a ratio against a naive reference, in one run.
    Bench(bdl_experiments::bench::BenchArgs),
}

fn main() -> anyhow::Result<ExitCode> {
    if let Some(code) = rerun_with_thread_count() {
        return Ok(code);
    }
    match Cli::parse().command {
        Command::Fetch(args) => fetch::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Bench(args) => bdl_experiments::bench::run(&args),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// Candle's thread counts, set for the whole process when the command starts.
///
/// - `RAYON_NUM_THREADS` (the number of cores): candle reads how many blocks to cut a matrix
///   product into from it at every product and, when it is unset, reads `/proc/cpuinfo` again
///   each time: on the small models of the papers that made `vadam-uci`'s quick profile 5×
///   slower (326 s against 61 s).
/// - `CANDLE_NUM_THREADS` (1): candle 0.11 splits every elementwise map of 64 Ki numbers or more
///   between the calling thread and a process-wide pool of its own, outside the rayon pool
///   that `bdl_tensor::Threads` bounds, which waits spinning between maps. bdl runs its
///   experiments' independent fits one a core, so that pool's thread only competed with them
///   for a core (2% of a `vadam-uci` paper run's processor time), and the two fits' large maps
///   took turns on its lock. The maps' results do not depend on it.
///
/// Writing the environment of a running process is unsafe, so when either is unset the command
/// runs itself again with it set and returns that run's exit code; `None` when this is that run,
/// or when it cannot be started (then it goes on, only slower).
fn rerun_with_thread_count() -> Option<ExitCode> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let unset: Vec<(&str, String)> = [("RAYON_NUM_THREADS", cores), ("CANDLE_NUM_THREADS", 1)]
        .into_iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .map(|(name, n)| (name, n.to_string()))
        .collect();
    if unset.is_empty() {
        return None;
    }
    let status = std::process::Command::new(std::env::current_exe().ok()?)
        .args(std::env::args_os().skip(1))
        .envs(unset)
        .status()
        .ok()?;
    Some(ExitCode::from(
        status.code().map_or(1, |c| c.clamp(0, 255) as u8),
    ))
}
