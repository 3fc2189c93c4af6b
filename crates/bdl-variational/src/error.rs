//! The error type of the variational crate.

/// What can go wrong when fitting a variational posterior.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the tensor layer.
    #[error(transparent)]
    Tensor(#[from] bdl_tensor::Error),

    /// An error of the model.
    #[error(transparent)]
    Model(#[from] bdl_models::Error),

    /// An error of the likelihood.
    #[error(transparent)]
    Likelihood(#[from] bdl_likelihoods::Error),

    /// An error raised by candle itself.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// A configuration value out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// The inputs and targets do not pair up, or there are none.
    #[error(
        "need as many targets as inputs (at least one), got {inputs} inputs and {targets} targets"
    )]
    Data {
        /// Rows of x.
        inputs: usize,
        /// Rows of y.
        targets: usize,
    },

    /// The variational mean or a curvature estimate stopped being finite.
    #[error("{method} diverged at step {step}: a non-finite {what} (lower the learning rate)")]
    Diverged {
        /// The method's name.
        method: &'static str,
        /// The update step (from 1).
        step: usize,
        /// What became non-finite.
        what: &'static str,
    },
}

/// The result type of the variational crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
