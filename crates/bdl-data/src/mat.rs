//! Two-dimensional real arrays from MATLAB level-5 `.mat` files (USPS). A path ending in `.gz`
//! is gunzipped first.
//!
//! A reader of its own for what the data sets use: numeric arrays (`miMATRIX` elements of class
//! double or single, real, with their data stored as any numeric type, as MATLAB does to save
//! space), at the top level or inside the zlib-compressed elements of MATLAB 7 files, in either
//! byte order. Every size read from the file is checked against the bytes that are really there
//! before anything is allocated, so any byte sequence gives a value or an [`Error::Mat`] naming
//! the file and the byte offset; nothing panics.

use std::io::Read;
use std::path::Path;

use crate::read::MAX_DECOMPRESSED;
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

/// The real double and single arrays of the MAT file at `path`, by name.
pub(crate) struct MatArrays<'p> {
    path: &'p Path,
    arrays: Vec<(String, Array)>,
}

/// One numeric array: its dimensions, or why it cannot be read as a real matrix.
type Array = std::result::Result<ColumnMajor, String>;

impl<'p> MatArrays<'p> {
    /// Reads the file at `path`.
    pub(crate) fn open(path: &'p Path) -> Result<Self> {
        let bytes = read::maybe_gz(path)?;
        let arrays = parse(&bytes).map_err(|message| Error::Mat {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(Self { path, arrays })
    }

    /// The real two-dimensional double or single array called `name`.
    pub(crate) fn matrix(&self, name: &str) -> Result<ColumnMajor> {
        let error = |message: String| Error::Mat {
            path: self.path.to_path_buf(),
            message,
        };
        let (_, array) = self
            .arrays
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| error(format!("no numeric array named `{name}`")))?;
        array
            .clone()
            .map_err(|why| error(format!("`{name}` {why}")))
    }
}

/// Parses the 128-byte header (text, subsystem offset, version, byte-order mark `IM` or `MI`)
/// and every data element after it.
fn parse(bytes: &[u8]) -> std::result::Result<Vec<(String, Array)>, String> {
    let endian = bytes
        .get(126..128)
        .ok_or("shorter than the 128-byte header of a MAT file")?;
    let order = match endian {
        b"IM" => Order::Little,
        b"MI" => Order::Big,
        _ => {
            return Err(
                "no byte-order mark (IM or MI) at bytes 126–127: not a level-5 MAT file".into(),
            );
        }
    };
    let mut arrays = Vec::new();
    for element in Elements::new(bytes, 128, order) {
        let Element { kind, at, data } = element?;
        match kind {
            MI_MATRIX => arrays.push(matrix(data, at + 8, order)?),
            MI_COMPRESSED => {
                let inflated = inflate(data)
                    .map_err(|e| format!("the compressed element at byte {at}: {e}"))?;
                for inner in Elements::new(&inflated, 0, order) {
                    let inner = inner
                        .map_err(|e| format!("inside the compressed element at byte {at}: {e}"))?;
                    if inner.kind == MI_MATRIX {
                        let parsed = matrix(inner.data, inner.at + 8, order).map_err(|e| {
                            format!("inside the compressed element at byte {at}: {e}")
                        })?;
                        arrays.push(parsed);
                    }
                }
            }
            _ => {} // other top-level elements hold no arrays
        }
    }
    Ok(arrays)
}

/// Inflates a zlib stream, bounded by [`MAX_DECOMPRESSED`].
fn inflate(data: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(data)
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() as u64 > MAX_DECOMPRESSED {
        return Err(format!("it expands past {MAX_DECOMPRESSED} bytes"));
    }
    Ok(out)
}

const MI_INT8: u32 = 1;
const MI_UINT8: u32 = 2;
const MI_INT16: u32 = 3;
const MI_UINT16: u32 = 4;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_SINGLE: u32 = 7;
const MI_DOUBLE: u32 = 9;
const MI_INT64: u32 = 12;
const MI_UINT64: u32 = 13;
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
const MX_DOUBLE: u8 = 6;
const MX_SINGLE: u8 = 7;
/// The complex flag of an array's flags word.
const COMPLEX: u32 = 0x0800;

#[derive(Clone, Copy)]
enum Order {
    Little,
    Big,
}

impl Order {
    fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Self::Little => u32::from_le_bytes(b),
            Self::Big => u32::from_be_bytes(b),
        }
    }
}

/// A data element: its type, the offset of its tag (for messages), and its data.
struct Element<'a> {
    kind: u32,
    at: usize,
    data: &'a [u8],
}

/// The data elements of `bytes` from `start`: an 8-byte tag (type, byte count) then the data
/// padded to a multiple of 8, or the small format (byte count in the upper half of the type
/// word, at most 4 bytes of data in the tag's second word). A compressed element is not padded.
struct Elements<'a> {
    bytes: &'a [u8],
    at: usize,
    order: Order,
    /// Offsets count from here in messages.
    base: usize,
    failed: bool,
}

impl<'a> Elements<'a> {
    fn new(bytes: &'a [u8], start: usize, order: Order) -> Self {
        Self {
            bytes,
            at: start,
            order,
            base: 0,
            failed: false,
        }
    }

    fn word(&self, at: usize) -> Option<u32> {
        let b: [u8; 4] = self.bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(self.order.u32(b))
    }

    fn next_element(&mut self) -> std::result::Result<Element<'a>, String> {
        let at = self.at;
        let offset = self.base + at;
        let (Some(kind), Some(size)) = (self.word(at), self.word(at + 4)) else {
            return Err(format!(
                "a data element's tag at byte {offset} is cut short"
            ));
        };
        let small = kind >> 16;
        if small != 0 {
            if small > 4 {
                return Err(format!(
                    "the small data element at byte {offset} declares {small} bytes (at most 4)"
                ));
            }
            self.at = at + 8;
            return Ok(Element {
                kind: kind & 0xffff,
                at: offset,
                data: &self.bytes[at + 4..at + 4 + small as usize],
            });
        }
        let size = size as usize;
        let left = self.bytes.len() - at - 8;
        if size > left {
            return Err(format!(
                "the data element at byte {offset} declares {size} bytes, more than the {left} left"
            ));
        }
        let padded = if kind == MI_COMPRESSED {
            size
        } else {
            size.next_multiple_of(8)
        };
        // The last element may end without its padding (writers differ).
        self.at = (at + 8 + padded).min(self.bytes.len());
        Ok(Element {
            kind,
            at: offset,
            data: &self.bytes[at + 8..at + 8 + size],
        })
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = std::result::Result<Element<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at >= self.bytes.len() {
            return None;
        }
        let next = self.next_element();
        self.failed = next.is_err();
        Some(next)
    }
}

/// An `miMATRIX` element's sub-elements: flags, dimensions, name, real part (and an imaginary
/// part when complex). Arrays of other classes (cells, structs, text) are named with the reason
/// they cannot be read, so that asking for them gives a clear error.
fn matrix(data: &[u8], at: usize, order: Order) -> std::result::Result<(String, Array), String> {
    let mut parts = Elements {
        base: at,
        ..Elements::new(data, 0, order)
    };
    let mut part = |what: &str| {
        parts
            .next()
            .unwrap_or_else(|| Err(format!("the array at byte {at} ends before its {what}")))
    };
    let flags = part("flags")?;
    let dims = part("dimensions")?;
    let name = part("name")?;
    let flags = numbers(&flags, order).map_err(|e| format!("the array at byte {at}: flags {e}"))?;
    let word = flags.first().copied().unwrap_or(0.0) as u32;
    let class = (word & 0xff) as u8;
    let dims: Vec<f64> =
        numbers(&dims, order).map_err(|e| format!("the array at byte {at}: dimensions {e}"))?;
    let name = std::str::from_utf8(name.data)
        .map_err(|_| format!("the array at byte {at} has a name that is not text"))?
        .to_owned();
    let array = (|| -> Array {
        if class != MX_DOUBLE && class != MX_SINGLE {
            return Err(format!(
                "is not a real double or single array (class {class})"
            ));
        }
        if word & COMPLEX != 0 {
            return Err("is complex, not a real double or single array".into());
        }
        let (rows, cols) = match dims[..] {
            [rows, cols] if rows >= 0.0 && cols >= 0.0 => (rows as usize, cols as usize),
            _ => return Err(format!("has dimensions {dims:?}, expected 2")),
        };
        let real = part("real part")?;
        let values = numbers(&real, order)?;
        if rows.checked_mul(cols) != Some(values.len()) {
            return Err(format!(
                "is {rows}×{cols} but holds {} values",
                values.len()
            ));
        }
        Ok(ColumnMajor { rows, cols, values })
    })();
    Ok((name, array))
}

/// A numeric element's values, widened to f64.
fn numbers(element: &Element<'_>, order: Order) -> std::result::Result<Vec<f64>, String> {
    fn each<const W: usize>(data: &[u8], f: impl Fn([u8; W]) -> f64) -> Vec<f64> {
        data.chunks_exact(W)
            .map(|c| f(c.try_into().expect("W bytes")))
            .collect()
    }
    let little = matches!(order, Order::Little);
    macro_rules! widen {
        ($t:ty) => {
            each(element.data, |b| {
                (if little {
                    <$t>::from_le_bytes(b)
                } else {
                    <$t>::from_be_bytes(b)
                }) as f64
            })
        };
    }
    let width = match element.kind {
        MI_INT8 | MI_UINT8 => 1,
        MI_INT16 | MI_UINT16 => 2,
        MI_INT32 | MI_UINT32 | MI_SINGLE => 4,
        MI_DOUBLE | MI_INT64 | MI_UINT64 => 8,
        other => return Err(format!("of data type {other}, not a number")),
    };
    if !element.data.len().is_multiple_of(width) {
        return Err(format!(
            "of {} bytes, not a whole number of {width}-byte values",
            element.data.len()
        ));
    }
    Ok(match element.kind {
        MI_INT8 => widen!(i8),
        MI_UINT8 => widen!(u8),
        MI_INT16 => widen!(i16),
        MI_UINT16 => widen!(u16),
        MI_INT32 => widen!(i32),
        MI_UINT32 => widen!(u32),
        MI_SINGLE => widen!(f32),
        MI_DOUBLE => widen!(f64),
        MI_INT64 => widen!(i64),
        _ => widen!(u64),
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::test_util::Scratch;

    /// A little-endian data element: tag, data, padding to 8 bytes.
    fn element(kind: u32, data: &[u8]) -> Vec<u8> {
        let mut out = kind.to_le_bytes().to_vec();
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(8), 0);
        out
    }

    /// An `miMATRIX` element of `class` with the given flags, dimensions, name and real part.
    fn array(class: u8, flags: u32, dims: &[i32], name: &str, kind: u32, real: &[u8]) -> Vec<u8> {
        let words: Vec<u8> = [u32::from(class) | flags, 0]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let dims: Vec<u8> = dims.iter().flat_map(|d| d.to_le_bytes()).collect();
        let body = [
            element(MI_UINT32, &words),
            element(MI_INT32, &dims),
            element(MI_INT8, name.as_bytes()),
            element(kind, real),
        ]
        .concat();
        element(MI_MATRIX, &body)
    }

    fn file(elements: &[Vec<u8>]) -> Vec<u8> {
        let mut out = vec![b' '; 116];
        out.extend_from_slice(&[0; 8]); // subsystem offset
        out.extend_from_slice(&[0x00, 0x01, b'I', b'M']); // version 0x0100, little-endian
        out.extend(elements.concat());
        out
    }

    fn open(dir: &Scratch, bytes: Vec<u8>) -> Result<Vec<(String, Array)>> {
        let path = dir.write("m.mat", bytes);
        MatArrays::open(&path).map(|m| m.arrays)
    }

    #[test]
    fn reads_arrays_stored_as_smaller_types_and_compressed() {
        let dir = Scratch::new("mat-ok");
        // A double array stored as int16 (as MATLAB stores USPS's ±1 labels), and a single
        // array inside a zlib-compressed element.
        let labels: Vec<u8> = [-1i16, 1, -1, -1, 1, -1]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let single: Vec<u8> = [0.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&array(MX_SINGLE, 0, &[1, 2], "s", MI_SINGLE, &single))
            .unwrap();
        let compressed = z.finish().unwrap();
        let mut packed = MI_COMPRESSED.to_le_bytes().to_vec();
        packed.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
        packed.extend_from_slice(&compressed);
        let path = dir.write(
            "ok.mat",
            file(&[
                array(MX_DOUBLE, 0, &[2, 3], "labels", MI_INT16, &labels),
                packed,
            ]),
        );
        let mat = MatArrays::open(&path).unwrap();
        let l = mat.matrix("labels").unwrap();
        assert_eq!((l.rows, l.cols, l.column(1)), (2, 3, &[-1.0, -1.0][..]));
        assert_eq!(mat.matrix("s").unwrap().values, [0.5, -2.0]);
        let err = mat.matrix("nope").unwrap_err().to_string();
        assert!(
            err.contains("ok.mat") && err.contains("no numeric array named `nope`"),
            "{err}"
        );
    }

    /// Each a typed error naming the file; the first is the shape of the inputs on which the
    /// `matfile` crate panicked (a coverage-guided fuzzer's crashes): ten dimensions of
    /// 1,701,143,909 each.
    #[test]
    fn malformed_files_are_errors() {
        let dir = Scratch::new("mat-bad");
        let eight = 1.0f64.to_le_bytes();
        let at_open = [
            (
                file(&[element(7, &[0; 8])])[..100].to_vec(),
                "128-byte header",
            ),
            (vec![7u8; 300], "byte-order mark"),
            (
                {
                    let mut f = file(&[]);
                    f.extend_from_slice(&MI_MATRIX.to_le_bytes());
                    f.extend_from_slice(&(u32::MAX - 3).to_le_bytes());
                    f.extend_from_slice(&[0; 16]);
                    f
                },
                "declares",
            ),
            (
                file(&[((7u32 << 16) | MI_INT8).to_le_bytes().to_vec(), vec![0; 4]]),
                "small data element",
            ),
            (
                file(&[element(MI_COMPRESSED, b"not zlib at all")]),
                "compressed element",
            ),
            (
                file(&[element(
                    MI_MATRIX,
                    &element(MI_UINT32, &[6, 0, 0, 0, 0, 0, 0, 0]),
                )]),
                "ends before its dimensions",
            ),
        ];
        for (bytes, says) in at_open {
            let err = open(&dir, bytes).err().unwrap();
            assert!(matches!(err, Error::Mat { .. }), "{err}");
            assert!(
                err.to_string().contains("m.mat") && err.to_string().contains(says),
                "{says}: {err}"
            );
        }
        let at_use = [
            (
                array(MX_DOUBLE, 0, &[0x6565_6565; 10], "a", MI_DOUBLE, &eight),
                "expected 2",
            ),
            (
                array(MX_DOUBLE, COMPLEX, &[1, 1], "a", MI_DOUBLE, &eight),
                "complex",
            ),
            (array(4, 0, &[1, 1], "a", MI_UINT16, &[0, 0]), "class 4"),
            (
                array(MX_DOUBLE, 0, &[2, 2], "a", MI_DOUBLE, &eight),
                "holds 1 values",
            ),
            (
                array(MX_DOUBLE, 0, &[1, 1], "a", MI_MATRIX, &eight),
                "not a number",
            ),
            (
                array(MX_DOUBLE, 0, &[1, 1], "a", MI_DOUBLE, &eight[..5]),
                "whole number",
            ),
        ];
        for (bytes, says) in at_use {
            let path = dir.write("a.mat", file(&[bytes]));
            let err = MatArrays::open(&path).unwrap().matrix("a").unwrap_err();
            assert!(matches!(err, Error::Mat { .. }), "{err}");
            assert!(
                err.to_string().contains("a.mat") && err.to_string().contains(says),
                "{says}: {err}"
            );
        }
    }
}
