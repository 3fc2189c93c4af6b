//! The settings of each profile: the two-cluster data, the MLP, MAP seeds, subnetwork sizes and
//! the sampler and VOGN budgets.

use serde::Serialize;

use super::LAMBDA;
use crate::Profile;

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    /// MLP widths.
    pub(super) widths: [usize; 4],
    /// The prior precision λ of the MAP and the full-network Laplace.
    pub(super) lambda: f64,
    /// Full-batch Adam steps to the MAP.
    pub(super) epochs: usize,
    /// MAP seeds (initialisations): every Laplace method and rule is fitted on each MAP, and the
    /// claims are decided over them; figures, tables and the VOGN and Gibbs subnetworks are
    /// seed 0's.
    pub(super) map_seeds: u64,
    /// Adam's step size for the MAP the methods use.
    pub(super) learning_rate: f64,
    /// The MAP variants of the dead-unit table: (live initialisation, step size).
    pub(super) map_variants: Vec<(bool, f64)>,
    /// Points of the evaluation grid.
    pub(super) grid: usize,
    /// The subnetwork sizes, as fractions of the weights.
    pub(super) fractions: [(&'static str, f64); 3],
    /// Subnetwork inference with other posteriors, over the Wasserstein (exact) and random
    /// subnetworks of this size: VOGN (full batch, this many steps, this many weight samples
    /// per step, its predictive from this many draws) and blocked Gibbs (node blocks restricted
    /// to the subnetwork, pilot-tuned, this many sweeps, the first quarter discarded).
    pub(super) subset_fraction: (&'static str, f64),
    pub(super) vogn_steps: usize,
    pub(super) vogn_samples: usize,
    pub(super) predictive_draws: usize,
    pub(super) gibbs_sweeps: u64,
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        Self {
            widths: [1, 50, 50, 1],
            lambda: LAMBDA,
            epochs: match profile {
                Profile::Smoke => 50,
                Profile::Quick | Profile::Paper => 10_000,
            },
            map_seeds: match profile {
                Profile::Smoke => 2,
                Profile::Quick => 3,
                Profile::Paper => 5,
            },
            learning_rate: 3e-4,
            map_variants: match profile {
                Profile::Smoke => vec![(false, 3e-3)],
                Profile::Quick => vec![(false, 3e-3)],
                Profile::Paper => vec![(false, 3e-3), (false, 3e-4), (true, 3e-3), (true, 1e-3)],
            },
            grid: match profile {
                Profile::Smoke => 40,
                _ => 240,
            },
            fractions: [("50%", 0.5), ("3%", 0.03), ("1%", 0.01)],
            subset_fraction: ("3%", 0.03),
            vogn_steps: match profile {
                Profile::Smoke => 20,
                _ => 2000,
            },
            vogn_samples: 8,
            predictive_draws: 200,
            gibbs_sweeps: match profile {
                Profile::Smoke => 40,
                _ => 4000,
            },
        }
    }
}
