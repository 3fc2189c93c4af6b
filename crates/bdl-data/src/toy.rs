//! Toy sets: the one-dimensional regression sets of the DUN repository and the noisy XOR sets
//! of the minibatch-Gibbs paper.
//!
//! Files under the data root:
//!
//! ```text
//! toy/dun/agw_1d_data.npy     400 × 2 f8: x, y (raw; Izmailov et al.'s "AGW" gap data)
//! toy/dun/matern_1d.npy       400 × 2 f4: x, y (already standardised by its generator)
//! toy/dun/my_1d_data.npy      501 × 4 f4: x_train, y_train, x_test, y_test (standardised)
//! toy/noisy_xor/data{1,2}/{training,test}/{x,y}.csv   comma-separated with a header
//! ```
//!
//! Noisy XOR: a point of corner `(b1, b2) ∈ {0, 1}²` has coordinates `b_i + U(−0.55, 0.55)`
//! (so the four clusters overlap a little) and label `b1 XOR b2`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::dataset::{from_label_files, regression};
use crate::npy::{Matrix, read_matrix};
use crate::text::Delimiter;
use crate::{Dataset, Error, Provenance, Result};

/// Izmailov et al.'s 1-D regression set with a gap ("AGW"), 400 points, raw units.
///
/// ```
/// let ds = bdl_data::toy::agw_1d(&bdl_data::root::fixtures()).unwrap();
/// assert_eq!((ds.len(), ds.num_features()), (400, 1));
/// ```
pub fn agw_1d(root: &Path) -> Result<Dataset> {
    let path = root.join("toy/dun/agw_1d_data.npy");
    let m = matrix_with_columns(&path, 2)?;
    xy(&m, 0, 1, "toy/agw_1d", &path)
}

/// A 1-D draw from a Matérn-3/2 Gaussian process with two clusters of inputs, 400 points,
/// standardised.
pub fn matern_1d(root: &Path) -> Result<Dataset> {
    let path = root.join("toy/dun/matern_1d.npy");
    let m = matrix_with_columns(&path, 2)?;
    xy(&m, 0, 1, "toy/matern_1d", &path)
}

/// The DUN paper's 1-D set `x − 0.1x² + cos(πx/2) + ε` on three input clusters, as
/// `(train, test)` of 501 points each, standardised with training statistics.
pub fn my_1d(root: &Path) -> Result<(Dataset, Dataset)> {
    let path = root.join("toy/dun/my_1d_data.npy");
    let m = matrix_with_columns(&path, 4)?;
    Ok((
        xy(&m, 0, 1, "toy/my_1d train", &path)?,
        xy(&m, 2, 3, "toy/my_1d test", &path)?,
    ))
}

fn matrix_with_columns(path: &Path, cols: usize) -> Result<Matrix> {
    let m = read_matrix(path)?;
    if m.cols != cols {
        return Err(Error::Npy {
            path: path.to_path_buf(),
            message: format!("expected {cols} columns, found {}", m.cols),
        });
    }
    Ok(m)
}

fn xy(m: &Matrix, x: usize, y: usize, description: &str, path: &Path) -> Result<Dataset> {
    let provenance = Provenance {
        description: description.into(),
        files: vec![path.to_path_buf()],
    };
    regression(
        &m.column(x),
        &m.column(y),
        vec!["x".into()],
        vec!["y".into()],
        provenance,
    )
}

/// Which noisy XOR set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NoisyXor {
    /// `data1`: 500 training and 120 test points.
    Small,
    /// `data2`: 5000 training and 1200 test points (the paper's set).
    Paper,
}

/// The training and test sets of a noisy XOR set: x f32 `[N, 2]`, labels `0`/`1`.
///
/// ```
/// use bdl_data::toy::{self, NoisyXor};
/// let (train, test) = toy::noisy_xor(&bdl_data::root::fixtures(), NoisyXor::Paper).unwrap();
/// assert_eq!((train.len(), test.len()), (5000, 1200));
/// ```
pub fn noisy_xor(root: &Path, set: NoisyXor) -> Result<(Dataset, Dataset)> {
    let folder = match set {
        NoisyXor::Small => "data1",
        NoisyXor::Paper => "data2",
    };
    let part = |part: &str| {
        let dir = root.join("toy/noisy_xor").join(folder).join(part);
        from_label_files(
            &dir.join("x.csv"),
            &dir.join("y.csv"),
            (Delimiter::Comma, true),
            vec!["0".into(), "1".into()],
            format!("toy/noisy_xor/{folder} {part}"),
        )
    };
    Ok((part("training")?, part("test")?))
}
