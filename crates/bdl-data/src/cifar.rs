//! CIFAR-10 (Krizhevsky, 2009) and CIFAR-10-C (Hendrycks & Dietterich, 2019), read from the
//! archives as published.
//!
//! Files under the data root, installed by `cargo xtask fetch cifar10` and `cargo xtask fetch
//! cifar10-c` from their upstream pages (the shared copy of the data leaves them out):
//!
//! - `cifar10/cifar-10-binary.tar.gz` ([`ARCHIVE`]), the binary version: members
//!   `cifar-10-batches-bin/data_batch_1.bin` … `data_batch_5.bin` (the training part, 50,000
//!   images) and `cifar-10-batches-bin/test_batch.bin` (the test part, 10,000), each a run of
//!   3,073-byte records
//!
//!   ```text
//!   label   1 byte, 0–9
//!   red     1,024 bytes: the 32 × 32 plane, row-major
//!   green   1,024 bytes
//!   blue    1,024 bytes
//!   ```
//! - `cifar10-c/CIFAR-10-C.tar` ([`CORRUPTED_ARCHIVE`]), the test images under corruptions,
//!   channel-last `.npy` arrays in an uncompressed tar of 2.9 GB of which a load reads only its
//!   rows: [`load_corrupted`].
//!
//! Both loaders return x f32 `[N, 3072]`, pixels scaled to `[0, 1]` by `x = byte / 255`, in
//! channel-first order: the pixel of channel c (0 red, 1 green, 2 blue) at row y, column x is
//! column
//!
//! ```text
//! c · 1024 + y · 32 + x
//! ```
//!
//! the order of the binary records and the one `bdl_models::ResNet` reads its `[N, C·H·W]` rows
//! in (channels first, as PyTorch's `[N, C, H, W]` images flattened); y u32 `[N]` in `0..10`
//! ([`CLASSES`]); image shape 3 × 32 × 32. Standardise afterwards if the experiment does (the
//! customary per-channel statistics of the training pixels are means 0.4914, 0.4822, 0.4465 and
//! standard deviations 0.2470, 0.2435, 0.2616). Archives are only read, never written.
//!
//! ```no_run
//! use bdl_data::cifar::{self, Corruption, Part, Severity};
//! let root = bdl_data::root::fetched();
//! let test = cifar::load(&root, Part::Test).unwrap();
//! let fog = cifar::load_corrupted(&root, Corruption::Fog, Severity::new(3).unwrap()).unwrap();
//! assert_eq!((test.len(), fog.len(), fog.num_features()), (10_000, 10_000, 3072));
//! ```

pub(crate) mod corrupted;

use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};

use crate::dataset::numbered;
/// The training or the test part (the same type as MNIST's).
pub use crate::mnist::Part;
use crate::{Dataset, Error, ImageShape, Provenance, Result, Task, archive};
pub use corrupted::{CORRUPTED_ARCHIVE, Corruption, Severity, load_corrupted};

/// The CIFAR-10 archive under the data root.
pub const ARCHIVE: &str = "cifar10/cifar-10-binary.tar.gz";

/// The ten class names, by label.
pub const CLASSES: [&str; 10] = [
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
];

/// The shape of one image: 3 × 32 × 32.
pub const IMAGE: ImageShape = ImageShape {
    channels: 3,
    height: 32,
    width: 32,
};

/// Pixels of one channel's plane: 32 · 32.
const PLANE: usize = 1024;

/// Features of one image: 3 planes.
const PIXELS: usize = 3 * PLANE;

/// Bytes of one record of the binary batches: the label, then the pixels.
const RECORD: usize = 1 + PIXELS;

/// Loads `part` of CIFAR-10 from [`ARCHIVE`] under `root`: 50,000 training or 10,000 test
/// images, in the order of the batches.
pub fn load(root: &Path, part: Part) -> Result<Dataset> {
    read(&root.join(ARCHIVE), part)
}

/// [`load`] from the archive at `path`.
pub(crate) fn read(path: &Path, part: Part) -> Result<Dataset> {
    let members: Vec<String> = match part {
        Part::Train => (1..=5)
            .map(|i| format!("cifar-10-batches-bin/data_batch_{i}.bin"))
            .collect(),
        Part::Test => vec!["cifar-10-batches-bin/test_batch.bin".into()],
    };
    let members: Vec<&str> = members.iter().map(String::as_str).collect();
    let contents = archive::extract(path, archive::open(path, folder(ARCHIVE))?, &members)?;
    let records = contents.iter().map(|c| c.len() / RECORD).sum::<usize>();
    let (mut x, mut labels) = (
        Vec::with_capacity(records * PIXELS),
        Vec::with_capacity(records),
    );
    for (member, bytes) in members.iter().zip(&contents) {
        if bytes.is_empty() || bytes.len() % RECORD != 0 {
            return Err(Error::MemberLength {
                path: path.to_path_buf(),
                member: (*member).to_owned(),
                expected: format!(
                    "a positive multiple of {RECORD} (a label byte and {PIXELS} pixels a record)"
                ),
                actual: bytes.len() as u64,
            });
        }
        for (row, record) in bytes.chunks_exact(RECORD).enumerate() {
            labels.push(label(path, member, row, i64::from(record[0]))?);
            x.extend(record[1..].iter().map(|&b| scale(b)));
        }
    }
    let part = match part {
        Part::Train => "train",
        Part::Test => "test",
    };
    dataset(x, labels, format!("cifar10 {part}"), path)
}

/// The folder of a file under the data root: the argument of `cargo xtask fetch` that
/// installs it.
fn folder(relative: &'static str) -> &'static str {
    relative.split('/').next().unwrap_or(relative)
}

/// A pixel byte scaled to `[0, 1]`.
fn scale(byte: u8) -> f32 {
    f32::from(byte) / 255.0
}

/// The path that names `member` of `archive` in errors: `<archive>/<member>`.
fn member_path(archive: &Path, member: &str) -> PathBuf {
    archive.join(member)
}

/// `value`, the label of row `row` (from 0) of `member` of `archive`, as a class index.
fn label(archive: &Path, member: &str, row: usize, value: i64) -> Result<u32> {
    u32::try_from(value)
        .ok()
        .filter(|&l| (l as usize) < CLASSES.len())
        .ok_or_else(|| Error::BadLabel {
            path: member_path(archive, member),
            row,
            value: value.to_string(),
            allowed: "0..=9".into(),
        })
}

/// The data set of the images `x` (3,072 features a row, in the order of the module's
/// documentation) and their `labels`, read from `archive`.
fn dataset(x: Vec<f32>, labels: Vec<u32>, description: String, archive: &Path) -> Result<Dataset> {
    let n = labels.len();
    let x = Tensor::from_vec(x, (n, PIXELS), &Device::Cpu)?;
    let y = Tensor::from_vec(labels, n, &Device::Cpu)?;
    let task = Task::Classification {
        classes: CLASSES.iter().map(|c| c.to_string()).collect(),
    };
    let provenance = Provenance {
        description,
        files: vec![archive.to_path_buf()],
    };
    Dataset::new(x, y, task, numbered("pixel", PIXELS), provenance)?.with_image_shape(IMAGE)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_util::{Scratch, gzip, tar_file};

    /// The column of the pixel of channel `c`, row `y`, column `x`, as documented.
    pub(crate) fn column(c: usize, y: usize, x: usize) -> usize {
        c * 1024 + y * 32 + x
    }

    /// An image's bytes in channel-first order, each pixel `pixel(c, y, x)`.
    pub(crate) fn image(pixel: impl Fn(usize, usize, usize) -> u8) -> Vec<u8> {
        (0..3)
            .flat_map(|c| (0..32).flat_map(move |y| (0..32).map(move |x| (c, y, x))))
            .map(|(c, y, x)| pixel(c, y, x))
            .collect()
    }

    /// A record: `label`, then the channel-first `pixels`.
    pub(crate) fn record(label: u8, pixels: &[u8]) -> Vec<u8> {
        let mut out = vec![label];
        out.extend_from_slice(pixels);
        out
    }

    /// The records of the labels `labels`, image `i` being `(c, y, x) ↦ (i + 7c + 3y + x) mod 256`.
    pub(crate) fn batch(labels: &[u8]) -> Vec<u8> {
        labels
            .iter()
            .enumerate()
            .flat_map(|(i, &l)| record(l, &image(|c, y, x| ((i + 7 * c + 3 * y + x) % 256) as u8)))
            .collect()
    }

    /// A gzipped tar of `members` as `cifar10/cifar-10-binary.tar.gz` under `dir`.
    pub(crate) fn write(dir: &Scratch, members: &[(&str, &[u8])]) -> PathBuf {
        dir.write(ARCHIVE, gzip(&tar_file(members)))
    }

    fn member(name: &str) -> String {
        format!("cifar-10-batches-bin/{name}")
    }

    #[test]
    fn a_known_pixel_lands_at_its_documented_column() {
        let dir = Scratch::new("cifar-pixel");
        // Blue (c = 2) at row 5, column 7 is 255, a green pixel 51, every other 0.
        let pixels = image(|c, y, x| match (c, y, x) {
            (2, 5, 7) => 255,
            (1, 31, 0) => 51,
            _ => 0,
        });
        write(&dir, &[(&member("test_batch.bin"), &record(4, &pixels))]);
        let test = load(dir.path(), Part::Test).unwrap();
        let row = &test.x().to_vec2::<f32>().unwrap()[0];
        assert_eq!(row.len(), 3072);
        assert_eq!(row[2 * 1024 + 5 * 32 + 7], 1.0);
        assert_eq!(row[1024 + 31 * 32], 51.0 / 255.0);
        assert_eq!(row.iter().filter(|&&v| v != 0.0).count(), 2);
        assert_eq!(test.labels().unwrap(), [4]);
        assert_eq!(test.image_shape(), Some(IMAGE));
        assert!(
            matches!(test.task(), Task::Classification { classes } if classes[4] == "deer"),
            "{:?}",
            test.task()
        );
    }

    #[test]
    fn the_training_part_is_the_five_batches_in_order() {
        let dir = Scratch::new("cifar-train");
        let batches: Vec<Vec<u8>> = (0..5).map(|b| batch(&[b, 9 - b])).collect();
        // Stored out of order, with other members between: read by name.
        let names: Vec<String> = (1..=5)
            .map(|i| member(&format!("data_batch_{i}.bin")))
            .collect();
        let path = write(
            &dir,
            &[
                (&member("batches.meta.txt"), b"airplane\n"),
                (&names[3], &batches[3]),
                (&names[0], &batches[0]),
                (&member("test_batch.bin"), &batch(&[7])),
                (&names[4], &batches[4]),
                (&names[2], &batches[2]),
                (&names[1], &batches[1]),
            ],
        );
        let before = std::fs::read(&path).unwrap();
        let train = load(dir.path(), Part::Train).unwrap();
        assert_eq!(train.labels().unwrap(), [0, 9, 1, 8, 2, 7, 3, 6, 4, 5]);
        let x = train.x().to_vec2::<f32>().unwrap();
        // The second image of each batch: (1 + 7c + 3y + x) mod 256.
        assert_eq!(x[3][column(2, 4, 5)], ((1 + 14 + 12 + 5) as f32) / 255.0);
        assert_eq!(x[2][column(0, 31, 31)], ((3 * 31 + 31) as f32) / 255.0);
        assert_eq!(load(dir.path(), Part::Test).unwrap().labels().unwrap(), [7]);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "reading changed the archive"
        );
    }

    #[test]
    fn bad_archives_are_named() {
        let dir = Scratch::new("cifar-bad");
        let err = load(dir.path(), Part::Test).unwrap_err();
        assert!(
            err.to_string().contains("`cargo xtask fetch cifar10`"),
            "{err}"
        );
        assert!(matches!(err, Error::NotFetched { .. }), "{err}");

        let test = member("test_batch.bin");
        write(&dir, &[(&test, &batch(&[1, 2]))]);
        let err = load(dir.path(), Part::Train).unwrap_err();
        assert!(
            matches!(&err, Error::MissingMember { member, .. } if member.ends_with("data_batch_1.bin")),
            "{err}"
        );

        for bytes in [[batch(&[1]), vec![0]].concat(), Vec::new()] {
            write(&dir, &[(&test, &bytes)]);
            let err = load(dir.path(), Part::Test).unwrap_err();
            assert!(
                matches!(&err, Error::MemberLength { actual, .. } if *actual == bytes.len() as u64),
                "{err}"
            );
        }

        write(&dir, &[(&test, &batch(&[3, 10]))]);
        let err = load(dir.path(), Part::Test).unwrap_err();
        assert!(matches!(err, Error::BadLabel { row: 1, .. }), "{err}");
        assert!(err.to_string().contains("test_batch.bin"), "{err}");

        let gz = gzip(&tar_file(&[(&test, &batch(&[1, 2]))]));
        dir.write(ARCHIVE, &gz[..gz.len() / 2]);
        let err = load(dir.path(), Part::Test).unwrap_err();
        assert!(matches!(err, Error::Tar { .. }), "{err}");
    }
}
