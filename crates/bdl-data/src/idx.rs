//! The IDX format of MNIST and Fashion-MNIST.
//!
//! An IDX file is a big-endian header followed by the raw array:
//!
//! ```text
//! magic: 0x00 0x00 <type> <ndims>      type 0x08 = unsigned byte
//! ndims × u32 dimension sizes          count first: [N, rows, cols] for images, [N] for labels
//! N · rows · cols bytes of data        row-major
//! ```
//!
//! so images have magic `0x00000803` and labels `0x00000801`. The published files are
//! gzip-compressed; a path ending in `.gz` is decompressed first. The header is checked against
//! the payload: a file whose count disagrees with its size is an error, never a short read.

use std::path::Path;

use crate::{Error, Result, read};

/// Magic number of an IDX file of unsigned-byte images: type 0x08, 3 dimensions.
pub const IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX file of unsigned-byte labels: type 0x08, 1 dimension.
pub const LABELS_MAGIC: u32 = 0x0000_0801;

/// A stack of grey-scale images as stored in an IDX file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Images {
    /// Number of images.
    pub count: usize,
    /// Rows (height) of each image.
    pub rows: usize,
    /// Columns (width) of each image.
    pub cols: usize,
    /// `count · rows · cols` pixels, image after image, each row-major; 0 is background.
    pub pixels: Vec<u8>,
}

impl Images {
    /// The pixels of image `i`, or `None` past the last image.
    pub fn image(&self, i: usize) -> Option<&[u8]> {
        let size = self.rows * self.cols;
        let start = i.checked_mul(size)?;
        self.pixels.get(start..start.checked_add(size)?)
    }
}

/// Reads an IDX image file (`*-images-idx3-ubyte[.gz]`).
pub fn load_images(path: &Path) -> Result<Images> {
    let (dims, pixels) = parse(path, &read::maybe_gz(path)?, IMAGES_MAGIC)?;
    if dims.contains(&0) {
        // No pixels to check the image size against: refuse rather than trust it.
        return Err(Error::IdxEmpty {
            path: path.to_path_buf(),
            dims,
        });
    }
    Ok(Images {
        count: dims[0],
        rows: dims[1],
        cols: dims[2],
        pixels,
    })
}

/// Reads an IDX label file (`*-labels-idx1-ubyte[.gz]`).
pub fn load_labels(path: &Path) -> Result<Vec<u8>> {
    Ok(parse(path, &read::maybe_gz(path)?, LABELS_MAGIC)?.1)
}

/// Splits `bytes` into its dimensions and payload, checking the magic number and the size.
fn parse(path: &Path, bytes: &[u8], magic: u32) -> Result<(Vec<usize>, Vec<u8>)> {
    let word = |i: usize| -> Option<u32> {
        let b = bytes.get(4 * i..4 * i + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let too_short = |expected: usize| Error::IdxLength {
        path: path.to_path_buf(),
        dims: Vec::new(),
        expected,
        actual: bytes.len(),
    };
    let ndims = (magic & 0xff) as usize;
    let header = 4 * (1 + ndims);
    let found = word(0).ok_or_else(|| too_short(header))?;
    if found != magic {
        return Err(Error::IdxMagic {
            path: path.to_path_buf(),
            expected: magic,
            found,
        });
    }
    let dims: Vec<usize> = (1..=ndims)
        .map(|i| word(i).map(|d| d as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| too_short(header))?;
    // Saturating: a product past usize::MAX can never match a real file's length.
    let expected = dims.iter().fold(1usize, |n, &d| n.saturating_mul(d));
    let payload = &bytes[header..];
    if payload.len() != expected {
        return Err(Error::IdxLength {
            path: path.to_path_buf(),
            dims,
            expected,
            actual: payload.len(),
        });
    }
    Ok((dims, payload.to_vec()))
}

/// The bytes of an IDX file holding `payload` with the given magic number and dimensions
/// (the inverse of the readers; used to write fixtures and test inputs).
///
/// ```
/// let bytes = bdl_data::idx::encode(bdl_data::idx::LABELS_MAGIC, &[3], &[7, 0, 9]);
/// assert_eq!(bytes, [0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9]);
/// ```
pub fn encode(magic: u32, dims: &[u32], payload: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{Scratch, gzip};

    fn two_images() -> Vec<u8> {
        encode(
            IMAGES_MAGIC,
            &[2, 2, 3],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        )
    }

    #[test]
    fn reads_plain_and_gzip() {
        let dir = Scratch::new("idx-ok");
        for path in [
            dir.write("a-images-idx3-ubyte", two_images()),
            dir.write("a-images-idx3-ubyte.gz", gzip(&two_images())),
        ] {
            let im = load_images(&path).unwrap();
            assert_eq!((im.count, im.rows, im.cols), (2, 2, 3));
            assert_eq!(im.image(1), Some(&[6, 7, 8, 9, 10, 11][..]));
            assert_eq!(im.image(2), None);
            assert_eq!(im.image(usize::MAX), None);
        }
        let labels = dir.write("l.gz", gzip(&encode(LABELS_MAGIC, &[3], &[1, 2, 3])));
        assert_eq!(load_labels(&labels).unwrap(), [1, 2, 3]);
    }

    #[test]
    fn wrong_magic_is_named() {
        let dir = Scratch::new("idx-magic");
        // A label file where images are expected.
        let path = dir.write("x.gz", gzip(&encode(LABELS_MAGIC, &[3], &[1, 2, 3])));
        let err = load_images(&path).unwrap_err();
        assert!(
            matches!(
                err,
                Error::IdxMagic {
                    expected: IMAGES_MAGIC,
                    found: LABELS_MAGIC,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("x.gz"), "{err}");
    }

    #[test]
    fn count_disagreeing_with_header_is_named() {
        let dir = Scratch::new("idx-count");
        // The header promises 5 labels, the file holds 3.
        let path = dir.write("l", encode(LABELS_MAGIC, &[5], &[1, 2, 3]));
        let err = load_labels(&path).unwrap_err();
        assert!(
            matches!(
                err,
                Error::IdxLength {
                    expected: 5,
                    actual: 3,
                    ..
                }
            ),
            "{err}"
        );
        // Extra bytes are as wrong as missing ones.
        let long = dir.write("m", encode(LABELS_MAGIC, &[2], &[1, 2, 3]));
        assert!(matches!(load_labels(&long), Err(Error::IdxLength { .. })));
        // A header cut short.
        let short = dir.write("s", &two_images()[..9]);
        assert!(matches!(load_images(&short), Err(Error::IdxLength { .. })));
    }

    #[test]
    fn truncated_gzip_is_named() {
        let dir = Scratch::new("idx-trunc");
        let full = gzip(&two_images());
        let path = dir.write("t.gz", &full[..full.len() / 2]);
        let err = load_images(&path).unwrap_err();
        assert!(matches!(err, Error::Gzip { .. }), "{err}");
        assert!(err.to_string().contains("t.gz"), "{err}");
    }

    #[test]
    fn crafted_headers_are_errors_not_panics_or_huge_allocations() {
        let dir = Scratch::new("idx-crafted");
        // Dimensions whose product passes usize::MAX.
        let overflow = encode(IMAGES_MAGIC, &[u32::MAX, u32::MAX, u32::MAX], &[1, 2, 3]);
        let err = load_images(&dir.write("o-images-idx3-ubyte", overflow)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::IdxLength {
                    expected: usize::MAX,
                    ..
                }
            ),
            "{err}"
        );
        // No images of 30000 × 30000: nothing to check the image size against.
        let empty = gzip(&encode(IMAGES_MAGIC, &[0, 30_000, 30_000], &[]));
        let err = load_images(&dir.write("e-images-idx3-ubyte.gz", empty)).unwrap_err();
        assert!(matches!(err, Error::IdxEmpty { .. }), "{err}");
        assert!(err.to_string().contains("e-images-idx3-ubyte.gz"), "{err}");
    }
}
