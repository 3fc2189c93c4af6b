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

/// The decompressed content of the gzip stream `compressed` read from `path`.
///
/// A stream that ends early or fails its CRC is an [`Error::Gzip`].
pub(crate) fn gunzip(path: &Path, compressed: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(compressed.len() * 4);
    GzDecoder::new(compressed)
        .read_to_end(&mut out)
        .map_err(|source| Error::Gzip {
            path: path.to_path_buf(),
            source,
        })?;
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
