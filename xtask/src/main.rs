//! Project automation for bdl, run as `cargo xtask <command>`.

mod bench;
mod fetch;
mod reproduce;

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

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Fetch(args) => fetch::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Bench(args) => bench::run(&args),
    }
}
