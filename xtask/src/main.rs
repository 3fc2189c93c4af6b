//! Project automation for bdl, run as `cargo xtask <command>`.

mod bench;
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
    Bench(bench::BenchArgs),
}

fn main() -> anyhow::Result<ExitCode> {
    if let Some(code) = rerun_with_thread_count() {
        return Ok(code);
    }
    match Cli::parse().command {
        Command::Fetch(args) => fetch::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Bench(args) => bench::run(&args),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// Candle reads how many blocks to cut a matrix product into from `RAYON_NUM_THREADS` at every
/// product and, when it is unset, reads `/proc/cpuinfo` again each time: on the small models of
/// the papers that made `vadam-uci`'s quick profile 5× slower (326 s against 61 s). Writing the
/// environment of a running process is unsafe, so when the variable is unset the command runs
/// itself again with it set (to the number of cores) and returns that run's exit code; `None`
/// when this is that run, or when it cannot be started (then it goes on, only slower).
fn rerun_with_thread_count() -> Option<ExitCode> {
    if std::env::var_os("RAYON_NUM_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let status = std::process::Command::new(std::env::current_exe().ok()?)
        .args(std::env::args_os().skip(1))
        .env("RAYON_NUM_THREADS", cores.to_string())
        .status()
        .ok()?;
    Some(ExitCode::from(
        status.code().map_or(1, |c| c.clamp(0, 255) as u8),
    ))
}
