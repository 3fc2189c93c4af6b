//! Two-dimensional NumPy `.npy` arrays (the toy regression sets), read with the `npyz` crate.

use std::path::Path;

use crate::{Error, Result, read};

/// A row-major matrix read from a `.npy` file, widened to f64.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Matrix {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) values: Vec<f64>,
}

impl Matrix {
    /// Column `j` as a vector.
    pub(crate) fn column(&self, j: usize) -> Vec<f64> {
        (0..self.rows)
            .map(|i| self.values[i * self.cols + j])
            .collect()
    }
}

/// Reads a C-ordered two-dimensional `.npy` array of `<f4` or `<f8`.
pub(crate) fn read_matrix(path: &Path) -> Result<Matrix> {
    let bytes = read::bytes(path)?;
    let npy_error = |message: String| Error::Npy {
        path: path.to_path_buf(),
        message,
    };
    check_size(&bytes).map_err(npy_error)?;
    let file = npyz::NpyFile::new(&bytes[..]).map_err(|e| npy_error(e.to_string()))?;
    let (rows, cols) = match *file.shape() {
        [rows, cols] => (rows as usize, cols as usize),
        ref other => return Err(npy_error(format!("expected 2 dimensions, found {other:?}"))),
    };
    if file.order() != npyz::Order::C {
        return Err(npy_error("Fortran-ordered arrays are not supported".into()));
    }
    let width = match file.dtype() {
        npyz::DType::Plain(t) if t.type_char() == npyz::TypeChar::Float => t.size_field(),
        _ => 0,
    };
    let values = match width {
        8 => file.into_vec::<f64>(),
        4 => file
            .into_vec::<f32>()
            .map(|v| v.into_iter().map(f64::from).collect()),
        _ => {
            return Err(npy_error(format!(
                "expected dtype <f4 or <f8, found {}",
                file.dtype().descr()
            )));
        }
    }
    .map_err(|e| npy_error(e.to_string()))?;
    Ok(Matrix { rows, cols, values })
}

/// Checks the header's shape against the payload before `npyz` sees the file (it panics on a
/// shape whose element count overflows): the product of the dimensions, times the item size
/// of an `<f4` or `<f8` array, must be the number of bytes after the header. Other dtypes and
/// malformed headers are left to `npyz`'s own errors.
fn check_size(bytes: &[u8]) -> std::result::Result<(), String> {
    let (len_bytes, start) = match bytes.get(6) {
        Some(1) => (2, 10usize),
        Some(2 | 3) => (4, 12),
        _ => return Ok(()),
    };
    let Some(len) = bytes.get(8..8 + len_bytes) else {
        return Ok(());
    };
    let len = len
        .iter()
        .rev()
        .fold(0usize, |n, &b| n << 8 | usize::from(b));
    let Some(header) = bytes
        .get(start..start.saturating_add(len))
        .and_then(|h| std::str::from_utf8(h).ok())
    else {
        return Ok(());
    };
    let item = if header.contains("<f8") {
        8
    } else if header.contains("<f4") {
        4
    } else {
        return Ok(());
    };
    let Some(shape) = header
        .split("'shape':")
        .nth(1)
        .and_then(|rest| rest.split_once('(').map(|(_, r)| r))
        .and_then(|rest| rest.split_once(')').map(|(s, _)| s))
    else {
        return Ok(());
    };
    let mut count: Option<usize> = Some(item);
    for dim in shape.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let dim: usize = dim
            .parse()
            .map_err(|_| format!("bad dimension `{dim}` in the shape"))?;
        count = count.and_then(|c| c.checked_mul(dim));
    }
    let payload = bytes.len() - start - len;
    match count {
        Some(n) if n == payload => Ok(()),
        Some(n) => Err(format!(
            "the shape ({shape}) promises {n} bytes of data, the file holds {payload}"
        )),
        None => Err(format!(
            "the shape ({shape}) holds more elements than can be addressed"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::Scratch;

    /// A version-1.0 `.npy` file of the given dtype, shape and raw little-endian data.
    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn reads_f4_and_f8() {
        let dir = Scratch::new("npy-ok");
        let f8: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let m = read_matrix(&dir.write("a.npy", npy("<f8", "(3, 2)", &f8))).unwrap();
        assert_eq!((m.rows, m.cols), (3, 2));
        assert_eq!(m.column(1), [2.0, 4.0, 6.0]);
        let f4: Vec<u8> = [0.5f32, -1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let m = read_matrix(&dir.write("b.npy", npy("<f4", "(1, 2)", &f4))).unwrap();
        assert_eq!(m.values, [0.5, -1.0]);
    }

    #[test]
    fn wrong_kinds_are_named() {
        let dir = Scratch::new("npy-bad");
        let ints = dir.write("i.npy", npy("<i8", "(1, 1)", &7i64.to_le_bytes()));
        let err = read_matrix(&ints).unwrap_err();
        assert!(
            matches!(err, Error::Npy { .. }) && err.to_string().contains("i.npy"),
            "{err}"
        );
        let flat = dir.write("v.npy", npy("<f8", "(1,)", &1f64.to_le_bytes()));
        assert!(matches!(read_matrix(&flat), Err(Error::Npy { .. })));
        let short = dir.write("s.npy", npy("<f8", "(2, 2)", &1f64.to_le_bytes()));
        assert!(matches!(read_matrix(&short), Err(Error::Npy { .. })));
        let garbage = dir.write("g.npy", b"not numpy at all");
        assert!(matches!(read_matrix(&garbage), Err(Error::Npy { .. })));
    }

    #[test]
    fn shapes_that_overflow_or_disagree_with_the_data_are_errors() {
        let dir = Scratch::new("npy-shapes");
        for (shape, data) in [
            ("(4294967296, 4294967296)", vec![0u8; 16]),
            ("(18446744073709551615, 2)", vec![0u8; 16]),
            ("(3, 2)", vec![0u8; 40]),
        ] {
            let path = dir.write("m.npy", npy("<f8", shape, &data));
            let err = read_matrix(&path).unwrap_err();
            assert!(matches!(err, Error::Npy { .. }), "{shape}: {err}");
            assert!(err.to_string().contains("m.npy"), "{err}");
        }
    }
}
