//! The settings of each profile: rotation angles, seeds, the training of the LeNet-5 MAPs, the
//! subnetwork sizes and the prior-precision rule of the scaled-prior rows.

use bdl_models::ResNetSpec;
use serde::Serialize;

use super::ECE_BINS;
use crate::Profile;
use crate::fits::Fits;

/// The one prior-precision rule both subnetworks of the scaled-prior rows share, fixed before
/// their run (2026-12-06): the paper's λ_S = λ·S/D (ALGORITHMS.md §C.6: it restores the prior
/// function variance lost by fixing D − S weights), with λ the weight decay every MAP was
/// trained under. It is chosen on no data, so neither subnetwork's λ follows its own scores:
/// the Wasserstein and the random rows then differ in their subsets alone, which is what the
/// paper's comparison of the two is about.
pub(super) const SCALED_PRIOR: &str = "λ_S = λ·S/D: λ the MAPs' weight decay, S the subnetwork's weights, \
                            D the network's parameters";

/// The settings of the scaled-prior units: the run's and the rule (their own, so that the units
/// saved before them stay valid).
#[derive(Serialize)]
pub(super) struct ScaledPriorSettings<'a> {
    pub(super) settings: &'a Settings,
    pub(super) subnet_prior: &'static str,
}

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    /// The first this many training images (all when `None`), the last `validation_images` of
    /// them held out.
    pub(super) train_images: Option<usize>,
    pub(super) validation_images: usize,
    /// The first this many test images of MNIST and of Fashion-MNIST (all when `None`).
    pub(super) test_images: Option<usize>,
    pub(super) angles: Vec<f64>,
    pub(super) reliability_at: Vec<f64>,
    pub(super) seeds: usize,
    /// LeNet-5's training and the methods' settings (`crate::fits`).
    #[serde(flatten)]
    pub(super) fits: Fits,
    pub(super) vadam_learning_rate: f64,
    pub(super) ivon_learning_rate: f64,
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        let fits = Fits {
            epochs: 10,
            batch_size: 128,
            learning_rate: 1e-3,
            prior_precision: 10.0,
            dropout: 0.1,
            members: 5,
            subnet_size: 500,
            // Half decades from 0.1 to 10⁷: wide enough that validation picks inside it.
            lambdas: (-2..=14).map(|e| 10f64.powf(e as f64 / 2.0)).collect(),
            swag_snapshots: 10,
            swag_rank: 10,
            swag_learning_rate: 1e-2,
            vi_epochs: 3,
            vogn_learning_rate: 1e-3,
            samples: 16,
            ece_bins: ECE_BINS,
        };
        let quick = Settings {
            train_images: None,
            validation_images: 200,
            test_images: Some(300),
            angles: (0..=12).map(|k| 15.0 * k as f64).collect(),
            reliability_at: vec![0.0, 60.0],
            seeds: 2,
            fits: fits.clone(),
            vadam_learning_rate: 1e-3,
            ivon_learning_rate: 0.1,
        };
        match profile {
            Profile::Smoke => Settings {
                train_images: Some(300),
                validation_images: 50,
                test_images: Some(50),
                angles: vec![0.0, 60.0, 180.0],
                seeds: 1,
                fits: Fits {
                    lambdas: vec![1.0, 10.0, 100.0],
                    epochs: 1,
                    members: 2,
                    subnet_size: 30,
                    swag_snapshots: 2,
                    swag_rank: 2,
                    vi_epochs: 1,
                    samples: 4,
                    ..fits
                },
                ..quick
            },
            Profile::Quick => quick,
            Profile::Paper => Settings {
                validation_images: 2000,
                test_images: None,
                seeds: 3,
                fits: Fits {
                    subnet_size: 2000,
                    vi_epochs: 5,
                    ..fits
                },
                ..quick
            },
        }
    }
}

/// The subnetwork size curve (the paper's Fig. 5, performance against subnetwork size): both
/// subnetworks at the scaled prior ([`SCALED_PRIOR`]) at each of `sizes`, beside the scaled-prior
/// rows at `subnet_size`, scored at `angles` (a subset of the run's, so that the scaled-prior
/// rows' scores there are the curve's point at `subnet_size`). Kept out of [`Settings`] so that
/// the units saved before the curve stay valid.
#[derive(Debug, Serialize)]
pub(super) struct SizeCurve {
    /// Subnetwork sizes besides the run's `subnet_size`, ascending.
    pub(super) sizes: Vec<usize>,
    pub(super) angles: Vec<f64>,
}

impl SizeCurve {
    pub(super) fn of(profile: Profile) -> Self {
        // Every 30°: seven of the thirteen angles, to halve the evaluation of the larger sizes.
        let every_30 = (0..=6).map(|k| 30.0 * k as f64).collect();
        match profile {
            Profile::Smoke => Self {
                sizes: vec![10],
                angles: vec![0.0, 60.0, 180.0],
            },
            Profile::Quick => Self {
                sizes: vec![125, 250],
                angles: every_30,
            },
            // Each size costs about 25 minutes of a core per seed (SWAG, the GGN's K backward
            // passes over 58,000 images and the evaluation: little of it grows with the size).
            Profile::Paper => Self {
                sizes: vec![250, 1000],
                angles: every_30,
            },
        }
    }
}

/// The settings of the size curve's units: the scaled-prior units' and the curve's angles (a
/// unit's size is in its key, so a size added to the curve computes its units alone).
#[derive(Serialize)]
pub(super) struct SizeCurveSettings<'a> {
    #[serde(flatten)]
    pub(super) scaled: ScaledPriorSettings<'a>,
    pub(super) curve_angles: &'a [f64],
}

/// The ResNet rows: the paper's own architecture for rotated MNIST, a ResNet (ResNet-18 with the
/// CIFAR stem on 1 × 28 × 28 images in the paper profile) trained like LeNet-5, with its
/// diagonal Laplace, SWAG and both subnetworks of `subnet_size` weights (the paper's 42,438) at
/// λ chosen on the validation images. Kept out of [`Settings`] so that the units saved before
/// them stay valid. None in the quick profile, whose minutes a ResNet over 58,000 images
/// would exceed; the paper profile's run only on a GPU: ResNet-18 over 58,000 images takes
/// days of CPU, which would stall every CPU rerun of the LeNet-5 rows.
#[derive(Debug, Serialize)]
pub(super) struct ResnetRows {
    pub(super) network: ResNetSpec,
    pub(super) subnet_size: usize,
}

impl ResnetRows {
    /// The rows of `profile` (the paper profile's run only on a GPU or in a merge:
    /// `super::resnet::Resnet::new`).
    pub(super) fn of(profile: Profile) -> Option<Self> {
        let resnet18 = ResNetSpec {
            input: [1, 28, 28],
            ..ResNetSpec::resnet18(10)
        };
        match profile {
            Profile::Smoke => Some(Self {
                network: ResNetSpec {
                    widths: vec![4, 8],
                    blocks: vec![1, 1],
                    ..resnet18
                },
                subnet_size: 20,
            }),
            Profile::Quick => None,
            Profile::Paper => Some(Self {
                network: resnet18,
                subnet_size: 42_438,
            }),
        }
    }
}

/// The settings of the ResNet rows' units: the run's and the rows'.
#[derive(Serialize)]
pub(super) struct ResnetSettings<'a> {
    pub(super) settings: &'a Settings,
    pub(super) resnet: Option<&'a ResnetRows>,
}
