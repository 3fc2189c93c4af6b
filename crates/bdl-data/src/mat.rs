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
        let error = |message: String| Error::Mat {
            path: path.to_path_buf(),
            message,
        };
        check_elements(&bytes).map_err(error)?;
        // `matfile` can still panic on sizes nested inside an element; such a file is bad
        // input, so the panic becomes its error (the panic message is printed by the hook).
        let parsed = std::panic::catch_unwind(|| matfile::MatFile::parse(&bytes[..]))
            .map_err(|_| error("the MAT parser could not read the file (it panicked)".into()))?;
        let file = parsed.map_err(|e| error(e.to_string()))?;
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

/// Walks the top-level data elements of a level-5 MAT file (after its 128-byte header) and
/// checks that each element's declared size fits in the file, before `matfile` (which panics on
/// a size near `u32::MAX`) sees it. Small elements (size in the tag's upper half) are 8 bytes;
/// others are an 8-byte tag plus their size, padded to 8 except for compressed ones.
fn check_elements(bytes: &[u8]) -> std::result::Result<(), String> {
    let Some(endian) = bytes.get(126..128) else {
        return Ok(()); // too short for a header: the parser's own error
    };
    let little = endian == b"IM";
    let word = |at: usize| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let mut at = 128usize;
    while at < bytes.len() {
        let (Some(kind), Some(size)) = (word(at), word(at + 4)) else {
            return Err(format!("a data element's tag at byte {at} is cut short"));
        };
        if kind >> 16 != 0 {
            at += 8; // a small data element
            continue;
        }
        let size = size as usize;
        let padded = if kind == 15 {
            size
        } else {
            size.next_multiple_of(8)
        };
        let end = at
            .checked_add(8)
            .and_then(|a| a.checked_add(padded))
            .filter(|&e| e <= bytes.len() || at + 8 + size == bytes.len());
        at = end.ok_or_else(|| {
            format!(
                "the data element at byte {at} declares {size} bytes, more than the {} left",
                bytes.len() - at - 8
            )
        })?;
    }
    Ok(())
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

    #[test]
    fn an_element_size_past_the_file_is_an_error() {
        let dir = Scratch::new("mat-size");
        let mut bytes = vec![b' '; 116];
        bytes.extend_from_slice(&[0; 8]); // subsystem offset
        bytes.extend_from_slice(&[0x00, 0x01, b'I', b'M']); // version 0x0100, little-endian
        bytes.extend_from_slice(&14u32.to_le_bytes()); // miMATRIX
        bytes.extend_from_slice(&(u32::MAX - 3).to_le_bytes());
        bytes.extend_from_slice(&[0; 16]);
        let path = dir.write("huge.mat", bytes);
        let err = MatArrays::open(&path).err().unwrap();
        assert!(
            err.to_string().contains("huge.mat") && err.to_string().contains("declares"),
            "{err}"
        );
    }
}
