//! The [`Dataset`] type: features, targets and what they mean.
//!
//! Conventions, the same for every loader:
//!
//! - `x` is an f32 tensor of shape `[N, d]`, one example per row. Images are flattened
//!   row-major (channel, row, column) and their shape kept in [`Dataset::image_shape`].
//! - For regression, `y` is an f32 tensor `[N, k]` (`k = 1` for the UCI benchmarks).
//! - For classification, `y` is a u32 tensor `[N]` of class indices `0..C`.

use std::path::{Path, PathBuf};

use bdl_tensor::{Seed, check_finite};
use candle_core::{DType, Device, Tensor};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::text::{Delimiter, read_table};
use crate::{Error, Result};

/// What the targets of a data set are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Task {
    /// Real-valued targets: `y` is f32 `[N, k]` with one name per column.
    Regression {
        /// The names of the target columns.
        targets: Vec<String>,
    },
    /// Class labels: `y` is u32 `[N]` with values in `0..classes.len()`.
    Classification {
        /// The name of each class, by index.
        classes: Vec<String>,
    },
}

/// The shape of one image example: `channels × height × width`, flattened row-major into `x`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageShape {
    /// Number of channels (1 for grey-scale).
    pub channels: usize,
    /// Height in pixels.
    pub height: usize,
    /// Width in pixels.
    pub width: usize,
}

impl ImageShape {
    /// A grey-scale shape of `height × width`.
    pub fn grey(height: usize, width: usize) -> Self {
        ImageShape {
            channels: 1,
            height,
            width,
        }
    }

    /// Number of values per image: `channels · height · width`.
    pub fn len(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// Whether the shape holds no pixels.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where the examples of a data set came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// A short description: data set, part, split (for example `uci/gal/wine split 3, train`).
    pub description: String,
    /// The files that were read.
    pub files: Vec<PathBuf>,
}

/// Examples as tensors, with names and provenance.
///
/// ```
/// use bdl_data::{Dataset, Provenance, Task};
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[0.0f32, 1.0], [2.0, 3.0], [4.0, 5.0]], &Device::Cpu).unwrap();
/// let y = Tensor::new(&[1u32, 0, 1], &Device::Cpu).unwrap();
/// let task = Task::Classification { classes: vec!["no".into(), "yes".into()] };
/// let ds = Dataset::new(x, y, task, vec!["a".into(), "b".into()], Provenance::default()).unwrap();
/// assert_eq!((ds.len(), ds.num_features()), (3, 2));
/// let first_two = ds.select(&[0, 1]).unwrap();
/// assert_eq!(first_two.labels().unwrap(), [1, 0]);
/// ```
#[derive(Clone, Debug)]
pub struct Dataset {
    x: Tensor,
    y: Tensor,
    task: Task,
    feature_names: Vec<String>,
    image_shape: Option<ImageShape>,
    provenance: Provenance,
}

impl Dataset {
    /// Checks and bundles features `x` (f32 `[N, d]`) and targets `y` (see [`Task`]).
    ///
    /// Errors when a shape or dtype breaks the conventions of the module, when a label is
    /// outside `0..C`, or when `x` or regression targets hold a NaN or an infinity.
    pub fn new(
        x: Tensor,
        y: Tensor,
        task: Task,
        feature_names: Vec<String>,
        provenance: Provenance,
    ) -> Result<Self> {
        let what = &provenance.description;
        let invalid = |message: String| Error::InvalidArgument(format!("{what}: {message}"));
        let (n, d) = match (x.dtype(), x.dims()) {
            (DType::F32, &[n, d]) => (n, d),
            (dtype, dims) => {
                return Err(invalid(format!(
                    "x must be f32 [N, d], got {dtype:?} {dims:?}"
                )));
            }
        };
        if feature_names.len() != d {
            return Err(invalid(format!(
                "{} feature names for {d} features",
                feature_names.len()
            )));
        }
        ensure_finite(&x, &format!("{what}: x"))?;
        match &task {
            Task::Regression { targets } => {
                if y.dtype() != DType::F32 || y.dims() != [n, targets.len()] {
                    return Err(invalid(format!(
                        "regression y must be f32 [{n}, {}], got {:?} {:?}",
                        targets.len(),
                        y.dtype(),
                        y.dims()
                    )));
                }
                ensure_finite(&y, &format!("{what}: y"))?;
            }
            Task::Classification { classes } => {
                if y.dtype() != DType::U32 || y.dims() != [n] {
                    return Err(invalid(format!(
                        "class labels must be u32 [{n}], got {:?} {:?}",
                        y.dtype(),
                        y.dims()
                    )));
                }
                let labels = y.to_vec1::<u32>()?;
                if let Some(bad) = labels.iter().find(|&&c| c as usize >= classes.len()) {
                    return Err(invalid(format!(
                        "label {bad} but only {} classes",
                        classes.len()
                    )));
                }
            }
        }
        Ok(Dataset {
            x,
            y,
            task,
            feature_names,
            image_shape: None,
            provenance,
        })
    }

    /// Declares that every row of `x` is one image of `shape`.
    pub fn with_image_shape(mut self, shape: ImageShape) -> Result<Self> {
        if shape.len() != self.num_features() {
            return Err(Error::InvalidArgument(format!(
                "{}: image shape {shape:?} holds {} values, rows have {}",
                self.provenance.description,
                shape.len(),
                self.num_features()
            )));
        }
        self.image_shape = Some(shape);
        Ok(self)
    }

    /// Features, f32 `[N, d]`.
    pub fn x(&self) -> &Tensor {
        &self.x
    }

    /// Targets: f32 `[N, k]` for regression, u32 `[N]` class indices for classification.
    pub fn y(&self) -> &Tensor {
        &self.y
    }

    /// What the targets are.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// One name per feature column.
    pub fn feature_names(&self) -> &[String] {
        &self.feature_names
    }

    /// The target column names (regression) or class names (classification).
    pub fn target_names(&self) -> &[String] {
        match &self.task {
            Task::Regression { targets } => targets,
            Task::Classification { classes } => classes,
        }
    }

    /// The shape of one image, when the examples are images.
    pub fn image_shape(&self) -> Option<ImageShape> {
        self.image_shape
    }

    /// Where the examples came from.
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// Number of examples N.
    pub fn len(&self) -> usize {
        self.x.dims()[0]
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of features d.
    pub fn num_features(&self) -> usize {
        self.x.dims()[1]
    }

    /// The class labels, for a classification data set.
    pub fn labels(&self) -> Result<Vec<u32>> {
        match self.task {
            Task::Classification { .. } => Ok(self.y.to_vec1::<u32>()?),
            Task::Regression { .. } => Err(Error::InvalidArgument(format!(
                "{}: labels() of a regression data set",
                self.provenance.description
            ))),
        }
    }

    /// The same data set with `x` replaced by `x` of the same shape (after a transform).
    pub fn with_x(&self, x: Tensor) -> Result<Self> {
        if x.dims() != self.x.dims() || x.dtype() != DType::F32 {
            return Err(Error::InvalidArgument(format!(
                "{}: new x must be f32 {:?}, got {:?} {:?}",
                self.provenance.description,
                self.x.dims(),
                x.dtype(),
                x.dims()
            )));
        }
        ensure_finite(&x, &format!("{}: x", self.provenance.description))?;
        Ok(Dataset { x, ..self.clone() })
    }

    /// The same data set with targets `y` replaced (regression only; same shape).
    pub fn with_y(&self, y: Tensor) -> Result<Self> {
        if !matches!(self.task, Task::Regression { .. })
            || y.dims() != self.y.dims()
            || y.dtype() != DType::F32
        {
            return Err(Error::InvalidArgument(format!(
                "{}: new y must be regression targets f32 {:?}, got {:?} {:?}",
                self.provenance.description,
                self.y.dims(),
                y.dtype(),
                y.dims()
            )));
        }
        ensure_finite(&y, &format!("{}: y", self.provenance.description))?;
        Ok(Dataset { y, ..self.clone() })
    }

    /// The examples at `indices`, in that order (repeats allowed).
    pub fn select(&self, indices: &[usize]) -> Result<Self> {
        let n = self.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= n) {
            return Err(Error::InvalidArgument(format!(
                "{}: row {bad} selected from {n} rows",
                self.provenance.description
            )));
        }
        Ok(Dataset {
            x: bdl_tensor::select_rows(&self.x, indices)?,
            y: bdl_tensor::select_rows(&self.y, indices)?,
            ..self.clone()
        })
    }

    /// A seeded random holdout: `(rest, held_out)` where `held_out` has
    /// `round(fraction · N)` examples drawn without replacement and `rest` the others, both in
    /// their original order. Used for validation sets (early stopping, prior choice).
    ///
    /// ```
    /// # use bdl_data::{Dataset, Provenance, Task};
    /// # use bdl_tensor::Seed;
    /// # use candle_core::{Device, Tensor};
    /// let x = Tensor::arange(0f32, 20.0, &Device::Cpu).unwrap().reshape((10, 2)).unwrap();
    /// let y = Tensor::zeros((10, 1), candle_core::DType::F32, &Device::Cpu).unwrap();
    /// let task = Task::Regression { targets: vec!["y".into()] };
    /// let ds = Dataset::new(x, y, task, vec!["a".into(), "b".into()], Provenance::default()).unwrap();
    /// let (train, valid) = ds.holdout(0.3, Seed(1)).unwrap();
    /// assert_eq!((train.len(), valid.len()), (7, 3));
    /// ```
    pub fn holdout(&self, fraction: f64, seed: Seed) -> Result<(Self, Self)> {
        let (rest, held) = holdout_indices(self.len(), fraction, seed)?;
        Ok((self.select(&rest)?, self.select(&held)?))
    }

    /// The data set on `device`.
    pub fn to_device(&self, device: &Device) -> Result<Self> {
        Ok(Dataset {
            x: self.x.to_device(device)?,
            y: self.y.to_device(device)?,
            ..self.clone()
        })
    }
}

/// [`check_finite`] for the f32 tensors of a data set, without widening them to f64 unless a
/// non-finite value is there to report.
fn ensure_finite(t: &Tensor, context: &str) -> Result<()> {
    if t.flatten_all()?
        .to_vec1::<f32>()?
        .iter()
        .all(|v| v.is_finite())
    {
        Ok(())
    } else {
        Ok(check_finite(t, context)?)
    }
}

/// Indices of a seeded holdout of `round(fraction · n)` out of `n`: `(rest, held_out)`, each
/// sorted.
pub fn holdout_indices(n: usize, fraction: f64, seed: Seed) -> Result<(Vec<usize>, Vec<usize>)> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(Error::InvalidArgument(format!(
            "holdout fraction must lie in [0, 1], got {fraction}"
        )));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut seed.rng());
    let held = (fraction * n as f64).round() as usize;
    let (mut out, mut rest) = (order[..held].to_vec(), order[held..].to_vec());
    out.sort_unstable();
    rest.sort_unstable();
    Ok((rest, out))
}

/// The seeded K-fold partition of `n` rows: fold j validates on the j-th of K near-equal parts
/// of one seeded permutation (rows j·n/K .. (j+1)·n/K) and fits on the rest; both parts sorted.
///
/// ```
/// use bdl_tensor::Seed;
/// let folds = bdl_data::k_fold_indices(10, 3, Seed(1)).unwrap();
/// assert_eq!(folds.iter().map(|(_, v)| v.len()).collect::<Vec<_>>(), [3, 3, 4]);
/// let mut seen: Vec<usize> = folds.iter().flat_map(|(_, v)| v.clone()).collect();
/// seen.sort_unstable();
/// assert_eq!(seen, (0..10).collect::<Vec<_>>()); // every row validated once
/// ```
pub fn k_fold_indices(n: usize, k: usize, seed: Seed) -> Result<Vec<(Vec<usize>, Vec<usize>)>> {
    if k < 2 || k > n {
        return Err(Error::InvalidArgument(format!(
            "K-fold splits need 2 <= K <= N, got K = {k} for N = {n}"
        )));
    }
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut seed.rng());
    Ok((0..k)
        .map(|j| {
            let (lo, hi) = (j * n / k, (j + 1) * n / k);
            let mut val = perm[lo..hi].to_vec();
            let mut fit: Vec<usize> = perm[..lo].iter().chain(&perm[hi..]).copied().collect();
            val.sort_unstable();
            fit.sort_unstable();
            (fit, val)
        })
        .collect())
}

/// Builds a regression data set from row-major `x` (`n × d`) and `y` (`n × k`) in f64.
pub(crate) fn regression(
    x: &[f64],
    y: &[f64],
    feature_names: Vec<String>,
    targets: Vec<String>,
    provenance: Provenance,
) -> Result<Dataset> {
    let (d, k) = (feature_names.len(), targets.len());
    let n = y.len() / k.max(1);
    let x = f32_tensor(x, (n, d))?;
    let y = f32_tensor(y, (n, k))?;
    Dataset::new(
        x,
        y,
        Task::Regression { targets },
        feature_names,
        provenance,
    )
}

/// Builds a classification data set from row-major `x` (`n × d`, f64) and labels.
pub(crate) fn classification(
    x: &[f64],
    labels: Vec<u32>,
    feature_names: Vec<String>,
    classes: Vec<String>,
    provenance: Provenance,
) -> Result<Dataset> {
    let n = labels.len();
    let x = f32_tensor(x, (n, feature_names.len()))?;
    let y = Tensor::from_vec(labels, n, &Device::Cpu)?;
    Dataset::new(
        x,
        y,
        Task::Classification { classes },
        feature_names,
        provenance,
    )
}

/// Class indices from a column of numbers read from `path`: each value must be an integer in
/// `0..classes.len()`.
pub(crate) fn class_indices(path: &Path, values: &[f64], classes: &[String]) -> Result<Vec<u32>> {
    values
        .iter()
        .enumerate()
        .map(|(row, &v)| {
            if v.fract() == 0.0 && v >= 0.0 && (v as usize) < classes.len() {
                Ok(v as u32)
            } else {
                Err(Error::BadLabel {
                    path: path.to_path_buf(),
                    row,
                    value: v.to_string(),
                    allowed: format!("0..{}", classes.len()),
                })
            }
        })
        .collect()
}

/// A classification data set from a features table at `x_path` and a one-column label table at
/// `y_path` (both in `format`), with feature names from the header when there is one.
pub(crate) fn from_label_files(
    x_path: &Path,
    y_path: &Path,
    format: (Delimiter, bool),
    classes: Vec<String>,
    description: String,
) -> Result<Dataset> {
    let (delimiter, header) = format;
    let x = read_table(x_path, delimiter, header)?;
    let y = read_table(y_path, delimiter, header)?;
    if y.cols != 1 {
        return Err(Error::Ragged {
            path: y_path.to_path_buf(),
            line: 1,
            expected: 1,
            found: y.cols,
        });
    }
    if x.rows != y.rows {
        return Err(Error::RowMismatch {
            first: x_path.to_path_buf(),
            first_rows: x.rows,
            second: y_path.to_path_buf(),
            second_rows: y.rows,
        });
    }
    let labels = class_indices(y_path, &y.values, &classes)?;
    let names = x.header.unwrap_or_else(|| numbered("x", x.cols));
    let provenance = Provenance {
        description,
        files: vec![x_path.to_path_buf(), y_path.to_path_buf()],
    };
    classification(&x.values, labels, names, classes, provenance)
}

fn f32_tensor(values: &[f64], shape: (usize, usize)) -> Result<Tensor> {
    let v: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    Ok(Tensor::from_vec(v, shape, &Device::Cpu)?)
}

/// Names `prefix0`, `prefix1`, … for `n` columns.
pub(crate) fn numbered(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|j| format!("{prefix}{j}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn toy(n: usize) -> Dataset {
        let x: Vec<f64> = (0..2 * n).map(|v| v as f64).collect();
        let y: Vec<f64> = (0..n).map(|v| v as f64).collect();
        regression(
            &x,
            &y,
            numbered("x", 2),
            vec!["y".into()],
            Provenance::default(),
        )
        .unwrap()
    }

    proptest! {
        #[test]
        fn holdout_partitions(seed in any::<u64>(), n in 0usize..200, fraction in 0.0f64..=1.0) {
            let (rest, held) = holdout_indices(n, fraction, Seed(seed)).unwrap();
            prop_assert_eq!(held.len(), (fraction * n as f64).round() as usize);
            let mut all: Vec<usize> = rest.iter().chain(&held).copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
            prop_assert_eq!(holdout_indices(n, fraction, Seed(seed)).unwrap(), (rest, held));
        }
    }

    #[test]
    fn holdout_keeps_rows_together() {
        let (train, valid) = toy(10).holdout(0.2, Seed(5)).unwrap();
        assert_eq!((train.len(), valid.len()), (8, 2));
        let x = valid.x().to_vec2::<f32>().unwrap();
        let y = valid.y().to_vec2::<f32>().unwrap();
        for (row, t) in x.iter().zip(&y) {
            assert_eq!(row[0], 2.0 * t[0]);
        }
        assert!(toy(3).holdout(1.5, Seed(0)).is_err());
    }

    #[test]
    fn new_checks_shapes_labels_and_finiteness() {
        let dev = Device::Cpu;
        let x = Tensor::new(&[[1.0f32], [2.0]], &dev).unwrap();
        let classes = Task::Classification {
            classes: vec!["a".into(), "b".into()],
        };
        let labels = Tensor::new(&[0u32, 2], &dev).unwrap();
        let names = vec!["f".to_owned()];
        let p = Provenance::default();
        assert!(
            Dataset::new(x.clone(), labels, classes.clone(), names.clone(), p.clone()).is_err()
        );
        let short = Tensor::new(&[0u32], &dev).unwrap();
        assert!(Dataset::new(x.clone(), short, classes.clone(), names.clone(), p.clone()).is_err());
        let nan = Tensor::new(&[[1.0f32], [f32::NAN]], &dev).unwrap();
        let ok = Tensor::new(&[0u32, 1], &dev).unwrap();
        let err =
            Dataset::new(nan, ok.clone(), classes.clone(), names.clone(), p.clone()).unwrap_err();
        assert!(matches!(err, Error::Tensor(_)), "{err}");
        assert!(Dataset::new(x.clone(), ok.clone(), classes.clone(), vec![], p.clone()).is_err());
        let ds = Dataset::new(x, ok, classes, names, p).unwrap();
        assert!(ds.clone().with_image_shape(ImageShape::grey(2, 2)).is_err());
        assert!(ds.select(&[2]).is_err());
        assert!(ds.with_y(Tensor::new(&[1u32, 1], &dev).unwrap()).is_err());
    }
}
