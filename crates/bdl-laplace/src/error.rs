//! The error type of the Laplace crate.

/// What can go wrong when fitting or using a Laplace posterior.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the shared inference layer (configuration, model, likelihood, checkpoints).
    #[error(transparent)]
    Inference(#[from] bdl_inference::Error),

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

    /// A diagonal Laplace precision h_dd + λ_d that is not positive: a parameter without data
    /// signal (zero GGN diagonal, e.g. a dead ReLU) under a zero prior precision.
    #[error(
        "the diagonal posterior precision of parameter {index} is {precision} (GGN diagonal \
         {ggn}, prior precision {prior}): its variance would be infinite. Parameters without data \
         signal need a prior precision λ > 0"
    )]
    NonPositiveDiagonal {
        /// The flat parameter index.
        index: usize,
        /// h_dd + λ_d.
        precision: f64,
        /// h_dd.
        ggn: f64,
        /// λ_d.
        prior: f64,
    },

    /// A network the KFAC Laplace cannot factor (a channelwise scale without its shift).
    #[error("KFAC Laplace: {reason}")]
    KronUnsupported {
        /// What is not supported.
        reason: String,
    },

    /// The eigendecomposition of the GGN did not converge.
    #[error("the eigendecomposition of the {size}×{size} GGN failed: {reason}")]
    Eigendecomposition {
        /// The dimension of the GGN.
        size: usize,
        /// What faer reported.
        reason: String,
    },
}

bdl_inference::method_error!(Error, "bdl-laplace");

/// The result type of the Laplace crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
