//! The Bayesian logistic-regression sets of the Vadam paper.
//!
//! Files under the data root:
//!
//! ```text
//! blr/vadam/australian_presplit/australian_scale_{X,y}_{tr,te}.csv
//! blr/vadam/breast_cancer_scale_presplit/breast_cancer_scale_{X,y}_{tr,te}.csv
//! blr/usps/usps_resampled.mat.gz
//! ```
//!
//! The presplit files are whitespace-separated tables (LIBSVM's `*_scale` features in
//! `[-1, 1]`, labels 0/1). USPS is the GPML book's resampled USPS: 16 × 16 images with pixels in
//! `[-1, 1]`, `train_patterns` / `test_patterns` (256 × N, one image per column) and
//! `train_labels` / `test_labels` (10 × N, +1 in the row of the digit, −1 elsewhere); the
//! binary task keeps the digits 3 (label 1) and 5 (label 0). `blr/vadam/breast_cancer_scale.mat`
//! stores its features as a sparse matrix and is not read: the presplit files hold the same
//! 683 examples.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::dataset::{classification, from_label_files, numbered};
use crate::mat::{ColumnMajor, MatArrays};
use crate::text::Delimiter;
use crate::{Dataset, Error, Provenance, Result};

/// One of the logistic-regression sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BlrSet {
    /// Australian credit (Statlog), 690 examples, 14 features, split 345 / 345.
    Australian,
    /// Wisconsin breast cancer, 683 examples, 10 features, split 341 / 342.
    BreastCancer,
    /// USPS digits 3 versus 5, 256 features, 767 training and 773 test images.
    Usps3v5,
}

/// The training and test sets of `set` under `root`; classes are `["0", "1"]` for the presplit
/// sets and `["5", "3"]` for USPS.
///
/// ```
/// use bdl_data::blr::{self, BlrSet};
/// let (train, test) = blr::load(&bdl_data::root::fixtures(), BlrSet::BreastCancer).unwrap();
/// assert_eq!((train.len(), test.len(), train.num_features()), (341, 342, 10));
/// ```
pub fn load(root: &Path, set: BlrSet) -> Result<(Dataset, Dataset)> {
    match set {
        BlrSet::Australian => presplit(root, "australian_presplit", "australian_scale"),
        BlrSet::BreastCancer => {
            presplit(root, "breast_cancer_scale_presplit", "breast_cancer_scale")
        }
        BlrSet::Usps3v5 => usps_3v5(root),
    }
}

fn presplit(root: &Path, folder: &str, stem: &str) -> Result<(Dataset, Dataset)> {
    let dir = root.join("blr/vadam").join(folder);
    let part = |suffix: &str| {
        from_label_files(
            &dir.join(format!("{stem}_X_{suffix}.csv")),
            &dir.join(format!("{stem}_y_{suffix}.csv")),
            (Delimiter::Whitespace, false),
            vec!["0".into(), "1".into()],
            format!("blr/{stem} {suffix}"),
        )
    };
    Ok((part("tr")?, part("te")?))
}

/// The path of the USPS file under `root`.
pub fn usps_path(root: &Path) -> std::path::PathBuf {
    root.join("blr/usps/usps_resampled.mat.gz")
}

fn usps_3v5(root: &Path) -> Result<(Dataset, Dataset)> {
    let path = usps_path(root);
    let mat = MatArrays::open(&path)?;
    let part = |prefix: &str| -> Result<Dataset> {
        let patterns = mat.matrix(&format!("{prefix}_patterns"))?;
        let labels = mat.matrix(&format!("{prefix}_labels"))?;
        if patterns.cols != labels.cols || labels.rows != 10 {
            return Err(Error::Mat {
                path: path.clone(),
                message: format!(
                    "{prefix}_patterns is {}×{} but {prefix}_labels is {}×{} (expected 10×{})",
                    patterns.rows, patterns.cols, labels.rows, labels.cols, patterns.cols
                ),
            });
        }
        let digits = one_hot_digits(&path, &labels)?;
        let mut x = Vec::new();
        let mut y = Vec::new();
        for (j, digit) in digits.into_iter().enumerate() {
            let label = match digit {
                3 => 1,
                5 => 0,
                _ => continue,
            };
            x.extend_from_slice(patterns.column(j));
            y.push(label);
        }
        let provenance = Provenance {
            description: format!("blr/usps 3 vs 5, {prefix}"),
            files: vec![path.clone()],
        };
        let classes = vec!["5".into(), "3".into()];
        classification(&x, y, numbered("pixel", patterns.rows), classes, provenance)
    };
    Ok((part("train")?, part("test")?))
}

/// The digit of each column of a ±1 one-hot label matrix.
fn one_hot_digits(path: &Path, labels: &ColumnMajor) -> Result<Vec<usize>> {
    (0..labels.cols)
        .map(|j| {
            let column = labels.column(j);
            let mut hot = column.iter().enumerate().filter(|(_, v)| **v > 0.0);
            match (hot.next(), hot.next()) {
                (Some((digit, _)), None) => Ok(digit),
                _ => Err(Error::BadLabel {
                    path: path.to_path_buf(),
                    row: j,
                    value: format!("{column:?}"),
                    allowed: "one +1 among ten entries".into(),
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{Scratch, gzip};

    #[test]
    fn presplit_label_errors_are_named() {
        let dir = Scratch::new("blr");
        let d = "blr/vadam/australian_presplit";
        for s in ["tr", "te"] {
            dir.write(
                &format!("{d}/australian_scale_X_{s}.csv"),
                "1 0.5\n-1 0.25\n",
            );
            dir.write(&format!("{d}/australian_scale_y_{s}.csv"), "1\n0\n");
        }
        let (train, _) = load(dir.path(), BlrSet::Australian).unwrap();
        assert_eq!(train.labels().unwrap(), [1, 0]);
        dir.write(&format!("{d}/australian_scale_y_te.csv"), "1\n0.5\n");
        let err = load(dir.path(), BlrSet::Australian).unwrap_err();
        assert!(matches!(err, Error::BadLabel { row: 1, .. }), "{err}");
        dir.write(&format!("{d}/australian_scale_y_te.csv"), "1\n0\n1\n");
        let err = load(dir.path(), BlrSet::Australian).unwrap_err();
        assert!(
            matches!(
                err,
                Error::RowMismatch {
                    first_rows: 2,
                    second_rows: 3,
                    ..
                }
            ),
            "{err}"
        );
        dir.write(
            &format!("{d}/australian_scale_X_te.csv"),
            "1 0.5\n-1 nan?\n",
        );
        let err = load(dir.path(), BlrSet::Australian).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Parse {
                    line: 2,
                    column: 2,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn truncated_usps_files_are_named_errors() {
        let shipped = std::fs::read(usps_path(&crate::root::fixtures())).unwrap();
        let dir = Scratch::new("usps");
        let target = "blr/usps/usps_resampled.mat.gz";
        dir.write(target, &shipped[..shipped.len() / 2]);
        let err = load(dir.path(), BlrSet::Usps3v5).unwrap_err();
        assert!(matches!(err, Error::Gzip { .. }), "{err}");
        assert!(err.to_string().contains("usps_resampled.mat.gz"), "{err}");
        // A complete gzip stream around a MAT file cut short.
        let mat = crate::read::gunzip(Path::new(target), &shipped).unwrap();
        for cut in [mat.len() / 2, 200, 130] {
            dir.write(target, gzip(&mat[..cut]));
            let err = load(dir.path(), BlrSet::Usps3v5).unwrap_err();
            assert!(matches!(err, Error::Mat { .. }), "cut at {cut}: {err}");
        }
        // A valid MAT file without the arrays.
        dir.write(target, gzip(&mat[..128]));
        let err = load(dir.path(), BlrSet::Usps3v5).unwrap_err();
        assert!(
            err.to_string()
                .contains("no numeric array named `train_patterns`"),
            "{err}"
        );
    }

    #[test]
    fn one_hot_labels_need_exactly_one_positive() {
        let two_columns = ColumnMajor {
            rows: 10,
            cols: 2,
            values: (0..20)
                .map(|i| {
                    if i == 3 || i == 15 || i == 17 {
                        1.0
                    } else {
                        -1.0
                    }
                })
                .collect(),
        };
        let err = one_hot_digits(Path::new("u.mat"), &two_columns).unwrap_err();
        assert!(matches!(err, Error::BadLabel { row: 1, .. }), "{err}");
    }
}
