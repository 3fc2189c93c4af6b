//! The error type of the data layer.

use std::path::PathBuf;

/// What can go wrong while reading, splitting or transforming data.
///
/// Every variant that comes from a file names the file, and where it helps the line or row, so
/// that a message such as `data/mnist/train-images-idx3-ubyte.gz: bad IDX magic number` says
/// what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },

    /// A gzip stream is corrupt or ends early (a truncated download, for instance).
    #[error("{path}: corrupt or truncated gzip stream: {source}")]
    Gzip {
        /// The compressed file.
        path: PathBuf,
        /// What the decoder said.
        source: std::io::Error,
    },

    /// An IDX file starts with a magic number other than the expected one.
    #[error("{path}: bad IDX magic number {found:#010x}, expected {expected:#010x}")]
    IdxMagic {
        /// The IDX file.
        path: PathBuf,
        /// The magic number the reader expects (`0x00000803` images, `0x00000801` labels).
        expected: u32,
        /// The first four bytes of the file, big-endian.
        found: u32,
    },

    /// The payload of an IDX file does not have the size its header promises.
    #[error(
        "{path}: the IDX header promises dimensions {dims:?} ({expected} bytes of data), \
         but the file holds {actual} bytes after the header"
    )]
    IdxLength {
        /// The IDX file.
        path: PathBuf,
        /// The dimensions written in the header (count first).
        dims: Vec<usize>,
        /// The number of payload bytes the header implies.
        expected: usize,
        /// The number of payload bytes found.
        actual: usize,
    },

    /// An IDX image file with a zero dimension: no images, or images without pixels.
    #[error("{path}: the IDX header declares dimensions {dims:?}: no image data to read")]
    IdxEmpty {
        /// The IDX file.
        path: PathBuf,
        /// The dimensions written in the header (count first).
        dims: Vec<usize>,
    },

    /// A cell of a text table is not a number.
    #[error("{path}:{line}: column {column}: cannot parse `{token}` as a number")]
    Parse {
        /// The text file.
        path: PathBuf,
        /// The line, counting from 1.
        line: usize,
        /// The column, counting from 1.
        column: usize,
        /// The offending text.
        token: String,
    },

    /// A row of a text table has a different number of cells than the first row.
    #[error("{path}:{line}: {found} columns, expected {expected}")]
    Ragged {
        /// The text file.
        path: PathBuf,
        /// The line, counting from 1.
        line: usize,
        /// The column count of the first row.
        expected: usize,
        /// The column count of this row.
        found: usize,
    },

    /// A file that must hold data holds none.
    #[error("{path}: no data")]
    Empty {
        /// The file concerned.
        path: PathBuf,
    },

    /// Two files that describe the same examples disagree on how many there are.
    #[error("{first} holds {first_rows} rows but {second} holds {second_rows}")]
    RowMismatch {
        /// The first file (features or images).
        first: PathBuf,
        /// Its number of rows.
        first_rows: usize,
        /// The second file (targets or labels).
        second: PathBuf,
        /// Its number of rows.
        second_rows: usize,
    },

    /// A label is not one of the classes of the data set.
    #[error("{path}: row {row}: label {value} is not one of {allowed}")]
    BadLabel {
        /// The file concerned.
        path: PathBuf,
        /// The row, counting from 0.
        row: usize,
        /// The offending value, as written.
        value: String,
        /// The labels that are allowed.
        allowed: String,
    },

    /// A row or column index in an index file points outside the data.
    #[error("{path}: index {index} is out of range for {len} entries")]
    IndexOutOfRange {
        /// The index file.
        path: PathBuf,
        /// The offending index.
        index: usize,
        /// The number of rows (or columns) it indexes into.
        len: usize,
    },

    /// A row appears twice in a train/test split: in both halves, or twice in one.
    #[error("{path}: row {index} is also listed in {other}: train and test must be disjoint")]
    SplitOverlap {
        /// The index file in which the row appeared a second time.
        path: PathBuf,
        /// The index file in which it appeared first.
        other: PathBuf,
        /// The row.
        index: usize,
    },

    /// A split number beyond the splits that exist was requested.
    #[error("{dataset}: no {kind} split {requested} (there are {available}: 0..{available})")]
    NoSuchSplit {
        /// The data set.
        dataset: String,
        /// The kind of split (`standard` or `gap`).
        kind: String,
        /// The requested split.
        requested: usize,
        /// How many splits exist.
        available: usize,
    },

    /// A file's SHA-256 differs from the published one.
    #[error("{path}: SHA-256 mismatch: expected {expected}, got {actual}")]
    ChecksumMismatch {
        /// The file concerned.
        path: PathBuf,
        /// The published digest (lower-case hex).
        expected: String,
        /// The digest of the bytes at hand.
        actual: String,
    },

    /// A NumPy `.npy` file could not be read or holds an array of an unexpected kind.
    #[error("{path}: invalid NumPy array: {message}")]
    Npy {
        /// The `.npy` file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// A MATLAB `.mat` file could not be read or lacks an expected array.
    #[error("{path}: invalid MAT file: {message}")]
    Mat {
        /// The `.mat` file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// A data file that `cargo xtask fetch` installs is not under the data root.
    #[error("{path}: not found; `cargo xtask fetch {dataset}` downloads it")]
    NotFetched {
        /// The file that was looked for.
        path: PathBuf,
        /// The argument of `cargo xtask fetch` that installs it (its folder under the root).
        dataset: String,
    },

    /// A tar archive is corrupt or ends inside a header (a truncated download, for instance).
    #[error("{path}: corrupt or truncated tar archive: {source}")]
    Tar {
        /// The archive.
        path: PathBuf,
        /// What the reader said.
        source: std::io::Error,
    },

    /// An archive lacks a member that a reader needs.
    #[error("{path}: the archive has no member {member}")]
    MissingMember {
        /// The archive.
        path: PathBuf,
        /// The member's path inside the archive.
        member: String,
    },

    /// An archive member ends early, or holds a length its format does not allow.
    #[error("{path}: member {member} holds {actual} bytes, expected {expected}")]
    MemberLength {
        /// The archive.
        path: PathBuf,
        /// The member's path inside the archive.
        member: String,
        /// The length the member should have (a number or a rule, with the reason).
        expected: String,
        /// The bytes it holds.
        actual: u64,
    },

    /// An argument is out of its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// An error from the tensor layer (a non-finite value, a shape mismatch).
    #[error(transparent)]
    Tensor(#[from] bdl_tensor::Error),

    /// An error raised by candle.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

/// The result type of the data layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;
