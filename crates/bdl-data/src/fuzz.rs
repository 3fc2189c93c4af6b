//! Property tests over arbitrary and mutated bytes for every parser of the crate: whatever
//! the bytes, a reader returns a value or a typed error, and never panics, aborts or allocates
//! more than the file could hold. Seeds are the shipped fixtures (decompressed, so that the
//! mutations reach the formats rather than gzip's checksum) and small valid files; each
//! property runs a bounded number of cases so that `cargo test` stays fast.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::cifar::corrupted::read_corrupted;
use crate::cifar::{self, Corruption, Part, Severity};
use crate::test_util::{Scratch, gzip, npy_file, tar_file};
use crate::text::{Delimiter, read_table};
use crate::{idx, mat, npy, read};

/// A mutation of a seed file: overwrite bytes, cut it, or append to it.
#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Truncate(usize),
    Append(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => proptest::collection::vec(any::<u8>(), 1..16).prop_map(Mutation::Append),
    ]
}

/// The seed with the mutations applied; byte positions are biased towards the header (the
/// first `focus` bytes), where the sizes live.
fn mutate(seed: &[u8], mutations: &[Mutation], focus: usize) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for m in mutations {
        match m {
            Mutation::Set(i, b) if !bytes.is_empty() => {
                let n = if i % 4 == 0 {
                    bytes.len()
                } else {
                    focus.min(bytes.len())
                };
                let at = i % n;
                bytes[at] = *b;
            }
            Mutation::Set(..) => {}
            Mutation::Truncate(i) => bytes.truncate(i % (bytes.len() + 1)),
            Mutation::Append(tail) => bytes.extend_from_slice(tail),
        }
    }
    bytes
}

fn fixture(relative: &str) -> PathBuf {
    crate::root::fixtures().join(relative)
}

/// The decompressed bytes of a shipped fixture.
fn plain(relative: &str) -> Vec<u8> {
    read::maybe_gz(&fixture(relative)).unwrap()
}

/// Writes `bytes` as `name` and runs `parse` on it; the property is that this returns.
fn survives<T>(name: &str, bytes: &[u8], parse: impl Fn(&Path) -> crate::Result<T>) {
    let dir = Scratch::new("fuzz");
    let path = dir.write(name, bytes);
    let _ = parse(&path);
}

/// A CIFAR-10 test batch of two records, in a tar (to be mutated, then gzipped).
fn cifar_tar() -> Vec<u8> {
    let records: Vec<u8> = [3u8, 9]
        .iter()
        .flat_map(|&label| std::iter::once(label).chain((0..3072).map(|i| (i % 251) as u8)))
        .collect();
    tar_file(&[("cifar-10-batches-bin/test_batch.bin", &records)])
}

/// A CIFAR-10-C archive of one image a severity, labels first: both `.npy` headers lie in the
/// first 2 KiB.
fn cifar_c_tar(images: &[u8]) -> Vec<u8> {
    let labels = npy_file("|u1", "(5,)", &[1, 2, 3, 4, 5]);
    tar_file(&[
        ("CIFAR-10-C/labels.npy", &labels),
        ("CIFAR-10-C/fog.npy", images),
    ])
}

/// Reads CIFAR-10-C's fog images at `level` (clamped to 1..=5) from the archive at `path`.
fn fog(path: &Path, level: u8) -> crate::Result<crate::Dataset> {
    read_corrupted(path, Corruption::Fog, Severity::new(level.clamp(1, 5))?)
}

/// The CIFAR seeds are valid archives, so that their mutations reach past the first check.
#[test]
fn cifar_seeds_read() {
    let dir = Scratch::new("fuzz-cifar");
    let clean = dir.write("c.tar.gz", gzip(&cifar_tar()));
    assert_eq!(
        cifar::read(&clean, Part::Test).unwrap().labels().unwrap(),
        [3, 9]
    );
    let seed = cifar_c_tar(&npy_file("|u1", "(5, 32, 32, 3)", &[9; 5 * 3072]));
    let corrupted = dir.write("c.tar", seed);
    assert_eq!(fog(&corrupted, 2).unwrap().labels().unwrap(), [2]);
}

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases(96))]

    #[test]
    fn idx_images(ms in proptest::collection::vec(mutation(), 1..6), raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let seed = idx::encode(idx::IMAGES_MAGIC, &[3, 4, 5], &[7; 60]);
        survives("a-images-idx3-ubyte", &mutate(&seed, &ms, 16), idx::load_images);
        survives("b-images-idx3-ubyte", &raw, idx::load_images);
        survives("c-labels-idx1-ubyte", &mutate(&idx::encode(idx::LABELS_MAGIC, &[4], &[1, 2, 3, 4]), &ms, 8), idx::load_labels);
    }

    #[test]
    fn npy_matrices(ms in proptest::collection::vec(mutation(), 1..6), raw in proptest::collection::vec(any::<u8>(), 0..200)) {
        let seed = std::fs::read(fixture("toy/dun/matern_1d.npy")).unwrap();
        survives("m.npy", &mutate(&seed, &ms, 128), npy::read_matrix);
        let mut headed = b"\x93NUMPY\x01\x00".to_vec();
        headed.extend_from_slice(&raw);
        survives("r.npy", &headed, npy::read_matrix);
    }

    /// Headers that are well formed but promise any sizes: the sizes must be checked against
    /// the data before anything is allocated or indexed.
    #[test]
    fn headers_promising_any_size(dims in proptest::collection::vec(any::<u32>(), 3), rows in any::<u64>(), cols in any::<u64>(), size in any::<u32>()) {
        survives("d-images-idx3-ubyte", &idx::encode(idx::IMAGES_MAGIC, &dims, &[1; 24]), idx::load_images);
        survives("s.npy", &npy_file("<f8", &format!("({rows}, {cols})"), &[0; 32]), npy::read_matrix);
        let images = npy_file("|u1", &format!("({rows}, 32, 32, {cols})"), &[0; 3072]);
        survives("s.tar", &cifar_c_tar(&images), |p| fog(p, 5));
        let mut mat = vec![b' '; 124];
        mat.extend_from_slice(&[0x00, 0x01, b'I', b'M']);
        mat.extend_from_slice(&14u32.to_le_bytes());
        mat.extend_from_slice(&size.to_le_bytes());
        mat.extend_from_slice(&[0; 48]);
        survives("s.mat", &mat, |p| mat::MatArrays::open(p).map(drop));
    }

    /// The tar archives of CIFAR-10 (gzipped after the mutation, so that it reaches the tar
    /// headers and the records) and CIFAR-10-C.
    #[test]
    fn cifar_archives(ms in proptest::collection::vec(mutation(), 1..6), level in 1u8..=5, raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        survives("c.tar.gz", &gzip(&mutate(&cifar_tar(), &ms, 1024)), |p| cifar::read(p, Part::Test));
        survives("r.tar.gz", &raw, |p| cifar::read(p, Part::Train));
        let seed = cifar_c_tar(&npy_file("|u1", "(5, 32, 32, 3)", &[9; 5 * 3072]));
        survives("c.tar", &mutate(&seed, &ms, 2048), |p| fog(p, level));
        survives("r.tar", &raw, |p| fog(p, level));
    }

    #[test]
    fn text_tables(ms in proptest::collection::vec(mutation(), 1..8)) {
        let seed = b"1 2.5 -3\n4e1 5 6\n\n7 8 9\n".to_vec();
        let bytes = mutate(&seed, &ms, seed.len());
        survives("t.txt", &bytes, |p| read_table(p, Delimiter::Whitespace, false));
        survives("t.csv", &bytes, |p| read_table(p, Delimiter::Comma, true));
    }

    #[test]
    fn gzip_streams(raw in proptest::collection::vec(any::<u8>(), 0..128), ms in proptest::collection::vec(mutation(), 1..4)) {
        survives("r.gz", &raw, read::maybe_gz);
        let seed = std::fs::read(fixture("mnist/t10k-labels-idx1-ubyte.gz")).unwrap();
        survives("l-labels-idx1-ubyte.gz", &mutate(&seed, &ms, 64), idx::load_labels);
    }
}

proptest! {
    // The MAT seed is the shipped USPS subset (about a megabyte decompressed): fewer cases.
    #![proptest_config(cases(24))]

    #[test]
    fn mat_files(ms in proptest::collection::vec(mutation(), 1..6)) {
        thread_local!(static SEED: Vec<u8> = plain("blr/usps/usps_resampled.mat.gz"));
        let bytes = SEED.with(|seed| mutate(seed, &ms, 512));
        survives("u.mat", &bytes, |p| mat::MatArrays::open(p).map(drop));
    }
}
