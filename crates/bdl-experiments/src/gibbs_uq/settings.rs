//! The settings in `results.json`: the images shown, the ambiguous set's size and the claims'
//! thresholds (the chain's settings are `gibbs-mnist`'s).

use serde::Serialize;

/// The settings in `results.json` (the chain's are `gibbs-mnist`'s).
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    pub(super) shown: usize,
    pub(super) ambiguous: usize,
    pub(super) top_two_at_least: f64,
    pub(super) auroc_at_least: f64,
}
