//! `cargo xtask fetch <dataset|all> [--mirror DIR] [--data-dir DIR]`: puts the data files of
//! the papers into a data folder, verified against their published SHA-256 digests.
//!
//! Files come from their canonical upstream URLs (the table in [`manifest`]) or, with `--mirror`
//! (or `BDL_DATA_MIRROR`), from a local folder laid out like the data root; CIFAR-10 and
//! CIFAR-10-C come from upstream only (a mirror need not hold them). Either way every file is
//! streamed into a temporary file beside its target while its SHA-256 is computed, and renamed
//! into place only once verified ([`mod@install`]), so a failed or partial transfer never leaves a
//! file in place and no file is held in memory. Files already present and valid are kept;
//! present but invalid ones are removed and fetched again.

mod install;
mod manifest;
mod source;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use install::{install, verify};
use manifest::{FILES, Remote};
use source::{Http, Mirror, Source};

/// Arguments of `cargo xtask fetch`.
#[derive(Debug, Args)]
pub(crate) struct FetchArgs {
    /// `all`, or a folder of the data root: mnist, fashion-mnist, cifar10, cifar10-c, uci,
    /// uci/gal, uci/gap, uci/gal/concrete, toy, toy/noisy_xor, blr, blr/usps, ...
    dataset: String,
    /// Copy from this local folder, laid out like the data root, instead of downloading.
    #[arg(long, env = "BDL_DATA_MIRROR", value_name = "DIR")]
    mirror: Option<PathBuf>,
    /// The data folder to fill [default: target/data in the workspace].
    #[arg(long, env = "BDL_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

/// Runs `cargo xtask fetch`.
pub(crate) fn run(args: &FetchArgs) -> anyhow::Result<()> {
    let files = select(&args.dataset)?;
    let dest = args
        .data_dir
        .clone()
        .unwrap_or_else(bdl_data::root::fetched);
    let source: Box<dyn Source> = match &args.mirror {
        Some(dir) => Box::new(Mirror::new(dir)?),
        None => Box::new(Http::new()),
    };
    let report = fetch(&files, &dest, source.as_ref(), &MultiProgress::new())?;
    println!(
        "{} files verified in {} ({} fetched, {} already present)",
        report.fetched + report.present,
        dest.display(),
        report.fetched,
        report.present
    );
    if !report.failed.is_empty() {
        for (path, error) in &report.failed {
            eprintln!("FAILED {path}: {error:#}");
        }
        let names: Vec<&str> = report.failed.iter().map(|(p, _)| p.as_str()).collect();
        bail!(
            "{} of {} files failed: {}",
            names.len(),
            files.len(),
            names.join(", ")
        );
    }
    Ok(())
}

/// The files of `dataset`: `all`, or every file under that folder of the data root.
fn select(dataset: &str) -> anyhow::Result<Vec<Remote>> {
    let wanted = dataset.trim_end_matches('/');
    let files: Vec<Remote> = FILES
        .iter()
        .filter(|f| wanted == "all" || f.path.starts_with(&format!("{wanted}/")))
        .copied()
        .collect();
    if files.is_empty() {
        let mut top: Vec<&str> = FILES
            .iter()
            .map(|f| f.path.split('/').next().unwrap_or(""))
            .collect();
        top.dedup();
        bail!(
            "no data set `{dataset}`: use `all` or a folder such as {} (or a subfolder like uci/gap)",
            top.join(", ")
        );
    }
    Ok(files)
}

/// What a fetch did.
#[derive(Debug, Default)]
struct Report {
    /// Files copied or downloaded and installed.
    fetched: usize,
    /// Files that were already present and valid.
    present: usize,
    /// Files that could not be fetched or did not verify, with the reason.
    failed: Vec<(String, anyhow::Error)>,
}

/// Fetches `files` from `source` into `dest`. Per-file failures are collected in the report; an
/// unreachable source, or a file that cannot be read or written here, stops the run.
fn fetch(
    files: &[Remote],
    dest: &Path,
    source: &dyn Source,
    progress: &MultiProgress,
) -> anyhow::Result<Report> {
    let overall = progress.add(ProgressBar::new(files.len() as u64));
    overall.set_style(
        ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} files {wide_msg}")?
            .progress_chars("=> "),
    );
    overall.set_prefix("fetch");
    let mut report = Report::default();
    for remote in files {
        overall.set_message(remote.path);
        let target = dest.join(remote.path);
        if target.is_file() {
            let existing = std::fs::File::open(&target)
                .map_err(anyhow::Error::from)
                .and_then(|f| Ok(bdl_data::checksum::sha256_reader(&target, f)?))
                .with_context(|| format!("cannot read {}", target.display()))?;
            if verify(remote, &target, existing, &target).is_ok() {
                report.present += 1;
                overall.inc(1);
                continue;
            }
            std::fs::remove_file(&target)
                .with_context(|| format!("cannot remove invalid {}", target.display()))?;
        }
        let bar = progress.add(ProgressBar::new(0));
        bar.set_style(ProgressStyle::with_template(
            "{prefix:>8} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
        )?);
        bar.set_prefix("file");
        let installed = install(remote, &target, source, &bar);
        bar.finish_and_clear();
        progress.remove(&bar);
        match installed {
            Ok(Ok(())) => report.fetched += 1,
            Ok(Err(e)) => report.failed.push((remote.path.to_owned(), e)),
            Err(e) => {
                overall.abandon();
                return Err(e);
            }
        }
        overall.inc(1);
    }
    overall.finish_and_clear();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use manifest::{Origin, UPSTREAM_ONLY};

    /// A scratch folder removed on drop (also for the tests of `install`).
    pub(super) struct Scratch(pub(super) PathBuf);

    impl Scratch {
        pub(super) fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("xtask-fetch-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The toy sets ship unchanged in the fixtures, so `fixtures/data` is a valid mirror of them.
    fn toy_files() -> Vec<Remote> {
        select("toy").unwrap()
    }

    #[test]
    fn selection_by_folder() {
        assert_eq!(select("all").unwrap().len(), FILES.len());
        assert_eq!(select("mnist").unwrap().len(), 4);
        assert_eq!(select("toy/noisy_xor/").unwrap().len(), 8);
        assert!(
            select("uci/gap")
                .unwrap()
                .iter()
                .all(|f| f.path.starts_with("uci/gap/"))
        );
        let err = select("cifar").unwrap_err().to_string();
        assert!(err.contains("mnist") && err.contains("uci"), "{err}");
        // `cifar10` must not pick up `cifar10-c`.
        let cifar: Vec<&str> = select("cifar10").unwrap().iter().map(|f| f.path).collect();
        assert_eq!(cifar, ["cifar10/cifar-10-binary.tar.gz"]);
        // `mnist` must not pick up `fashion-mnist`, nor `uci/gal/concrete` a longer name.
        assert!(
            select("mnist")
                .unwrap()
                .iter()
                .all(|f| f.path.starts_with("mnist/"))
        );
    }

    #[test]
    fn table_is_sorted_unique_and_well_formed() {
        for pair in FILES.windows(2) {
            assert!(
                pair[0].path < pair[1].path,
                "{} / {}",
                pair[0].path,
                pair[1].path
            );
        }
        for f in FILES {
            assert_eq!(f.sha256.len(), 64, "{}", f.path);
            assert!(
                f.sha256
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
            if let Origin::Url(url) = f.origin {
                assert!(url.starts_with("http"), "{url}");
                let file = f.path.rsplit('/').next().unwrap();
                let upstream = url.rsplit('/').next().unwrap();
                // Only the renamed toy set differs in its file name.
                assert!(
                    file == upstream || f.path == "toy/dun/agw_1d_data.npy",
                    "{url}"
                );
            }
        }
    }

    #[test]
    fn table_matches_the_shared_sha256sums() {
        let Some(shared) = bdl_data::root::shared() else {
            eprintln!("skipped: no shared data folder (set BDL_SHARED_DATA)");
            return;
        };
        let sums = std::fs::read_to_string(shared.join("SHA256SUMS")).unwrap();
        let listed: Vec<(String, String)> = sums
            .lines()
            .filter_map(|l| l.split_once("  "))
            .map(|(sha, path)| (path.to_owned(), sha.to_owned()))
            .collect();
        // Every row but the upstream-only ones, which the shared copy must not list either.
        let table: Vec<(String, String)> = FILES
            .iter()
            .filter(|f| !UPSTREAM_ONLY.contains(&f.path))
            .map(|f| (f.path.to_owned(), f.sha256.to_owned()))
            .collect();
        assert_eq!(table, listed);
    }

    /// The upstream-only rows are rows of the table, and the CIFAR readers read the files that
    /// `cargo xtask fetch <folder>` installs, the folder their missing-file error names.
    #[test]
    fn the_cifar_readers_files_are_rows_fetched_by_their_folder() {
        for path in UPSTREAM_ONLY {
            assert!(FILES.iter().any(|f| f.path == *path), "{path}");
        }
        for archive in [bdl_data::cifar::ARCHIVE, bdl_data::cifar::CORRUPTED_ARCHIVE] {
            assert!(UPSTREAM_ONLY.contains(&archive), "{archive}");
            let folder = archive.split('/').next().unwrap();
            let rows: Vec<&str> = select(folder).unwrap().iter().map(|f| f.path).collect();
            assert_eq!(rows, [archive]);
        }
        let missing = Scratch::new("cifar-root");
        let err = bdl_data::cifar::load(&missing.0, bdl_data::cifar::Part::Test).unwrap_err();
        assert!(
            err.to_string().contains("`cargo xtask fetch cifar10`"),
            "{err}"
        );
    }

    /// Fetching from a mirror that lacks an upstream-only file fails that file, as any file
    /// missing from a mirror does, and says to fetch it without `--mirror`.
    #[test]
    fn a_mirror_lacking_an_upstream_only_file_fails_it_with_a_hint() {
        let dest = Scratch::new("cifar-dest");
        let mirror = Mirror::new(&bdl_data::root::fixtures()).unwrap();
        let mut files = select("cifar10").unwrap();
        files.extend(toy_files());
        let hidden = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        let report = fetch(&files, &dest.0, &mirror, &hidden).unwrap();
        assert_eq!(report.fetched, files.len() - 1);
        assert_eq!(report.failed.len(), 1);
        let (path, error) = &report.failed[0];
        assert_eq!(path, "cifar10/cifar-10-binary.tar.gz");
        let message = format!("{error:#}");
        assert!(
            message.contains("cannot open") && message.contains("without --mirror"),
            "{message}"
        );
        assert!(!dest.0.join("cifar10").exists());
    }

    #[test]
    fn mirror_copies_verify_and_install() {
        let dest = Scratch::new("ok");
        let mirror = Mirror::new(&bdl_data::root::fixtures()).unwrap();
        let files = toy_files();
        let hidden = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        let report = fetch(&files, &dest.0, &mirror, &hidden).unwrap();
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        assert_eq!(report.fetched, files.len());
        for f in &files {
            bdl_data::checksum::verify_file(&dest.0.join(f.path), f.sha256).unwrap();
        }
        // A second run finds everything in place.
        let again = fetch(&files, &dest.0, &mirror, &hidden).unwrap();
        assert_eq!((again.fetched, again.present), (0, files.len()));
    }

    #[test]
    fn corrupted_mirror_file_is_refused_and_not_installed() {
        let dest = Scratch::new("bad-dest");
        let mirror_dir = Scratch::new("bad-mirror");
        let files = toy_files();
        for f in &files {
            let to = mirror_dir.0.join(f.path);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(bdl_data::root::fixtures().join(f.path), &to).unwrap();
        }
        let victim = "toy/noisy_xor/data1/test/y.csv";
        let path = mirror_dir.0.join(victim);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[10] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
        // A stale invalid file in the destination is removed, not kept.
        let stale = dest.0.join(victim);
        std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
        std::fs::write(&stale, b"stale").unwrap();

        let hidden = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        let mirror = Mirror::new(&mirror_dir.0).unwrap();
        let report = fetch(&files, &dest.0, &mirror, &hidden).unwrap();
        assert_eq!(report.failed.len(), 1);
        let (failed, error) = &report.failed[0];
        assert_eq!(failed, victim);
        let message = error.to_string();
        assert!(message.contains("SHA-256 mismatch"), "{message}");
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(!stale.exists(), "a mismatching file was left in place");
        assert_eq!(report.fetched, files.len() - 1);
        let leftovers: Vec<_> = std::fs::read_dir(stale.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, ["x.csv"], "only the valid file may be installed");
    }

    #[test]
    fn archive_members_verify_by_content() {
        let member =
            std::fs::read(bdl_data::root::fixtures().join("toy/dun/matern_1d.npy")).unwrap();
        let remote = Remote {
            path: "x.npy.gz",
            sha256: "0000000000000000000000000000000000000000000000000000000000000000",
            origin: Origin::GzippedTarMember {
                archive: "unused",
                member_suffix: "x.npy",
                member_sha256: "060bf7d82f142b295a81ef16b044609e02da37ef7e9f6b7f77a743d753c330ec",
            },
        };
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &member).unwrap();
        let compressed = gz.finish().unwrap();
        let dir = Scratch::new("member");
        for (bytes, valid) in [(compressed, true), (member, false)] {
            let file = dir.0.join("x.npy.gz");
            std::fs::write(&file, &bytes).unwrap();
            let digest = bdl_data::checksum::sha256_hex(&bytes);
            let verified = verify(&remote, Path::new("x.npy.gz"), digest, &file);
            assert_eq!(verified.is_ok(), valid, "{verified:?}");
        }
    }
}
