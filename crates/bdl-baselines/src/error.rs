//! The error type of the baselines crate.

/// What can go wrong when training a baseline.
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

    /// The training loss became NaN or infinite.
    #[error("training diverged: the loss is {loss} at epoch {epoch} (lower the learning rate)")]
    Diverged {
        /// The epoch at which the loss stopped being finite.
        epoch: usize,
        /// The loss value.
        loss: f64,
    },

    /// A configuration value out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
}

/// The result type of the baselines crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
