//! The error type of the tensor layer.

use std::path::PathBuf;

/// What can go wrong in the tensor layer: every variant names what was wrong and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error raised by candle itself.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),

    /// A tensor has a shape other than the one its context requires.
    #[error("{context}: expected shape {expected:?}, got {actual:?}")]
    ShapeMismatch {
        /// What was being checked (a tensor name, an argument).
        context: String,
        /// The shape that was required.
        expected: Vec<usize>,
        /// The shape that was found.
        actual: Vec<usize>,
    },

    /// A thread pool could not be started.
    #[error("cannot start the thread pool: {0}")]
    Threads(String),

    /// A tensor holds a NaN or an infinity where finite numbers are required.
    #[error("{context}: non-finite value {value} at flat index {index}")]
    NonFinite {
        /// What was being checked.
        context: String,
        /// Row-major flat index of the first non-finite element.
        index: usize,
        /// The offending value.
        value: f64,
    },

    /// A checkpoint lacks a tensor that the layout requires.
    #[error("{path}: no tensor named `{name}`")]
    MissingTensor {
        /// The file that was read.
        path: PathBuf,
        /// The tensor that was looked for.
        name: String,
    },

    /// A checkpoint holds a tensor that the layout does not know.
    #[error("{path}: unexpected tensor `{name}` (not in the parameter layout)")]
    UnexpectedTensor {
        /// The file that was read.
        path: PathBuf,
        /// The tensor that was found.
        name: String,
    },

    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },

    /// A safetensors file could not be parsed or written.
    #[error("{path}: invalid safetensors data: {message}")]
    Safetensors {
        /// The file concerned.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },

    /// A JSON sidecar could not be parsed or written.
    #[error("{path}: invalid JSON sidecar: {source}")]
    Json {
        /// The file concerned.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },

    /// A tensor has a data type that the operation does not support.
    #[error("{context}: unsupported dtype {dtype:?}")]
    UnsupportedDType {
        /// What was being done.
        context: String,
        /// The offending dtype.
        dtype: candle_core::DType,
    },

    /// An argument is out of its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// The result type of the tensor layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;
