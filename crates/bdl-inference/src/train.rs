//! The training loop of the regularised objective: MAP training and SWAG's iterates.

use std::ops::ControlFlow;

use bdl_likelihoods::Likelihood;
use bdl_models::Model;
use bdl_tensor::{ChaCha8Rng, Seed};
use candle_core::{DType, Device, Tensor};

use crate::valid::{Validate, at_least_one, non_negative, positive};
use crate::{Error, InvalidParam, MinibatchLoop, Optimizer, OptimizerState, Result};

/// Minibatch descent on the per-example objective
///
/// L(θ)/N = −(1/N) Σ_n log p(y_n | f(x_n; θ)) + λ/(2N) ‖θ‖²,
///
/// whose minibatch gradient (1/B) Σ_{n∈B} J_nᵀ ∂ℓ_n/∂f + (λ/N) θ is unbiased, so step sizes do
/// not depend on N. The parameters are kept in f64 (the optimiser's master copy) and cast to the
/// network's dtype for each forward and backward pass. Minibatches come from
/// [`MinibatchLoop`] and dropout masks (when the model has dropout) from the stream
/// `seed.fork("dropout")`.
pub struct Trainer<'a, M: Model> {
    model: &'a M,
    data: MinibatchLoop,
    likelihood: Likelihood,
    prior_precision: f64,
    optimizer: OptimizerState,
    theta: Vec<f64>,
    dtype: DType,
    device: Device,
    dropout: ChaCha8Rng,
    epochs: usize,
    /// Which coordinates the optimiser moves (`None`: all); the others keep θ₀.
    moving: Option<Vec<bool>>,
}

impl<'a, M: Model> Trainer<'a, M> {
    /// A trainer from `theta0` (its dtype and device are the compute dtype and device) on the
    /// examples (x, y).
    pub fn new(
        model: &'a M,
        theta0: &Tensor,
        data: MinibatchLoop,
        likelihood: Likelihood,
        prior_precision: f64,
        optimizer: Optimizer,
        seed: Seed,
    ) -> Result<Self> {
        model.layout().check_flat(theta0)?;
        likelihood.check()?;
        let theta = bdl_tensor::to_f64_vec(theta0)?;
        Ok(Self {
            model,
            data,
            likelihood,
            prior_precision,
            optimizer: OptimizerState::new(optimizer, theta.len()),
            theta,
            dtype: theta0.dtype(),
            device: theta0.device().clone(),
            dropout: seed.fork("dropout").rng(),
            epochs: 0,
            moving: None,
        })
    }

    /// The same trainer moving only the flat indices `subset` (subnetwork training: the other
    /// coordinates keep θ₀, their gradient and weight decay zeroed before the optimiser's step);
    /// `None` moves every coordinate. An index ≥ D is an error.
    pub fn moving(mut self, subset: Option<&[usize]>) -> Result<Self> {
        self.moving = match subset {
            None => None,
            Some(subset) => {
                bdl_models::check_param_indices(subset, self.theta.len())?;
                let mut mask = vec![false; self.theta.len()];
                for &i in subset {
                    mask[i] = true;
                }
                Some(mask)
            }
        };
        Ok(self)
    }

    /// The likelihood, with σ as last re-estimated by [`loss`](Self::loss).
    pub fn likelihood(&self) -> Likelihood {
        self.likelihood
    }

    /// θ in the compute dtype.
    pub fn theta(&self) -> Result<Tensor> {
        let d = self.theta.len();
        Ok(Tensor::from_slice(&self.theta, d, &self.device)?.to_dtype(self.dtype)?)
    }

    /// One pass over the data in the next epoch's order, one optimiser step per minibatch;
    /// `after_step` sees the parameters after every step and may end the pass early.
    pub fn epoch(
        &mut self,
        lr: f64,
        mut after_step: impl FnMut(&Tensor) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let lambda_per_example = self.prior_precision / self.data.len() as f64;
        let mut theta = self.theta()?;
        let epoch = self.epochs;
        self.epochs += 1;
        let data = self.data.clone();
        let mut step = 0;
        data.epoch(epoch, |xb, yb| {
            let at = step;
            let diverged = Error::NonFiniteStep { epoch, step: at };
            step += 1;
            let (likelihood, dtype) = (self.likelihood, self.dtype);
            let output_gradient = |f: &Tensor| -> Result<Tensor> {
                if bdl_tensor::check_finite(f, "outputs").is_err() {
                    return Err(Error::NonFiniteStep { epoch, step: at });
                }
                Ok(likelihood.grad_f(f, yb)?.to_dtype(dtype)?)
            };
            // The summed gradient becomes the step's ĝ/B + λ̃θ in place.
            let mut grad = self
                .model
                .loss_gradient(&theta, xb, Some(&mut self.dropout), output_gradient, false)?
                .sum;
            let b = xb.dims()[0] as f64;
            for (g, t) in grad.iter_mut().zip(&self.theta) {
                *g = *g / b + lambda_per_example * t;
            }
            if let Some(mask) = &self.moving {
                for (g, &moves) in grad.iter_mut().zip(mask) {
                    if !moves {
                        *g = 0.0;
                    }
                }
            }
            self.optimizer.step(&mut self.theta, &grad, lr);
            if !bdl_tensor::all_finite(&self.theta) {
                return Err(diverged);
            }
            theta = self.theta()?;
            after_step(&theta)
        })
    }

    /// The per-example objective L(θ)/N on all the training examples, without dropout; with
    /// `learn_sigma` and a Gaussian likelihood, σ is first set to its maximum-likelihood value
    /// (the RMS residual) at θ. [`Error::Diverged`] (naming the last epoch run) if it is not
    /// finite.
    pub fn loss(&mut self, learn_sigma: bool) -> Result<f64> {
        let theta = self.theta()?;
        let f = crate::forward_batched(self.model, &theta, self.data.x(), EVAL_BATCH, None)?;
        let y = self.data.y();
        if learn_sigma && matches!(self.likelihood, Likelihood::Gaussian { .. }) {
            self.likelihood = Likelihood::gaussian_mle(&f, y)?;
        }
        let nll = -sum_f64(&self.likelihood.log_lik(&f, y)?)?;
        let penalty = 0.5 * self.prior_precision * self.theta.iter().map(|t| t * t).sum::<f64>();
        let loss = (nll + penalty) / self.data.len() as f64;
        finite(loss, "training", self.epochs.saturating_sub(1))
    }
}

/// Rows per forward pass when a whole data set is evaluated (the training loss, a validation
/// NLL): one pass of 60,000 MNIST images through LeNet-5 would hold its 4.7 GB of unfolded
/// patches at once.
const EVAL_BATCH: usize = 4096;

/// Checks the settings every run of a [`Trainer`] shares: a valid optimiser, a learning rate
/// finite and > 0, a prior precision finite and ≥ 0, at least one example per batch.
pub fn check_descent(
    optimizer: &Optimizer,
    learning_rate: f64,
    prior_precision: f64,
    batch_size: usize,
) -> Result<(), InvalidParam> {
    optimizer.validate().map_err(|e| e.within("optimizer"))?;
    positive("learning_rate", learning_rate)?;
    non_negative("prior_precision", prior_precision)?;
    at_least_one("batch_size", batch_size)
}

/// The mean negative log-likelihood −(1/N) Σ_n log p(y_n | f(x_n; θ)), without dropout.
pub fn mean_nll(
    model: &impl Model,
    theta: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
) -> Result<f64> {
    let f = crate::forward_batched(model, theta, x, EVAL_BATCH, None)?;
    let ll = likelihood.log_lik(&f, y)?;
    Ok(-sum_f64(&ll)? / ll.elem_count() as f64)
}

/// `value` if finite, else [`Error::Diverged`].
pub(crate) fn finite(value: f64, stage: &'static str, epoch: usize) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::Diverged {
            stage,
            epoch,
            loss: value,
        })
    }
}

/// The sum of all elements, accumulated in f64.
fn sum_f64(t: &Tensor) -> Result<f64> {
    Ok(t.to_dtype(DType::F64)?.sum_all()?.to_scalar::<f64>()?)
}
