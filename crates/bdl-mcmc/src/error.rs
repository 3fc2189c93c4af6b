//! The error type of the MCMC crate.

use std::path::PathBuf;

/// What can go wrong when configuring, running, resuming or reading a chain.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the shared inference layer (configuration, tensors, model, likelihood,
    /// data).
    #[error(transparent)]
    Inference(#[from] bdl_inference::Error),

    /// Parameters in a dtype the sampler does not compute in.
    #[error("the sampler computes in f32 or f64; the parameters are {0:?}")]
    DType(candle_core::DType),

    /// A log-likelihood that is NaN or +∞: a proposal, or the current state at the start of a
    /// sweep, that the model cannot score.
    #[error("non-finite log-likelihood {value} at iteration {iteration}: {what}")]
    NonFinite {
        /// The iteration (from 0) of the sweep.
        iteration: u64,
        /// What was scored, e.g. `the proposal for block 3 (layer 0)`.
        what: String,
        /// The offending value.
        value: f64,
    },

    /// A chain folder that cannot be resumed or read: written under another configuration,
    /// or inconsistent.
    #[error("chain folder {}: {reason}", path.display())]
    Chain {
        /// The folder or file.
        path: PathBuf,
        /// What does not fit.
        reason: String,
    },
}

bdl_inference::method_error!(Error, "bdl-mcmc");

/// The result type of the MCMC crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
