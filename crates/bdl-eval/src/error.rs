//! The error type of the evaluation crate.

/// What can go wrong when evaluating.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the likelihoods crate (shapes, non-finite values).
    #[error(transparent)]
    Likelihood(#[from] bdl_likelihoods::Error),

    /// An error raised by candle itself.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// Inputs that cannot be evaluated together.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

/// The result type of the evaluation crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
