//! NumPy `.npy` arrays: the toy regression sets' matrices, CIFAR-10-C's images and labels.
//!
//! A strict reader of the format (versions 1.0 to 3.0) for what the data sets use: C-ordered
//! arrays of little-endian `<f4` or `<f8` (the toy sets' matrices), `|u1` or `<i8` (CIFAR-10-C's
//! images and labels). A file is
//!
//! ```text
//! \x93NUMPY <major> <minor>      6 + 2 bytes
//! header length                 u16 (version 1) or u32 (versions 2 and 3), little-endian
//! header dictionary             {'descr': '<f8', 'fortran_order': False, 'shape': (r, c), }
//! data                          the shape's product times the item size, C order
//! ```
//!
//! It parses the header dictionary itself, in one pass: a general Python-literal parser is both
//! more than this needs and, on crafted headers (nested braces), far slower than linear; every
//! size is checked against the file before anything is allocated. The header is read apart from
//! the data ([`dictionary`], [`Header::read`]), so that an array inside an archive is checked
//! before any of its data is read.

use std::ops::Range;
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

/// The most bytes the prefix takes: magic string, version and a 4-byte header length.
pub(crate) const PREFIX_LEN: usize = 12;

/// Where the header dictionary lies in a file of `len` bytes whose first [`PREFIX_LEN`] bytes
/// (all of them, when it is shorter) are `prefix`: after the magic string, the version and the
/// header length (2 bytes in version 1, 4 in versions 2 and 3, little-endian). The data starts
/// at the range's end, which is checked to lie within the file.
pub(crate) fn dictionary(prefix: &[u8], len: usize) -> std::result::Result<Range<usize>, String> {
    if !prefix.starts_with(MAGIC) {
        return Err("not a .npy file (no \\x93NUMPY magic string)".into());
    }
    let (len_bytes, start) = match prefix.get(MAGIC.len()) {
        Some(1) => (2, 10usize),
        Some(2 | 3) => (4, 12),
        Some(v) => return Err(format!("unsupported format version {v}")),
        None => return Err("the file ends inside the prefix".into()),
    };
    let header_len = prefix
        .get(8..8 + len_bytes)
        .ok_or("the file ends inside the prefix")?
        .iter()
        .rev()
        .fold(0usize, |n, &b| n << 8 | usize::from(b));
    start
        .checked_add(header_len)
        .filter(|&end| end <= len)
        .map(|end| start..end)
        .ok_or_else(|| format!("the header promises {header_len} bytes, the file is shorter"))
}

/// Parses a whole file: the header, then exactly rows · cols items of data.
fn parse(bytes: &[u8]) -> std::result::Result<Matrix, String> {
    let range = dictionary(bytes, bytes.len())?;
    let header = Header::read(&bytes[range.clone()])?;
    let item = match header.dtype {
        Dtype::F4 | Dtype::F8 => header.dtype.size(),
        other => {
            return Err(format!(
                "expected dtype <f4 or <f8, found {}",
                other.descr()
            ));
        }
    };
    let [rows, cols] = header.shape[..] else {
        return Err(format!("expected 2 dimensions, found {:?}", header.shape));
    };
    let payload = &bytes[range.end..];
    header.check_data(payload.len() as u64)?;
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

/// The item types the readers accept, each by its `descr` in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dtype {
    /// `<f4`: little-endian f32.
    F4,
    /// `<f8`: little-endian f64.
    F8,
    /// `|u1`: bytes.
    U1,
    /// `<i8`: little-endian i64.
    I8,
}

impl Dtype {
    const ALL: [Dtype; 4] = [Dtype::F4, Dtype::F8, Dtype::U1, Dtype::I8];

    /// The type's `descr`, as NumPy writes it.
    pub(crate) fn descr(self) -> &'static str {
        match self {
            Dtype::F4 => "<f4",
            Dtype::F8 => "<f8",
            Dtype::U1 => "|u1",
            Dtype::I8 => "<i8",
        }
    }

    /// Bytes per item.
    pub(crate) fn size(self) -> usize {
        match self {
            Dtype::U1 => 1,
            Dtype::F4 => 4,
            Dtype::F8 | Dtype::I8 => 8,
        }
    }
}

/// What the header dictionary `{'descr': '<f8', 'fortran_order': False, 'shape': (r, c), }`
/// says, for the arrays this reader accepts.
#[derive(Debug, PartialEq)]
pub(crate) struct Header {
    /// The item type.
    pub(crate) dtype: Dtype,
    /// The dimensions, outermost first.
    pub(crate) shape: Vec<usize>,
}

impl Header {
    /// Parses the header dictionary `bytes` (the range [`dictionary`] gives).
    pub(crate) fn read(bytes: &[u8]) -> std::result::Result<Self, String> {
        Self::parse(std::str::from_utf8(bytes).map_err(|_| "the header is not text".to_owned())?)
    }

    /// Checks that `available` bytes of data are exactly what the shape promises.
    pub(crate) fn check_data(&self, available: u64) -> std::result::Result<(), String> {
        let shape = &self.shape;
        let expected = shape
            .iter()
            .try_fold(self.dtype.size(), |n, &d| n.checked_mul(d))
            .ok_or_else(|| {
                format!("the shape {shape:?} holds more elements than can be addressed")
            })?;
        if available != expected as u64 {
            return Err(format!(
                "the shape {shape:?} promises {expected} bytes of data, the file holds {available}"
            ));
        }
        Ok(())
    }

    /// Parses the dictionary in one left-to-right pass (no recursion, no backtracking): exactly
    /// the three keys, each once, then only whitespace.
    fn parse(text: &str) -> std::result::Result<Self, String> {
        let mut p = Cursor(text.as_bytes());
        let (mut dtype, mut order, mut shape) = (None, None, None);
        p.expect(b'{')?;
        while !p.eat(b'}') {
            let key = p.string()?;
            p.expect(b':')?;
            let duplicate = match key {
                "descr" => {
                    let descr = p.string()?;
                    let found = Dtype::ALL.into_iter().find(|t| t.descr() == descr);
                    dtype
                        .replace(found.ok_or_else(|| format!("unsupported dtype {descr}"))?)
                        .map(Dtype::size)
                }
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
            dtype: dtype.ok_or_else(|| missing("descr"))?,
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
    use crate::test_util::{Scratch, npy_file};

    #[test]
    fn reads_f4_and_f8() {
        let dir = Scratch::new("npy-ok");
        let f8: Vec<u8> = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let m = read_matrix(&dir.write("a.npy", npy_file("<f8", "(3, 2)", &f8))).unwrap();
        assert_eq!((m.rows, m.cols), (3, 2));
        assert_eq!(m.column(1), [2.0, 4.0, 6.0]);
        let f4: Vec<u8> = [0.5f32, -1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let m = read_matrix(&dir.write("b.npy", npy_file("<f4", "(1, 2)", &f4))).unwrap();
        assert_eq!(m.values, [0.5, -1.0]);
    }

    #[test]
    fn wrong_kinds_are_named() {
        let dir = Scratch::new("npy-bad");
        let ints = dir.write("i.npy", npy_file("<i8", "(1, 1)", &7i64.to_le_bytes()));
        let err = read_matrix(&ints).unwrap_err();
        assert!(
            matches!(err, Error::Npy { .. }) && err.to_string().contains("i.npy"),
            "{err}"
        );
        let flat = dir.write("v.npy", npy_file("<f8", "(1,)", &1f64.to_le_bytes()));
        assert!(matches!(read_matrix(&flat), Err(Error::Npy { .. })));
        let short = dir.write("s.npy", npy_file("<f8", "(2, 2)", &1f64.to_le_bytes()));
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
            let path = dir.write("m.npy", npy_file("<f8", shape, &data));
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
        let m = read_matrix(&dir.write("ok.npy", npy_file("<f8", "(2, 2)", &f8))).unwrap();
        assert_eq!((m.rows, m.cols), (2, 2));
    }

    /// The header alone, as an archive member's is read: the byte and integer arrays of
    /// CIFAR-10-C, any rank; a type outside the four is named.
    #[test]
    fn headers_of_bytes_and_integers_read_apart_from_the_data() {
        let file = npy_file("|u1", "(10, 32, 32, 3)", &[]);
        let range = dictionary(&file[..PREFIX_LEN], file.len()).unwrap();
        assert_eq!(range.end, file.len());
        let header = Header::read(&file[range]).unwrap();
        assert_eq!(
            (header.dtype, &header.shape[..]),
            (Dtype::U1, &[10, 32, 32, 3][..])
        );
        assert!(header.check_data(30_720).is_ok());
        let err = header.check_data(30_719).unwrap_err();
        assert!(err.contains("promises 30720 bytes"), "{err}");
        let file = npy_file("<i8", "(7,)", &[]);
        let range = dictionary(&file, file.len()).unwrap();
        assert_eq!(Header::read(&file[range]).unwrap().dtype, Dtype::I8);
        // The dictionary must lie within the file.
        assert!(
            dictionary(&file, file.len() - 1)
                .unwrap_err()
                .contains("shorter")
        );
        let file = npy_file("<u2", "(7,)", &[]);
        let err = Header::read(&file[dictionary(&file, file.len()).unwrap()]).unwrap_err();
        assert!(err.contains("unsupported dtype <u2"), "{err}");
    }
}
