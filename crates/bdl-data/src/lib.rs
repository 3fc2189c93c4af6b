//! Datasets of bdl: file readers, splits, standardisation, seeded minibatches and image
//! transforms.
//!
//! Every loader takes a data root laid out like the published data (see [`root`]): the small
//! subsets shipped in `fixtures/data/`, the folder `cargo xtask fetch` fills, or a shared copy.
//!
//! | module | data | files |
//! |---|---|---|
//! | [`mnist`] | MNIST, Fashion-MNIST | IDX, gzip ([`idx`]) |
//! | [`cifar`] | CIFAR-10, CIFAR-10-C (19 corruptions, 5 severities) | binary records in a `.tar.gz`, NumPy `.npy` in a `.tar` |
//! | [`uci`] | the nine UCI regression benchmarks, standard and gap splits | whitespace text |
//! | [`blr`] | Australian, Breast-Cancer, USPS 3-vs-5 | whitespace text, MAT (own reader) |
//! | [`toy`] | DUN 1-D regression sets, noisy XOR | NumPy `.npy` (own strict reader), CSV |
//!
//! Every loader returns [`Dataset`]s: x f32 `[N, d]`; y f32 `[N, k]` for regression or u32
//! `[N]` class indices for classification. Then:
//!
//! - [`Standardization`] / [`Standardizer`]: standardise with training statistics, and map
//!   predictive means and variances back;
//! - [`Minibatches`]: seeded epochs of minibatches, optionally stratified by class;
//! - [`Dataset::holdout`]: a seeded train/validation holdout;
//! - [`transforms`]: rotation, blur, inversion, noise, for distribution shift and augmentation;
//! - [`checksum`]: SHA-256 verification of data files.
//!
//! ```
//! use bdl_data::uci::{self, Benchmark, SplitKind};
//! use bdl_data::{Minibatches, Standardization};
//! use bdl_tensor::Seed;
//!
//! let root = bdl_data::root::fixtures();
//! let (train, test) = uci::load(&root, Benchmark::Wine, SplitKind::Standard, 0).unwrap();
//! let scaling = Standardization::fit(&train).unwrap();
//! let (train, test) = (scaling.apply(&train).unwrap(), scaling.apply(&test).unwrap());
//! let batches = Minibatches::new(train.len(), 32).unwrap();
//! for batch in batches.epoch(Seed(0).fork("minibatches").index(0)).batches(&train) {
//!     let batch = batch.unwrap();
//!     assert!(batch.len() <= 32);
//! }
//! assert_eq!(test.num_features(), 11);
//! ```
//!
//! Sibling crates: `bdl-tensor` (seeds, tensor helpers), `bdl-likelihoods`, `bdl-models`, and the
//! inference crates that consume these data sets.

mod archive;
pub mod blr;
pub mod checksum;
pub mod cifar;
pub mod csv;
mod dataset;
mod error;
#[cfg(test)]
mod fuzz;
pub mod idx;
mod mat;
mod minibatch;
pub mod mnist;
mod npy;
mod read;
pub mod root;
mod standardize;
#[cfg(test)]
mod test_util;
mod text;
pub mod toy;
pub mod transforms;
pub mod uci;

pub use dataset::{Dataset, ImageShape, Provenance, Task, holdout_indices, k_fold_indices};
pub use error::{Error, Result};
pub use minibatch::{Epoch, Minibatches};
pub use standardize::{MIN_STD, Standardization, StandardizedSplit, Standardizer};
