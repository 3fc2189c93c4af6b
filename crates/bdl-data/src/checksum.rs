//! SHA-256 digests and their verification.
//!
//! Every published data file has a SHA-256 digest (`SHA256SUMS` beside the data, the table of
//! `cargo xtask fetch`, `fixtures/data/README.md`). Digests are lower-case hexadecimal strings.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The SHA-256 digest of `bytes`, as 64 lower-case hex digits.
///
/// ```
/// assert_eq!(
///     bdl_data::checksum::sha256_hex(b"abc"),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The SHA-256 digest of everything `reader` yields; `path` names the source in errors.
pub fn sha256_reader(path: &Path, mut reader: impl Read) -> Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if n == 0 {
            return Ok(hex(&hasher.finalize()));
        }
        hasher.update(&buf[..n]);
    }
}

/// Checks that `bytes` (the content of `path`) have the SHA-256 digest `expected`.
///
/// ```
/// use std::path::Path;
/// let ok = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
/// assert!(bdl_data::checksum::verify(Path::new("abc.txt"), b"abc", ok).is_ok());
/// let err = bdl_data::checksum::verify(Path::new("abc.txt"), b"abd", ok).unwrap_err();
/// assert!(err.to_string().starts_with("abc.txt: SHA-256 mismatch"));
/// ```
pub fn verify(path: &Path, bytes: &[u8], expected: &str) -> Result<()> {
    compare(path, sha256_hex(bytes), expected)
}

/// Checks that the file at `path` has the SHA-256 digest `expected`, reading it in chunks.
pub fn verify_file(path: &Path, expected: &str) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    compare(path, sha256_reader(path, file)?, expected)
}

/// Checks that the digest `actual` of the content of `path` (computed as it streamed past, by
/// [`sha256_reader`] for instance) is `expected`, in either case of hex digits.
///
/// ```
/// use std::path::Path;
/// let digest = bdl_data::checksum::sha256_hex(b"abc");
/// assert!(bdl_data::checksum::compare(Path::new("abc.txt"), digest.clone(), &digest).is_ok());
/// let err = bdl_data::checksum::compare(Path::new("abc.txt"), digest, &"0".repeat(64));
/// assert!(err.unwrap_err().to_string().starts_with("abc.txt: SHA-256 mismatch"));
/// ```
pub fn compare(path: &Path, actual: String, expected: &str) -> Result<()> {
    if actual.eq_ignore_ascii_case(expected) {
        Ok(())
    } else {
        Err(Error::ChecksumMismatch {
            path: path.to_path_buf(),
            expected: expected.to_ascii_lowercase(),
            actual,
        })
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_and_slice_agree() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let streamed = sha256_reader(Path::new("mem"), &data[..]).unwrap();
        assert_eq!(streamed, sha256_hex(&data));
    }

    #[test]
    fn mismatch_names_the_file_and_both_digests() {
        let err = verify(Path::new("dir/f.bin"), b"x", &"0".repeat(64)).unwrap_err();
        match &err {
            Error::ChecksumMismatch {
                path,
                expected,
                actual,
            } => {
                assert_eq!(path, Path::new("dir/f.bin"));
                assert_eq!(expected, &"0".repeat(64));
                assert_eq!(actual, &sha256_hex(b"x"));
            }
            other => panic!("unexpected error {other}"),
        }
        assert!(err.to_string().contains("dir/f.bin"));
    }
}
