//! The settings of each profile: the network, the two protocols (common and the authors') with
//! their methods, KL weights and restarts.

use bdl_variational::Method;
use serde::Serialize;

use crate::Profile;

/// The settings of a profile.
#[derive(Debug, Serialize)]
pub(super) struct Settings {
    pub(super) widths: [usize; 3],
    pub(super) prior_precision: f64,
    pub(super) epochs: usize,
    pub(super) restarts: usize,
    /// The training protocols, the common one first.
    pub(super) protocols: Vec<Protocol>,
    /// The KL weights of Vadam's τ runs (common protocol).
    pub(super) kl_weights: Vec<f64>,
    /// The claim compares the methods at this epoch (from 1).
    pub(super) compare_at: usize,
}

/// How every method is trained and evaluated in one comparison.
#[derive(Debug, Serialize)]
pub(super) struct Protocol {
    pub(super) name: &'static str,
    pub(super) init_precision: f64,
    pub(super) batch_size: usize,
    /// Weight samples per step.
    pub(super) mc_samples: usize,
    /// Weight samples of the test predictive.
    pub(super) test_samples: usize,
    pub(super) methods: Vec<Method>,
}

impl Protocol {
    /// One α for every method, minibatches of 32, one sample a step (fixed before any run).
    pub(super) fn common() -> Self {
        let alpha = 0.01;
        Self {
            name: "common",
            init_precision: 10.0,
            batch_size: 32,
            mc_samples: 1,
            test_samples: 16,
            methods: vec![
                Method::Vogn {
                    learning_rate: alpha,
                    beta: 0.01,
                },
                Method::vadam(alpha),
                Method::Bbvi {
                    learning_rate: alpha,
                    beta1: 0.9,
                    beta2: 0.999,
                    init_std: 10f64.powf(-0.5),
                },
                Method::ivon(alpha),
            ],
        }
    }

    /// The Vadam authors' example on Australian (`pytorch/examples/binary_classification.py`
    /// of their repository): precision 1, minibatches of 128, 20 samples a step and for the
    /// predictive, α = 0.005 and γ₂ = 0.995, carried over to the other methods.
    pub(super) fn authors() -> Self {
        let (alpha, gamma2) = (0.005, 0.995);
        Self {
            name: "authors'",
            init_precision: 1.0,
            batch_size: 128,
            mc_samples: 20,
            test_samples: 20,
            methods: vec![
                Method::Vogn {
                    learning_rate: alpha,
                    beta: 1.0 - gamma2,
                },
                Method::Vadam {
                    learning_rate: alpha,
                    beta1: 0.9,
                    beta2: gamma2,
                },
                Method::Bbvi {
                    learning_rate: alpha,
                    beta1: 0.9,
                    beta2: gamma2,
                    init_std: 1.0,
                },
                Method::ivon(alpha),
            ],
        }
    }
}

impl Protocol {
    /// The protocol's Vadam (its τ runs vary the KL weight of this one).
    pub(super) fn vadam(&self) -> &Method {
        self.methods
            .iter()
            .find(|m| matches!(m, Method::Vadam { .. }))
            .expect("every protocol trains Vadam")
    }
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        let (epochs, restarts, kl_weights) = match profile {
            Profile::Smoke => (4, 1, vec![0.0, 1.0]),
            Profile::Quick => (60, 3, vec![0.0, 0.25, 0.5, 0.75, 1.0]),
            Profile::Paper => (200, 10, vec![0.0, 0.25, 0.5, 0.75, 1.0]),
        };
        Self {
            widths: [14, 64, 1],
            prior_precision: 1.0,
            epochs,
            restarts,
            protocols: vec![Protocol::common(), Protocol::authors()],
            kl_weights,
            compare_at: (epochs / 10).max(1),
        }
    }
}
