//! The settings of each profile: the data sets with the paper's prior precisions, minibatch
//! sizes, restarts and the methods' training.

use bdl_variational::Method;
use serde::Serialize;

use super::Set;
use crate::Profile;

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    /// The data sets, each with the paper's prior precision λ.
    pub(super) sets: Vec<(Set, f64)>,
    /// Vadam's minibatch sizes M, smallest first.
    pub(super) batch_sizes: Vec<usize>,
    /// VOGN's minibatch size.
    pub(super) vogn_batch_size: usize,
    /// Restarts (seeds 0, 1, …) of every method and minibatch size.
    pub(super) restarts: usize,
    /// Update steps of every run (rounded up to whole epochs).
    pub(super) steps: usize,
    /// The step-size decay κ of α_t = α/(1 + t^κ).
    pub(super) lr_decay: f64,
    /// Vadam and its hyper-parameters.
    pub(super) vadam: Method,
    /// VOGN and its hyper-parameters.
    pub(super) vogn: Method,
    /// Gauss–Hermite points of the exact ELBO and predictive.
    pub(super) quadrature_points: usize,
    /// MF-Exact is maximised until the ELBO gradient is below this.
    pub(super) mf_exact_tolerance: f64,
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        let (batch_sizes, restarts, steps) = match profile {
            Profile::Smoke => (vec![1, 64], 1, 200),
            Profile::Quick => (vec![1, 8, 16, 32, 64], 5, 10_000),
            Profile::Paper => (vec![1, 8, 16, 32, 64], 20, 50_000),
        };
        Self {
            sets: Set::ALL.iter().map(|&s| (s, s.lambda())).collect(),
            batch_sizes,
            vogn_batch_size: 1,
            restarts,
            steps,
            lr_decay: 0.55,
            vadam: Method::vadam(0.1),
            vogn: Method::Vogn {
                learning_rate: 0.1,
                beta: 0.01,
            },
            quadrature_points: 32,
            mf_exact_tolerance: 1e-8,
        }
    }

    /// Every (name, method, minibatch size) run of one restart: VOGN, then Vadam by M.
    pub(super) fn runs(&self) -> Vec<(&'static str, Method, usize)> {
        std::iter::once(("VOGN", self.vogn.clone(), self.vogn_batch_size))
            .chain(
                self.batch_sizes
                    .iter()
                    .map(|&m| ("Vadam", self.vadam.clone(), m)),
            )
            .collect()
    }
}
