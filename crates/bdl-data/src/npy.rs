//! Two-dimensional NumPy `.npy` arrays (the toy regression sets).
//!
//! A strict reader of the format (versions 1.0 to 3.0) for what the toy sets use, C-ordered
//! little-endian `<f4` or `<f8` matrices. It parses the header dictionary itself, in one pass:
//! a general Python-literal parser is both more than this needs and, on crafted headers (nested
//! braces), far slower than linear; every size is checked against the file before anything is
//! allocated.

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
    parse(&bytes).map_err(|message| Error::Npy {
        path: path.to_path_buf(),
        message,
    })
}

/// The format's fixed prefix: magic string, major and minor version.
const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses a whole file: prefix, header length (2 bytes in version 1, 4 in versions 2 and 3,
/// little-endian), the header dictionary, then exactly rows · cols items of data.
fn parse(bytes: &[u8]) -> std::result::Result<Matrix, String> {
    if !bytes.starts_with(MAGIC) {
        return Err("not a .npy file (no \\x93NUMPY magic string)".into());
    }
    let (len_bytes, start) = match bytes.get(MAGIC.len()) {
        Some(1) => (2, 10usize),
        Some(2 | 3) => (4, 12),
        Some(v) => return Err(format!("unsupported format version {v}")),
        None => return Err("the file ends inside the prefix".into()),
    };
    let len = bytes
        .get(8..8 + len_bytes)
        .ok_or("the file ends inside the prefix")?
        .iter()
        .rev()
        .fold(0usize, |n, &b| n << 8 | usize::from(b));
    let header = start
        .checked_add(len)
        .and_then(|end| bytes.get(start..end))
        .ok_or_else(|| format!("the header promises {len} bytes, the file is shorter"))?;
    let header = std::str::from_utf8(header).map_err(|_| "the header is not text".to_owned())?;
    let Header { item, shape } = Header::parse(header)?;
    let [rows, cols] = shape[..] else {
        return Err(format!("expected 2 dimensions, found {shape:?}"));
    };
    let payload = &bytes[start + len..];
    let expected = rows
        .checked_mul(cols)
        .and_then(|n| n.checked_mul(item))
        .ok_or_else(|| format!("the shape {shape:?} holds more elements than can be addressed"))?;
    if payload.len() != expected {
        return Err(format!(
            "the shape {shape:?} promises {expected} bytes of data, the file holds {}",
            payload.len()
        ));
    }
    let values = match item {
        8 => payload
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
        _ => payload
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes"))))
            .collect(),
    };
    Ok(Matrix { rows, cols, values })
}

/// What the header dictionary `{'descr': '<f8', 'fortran_order': False, 'shape': (r, c), }`
/// says, for the arrays this reader accepts.
#[derive(Debug, PartialEq)]
struct Header {
    /// Bytes per item: 4 or 8.
    item: usize,
    shape: Vec<usize>,
}

impl Header {
    /// Parses the dictionary in one left-to-right pass (no recursion, no backtracking): exactly
    /// the three keys, each once, then only whitespace.
    fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut p = Cursor(text.as_bytes());
        let (mut item, mut order, mut shape) = (None, None, None);
        p.expect(b'{')?;
        while !p.eat(b'}') {
            let key = p.string()?;
            p.expect(b':')?;
            let duplicate = match key {
                "descr" => item.replace(match p.string()? {
                    "<f8" => 8,
                    "<f4" => 4,
                    other => return Err(format!("expected dtype <f4 or <f8, found {other}")),
                }),
                "fortran_order" => order.replace(p.boolean()?).map(usize::from),
                "shape" => shape.replace(p.tuple()?).map(|s| s.len()),
                other => return Err(format!("unexpected key '{other}' in the header")),
            }
            .is_some();
            if duplicate {
                return Err(format!("the key '{key}' appears twice in the header"));
            }
            if !p.eat(b',') {
                p.expect(b'}')?;
                break;
            }
        }
        p.skip_space();
        if !p.0.is_empty() {
            return Err("text after the header dictionary".into());
        }
        let missing = |key: &str| format!("the header has no '{key}'");
        if order.ok_or_else(|| missing("fortran_order"))? {
            return Err("Fortran-ordered arrays are not supported".into());
        }
        Ok(Self {
            item: item.ok_or_else(|| missing("descr"))?,
            shape: shape.ok_or_else(|| missing("shape"))?,
        })
    }
}

/// The unread rest of a header.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn skip_space(&mut self) {
        while let [b' ' | b'\t' | b'\n' | b'\r', rest @ ..] = self.0 {
            self.0 = rest;
        }
    }

    /// Consumes `byte` (after whitespace) when it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        match self.0 {
            [b, rest @ ..] if *b == byte => {
                self.0 = rest;
                true
            }
            _ => false,
        }
    }

    fn expect(&mut self, byte: u8) -> std::result::Result<(), String> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(format!("expected `{}` in the header", char::from(byte)))
        }
    }

    /// A quoted string without escapes: '…' or "…".
    fn string(&mut self) -> std::result::Result<&'a str, String> {
        self.skip_space();
        let quote = match self.0 {
            [q @ (b'\'' | b'"'), ..] => *q,
            _ => return Err("expected a quoted string in the header".into()),
        };
        let body = &self.0[1..];
        let end = body
            .iter()
            .position(|&b| b == quote || b == b'\\')
            .filter(|&i| body[i] == quote)
            .ok_or("an unterminated or escaped string in the header")?;
        self.0 = &body[end + 1..];
        std::str::from_utf8(&body[..end]).map_err(|_| "a string that is not text".into())
    }

    fn boolean(&mut self) -> std::result::Result<bool, String> {
        self.skip_space();
        for (word, value) in [(&b"True"[..], true), (b"False", false)] {
            if let Some(rest) = self.0.strip_prefix(word) {
                self.0 = rest;
                return Ok(value);
            }
        }
        Err("expected True or False for 'fortran_order'".into())
    }

    /// A tuple of non-negative integers: `()`, `(n,)`, `(n, m)`, …, a trailing comma allowed.
    fn tuple(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        while !self.eat(b')') {
            let digits = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
            let text = std::str::from_utf8(&self.0[..digits]).expect("ASCII digits");
            let dim = text
                .parse()
                .map_err(|_| format!("bad dimension in the shape near `{}`", self.excerpt()))?;
            self.0 = &self.0[digits..];
            dims.push(dim);
            if !self.eat(b',') {
                self.expect(b')')?;
                break;
            }
        }
        Ok(dims)
    }

    /// The next few characters, for an error message.
    fn excerpt(&self) -> String {
        String::from_utf8_lossy(&self.0[..self.0.len().min(12)]).into_owned()
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

    /// Headers that are not the three-key dictionary, each a typed error naming what is wrong.
    /// The first is the shape of the inputs on which a general literal parser spent minutes (a
    /// coverage-guided fuzzer's hangs): a run of opening braces before the first key.
    #[test]
    fn malformed_headers_are_errors() {
        let dir = Scratch::new("npy-headers");
        let f8 = [0u8; 32];
        let good = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
        let nested = format!("{}{}", "{".repeat(40), &good[1..]);
        for (header, says) in [
            (nested.as_str(), "quoted string"),
            (
                "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 2)}",
                "twice",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), 'x': 1}",
                "unexpected key",
            ),
            ("{'descr': '<f8', 'shape': (2, 2)}", "no 'fortran_order'"),
            (
                "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2)}",
                "Fortran",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2+ 2)}",
                "expected `)`",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2)} x",
                "after the header",
            ),
            (
                "{'descr': '<f8\\', 'fortran_order': False, 'shape': (2, 2)}",
                "unterminated",
            ),
        ] {
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
            bytes.extend_from_slice(header.as_bytes());
            bytes.extend_from_slice(&f8);
            let err = read_matrix(&dir.write("h.npy", bytes)).unwrap_err();
            assert!(
                matches!(err, Error::Npy { .. }) && err.to_string().contains(says),
                "{header}: {err}"
            );
        }
        // The same dictionary with the braces balanced, spaces and a trailing newline, reads.
        let m = read_matrix(&dir.write("ok.npy", npy("<f8", "(2, 2)", &f8))).unwrap();
        assert_eq!((m.rows, m.cols), (2, 2));
    }
}
