//! The error type of the models crate.

/// What can go wrong when building or evaluating a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the tensor layer (shape checks, non-finite values, checkpoints).
    #[error(transparent)]
    Tensor(#[from] bdl_tensor::Error),

    /// An error raised by candle itself.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// A model configuration that cannot describe a network.
    #[error("invalid model configuration: {0}")]
    InvalidConfig(String),

    /// A hidden unit that stayed inactive on every example however often it was redrawn.
    #[error(
        "unit {unit} of hidden layer {layer} is inactive on every one of the {examples} inputs after \
         {draws} draws of its weights (are the inputs constant?)"
    )]
    DeadUnit {
        /// The hidden layer (0 = the first).
        layer: usize,
        /// The unit within the layer.
        unit: usize,
        /// The rows of the inputs.
        examples: usize,
        /// The draws tried.
        draws: usize,
    },

    /// A parameter index outside the flat vector.
    #[error("parameter index {index} out of range (the model has {len} parameters)")]
    ParamIndex {
        /// The offending index.
        index: usize,
        /// The number of parameters D.
        len: usize,
    },
}

/// The result type of the models crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks flat parameter indices (a subnetwork, a block) against D = `len`: [`Error::ParamIndex`]
/// naming the first index ≥ D.
///
/// ```
/// use bdl_models::check_param_indices;
/// assert!(check_param_indices(&[0, 4], 5).is_ok());
/// assert!(check_param_indices(&[0, 5], 5).unwrap_err().to_string().contains("index 5"));
/// ```
pub fn check_param_indices(indices: &[usize], len: usize) -> Result<()> {
    match indices.iter().find(|&&i| i >= len) {
        Some(&index) => Err(Error::ParamIndex { index, len }),
        None => Ok(()),
    }
}
