//! First-order optimisers, shared by MAP training and SWAG.

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The update rule of a gradient step θ ← θ − α·u(g), with g the gradient of the per-example
/// objective and α the learning rate.
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
        Self::Adam {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }
}

impl Optimizer {
    /// Checks the hyper-parameters: decays and momentum in [0, 1), ε > 0.
    pub fn check(&self) -> Result<()> {
        let unit = |v: f64| (0.0..1.0).contains(&v);
        let ok = match *self {
            Self::Adam { beta1, beta2, eps } => {
                unit(beta1) && unit(beta2) && eps > 0.0 && eps.is_finite()
            }
            Self::Sgd { momentum } => unit(momentum),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidConfig(format!(
                "optimizer: need decays and momentum in [0, 1) and eps > 0, got {self:?}"
            )))
        }
    }
}

/// An optimiser with its running state (moments or momentum buffer).
#[derive(Debug)]
pub(crate) struct OptimizerState {
    rule: Optimizer,
    /// Steps taken.
    t: u64,
    /// Adam's first moment, or SGD's momentum buffer.
    first: Option<Tensor>,
    /// Adam's second moment.
    second: Option<Tensor>,
}

impl OptimizerState {
    /// A fresh state (no steps taken).
    pub(crate) fn new(rule: Optimizer) -> Self {
        Self {
            rule,
            t: 0,
            first: None,
            second: None,
        }
    }

    /// One step from `theta` along the gradient `grad` with learning rate `lr`; returns the new
    /// parameters.
    pub(crate) fn step(&mut self, theta: &Tensor, grad: &Tensor, lr: f64) -> Result<Tensor> {
        self.t += 1;
        let update = match self.rule {
            Optimizer::Adam { beta1, beta2, eps } => {
                let m = decayed(self.first.as_ref(), beta1, grad)?;
                let v = decayed(self.second.as_ref(), beta2, &grad.sqr()?)?;
                let t = self.t as f64;
                let m_hat = (&m / (1.0 - beta1.powf(t)))?;
                let v_hat = (&v / (1.0 - beta2.powf(t)))?;
                self.first = Some(m);
                self.second = Some(v);
                (m_hat / (v_hat.sqrt()? + eps)?)?
            }
            Optimizer::Sgd { momentum } => {
                let b = match &self.first {
                    Some(b) if momentum > 0.0 => ((b * momentum)? + grad)?,
                    _ => grad.clone(),
                };
                self.first = Some(b.clone());
                b
            }
        };
        Ok((theta - (update * lr)?)?)
    }
}

/// The exponential moving average β·old + (1 − β)·new, starting from zero.
fn decayed(old: Option<&Tensor>, beta: f64, new: &Tensor) -> Result<Tensor> {
    let fresh = (new * (1.0 - beta))?;
    Ok(match old {
        Some(old) => ((old * beta)? + fresh)?,
        None => fresh,
    })
}

/// Whether the settings every optimiser run shares are usable: a finite learning rate > 0, a
/// finite prior precision ≥ 0, a batch size ≥ 1.
pub(crate) fn step_settings_ok(
    learning_rate: f64,
    prior_precision: f64,
    batch_size: usize,
) -> bool {
    learning_rate > 0.0
        && learning_rate.is_finite()
        && prior_precision >= 0.0
        && prior_precision.is_finite()
        && batch_size > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn steps_match_hand_computations() {
        // One-dimensional gradients 2 then −1 from θ = 1 with lr 0.1.
        let dev = Device::Cpu;
        let theta = Tensor::new(&[1.0f64], &dev).unwrap();
        let g1 = Tensor::new(&[2.0f64], &dev).unwrap();
        let g2 = Tensor::new(&[-1.0f64], &dev).unwrap();
        let value = |t: &Tensor| t.to_vec1::<f64>().unwrap()[0];

        // SGD, μ = 0.5: b₁ = 2, θ₁ = 0.8; b₂ = 0.5·2 − 1 = 0, θ₂ = 0.8.
        let mut sgd = OptimizerState::new(Optimizer::Sgd { momentum: 0.5 });
        let t1 = sgd.step(&theta, &g1, 0.1).unwrap();
        let t2 = sgd.step(&t1, &g2, 0.1).unwrap();
        assert!((value(&t1) - 0.8).abs() < 1e-15 && (value(&t2) - 0.8).abs() < 1e-15);

        // Adam's first step is lr·sign(g) (up to ε): m̂ = g, v̂ = g².
        let mut adam = OptimizerState::new(Optimizer::default());
        let t1 = adam.step(&theta, &g1, 0.1).unwrap();
        assert!((value(&t1) - 0.9).abs() < 1e-9);
        // Second step: m = 0.9·0.2 − 0.1 = 0.08, v = 0.999·0.004 + 0.001 = 0.004996.
        let t2 = adam.step(&t1, &g2, 0.1).unwrap();
        let m_hat = 0.08 / (1.0 - 0.81);
        let v_hat = 0.004996 / (1.0 - 0.999f64.powi(2));
        let expected = value(&t1) - 0.1 * m_hat / (v_hat.sqrt() + 1e-8);
        assert!((value(&t2) - expected).abs() < 1e-12);
    }

    #[test]
    fn bad_hyper_parameters_are_errors() {
        assert!(Optimizer::Sgd { momentum: 1.0 }.check().is_err());
        assert!(
            Optimizer::Adam {
                beta1: 0.9,
                beta2: 0.999,
                eps: 0.0
            }
            .check()
            .is_err()
        );
        assert!(Optimizer::Sgd { momentum: 0.0 }.check().is_ok());
    }
}
