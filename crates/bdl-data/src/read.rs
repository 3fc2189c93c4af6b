//! Reading whole files, gzip-compressed or not, with errors that name the file.

use std::io::Read;
use std::path::Path;

use flate2::read::GzDecoder;

use crate::{Error, Result};

/// The bytes of the file at `path`.
pub(crate) fn bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The most bytes a compressed data file may expand to (the largest streams the workspace
/// reads are MNIST's training images, 47 MB, and CIFAR-10's tar archive, 185 MB): a bound
/// against gzip bombs.
pub(crate) const MAX_DECOMPRESSED: u64 = 1 << 30;

/// The decompressed content of the gzip stream `compressed` read from `path`.
///
/// A stream that ends early, fails its CRC or expands past [`MAX_DECOMPRESSED`] bytes is an
/// [`Error::Gzip`].
pub(crate) fn gunzip(path: &Path, compressed: &[u8]) -> Result<Vec<u8>> {
    gunzip_within(path, compressed, MAX_DECOMPRESSED)
}

fn gunzip_within(path: &Path, compressed: &[u8], limit: u64) -> Result<Vec<u8>> {
    let gzip = |source| Error::Gzip {
        path: path.to_path_buf(),
        source,
    };
    let mut out = Vec::with_capacity(compressed.len().saturating_mul(4).min(limit as usize));
    GzDecoder::new(compressed)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(gzip)?;
    if out.len() as u64 > limit {
        return Err(gzip(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the stream expands past {limit} bytes"),
        )));
    }
    Ok(out)
}

/// The content of the file at `path`, decompressed when its name ends in `.gz`.
pub(crate) fn maybe_gz(path: &Path) -> Result<Vec<u8>> {
    let raw = bytes(path)?;
    if path.extension().is_some_and(|e| e == "gz") {
        gunzip(path, &raw)
    } else {
        Ok(raw)
    }
}

/// The content of the UTF-8 text file at `path`.
pub(crate) fn text(path: &Path) -> Result<String> {
    String::from_utf8(bytes(path)?).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::gzip;

    #[test]
    fn a_stream_expanding_past_the_bound_is_an_error() {
        let bomb = gzip(&vec![0u8; 10_000]);
        assert_eq!(
            gunzip_within(Path::new("b.gz"), &bomb, 10_000)
                .unwrap()
                .len(),
            10_000
        );
        let err = gunzip_within(Path::new("b.gz"), &bomb, 9_999).unwrap_err();
        assert!(
            err.to_string().contains("b.gz") && err.to_string().contains("expands"),
            "{err}"
        );
    }
}
