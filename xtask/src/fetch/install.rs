//! Installing a fetched file: its bytes streamed into a temporary file beside the target while
//! their SHA-256 is computed, the digest checked, and only then the file renamed into place.
//!
//! ```text
//! source ─read─▶ Tee ─write─▶ <target>.<pid>.partial    SHA-256 of the bytes as they pass
//!                                  │  the row's digest? (a gzipped archive member: or that of
//!                                  │  its decompressed content, read back from the file)
//!                                  ▼  flushed to disk, renamed
//!                              <target>
//! ```
//!
//! Only a 64 KiB buffer is held in memory, whatever the file's size (CIFAR-10-C's archive is
//! 2.9 GB); a failure at any step removes the temporary file, so an unverified or partial file
//! never stands under the target's name.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use flate2::read::GzDecoder;
use indicatif::ProgressBar;

use super::manifest::{Origin, Remote};
use super::source::{Source, SourceError};

/// Fetches `remote` from `source` into `target`, progress on `bar`. The outer error stops the
/// run (an unreachable source, a file that cannot be written); the inner one fails this file
/// alone (missing, broken off, not matching its digest).
pub(super) fn install(
    remote: &Remote,
    target: &Path,
    source: &dyn Source,
    bar: &ProgressBar,
) -> anyhow::Result<anyhow::Result<()>> {
    let reader = match source.open(remote, bar) {
        Ok(reader) => reader,
        Err(SourceError::File(e)) => return Ok(Err(e)),
        Err(SourceError::Unreachable(e)) => return Err(e),
    };
    let partial = Partial::create(target)?;
    let location = source.location(remote);
    let mut tee = Tee {
        reader,
        sink: &partial.file,
        sink_error: None,
    };
    let digest = bdl_data::checksum::sha256_reader(&location, &mut tee);
    if let Some(e) = tee.sink_error {
        return Err(anyhow!(e).context(format!("cannot write {}", partial.path.display())));
    }
    let digest = match digest {
        Ok(digest) => digest,
        Err(e) => return Ok(Err(anyhow!(e).context("the transfer broke off"))),
    };
    match verify(remote, &location, digest, &partial.path) {
        Ok(()) => partial.install(target).map(Ok),
        Err(mismatch) => Ok(Err(mismatch.into())),
    }
}

/// Checks `digest`, the SHA-256 of the file at `file` (named `name` in errors), against the
/// digest of `remote`; a gzip-compressed archive member is also accepted when the decompressed
/// content of `file` has the member's digest.
pub(super) fn verify(
    remote: &Remote,
    name: &Path,
    digest: String,
    file: &Path,
) -> bdl_data::Result<()> {
    let stored = bdl_data::checksum::compare(name, digest, remote.sha256);
    match (stored, remote.origin) {
        (Err(mismatch), Origin::GzippedTarMember { member_sha256, .. }) => {
            let content = File::open(file)
                .map(|f| bdl_data::checksum::sha256_reader(name, GzDecoder::new(f)));
            match content {
                Ok(Ok(digest)) => {
                    bdl_data::checksum::compare(name, digest, member_sha256).map_err(|_| mismatch)
                }
                _ => Err(mismatch),
            }
        }
        (result, _) => result,
    }
}

/// The temporary name of a file being fetched to `target`: `<target>.<pid>.partial`.
fn partial_path(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".{}.partial", std::process::id()));
    PathBuf::from(name)
}

/// A file being fetched, under its temporary name; removed when dropped (after the rename into
/// place there is nothing left to remove).
struct Partial {
    path: PathBuf,
    file: File,
}

impl Partial {
    /// An empty temporary file beside `target`, creating its folder.
    fn create(target: &Path) -> anyhow::Result<Self> {
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let path = partial_path(target);
        let file =
            File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Partial { path, file })
    }

    /// Flushes the file to disk, renames it to `target`, and flushes the folder so that the
    /// rename survives a crash (a folder opens read-only for that on Unix; elsewhere it is best
    /// effort).
    fn install(self, target: &Path) -> anyhow::Result<()> {
        self.file
            .sync_all()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        std::fs::rename(&self.path, target)
            .with_context(|| format!("cannot rename {} into place", self.path.display()))?;
        if let Some(dir) = target.parent().and_then(|p| File::open(p).ok()) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A reader that writes everything it yields into `sink`, keeping the sink's failure
/// (`sink_error`: this machine's disk) apart from the reader's own (the source's).
struct Tee<R, W> {
    reader: R,
    sink: W,
    sink_error: Option<io::Error>,
}

impl<R: Read, W: Write> Read for Tee<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.reader.read(buf)?;
        if let Err(e) = self.sink.write_all(&buf[..n]) {
            let message = e.to_string();
            self.sink_error = Some(e);
            return Err(io::Error::other(message));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::tests::Scratch;

    /// A source serving `content` in reads of at most 1,000 bytes, failing at byte `fail_at`.
    /// Every read checks that what it handed out so far already lies on disk under the
    /// temporary name, and that nothing stands under the target's: the file streams to disk
    /// and is renamed only after the last byte.
    struct Served {
        content: Vec<u8>,
        fail_at: usize,
        target: PathBuf,
    }

    struct Chunks {
        content: Vec<u8>,
        at: usize,
        fail_at: usize,
        target: PathBuf,
    }

    impl Source for Served {
        fn open(&self, _: &Remote, _: &ProgressBar) -> Result<Box<dyn Read>, SourceError> {
            Ok(Box::new(Chunks {
                content: self.content.clone(),
                at: 0,
                fail_at: self.fail_at,
                target: self.target.clone(),
            }))
        }

        fn location(&self, _: &Remote) -> PathBuf {
            PathBuf::from("served")
        }
    }

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            assert!(!self.target.exists(), "renamed before the end");
            if self.at > 0 {
                let on_disk = std::fs::metadata(partial_path(&self.target)).unwrap().len();
                assert_eq!(on_disk, self.at as u64, "not streamed to disk");
            }
            if self.at >= self.fail_at {
                return Err(io::Error::other("connection reset"));
            }
            let n = buf.len().min(1000).min(self.content.len() - self.at);
            buf[..n].copy_from_slice(&self.content[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn content() -> Vec<u8> {
        (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect()
    }

    /// [`content`] served for `target`, the transfer broken after `fail_at` bytes.
    fn served(target: &Path, fail_at: usize) -> Served {
        Served {
            content: content(),
            fail_at,
            target: target.to_path_buf(),
        }
    }

    /// A row for `content`'s digest, or another.
    fn remote(sha256: String) -> Remote {
        Remote {
            path: "d/file.bin",
            sha256: Box::leak(sha256.into_boxed_str()),
            origin: Origin::Url("https://example.org/file.bin"),
        }
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_streams_to_disk_and_is_renamed_once_verified() {
        let dir = Scratch::new("stream");
        let target = dir.0.join("d/file.bin");
        let served = served(&target, usize::MAX);
        let row = remote(bdl_data::checksum::sha256_hex(&content()));
        install(&row, &target, &served, &ProgressBar::hidden())
            .unwrap()
            .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), content());
        assert_eq!(leftovers(&dir.0.join("d")), ["file.bin"]);
    }

    #[test]
    fn a_broken_or_mismatching_transfer_leaves_nothing() {
        let dir = Scratch::new("broken");
        let target = dir.0.join("d/file.bin");
        let digest = bdl_data::checksum::sha256_hex(&content());
        let broken = served(&target, 3000);
        let err = install(
            &remote(digest.clone()),
            &target,
            &broken,
            &ProgressBar::hidden(),
        )
        .unwrap()
        .unwrap_err();
        assert!(format!("{err:#}").contains("broke off"), "{err:#}");
        assert!(format!("{err:#}").contains("connection reset"), "{err:#}");
        assert!(leftovers(&dir.0.join("d")).is_empty());

        let whole = served(&target, usize::MAX);
        let err = install(
            &remote("0".repeat(64)),
            &target,
            &whole,
            &ProgressBar::hidden(),
        )
        .unwrap()
        .unwrap_err();
        assert!(err.to_string().contains("SHA-256 mismatch"), "{err}");
        assert!(leftovers(&dir.0.join("d")).is_empty());
    }

    #[test]
    fn a_target_that_cannot_be_written_stops_the_run() {
        let dir = Scratch::new("unwritable");
        std::fs::write(dir.0.join("d"), b"a file where the folder should be").unwrap();
        let target = dir.0.join("d/file.bin");
        let served = served(&target, usize::MAX);
        let row = remote(bdl_data::checksum::sha256_hex(&content()));
        assert!(install(&row, &target, &served, &ProgressBar::hidden()).is_err());
    }
}
