//! Members of tar archives, found by their paths.
//!
//! A tar archive is a sequence of members, each a 512-byte header (path, size, type) followed by
//! its content padded to a multiple of 512 bytes; the `tar` crate reads the headers (GNU and pax
//! long names included). An uncompressed `.tar` is walked by seeking from header to header, so
//! that a member is located without reading any content ([`locate`]: CIFAR-10-C's 2.9 GB
//! archive is never read whole); a `.tar.gz` cannot seek and is read as one stream, keeping the
//! wanted members ([`extract`]). Archives are opened read-only, and a member is the first
//! regular file of its path.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use flate2::read::GzDecoder;

use crate::read::MAX_DECOMPRESSED;
use crate::{Error, Result};

/// Where a member's content lies in an uncompressed archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// The offset of its first byte in the file.
    pub(crate) start: u64,
    /// Its length in bytes.
    pub(crate) len: u64,
}

/// Opens the archive at `path` for reading. A missing file is [`Error::NotFetched`], with
/// `dataset` the argument of `cargo xtask fetch` that installs it.
pub(crate) fn open(path: &Path, dataset: &str) -> Result<File> {
    File::open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => Error::NotFetched {
            path: path.to_path_buf(),
            dataset: dataset.to_owned(),
        },
        _ => Error::Io {
            path: path.to_path_buf(),
            source,
        },
    })
}

/// Where `members` (paths inside the archive) lie in the uncompressed tar archive `file`, read
/// from `path`, in the order asked. The walk seeks over every content and stops at the last
/// member wanted; a member whose header promises more bytes than the file holds after it is
/// [`Error::MemberLength`].
pub(crate) fn locate(path: &Path, mut file: &File, members: &[&str]) -> Result<Vec<Span>> {
    let file_len = file.metadata().map_err(io_error(path))?.len();
    // The walk counts offsets from where the file's cursor is: its start.
    file.rewind().map_err(io_error(path))?;
    let mut found = vec![None; members.len()];
    let mut archive = tar::Archive::new(file);
    for entry in archive.entries_with_seek().map_err(tar_error(path))? {
        let entry = entry.map_err(tar_error(path))?;
        let Some(i) = which(&entry, members, &found).map_err(tar_error(path))? else {
            continue;
        };
        found[i] = Some(Span {
            start: entry.raw_file_position(),
            len: entry.size(),
        });
        if found.iter().all(Option::is_some) {
            break;
        }
    }
    let spans = all_found(path, members, found)?;
    for (span, member) in spans.iter().zip(members) {
        let held = file_len.saturating_sub(span.start);
        if held < span.len {
            return Err(cut_short(path, member, span.len, held));
        }
    }
    Ok(spans)
}

/// The contents of `members` of the gzip-compressed tar archive `file`, read from `path`, in the
/// order asked. The stream is read once, up to the last member wanted and at most
/// [`MAX_DECOMPRESSED`] bytes of it (a bound against gzip bombs: a member past it is missing).
pub(crate) fn extract(path: &Path, file: File, members: &[&str]) -> Result<Vec<Vec<u8>>> {
    let mut found = vec![None; members.len()];
    let mut archive = tar::Archive::new(GzDecoder::new(file).take(MAX_DECOMPRESSED));
    for entry in archive.entries().map_err(tar_error(path))? {
        let mut entry = entry.map_err(tar_error(path))?;
        let Some(i) = which(&entry, members, &found).map_err(tar_error(path))? else {
            continue;
        };
        // Grown as the bytes arrive, never sized by the header: no allocation past the stream.
        let mut content = Vec::new();
        entry.read_to_end(&mut content).map_err(tar_error(path))?;
        if (content.len() as u64) < entry.size() {
            return Err(cut_short(
                path,
                members[i],
                entry.size(),
                content.len() as u64,
            ));
        }
        found[i] = Some(content);
        if found.iter().all(Option::is_some) {
            break;
        }
    }
    all_found(path, members, found)
}

/// The `len` bytes of `file` (read from `path`) from `start` on, a range already checked to lie
/// within the file.
pub(crate) fn read_span(path: &Path, mut file: &File, start: u64, len: usize) -> Result<Vec<u8>> {
    let mut bytes = vec![0; len];
    file.seek(SeekFrom::Start(start))
        .and_then(|_| file.read_exact(&mut bytes))
        .map_err(io_error(path))?;
    Ok(bytes)
}

/// Which of `members` `entry` is, when it is a regular file of a path not `found` before.
fn which<R: Read, T>(
    entry: &tar::Entry<'_, R>,
    members: &[&str],
    found: &[Option<T>],
) -> std::io::Result<Option<usize>> {
    if !entry.header().entry_type().is_file() {
        return Ok(None);
    }
    let path = entry.path()?;
    Ok(members
        .iter()
        .position(|m| path == Path::new(m))
        .filter(|&i| found[i].is_none()))
}

/// Every member's `found` value, or [`Error::MissingMember`] for the first one not found.
fn all_found<T>(path: &Path, members: &[&str], found: Vec<Option<T>>) -> Result<Vec<T>> {
    found
        .into_iter()
        .zip(members)
        .map(|(value, member)| {
            value.ok_or_else(|| Error::MissingMember {
                path: path.to_path_buf(),
                member: (*member).to_owned(),
            })
        })
        .collect()
}

/// A member that holds fewer bytes than its tar header promises.
fn cut_short(path: &Path, member: &str, promised: u64, held: u64) -> Error {
    Error::MemberLength {
        path: path.to_path_buf(),
        member: member.to_owned(),
        expected: format!("{promised} (its tar header's size)"),
        actual: held,
    }
}

fn tar_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Tar {
        path: path.to_path_buf(),
        source,
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{Scratch, gzip, tar_file};

    fn two_members() -> Vec<u8> {
        tar_file(&[
            ("d/a.bin", b"first"),
            ("d/skip.bin", &[7; 700]),
            ("d/b.bin", b"second member"),
        ])
    }

    #[test]
    fn members_are_located_by_path_in_the_order_asked() {
        let dir = Scratch::new("archive-locate");
        let path = dir.write("x.tar", two_members());
        let file = File::open(&path).unwrap();
        let spans = locate(&path, &file, &["d/b.bin", "d/a.bin"]).unwrap();
        assert_eq!(spans[0].len, 13);
        assert_eq!(spans[1], Span { start: 512, len: 5 });
        let content = read_span(&path, &file, spans[0].start, spans[0].len as usize).unwrap();
        assert_eq!(content, b"second member");
        let err = locate(&path, &file, &["d/a.bin", "a.bin"]).unwrap_err();
        assert!(
            matches!(&err, Error::MissingMember { member, .. } if member == "a.bin"),
            "{err}"
        );
    }

    #[test]
    fn gzipped_members_are_extracted_in_the_order_asked() {
        let dir = Scratch::new("archive-extract");
        let path = dir.write("x.tar.gz", gzip(&two_members()));
        let open = || File::open(&path).unwrap();
        let contents = extract(&path, open(), &["d/b.bin", "d/a.bin"]).unwrap();
        assert_eq!(contents, [&b"second member"[..], b"first"]);
        let err = extract(&path, open(), &["d/c.bin"]).unwrap_err();
        assert!(matches!(err, Error::MissingMember { .. }), "{err}");
    }

    #[test]
    fn archives_cut_short_are_named() {
        let dir = Scratch::new("archive-short");
        let full = two_members();
        // Headers at 0, 1024 and 2560 (each content padded to 512 bytes): cut inside the last
        // member's content, whose header promises more than the file holds.
        let path = dir.write("short.tar", &full[..3072 + 4]);
        let file = File::open(&path).unwrap();
        let err = locate(&path, &file, &["d/b.bin"]).unwrap_err();
        assert!(
            matches!(err, Error::MemberLength { actual: 4, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("short.tar"), "{err}");
        // The same cut inside a gzip stream ends the member early.
        let path = dir.write("short.tar.gz", gzip(&full[..3072 + 4]));
        let err = extract(&path, File::open(&path).unwrap(), &["d/b.bin"]).unwrap_err();
        assert!(
            matches!(err, Error::MemberLength { actual: 4, .. }),
            "{err}"
        );
        // A gzip stream cut short is a corrupt archive.
        let gz = gzip(&full);
        let path = dir.write("cut.tar.gz", &gz[..gz.len() / 2]);
        let err = extract(&path, File::open(&path).unwrap(), &["d/b.bin"]).unwrap_err();
        assert!(matches!(err, Error::Tar { .. }), "{err}");
        // Inside a header.
        let path = dir.write("header.tar", &full[..2560 + 100]);
        let err = locate(&path, &File::open(&path).unwrap(), &["d/b.bin"]).unwrap_err();
        assert!(matches!(err, Error::Tar { .. }), "{err}");
    }

    #[test]
    fn a_missing_archive_names_the_fetch_command() {
        let dir = Scratch::new("archive-missing");
        let err = open(&dir.path().join("none.tar"), "cifar10-c").unwrap_err();
        assert!(
            matches!(&err, Error::NotFetched { dataset, .. } if dataset == "cifar10-c"),
            "{err}"
        );
        assert!(
            err.to_string().contains("`cargo xtask fetch cifar10-c`"),
            "{err}"
        );
    }
}
