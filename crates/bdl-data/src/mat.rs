//! Two-dimensional real arrays from MATLAB level-5 `.mat` files, read with the `matfile` crate
//! (which also inflates the compressed elements of MATLAB 7 files). A path ending in `.gz` is
//! gunzipped first.

use std::path::Path;

use crate::{Error, Result, read};

/// A real matrix in MATLAB's column-major order: entry (i, j) is `values[i + j * rows]`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ColumnMajor {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) values: Vec<f64>,
}

impl ColumnMajor {
    /// Column `j` (in the USPS file: example `j`).
    pub(crate) fn column(&self, j: usize) -> &[f64] {
        &self.values[j * self.rows..(j + 1) * self.rows]
    }
}

/// The numeric arrays of the MAT file at `path`.
pub(crate) struct MatArrays<'p> {
    path: &'p Path,
    file: matfile::MatFile,
}

impl<'p> MatArrays<'p> {
    /// Reads the file at `path`.
    pub(crate) fn open(path: &'p Path) -> Result<Self> {
        let bytes = read::maybe_gz(path)?;
        let file = matfile::MatFile::parse(&bytes[..]).map_err(|e| Error::Mat {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(MatArrays { path, file })
    }

    /// The real two-dimensional double or single array called `name`.
    pub(crate) fn matrix(&self, name: &str) -> Result<ColumnMajor> {
        let error = |message: String| Error::Mat {
            path: self.path.to_path_buf(),
            message,
        };
        let array = self
            .file
            .find_by_name(name)
            .ok_or_else(|| error(format!("no numeric array named `{name}`")))?;
        let (rows, cols) = match array.size()[..] {
            [rows, cols] => (rows, cols),
            ref other => {
                return Err(error(format!(
                    "`{name}` has dimensions {other:?}, expected 2"
                )));
            }
        };
        let values = match array.data() {
            matfile::NumericData::Double { real, imag: None } => real.clone(),
            matfile::NumericData::Single { real, imag: None } => {
                real.iter().copied().map(f64::from).collect()
            }
            _ => {
                return Err(error(format!(
                    "`{name}` is not a real double or single array"
                )));
            }
        };
        if values.len() != rows * cols {
            return Err(error(format!(
                "`{name}` is {rows}×{cols} but holds {} values",
                values.len()
            )));
        }
        Ok(ColumnMajor { rows, cols, values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::Scratch;

    #[test]
    fn garbage_and_missing_arrays_are_named() {
        let dir = Scratch::new("mat-bad");
        let garbage = dir.write("g.mat", vec![7u8; 300]);
        let err = MatArrays::open(&garbage).err().unwrap();
        assert!(
            matches!(err, Error::Mat { .. }) && err.to_string().contains("g.mat"),
            "{err}"
        );
    }
}
