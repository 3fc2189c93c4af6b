//! The settings of each profile: the noisy XOR set, the networks, proposal variances, batch and
//! chain lengths.

use bdl_data::toy::NoisyXor;
use serde::Serialize;

use super::{BATCH, COLLAPSED, DEEP, EXACT_VARIANCE, FILTERS, MINIBATCH_VARIANCE, SHALLOW, WIDE};
use crate::Profile;

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    /// The noisy XOR set.
    pub(super) data: NoisyXor,
    /// The paper's two networks and the wide network of the blocking comparison.
    pub(super) networks: [&'static [usize]; 3],
    /// The proposal variance of minibatch sampling and of the blocking comparison.
    pub(super) minibatch_variance: f64,
    /// The proposal variance of exact sampling.
    pub(super) exact_variance: f64,
    /// The minibatch size.
    pub(super) batch_size: usize,
    /// Scenarios (3) and (4): the chains of (2) whose every block accepts at least this.
    pub(super) acceptance_filters: [(&'static str, f64); 2],
    /// A layer's acceptance below this counts as collapsed.
    pub(super) collapsed_below: f64,
    /// Chains per scenario on the paper's two networks.
    pub(super) chains: usize,
    /// Chains per blocking on the wide network.
    pub(super) wide_chains: usize,
    pub(super) iterations: u64,
    /// Iterations of the wide network's exact runs (one chain each): node against layer blocks
    /// at the same variance with the whole training set in every ratio.
    pub(super) wide_exact_iterations: u64,
    /// Acceptance rates count from this iteration (a multiple of `chunk_len`).
    pub(super) burn_in: u64,
    /// The Bayesian marginal averages the draws of the last this many iterations...
    pub(super) predict_last: u64,
    /// ...recorded every this many iterations.
    pub(super) thin: u64,
    pub(super) chunk_len: u64,
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        let quick = Settings {
            data: NoisyXor::Paper,
            networks: [SHALLOW, DEEP, WIDE],
            minibatch_variance: MINIBATCH_VARIANCE,
            exact_variance: EXACT_VARIANCE,
            batch_size: BATCH,
            acceptance_filters: FILTERS,
            collapsed_below: COLLAPSED,
            chains: 10,
            wide_chains: 2,
            iterations: 2000,
            wide_exact_iterations: 2000,
            burn_in: 500,
            predict_last: 500,
            thin: 5,
            chunk_len: 500,
        };
        match profile {
            // That it runs end to end: the small set, 2 chains of 50 iterations.
            Profile::Smoke => Settings {
                data: NoisyXor::Small,
                chains: 2,
                wide_chains: 2,
                iterations: 50,
                wide_exact_iterations: 50,
                burn_in: 25,
                predict_last: 25,
                thin: 5,
                chunk_len: 25,
                ..quick
            },
            Profile::Quick => quick,
            // The paper: 110,000 iterations, acceptance after the first 10,000, predictions
            // over the last 10,000 (here every 10th draw of them).
            Profile::Paper => Settings {
                chains: 10,
                wide_chains: 10,
                iterations: 110_000,
                // 20,000: the burn-in and the marginal's window, at about 12 ms per iteration.
                wide_exact_iterations: 20_000,
                burn_in: 10_000,
                predict_last: 10_000,
                thin: 10,
                chunk_len: 10_000,
                ..quick
            },
        }
    }
}
