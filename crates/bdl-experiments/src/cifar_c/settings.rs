//! The settings of each profile: the data, the ResNet, its training and every method's.

use anyhow::{Result, bail};
use bdl_data::cifar::Corruption;
use bdl_models::ResNetSpec;
use serde::Serialize;

use crate::Profile;
use crate::fits::Fits;

/// Equal-width confidence bins of the ECE (ALGORITHMS.md §D).
const ECE_BINS: usize = 15;

/// Where the images come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Images {
    /// CIFAR-10 and CIFAR-10-C as `cargo xtask fetch cifar10` and `cargo xtask fetch cifar10-c`
    /// install them.
    Fetched,
    /// Seeded synthetic images of CIFAR-10's layout ([`super::source`]): the smoke profile's,
    /// which checks that the run works end to end and whose numbers mean nothing.
    Synthetic,
}

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    pub(super) images: Images,
    /// The first this many training images (all 50,000 when `None`), the last
    /// `validation_images` of them held out for the Laplace family's λ.
    pub(super) train_images: Option<usize>,
    pub(super) validation_images: usize,
    /// The first this many test images, clean and under every corruption (all 10,000 when
    /// `None`).
    pub(super) test_images: Option<usize>,
    pub(super) corruptions: Vec<Corruption>,
    /// The network (ResNet-18 with the CIFAR stem in the paper profile); its batch
    /// normalisations act at μ = 0, v = 1 throughout (see `bdl_models::ResNet`).
    pub(super) network: ResNetSpec,
    pub(super) seeds: usize,
    /// The ResNet's training and the methods' settings (`crate::fits`; MC dropout's on the
    /// pooled features; subnetworks of the paper's 42,438 weights, 0.38% of ResNet-18).
    #[serde(flatten)]
    pub(super) fits: Fits,
    /// Rows per minibatch of the Laplace family's GGN.
    pub(super) ggn_batch: usize,
}

/// CIFAR-10's training images.
const TRAIN_IMAGES: usize = 50_000;

impl Settings {
    /// The sizes of the fit and validation parts: the first `train_images` training images
    /// (all 50,000 when `None`), the last `validation_images` of them for validation.
    pub(super) fn split(&self) -> (usize, usize) {
        let n = self.train_images.unwrap_or(TRAIN_IMAGES);
        (
            n.saturating_sub(self.validation_images),
            self.validation_images,
        )
    }

    /// The settings of `profile`; an error for the quick profile, which has no data here.
    pub(super) fn of(profile: Profile) -> Result<Self> {
        let fits = Fits {
            epochs: 30,
            batch_size: 128,
            learning_rate: 1e-3,
            // 5·10⁻⁴ per image of the 45,000, the usual CIFAR weight decay.
            prior_precision: 22.5,
            dropout: 0.1,
            members: 5,
            subnet_size: 42_438,
            // Half decades from 1 to 10⁵, the paper's λ = 500 between two of them.
            lambdas: (0..=10).map(|e| 10f64.powf(e as f64 / 2.0)).collect(),
            swag_snapshots: 20,
            swag_rank: 20,
            swag_learning_rate: 1e-2,
            vi_epochs: 5,
            vogn_learning_rate: 1e-3,
            samples: 16,
            ece_bins: ECE_BINS,
        };
        let paper = Settings {
            images: Images::Fetched,
            train_images: None,
            validation_images: 5000,
            test_images: None,
            // The paper gives a count only ("16 different corruption types"); the benchmark
            // code its protocol follows (Ovadia et al. 2019, Google's uq_benchmark_2019 and
            // robustness_metrics) averages over the release's main fifteen.
            corruptions: Corruption::BENCHMARK.to_vec(),
            network: ResNetSpec::resnet18(10),
            seeds: 3,
            fits: fits.clone(),
            ggn_batch: 64,
        };
        Ok(match profile {
            Profile::Smoke => Settings {
                images: Images::Synthetic,
                train_images: Some(240),
                validation_images: 40,
                test_images: Some(40),
                corruptions: vec![Corruption::GaussianNoise, Corruption::Contrast],
                network: ResNetSpec {
                    widths: vec![4, 8],
                    blocks: vec![1, 1],
                    ..ResNetSpec::resnet18(10)
                },
                seeds: 2,
                fits: Fits {
                    epochs: 4,
                    batch_size: 40,
                    learning_rate: 1e-2,
                    prior_precision: 1.0,
                    members: 2,
                    subnet_size: 20,
                    lambdas: vec![1.0, 100.0],
                    swag_snapshots: 2,
                    swag_rank: 2,
                    vi_epochs: 1,
                    samples: 4,
                    ..fits
                },
                ..paper
            },
            Profile::Quick => bail!(
                "cifar-c has no quick profile: no slice of CIFAR-10 is shipped in fixtures/ \
                 (run the smoke profile, or the paper profile on fetched data)"
            ),
            Profile::Paper => paper,
        })
    }
}
