//! First-order optimisers on a flat f64 parameter vector: the one Adam of the workspace (MAP
//! training, SWAG, Bayes-by-Backprop) and SGD with momentum.

use serde::{Deserialize, Serialize};

use crate::InvalidParam;
use crate::valid::{Validate, positive, unit_interval};

/// The update rule of a gradient step θ ← θ − α·u(g), with g the gradient and α the learning
/// rate.
///
/// - `Adam` (Kingma & Ba 2015): m ← β₁m + (1 − β₁)g, v ← β₂v + (1 − β₂)g∘g,
///   u = m̂ / (√v̂ + ε) with the bias corrections m̂ = m/(1 − β₁ᵗ), v̂ = v/(1 − β₂ᵗ).
/// - `Sgd` with heavy-ball momentum μ, as PyTorch's `SGD`: b ← μb + g (b = g at the first step),
///   u = b. μ = 0 is plain SGD.
///
/// Serialised with an internal tag: `{"kind":"adam","beta1":0.9,"beta2":0.999,"eps":1e-8}`,
/// `{"kind":"sgd","momentum":0.9}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Optimizer {
    /// Adam.
    Adam {
        /// Decay of the first moment, in [0, 1).
        beta1: f64,
        /// Decay of the second moment, in [0, 1).
        beta2: f64,
        /// The denominator's offset ε > 0.
        eps: f64,
    },
    /// Stochastic gradient descent with heavy-ball momentum.
    Sgd {
        /// The momentum μ, in [0, 1).
        momentum: f64,
    },
}

impl Default for Optimizer {
    /// Adam with β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
    fn default() -> Self {
        Self::adam(0.9, 0.999)
    }
}

impl Optimizer {
    /// Adam with the decays β₁, β₂ and ε = 1e-8.
    pub fn adam(beta1: f64, beta2: f64) -> Self {
        Self::Adam {
            beta1,
            beta2,
            eps: 1e-8,
        }
    }
}

impl Validate for Optimizer {
    /// Decays and momentum in [0, 1), ε finite and > 0.
    fn validate(&self) -> Result<(), InvalidParam> {
        match *self {
            Self::Adam { beta1, beta2, eps } => {
                unit_interval("beta1", beta1)?;
                unit_interval("beta2", beta2)?;
                positive("eps", eps)
            }
            Self::Sgd { momentum } => unit_interval("momentum", momentum),
        }
    }
}

/// An optimiser with its running state (moments or momentum buffer) over D parameters.
///
/// ```
/// use bdl_inference::{Optimizer, OptimizerState};
/// // Adam's first step moves every parameter by the learning rate against the gradient's sign.
/// let mut adam = OptimizerState::new(Optimizer::default(), 2);
/// let mut theta = [1.0, 1.0];
/// adam.step(&mut theta, &[3.0, -0.5], 0.1);
/// assert!((theta[0] - 0.9).abs() < 1e-8 && (theta[1] - 1.1).abs() < 1e-8);
/// ```
#[derive(Clone, Debug)]
pub struct OptimizerState {
    rule: Optimizer,
    /// Steps taken.
    t: i32,
    /// Adam's first moment, or SGD's momentum buffer.
    first: Vec<f64>,
    /// Adam's second moment.
    second: Vec<f64>,
}

impl OptimizerState {
    /// A fresh state (no steps taken) over `dim` parameters.
    pub fn new(rule: Optimizer, dim: usize) -> Self {
        let second = match rule {
            Optimizer::Adam { .. } => vec![0.0; dim],
            Optimizer::Sgd { .. } => Vec::new(),
        };
        Self {
            rule,
            t: 0,
            first: vec![0.0; dim],
            second,
        }
    }

    /// Steps taken so far.
    pub fn steps(&self) -> i32 {
        self.t
    }

    /// One step of `theta` along the gradient `grad` with learning rate `lr`, in place.
    ///
    /// # Panics
    /// If `theta` or `grad` does not have the state's length (a programming error).
    #[track_caller]
    pub fn step(&mut self, theta: &mut [f64], grad: &[f64], lr: f64) {
        assert!(
            theta.len() == self.first.len() && grad.len() == self.first.len(),
            "optimiser over {} parameters stepped with {} parameters and {} gradients",
            self.first.len(),
            theta.len(),
            grad.len()
        );
        self.t += 1;
        let (t, first, second) = (self.t, &mut self.first, &mut self.second);
        // Vector lanes over the parameters; every operation is correctly rounded and none is
        // fused, so each path gives the same bits.
        bdl_tensor::vectorized(
            #[inline(always)]
            || match self.rule {
                Optimizer::Adam { beta1, beta2, eps } => {
                    let (c1, c2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
                    for (((t, &g), m), v) in theta.iter_mut().zip(grad).zip(first).zip(second) {
                        *m = beta1 * *m + (1.0 - beta1) * g;
                        *v = beta2 * *v + (1.0 - beta2) * g * g;
                        *t -= lr * (*m / c1) / ((*v / c2).sqrt() + eps);
                    }
                }
                Optimizer::Sgd { momentum } => {
                    let first_step = t == 1;
                    for ((t, &g), b) in theta.iter_mut().zip(grad).zip(first) {
                        *b = if first_step { g } else { momentum * *b + g };
                        *t -= lr * *b;
                    }
                }
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_match_hand_computations() {
        // One-dimensional gradients 2 then −1 from θ = 1 with lr 0.1.
        // SGD, μ = 0.5: b₁ = 2, θ₁ = 0.8; b₂ = 0.5·2 − 1 = 0, θ₂ = 0.8.
        let mut sgd = OptimizerState::new(Optimizer::Sgd { momentum: 0.5 }, 1);
        let mut theta = [1.0];
        sgd.step(&mut theta, &[2.0], 0.1);
        assert!((theta[0] - 0.8).abs() < 1e-15);
        sgd.step(&mut theta, &[-1.0], 0.1);
        assert!((theta[0] - 0.8).abs() < 1e-15);

        // Adam's first step is lr·sign(g) (up to ε): m̂ = g, v̂ = g².
        let mut adam = OptimizerState::new(Optimizer::default(), 1);
        let mut theta = [1.0];
        adam.step(&mut theta, &[2.0], 0.1);
        assert!((theta[0] - 0.9).abs() < 1e-9);
        // Second step: m = 0.9·0.2 − 0.1 = 0.08, v = 0.999·0.004 + 0.001 = 0.004996.
        let before = theta[0];
        adam.step(&mut theta, &[-1.0], 0.1);
        let m_hat = 0.08 / (1.0 - 0.81);
        let v_hat = 0.004996 / (1.0 - 0.999f64.powi(2));
        assert!((theta[0] - (before - 0.1 * m_hat / (v_hat.sqrt() + 1e-8))).abs() < 1e-12);
        assert_eq!(adam.steps(), 2);
    }

    #[test]
    fn bad_hyper_parameters_are_named() {
        let err = Optimizer::Sgd { momentum: 1.0 }.check().unwrap_err();
        assert_eq!(err.param, "momentum");
        let err = Optimizer::Adam {
            beta1: 0.9,
            beta2: 0.999,
            eps: 0.0,
        }
        .check()
        .unwrap_err();
        assert_eq!(err.param, "eps");
        assert!(Optimizer::Sgd { momentum: 0.0 }.check().is_ok());
    }
}
