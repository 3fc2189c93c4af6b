//! Where the images come from: the fetched CIFAR-10 and CIFAR-10-C archives, or seeded
//! synthetic images of the same layout for the smoke profile.
//!
//! Either way a set is a [`Dataset`] of f32 rows `[N, 3072]` in [0, 1], channel-first
//! (`c·1024 + y·32 + x`), with labels 0..10.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use bdl_data::cifar::{self, Corruption, Part, Severity};
use bdl_data::{Dataset, Provenance, Task};
use bdl_tensor::Seed;
use candle_core::{Device, Tensor};
use rand::Rng as _;
use rand_distr::StandardNormal;

use super::settings::{Images, Settings};

/// The source of a run's images.
pub(super) enum Source {
    /// The archives under the data root.
    Fetched(PathBuf),
    /// The synthetic images: `train` and `test` of them.
    Synthetic { train: usize, test: usize },
}

impl Source {
    /// The source `settings` name, reading archives under `root`.
    pub(super) fn new(settings: &Settings, root: PathBuf) -> Self {
        match settings.images {
            Images::Fetched => Self::Fetched(root),
            Images::Synthetic => Self::Synthetic {
                train: settings.train_images.unwrap_or(1000),
                test: settings.test_images.unwrap_or(200),
            },
        }
    }

    /// The training images.
    pub(super) fn train(&self) -> Result<Dataset> {
        match self {
            Self::Fetched(root) => Ok(cifar::load(root, Part::Train)?),
            Self::Synthetic { train, .. } => synthetic(*train, Seed(0).fork("train"), None),
        }
    }

    /// The clean test images.
    pub(super) fn test(&self) -> Result<Dataset> {
        match self {
            Self::Fetched(root) => Ok(cifar::load(root, Part::Test)?),
            Self::Synthetic { test, .. } => synthetic(*test, Seed(0).fork("test"), None),
        }
    }

    /// The test images under `corruption` at `severity`, in the clean test images' order.
    pub(super) fn corrupted(&self, corruption: Corruption, severity: Severity) -> Result<Dataset> {
        let what = || format!("{} at severity {}", corruption.name(), severity.level());
        match self {
            Self::Fetched(root) => {
                cifar::load_corrupted(root, corruption, severity).with_context(what)
            }
            Self::Synthetic { test, .. } => {
                synthetic(*test, Seed(0).fork("test"), Some((corruption, severity)))
            }
        }
    }
}

/// `n` synthetic images from `seed`: image i of class i mod 10 is its class's pattern,
/// ½ + ⅓·sin(2π(f·x + g·y)/32 + φ_c) with the class's frequencies and phases, plus pixel noise
/// N(0, 0.15²); a corruption adds noise N(0, (0.1·s)²) at severity s from its own stream (the
/// images of every corruption and severity are the same clean ones underneath). Pixels are
/// clipped to [0, 1].
fn synthetic(n: usize, seed: Seed, corruption: Option<(Corruption, Severity)>) -> Result<Dataset> {
    const SIDE: usize = 32;
    let mut class_rng = Seed(0).fork("classes").rng();
    let patterns: Vec<[f64; 5]> = (0..10)
        .map(|_| {
            let mut p = [0.0; 5];
            p.iter_mut()
                .for_each(|v| *v = class_rng.random_range(0.5..3.0));
            p
        })
        .collect();
    let mut rng = seed.rng();
    let mut extra = corruption.map(|(c, s)| {
        let stream = seed.fork(c.name()).index(u64::from(s.level())).rng();
        (stream, 0.1 * f64::from(s.level()))
    });
    let mut x = Vec::with_capacity(n * cifar::IMAGE.len());
    for i in 0..n {
        let [f, g, phase @ ..] = patterns[i % 10];
        for (c, phi) in phase.iter().enumerate().take(3) {
            for y in 0..SIDE {
                for col in 0..SIDE {
                    let angle = std::f64::consts::TAU * (f * col as f64 + g * y as f64)
                        / SIDE as f64
                        + phi * (c + 1) as f64;
                    let mut v =
                        0.5 + angle.sin() / 3.0 + 0.15 * rng.sample::<f64, _>(StandardNormal);
                    if let Some((stream, sd)) = &mut extra {
                        v += *sd * stream.sample::<f64, _>(StandardNormal);
                    }
                    x.push(v.clamp(0.0, 1.0) as f32);
                }
            }
        }
    }
    let labels: Vec<u32> = (0..n).map(|i| (i % 10) as u32).collect();
    let task = Task::Classification {
        classes: cifar::CLASSES.iter().map(|c| c.to_string()).collect(),
    };
    let provenance = Provenance {
        description: "synthetic CIFAR-10-shaped images (smoke profile)".into(),
        files: Vec::new(),
    };
    let names = (0..cifar::IMAGE.len())
        .map(|i| format!("pixel{i}"))
        .collect();
    let x = Tensor::from_vec(x, (n, cifar::IMAGE.len()), &Device::Cpu)?;
    let y = Tensor::from_vec(labels, n, &Device::Cpu)?;
    Ok(Dataset::new(x, y, task, names, provenance)?.with_image_shape(cifar::IMAGE)?)
}
