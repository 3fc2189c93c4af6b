//! The error type of the baselines crate.

/// What can go wrong when training a baseline or forming its predictive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the shared inference layer (configuration, training, checkpoints).
    #[error(transparent)]
    Inference(#[from] bdl_inference::Error),

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

bdl_inference::method_error!(Error, "bdl-baselines");

/// The result type of the baselines crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
