//! The error type of the Laplace crate.

/// What can go wrong when fitting or using a Laplace posterior.
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

    /// The posterior precision H + Λ₀ has no Cholesky factor.
    #[error(
        "the posterior precision (GGN + prior precision, {size}×{size}) is not positive definite: \
         non-positive pivot at subnetwork position {pivot}. The GGN is only positive \
         semi-definite (rank-deficient where parameters carry no data signal, e.g. dead ReLUs), \
         so a zero or tiny prior precision cannot make it invertible: use a prior precision λ > 0"
    )]
    NotPositiveDefinite {
        /// The dimension of the precision.
        size: usize,
        /// The position of the first non-positive pivot.
        pivot: usize,
    },

    /// An argument outside its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// The result type of the Laplace crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
