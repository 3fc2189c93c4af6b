//! The error type of the likelihoods crate.

use candle_core::DType;

/// What can go wrong in `bdl-likelihoods`: every variant names the argument and the place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error raised by the tensor layer.
    #[error(transparent)]
    Tensor(#[from] bdl_tensor::Error),

    /// An error raised by candle itself.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// A tensor has a shape other than the one its argument requires.
    #[error("{arg}: expected shape {expected}, got {actual:?}")]
    Shape {
        /// The argument (`f`, `y`, `var_f`, ...).
        arg: String,
        /// The shape that was required, in words (`[N, K]`, `[N] or [N, 1]`, ...).
        expected: String,
        /// The shape that was found.
        actual: Vec<usize>,
    },

    /// A tensor has a data type the operation does not support.
    #[error("{arg}: unsupported dtype {dtype:?} (expected {expected})")]
    DType {
        /// The argument.
        arg: String,
        /// The dtype that was found.
        dtype: DType,
        /// The dtypes that are accepted, in words.
        expected: &'static str,
    },

    /// A tensor holds a NaN or an infinity.
    #[error("{arg}: non-finite value {value} at flat index {index}")]
    NonFinite {
        /// The argument.
        arg: String,
        /// Row-major flat index of the first non-finite element.
        index: usize,
        /// The offending value.
        value: f64,
    },

    /// A class label is not an integer in `0..classes`.
    #[error("{arg}: label {value} at row {row} is not an integer in 0..{classes}")]
    InvalidLabel {
        /// The argument.
        arg: String,
        /// The row (example) of the label.
        row: usize,
        /// The label as found.
        value: f64,
        /// The number of classes.
        classes: usize,
    },

    /// A variance is negative (or, where required, not positive).
    #[error("{arg}: variance {value} at flat index {index} is not {requirement}")]
    InvalidVariance {
        /// The argument.
        arg: String,
        /// Row-major flat index of the offending variance.
        index: usize,
        /// The offending value.
        value: f64,
        /// What was required (`>= 0` or `> 0`).
        requirement: &'static str,
    },

    /// A covariance matrix is not positive semi-definite.
    #[error(
        "var_f: covariance of point {point} is not positive semi-definite (entry {value} in row {row} of the Schur complement)"
    )]
    NotPositiveSemiDefinite {
        /// The point (example) whose covariance failed.
        point: usize,
        /// The row of the offending entry.
        row: usize,
        /// The entry of the Schur complement left by the pivoted Cholesky factorisation that is
        /// beyond the tolerance (a negative pivot, or an off-diagonal entry without pivot).
        value: f64,
    },

    /// The Laplace bridge met a logit without variance, where the Dirichlet parameter is infinite.
    #[error(
        "Laplace bridge: logit {class} of point {point} has variance {variance} after the zero-sum correction; the bridge needs it positive"
    )]
    DegenerateBridge {
        /// The point (example).
        point: usize,
        /// The class (logit) without variance.
        class: usize,
        /// Its corrected variance.
        variance: f64,
    },

    /// Class probabilities are negative or do not sum to one.
    #[error("probs: row {row} is not a probability vector (sum {sum}, min {min})")]
    NotProbabilities {
        /// The offending row.
        row: usize,
        /// Its sum.
        sum: f64,
        /// Its smallest entry.
        min: f64,
    },

    /// A likelihood's parameter is out of its valid range.
    #[error("invalid likelihood: {0}")]
    InvalidLikelihood(String),

    /// An operation was asked of a likelihood or predictive of the wrong kind.
    #[error("{op} is defined for {expected}, not for {actual}")]
    WrongKind {
        /// The operation.
        op: &'static str,
        /// The kinds it is defined for.
        expected: &'static str,
        /// The kind it was called on.
        actual: &'static str,
    },

    /// `Predictive::mixture` was called without components.
    #[error("a mixture needs at least one component")]
    EmptyMixture,

    /// The Monte Carlo link was asked for zero samples.
    #[error("the Monte Carlo link needs at least one sample")]
    ZeroSamples,

    /// The maximum-likelihood noise scale is zero: the outputs fit the targets exactly.
    #[error("the maximum-likelihood noise scale is zero (all residuals vanish)")]
    ZeroResidual,
}

/// The result type of the likelihoods crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
