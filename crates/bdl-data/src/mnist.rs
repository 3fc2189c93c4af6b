//! MNIST and Fashion-MNIST from their IDX files.
//!
//! Files under the data root: `mnist/` and `fashion-mnist/`, each holding
//! `{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`. Pixels are scaled to `[0, 1]` by
//! `x = byte / 255`; standardise them afterwards if the experiment does (the customary MNIST
//! statistics are mean 0.1307 and standard deviation 0.3081 over the training pixels).

use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::dataset::numbered;
use crate::{Dataset, Error, ImageShape, Provenance, Result, Task, idx};

/// Which image collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Collection {
    /// Handwritten digits 0–9 (LeCun & Cortes).
    Mnist,
    /// Zalando's clothing images (Xiao et al.).
    FashionMnist,
}

impl Collection {
    /// The folder under the data root.
    pub fn folder(self) -> &'static str {
        match self {
            Collection::Mnist => "mnist",
            Collection::FashionMnist => "fashion-mnist",
        }
    }

    /// The ten class names.
    pub fn classes(self) -> [&'static str; 10] {
        match self {
            Collection::Mnist => ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"],
            Collection::FashionMnist => [
                "T-shirt/top",
                "Trouser",
                "Pullover",
                "Dress",
                "Coat",
                "Sandal",
                "Shirt",
                "Sneaker",
                "Bag",
                "Ankle boot",
            ],
        }
    }
}

/// The training or the test part of an image collection: 60,000 and 10,000 images of MNIST
/// and Fashion-MNIST, 50,000 and 10,000 of CIFAR-10 ([`crate::cifar`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Part {
    /// The `train-*` files (CIFAR-10: `data_batch_1.bin` … `data_batch_5.bin`).
    Train,
    /// The `t10k-*` files (CIFAR-10: `test_batch.bin`).
    Test,
}

impl Part {
    fn prefix(self) -> &'static str {
        match self {
            Part::Train => "train",
            Part::Test => "t10k",
        }
    }
}

/// The image and label files of `part` of `collection` under `root`.
pub fn files(root: &Path, collection: Collection, part: Part) -> (PathBuf, PathBuf) {
    let dir = root.join(collection.folder());
    let p = part.prefix();
    (
        dir.join(format!("{p}-images-idx3-ubyte.gz")),
        dir.join(format!("{p}-labels-idx1-ubyte.gz")),
    )
}

/// Loads `part` of `collection`: x f32 `[N, 784]` in `[0, 1]`, y u32 `[N]` in `0..10`, image
/// shape 1 × 28 × 28.
///
/// ```
/// use bdl_data::mnist::{self, Collection, Part};
/// let test = mnist::load(&bdl_data::root::fixtures(), Collection::Mnist, Part::Test).unwrap();
/// assert_eq!(test.num_features(), 784);
/// assert_eq!(test.image_shape().unwrap().height, 28);
/// ```
///
/// A missing file is [`Error::NotFetched`], naming the `cargo xtask fetch` argument that
/// installs it.
pub fn load(root: &Path, collection: Collection, part: Part) -> Result<Dataset> {
    let (images_path, labels_path) = files(root, collection, part);
    for path in [&images_path, &labels_path] {
        if !path.exists() {
            return Err(Error::NotFetched {
                path: path.clone(),
                dataset: collection.folder().to_owned(),
            });
        }
    }
    let images = idx::load_images(&images_path)?;
    let labels = idx::load_labels(&labels_path)?;
    if images.count != labels.len() {
        return Err(Error::RowMismatch {
            first: images_path,
            first_rows: images.count,
            second: labels_path,
            second_rows: labels.len(),
        });
    }
    let classes = collection.classes();
    if let Some(row) = labels.iter().position(|&l| l as usize >= classes.len()) {
        return Err(Error::BadLabel {
            path: labels_path,
            row,
            value: labels[row].to_string(),
            allowed: "0..=9".into(),
        });
    }
    let d = images.rows * images.cols;
    let x: Vec<f32> = images
        .pixels
        .iter()
        .map(|&p| f32::from(p) / 255.0)
        .collect();
    let x = Tensor::from_vec(x, (images.count, d), &Device::Cpu)?;
    let y = Tensor::from_vec(
        labels.iter().map(|&l| u32::from(l)).collect::<Vec<_>>(),
        images.count,
        &Device::Cpu,
    )?;
    let provenance = Provenance {
        description: format!("{} {}", collection.folder(), part.prefix()),
        files: vec![images_path, labels_path],
    };
    let task = Task::Classification {
        classes: classes.iter().map(|c| c.to_string()).collect(),
    };
    Dataset::new(x, y, task, numbered("pixel", d), provenance)?
        .with_image_shape(ImageShape::grey(images.rows, images.cols))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idx::{IMAGES_MAGIC, LABELS_MAGIC, encode};
    use crate::test_util::{Scratch, gzip};

    fn write(dir: &Scratch, n_images: u32, labels: &[u8]) {
        let pixels: Vec<u8> = (0..n_images * 4).map(|i| (i * 60 % 256) as u8).collect();
        dir.write(
            "mnist/t10k-images-idx3-ubyte.gz",
            gzip(&encode(IMAGES_MAGIC, &[n_images, 2, 2], &pixels)),
        );
        dir.write(
            "mnist/t10k-labels-idx1-ubyte.gz",
            gzip(&encode(LABELS_MAGIC, &[labels.len() as u32], labels)),
        );
    }

    #[test]
    fn scales_pixels_and_keeps_labels() {
        let dir = Scratch::new("mnist-ok");
        write(&dir, 2, &[3, 9]);
        let ds = load(dir.path(), Collection::Mnist, Part::Test).unwrap();
        assert_eq!(ds.labels().unwrap(), [3, 9]);
        assert_eq!(
            ds.x().to_vec2::<f32>().unwrap()[0],
            [0.0, 60.0 / 255.0, 120.0 / 255.0, 180.0 / 255.0]
        );
        assert_eq!(ds.image_shape(), Some(ImageShape::grey(2, 2)));
    }

    #[test]
    fn a_missing_file_names_the_fetch_that_installs_it() {
        let dir = Scratch::new("mnist-missing");
        let err = load(dir.path(), Collection::FashionMnist, Part::Test).unwrap_err();
        assert!(
            matches!(&err, Error::NotFetched { dataset, .. } if dataset == "fashion-mnist"),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("`cargo xtask fetch fashion-mnist`"),
            "{err}"
        );
    }

    #[test]
    fn images_and_labels_must_agree() {
        let dir = Scratch::new("mnist-count");
        write(&dir, 3, &[1, 2]);
        let err = load(dir.path(), Collection::Mnist, Part::Test).unwrap_err();
        assert!(
            matches!(
                err,
                Error::RowMismatch {
                    first_rows: 3,
                    second_rows: 2,
                    ..
                }
            ),
            "{err}"
        );
        write(&dir, 2, &[1, 12]);
        let err = load(dir.path(), Collection::Mnist, Part::Test).unwrap_err();
        assert!(matches!(err, Error::BadLabel { row: 1, .. }), "{err}");
    }
}
