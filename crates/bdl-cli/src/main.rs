//! `bdl`: fit any bdl method to a CSV file, predict with it, evaluate it.
//!
//! ```text
//! bdl fit --method laplace.json --data train.csv --target y --out model.safetensors
//! bdl predict --posterior model.safetensors --data test.csv --out predictions.csv
//! bdl evaluate --posterior model.safetensors --data test.csv
//! ```
//!
//! `fit` standardises the features with the training statistics, trains the MAP of an MLP
//! (`--hidden` units, `--epochs`, a learned σ for regression), then fits the method of the JSON
//! file (a `MethodSpec`; `{"method": "map", …}` keeps the MAP) from it. It writes the posterior
//! (safetensors with its JSON sidecar) and `<out>.model.json`: the target, the feature names,
//! the task and the feature standardisation, which `predict` and `evaluate` apply to new data.

mod model;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "bdl", version, about = "Bayesian deep learning on CSV files")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Fit a method to a CSV file and save its posterior.
    Fit(model::FitArgs),
    /// Write the predictive of a saved posterior on a CSV file's rows as CSV.
    Predict {
        /// The posterior `bdl fit` wrote.
        #[arg(long)]
        posterior: PathBuf,
        /// The rows to predict (the fitted feature columns, by name).
        #[arg(long)]
        data: PathBuf,
        /// Where the predictions go (standard output when absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the test metrics of a saved posterior on a CSV file with the target column.
    Evaluate {
        /// The posterior `bdl fit` wrote.
        #[arg(long)]
        posterior: PathBuf,
        /// The test rows, with the target column.
        #[arg(long)]
        data: PathBuf,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Fit(args) => model::fit(&args),
        Command::Predict {
            posterior,
            data,
            out,
        } => model::predict(&posterior, &data, out.as_deref()),
        Command::Evaluate { posterior, data } => model::evaluate(&posterior, &data),
    }
}
