//! The settings of each profile: the batch sizes, chain lengths, proposal variances and blocks
//! of the paper's MNIST experiment.

use bdl_data::mnist::Collection;
use bdl_mcmc::Blocking;
use bdl_tensor::SubBlocks;
use serde::Serialize;

use super::{COLLAPSED, NON_VANISHING, WIDTHS};
use crate::Profile;

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    /// MLP widths.
    pub(super) widths: &'static [usize],
    /// The image collections, each sampled with every run.
    pub(super) collections: Vec<Collection>,
    /// The batch size whose chains are sampled first (the paper's best).
    pub(super) first_batch: usize,
    /// Only the first this many training / test images (`None`: all).
    pub(super) train_subset: Option<usize>,
    pub(super) test_subset: Option<usize>,
    /// Batch size and the proposal variances of the four layers.
    pub(super) runs: Vec<(usize, [f64; 4])>,
    pub(super) blocking: Blocking,
    /// Layer blocks (LBG) with the variances of this entry of `runs`, for the comparison with
    /// node blocks.
    pub(super) layer_blocks: usize,
    pub(super) iterations: u64,
    /// Acceptance rates count from this iteration on (a multiple of `chunk_len`).
    pub(super) burn_in: u64,
    pub(super) chunk_len: u64,
    pub(super) record_every: u64,
    /// The main prediction: the draws of the last this many iterations.
    pub(super) window: u64,
    /// Predictions from the draws of the last K iterations, for these K.
    pub(super) last_k: Vec<u64>,
    /// Predictions of the chain stopped at t: the draws of iterations [t − window, t).
    pub(super) stops: Vec<u64>,
    /// A layer's acceptance below this counts as collapsed.
    pub(super) collapsed_below: f64,
    /// Every layer's acceptance at least this counts as non-vanishing.
    pub(super) non_vanishing: f64,
}

/// v₁ = 30 / B, v₂ = v₃ = v₁ / 100, v₄ = v₁ / 1000.
pub(super) fn scaled_variances(batch: usize) -> [f64; 4] {
    let v1 = 30.0 / batch as f64;
    [v1, v1 / 100.0, v1 / 100.0, v1 / 1000.0]
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        let scaled = |batches: &[usize]| -> Vec<(usize, [f64; 4])> {
            batches.iter().map(|&b| (b, scaled_variances(b))).collect()
        };
        let quick = Settings {
            widths: WIDTHS,
            collections: vec![Collection::Mnist, Collection::FashionMnist],
            first_batch: 1000,
            train_subset: None,
            test_subset: None,
            runs: scaled(&[200, 600, 1000]),
            blocking: Blocking::Node,
            layer_blocks: 1,
            iterations: 3000,
            burn_in: 1000,
            chunk_len: 500,
            record_every: 10,
            window: 1000,
            last_k: vec![100, 500, 1000, 2000],
            stops: vec![1000, 1500, 2000, 2500, 3000],
            collapsed_below: COLLAPSED,
            non_vanishing: NON_VANISHING,
        };
        match profile {
            // That it runs end to end, in seconds.
            Profile::Smoke => Settings {
                train_subset: Some(300),
                test_subset: Some(200),
                runs: scaled(&[50, 100]),
                first_batch: 100,
                layer_blocks: 1,
                iterations: 50,
                burn_in: 25,
                chunk_len: 25,
                record_every: 5,
                window: 25,
                last_k: vec![10, 25],
                stops: vec![25, 50],
                ..quick
            },
            Profile::Quick => quick,
            Profile::Paper => Settings {
                first_batch: 3000,
                runs: vec![
                    (600, [0.05, 5e-4, 5e-4, 5e-5]),
                    (1800, [0.02, 2e-4, 2e-4, 2e-5]),
                    (3000, [0.01, 1e-4, 1e-4, 1e-5]),
                    (4200, [0.01, 1e-4, 1e-4, 1e-5]),
                ],
                blocking: Blocking::FinerNode {
                    split: vec![Some(SubBlocks::Count(10)), None, None, None],
                },
                layer_blocks: 0,
                iterations: 110_000,
                burn_in: 10_000,
                chunk_len: 5000,
                record_every: 10,
                window: 10_000,
                last_k: vec![1000, 10_000, 20_000, 30_000],
                stops: vec![20_000, 40_000, 60_000, 80_000, 110_000],
                ..quick
            },
        }
    }
}
