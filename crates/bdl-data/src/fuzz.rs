//! Property tests over arbitrary and mutated bytes for every parser of the crate: whatever
//! the bytes, a reader returns a value or a typed error, and never panics, aborts or allocates
//! more than the file could hold. Seeds are the shipped fixtures (decompressed, so that the
//! mutations reach the formats rather than gzip's checksum) and small valid files; each
//! property runs a bounded number of cases so that `cargo test` stays fast.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::test_util::Scratch;
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
        let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        file.extend_from_slice(&(header.len() as u16).to_le_bytes());
        file.extend_from_slice(header.as_bytes());
        file.extend_from_slice(&[0; 32]);
        survives("s.npy", &file, npy::read_matrix);
        let mut mat = vec![b' '; 124];
        mat.extend_from_slice(&[0x00, 0x01, b'I', b'M']);
        mat.extend_from_slice(&14u32.to_le_bytes());
        mat.extend_from_slice(&size.to_le_bytes());
        mat.extend_from_slice(&[0; 48]);
        survives("s.mat", &mat, |p| mat::MatArrays::open(p).map(drop));
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
