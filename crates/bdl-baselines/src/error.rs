//! The error type of the baselines crate.

/// What can go wrong when training a baseline or forming its predictive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the tensor layer.
    #[error(transparent)]
    Tensor(#[from] bdl_tensor::Error),

    /// An error of the model.
    #[error(transparent)]
    Model(#[from] bdl_models::Error),

    /// An error of the likelihood or the predictive.
    #[error(transparent)]
    Likelihood(#[from] bdl_likelihoods::Error),

    /// An error of the data layer (the held-out split).
    #[error(transparent)]
    Data(#[from] bdl_data::Error),

    /// An error raised by candle itself.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// A loss became NaN or infinite.
    #[error(
        "{stage} diverged: the {stage} loss is {loss} at epoch {epoch} (lower the learning rate)"
    )]
    Diverged {
        /// What was being computed: `"training"` (the regularised training loss) or
        /// `"validation"` (the held-out negative log-likelihood).
        stage: &'static str,
        /// The epoch (from 0) at which the loss stopped being finite.
        epoch: usize,
        /// The loss value.
        loss: f64,
    },

    /// A configuration value out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// The inputs and targets do not describe the same examples.
    #[error("x has {x_rows} rows but y has {y_rows}: inputs and targets must pair up row by row")]
    RowMismatch {
        /// Rows of x (0 for a scalar).
        x_rows: usize,
        /// Rows of y (0 for a scalar).
        y_rows: usize,
    },

    /// There is nothing to train on.
    #[error("no training examples (after holding out the validation fraction)")]
    NoData,

    /// A parameter vector of the wrong length was given to a SWAG accumulator.
    #[error("SWAG holds {expected} parameters but the snapshot has {actual}")]
    SnapshotLength {
        /// D, the number of parameters of the accumulator.
        expected: usize,
        /// The length of the offending snapshot.
        actual: usize,
    },

    /// A SWAG covariance needs more snapshots than were collected.
    #[error(
        "the {covariance} SWAG covariance needs at least {needed} snapshots, but {collected} were \
         collected (raise `snapshots`, or `rank` for the low-rank part)"
    )]
    TooFewSnapshots {
        /// Which covariance was asked for.
        covariance: &'static str,
        /// How many snapshots (or deviation columns) it needs.
        needed: usize,
        /// How many there are.
        collected: usize,
    },
}

/// The result type of the baselines crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
