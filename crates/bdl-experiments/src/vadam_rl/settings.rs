//! The settings of each profile: episodes, seeds, the DDPG agent and how each exploration's
//! perturbation is set.

use bdl_variational::{Method, VariationalConfig};
use serde::Serialize;

use super::ddpg::{DdpgConfig, Exploration};
use super::{INIT_PRECISION, PRIOR_PRECISION, VADAGRAD_LR, VADAM_EXAMPLES};
use crate::Profile;

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    pub(super) episodes: usize,
    pub(super) seeds: usize,
    /// The mean actor is evaluated after every this many episodes (and before the first).
    pub(super) eval_every: usize,
    /// Start states of each evaluation.
    pub(super) eval_starts: usize,
    pub(super) ddpg: DdpgConfig,
    pub(super) explorations: Vec<Exploration>,
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        let (episodes, seeds, hidden, eval_starts) = match profile {
            Profile::Smoke => (2, 1, 8, 2),
            Profile::Quick => (60, 3, 64, 5),
            Profile::Paper => (150, 5, 64, 10),
        };
        let variational = |method: Method, init_precision: f64| VariationalConfig {
            init_precision: Some(init_precision),
            ..VariationalConfig::new(method, PRIOR_PRECISION, 1, 1)
        };
        Self {
            episodes,
            seeds,
            eval_every: 5.min(episodes),
            eval_starts,
            ddpg: DdpgConfig {
                hidden,
                discount: 0.99,
                target_rate: 0.005,
                batch_size: 64,
                capacity: 100_000,
                actor_lr: 1e-3,
                critic_lr: 1e-3,
            },
            explorations: vec![
                Exploration::None,
                Exploration::Action { sigma: 0.1 },
                Exploration::Parameter {
                    config: variational(Method::vadam(1e-3), INIT_PRECISION),
                    examples: VADAM_EXAMPLES,
                },
                Exploration::Parameter {
                    config: variational(
                        Method::VadaGrad {
                            learning_rate: VADAGRAD_LR,
                            beta2: 0.999,
                        },
                        INIT_PRECISION,
                    ),
                    examples: VADAM_EXAMPLES,
                },
            ],
        }
    }
}
