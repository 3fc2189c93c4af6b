//! The error type of the shared inference layer, which every inference crate's error wraps.

use std::path::PathBuf;

/// A configuration value outside its valid range: which parameter, its value, and what it must
/// satisfy.
///
/// ```
/// use bdl_inference::InvalidParam;
/// let e = InvalidParam::new("learning_rate", -1.0, "finite and > 0");
/// assert_eq!(e.to_string(), "`learning_rate` = -1 is invalid: it must be finite and > 0");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{param}` = {value} is invalid: it must be {requirement}")]
pub struct InvalidParam {
    /// The parameter's name, dotted for nested configurations (`map.learning_rate`).
    pub param: String,
    /// The offending value, as written.
    pub value: String,
    /// What the value must satisfy.
    pub requirement: String,
}

impl InvalidParam {
    /// The parameter `param` with value `value` violates `requirement`.
    pub fn new(
        param: impl Into<String>,
        value: impl std::fmt::Display,
        requirement: impl Into<String>,
    ) -> Self {
        Self {
            param: param.into(),
            value: value.to_string(),
            requirement: requirement.into(),
        }
    }

    /// The same error for the parameter nested under `outer` (`outer.param`).
    pub fn within(mut self, outer: &str) -> Self {
        self.param = format!("{outer}.{}", self.param);
        self
    }
}

/// What can go wrong in the shared inference layer.
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

    /// An error of the data layer.
    #[error(transparent)]
    Data(#[from] bdl_data::Error),

    /// An error raised by candle itself.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// A configuration value out of range.
    #[error(transparent)]
    InvalidParam(#[from] InvalidParam),

    /// The function-space view was asked of a posterior that draws neither weights nor
    /// functions.
    #[error("{method} draws neither weights nor functions: it has no function-space view")]
    NoFunctionSamples {
        /// The posterior's method.
        method: String,
    },

    /// A loss became NaN or infinite.
    #[error(
        "{stage} diverged: the {stage} loss is {loss} at epoch {epoch} (lower the learning \
         rate, or check the inputs for extreme values)"
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

    /// A gradient step made the parameters non-finite.
    #[error(
        "training diverged: the parameters became non-finite at epoch {epoch}, step {step} of \
         the epoch (lower the learning rate, or check the scale of the inputs and targets)"
    )]
    NonFiniteStep {
        /// The epoch (from 0).
        epoch: usize,
        /// The minibatch step within the epoch (from 0).
        step: usize,
    },

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

    /// A saved posterior cannot be read back as the type asked for.
    #[error("{path}: {reason}")]
    Checkpoint {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// An error of one inference method (its own crate's error type), passed through the
    /// [`Posterior`](crate::Posterior) trait.
    #[error("{method}: {source}")]
    Method {
        /// The method's name.
        method: &'static str,
        /// The method crate's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// Whether training diverged (a non-finite loss or a step to non-finite parameters), as
    /// against bad input: what a hyper-parameter search counts as a lost candidate.
    pub fn is_divergence(&self) -> bool {
        matches!(self, Self::Diverged { .. } | Self::NonFiniteStep { .. })
    }
}

/// The result type of the shared inference layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;
