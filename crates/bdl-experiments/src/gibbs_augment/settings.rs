//! The settings: the paper's augmentation, all three together and each transformation alone,
//! with the probability it has in the combined one.

use bdl_data::transforms::{Param, Transform};
use serde::Serialize;

/// The paper's augmentation.
pub(super) fn augmentation() -> Vec<Transform> {
    vec![
        Transform::Rotate {
            degrees: Param::Uniform {
                low: -30.0,
                high: 30.0,
            },
        },
        Transform::GaussianBlur {
            kernel_size: 9,
            sigma: Param::Uniform {
                low: 1.0,
                high: 1.5,
            },
        }
        .with_probability(0.9),
        Transform::Invert.with_probability(0.5),
    ]
}
/// The settings in `results.json` (the chains' are `gibbs-mnist`'s).
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    pub(super) augmentation: Vec<Transform>,
}

/// The paper's three transformations, each alone (Table 4 has a column for each), with the
/// probability it has in the combined augmentation.
pub(super) fn transformations() -> Vec<(&'static str, Vec<Transform>)> {
    let all = augmentation();
    ["rotation", "blur", "inversion"]
        .into_iter()
        .zip(all)
        .map(|(name, t)| (name, vec![t]))
        .collect()
}

/// The settings of the single-transformation chains' units (their own, so that the four chains
/// saved before them stay valid).
#[derive(Debug, Serialize)]
pub(super) struct SingleSettings {
    pub(super) transformations: Vec<(&'static str, Vec<Transform>)>,
}
