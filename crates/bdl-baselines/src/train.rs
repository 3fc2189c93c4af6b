//! The minibatch training loop shared by MAP training and SWAG, and the Monte Carlo mixture
//! shared by the sampling predictives.

use std::ops::ControlFlow;

use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::Model;
use bdl_tensor::{ChaCha8Rng, Seed};
use candle_core::{DType, Device, Tensor};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::optim::{Optimizer, OptimizerState};
use crate::{Error, Result};

/// Minibatch gradient descent on the per-example objective
///
/// L(θ)/N = −(1/N) Σ_n log p(y_n | f(x_n; θ)) + λ/(2N) ‖θ‖²,
///
/// whose minibatch gradient (1/B) Σ_{n∈B} J_nᵀ ∂ℓ_n/∂f + (λ/N) θ is unbiased. Minibatch orders
/// and dropout masks (when the model has dropout) come from two streams forked off one seed.
pub(crate) struct Trainer<'a, M: Model> {
    model: &'a M,
    x: Tensor,
    y: Tensor,
    /// The observation model; its σ is re-estimated by [`Trainer::loss`] when asked.
    pub(crate) likelihood: Likelihood,
    prior_precision: f64,
    batch_size: usize,
    optimizer: OptimizerState,
    order: Vec<usize>,
    shuffle: ChaCha8Rng,
    dropout: ChaCha8Rng,
}

impl<'a, M: Model> Trainer<'a, M> {
    /// A trainer on the examples (x, y), which must pair up row by row and not be empty.
    pub(crate) fn new(
        model: &'a M,
        x: Tensor,
        y: Tensor,
        likelihood: Likelihood,
        prior_precision: f64,
        batch_size: usize,
        optimizer: Optimizer,
        seed: Seed,
    ) -> Result<Self> {
        let n = paired_rows(&x, &y)?;
        if n == 0 {
            return Err(Error::NoData);
        }
        if batch_size == 0 {
            return Err(Error::InvalidConfig("batch_size must be >= 1".to_owned()));
        }
        likelihood.check()?;
        Ok(Self {
            model,
            x,
            y,
            likelihood,
            prior_precision,
            batch_size,
            optimizer: OptimizerState::new(optimizer),
            order: (0..n).collect(),
            shuffle: seed.fork("minibatches").rng(),
            dropout: seed.fork("dropout").rng(),
        })
    }

    /// One pass over the data in a freshly shuffled order, one optimiser step per minibatch;
    /// `after_step` sees the parameters after every step and may end the pass early.
    pub(crate) fn epoch(
        &mut self,
        mut theta: Tensor,
        lr: f64,
        mut after_step: impl FnMut(&Tensor) -> Result<ControlFlow<()>>,
    ) -> Result<(Tensor, ControlFlow<()>)> {
        self.order.shuffle(&mut self.shuffle);
        let n = self.order.len() as f64;
        let lambda_per_example = self.prior_precision / n;
        for start in (0..self.order.len()).step_by(self.batch_size) {
            let end = (start + self.batch_size).min(self.order.len());
            let batch = &self.order[start..end];
            let (xb, yb) = (rows(&self.x, batch)?, rows(&self.y, batch)?);
            let cache = self
                .model
                .forward_cached_with(&theta, &xb, Some(&mut self.dropout))?;
            let r = self
                .likelihood
                .grad_f(&cache.output, &yb)?
                .to_dtype(theta.dtype())?;
            let grad = ((self.model.backward(&theta, &cache, &r)? / batch.len() as f64)?
                + (&theta * lambda_per_example)?)?;
            theta = self.optimizer.step(&theta, &grad, lr)?;
            if after_step(&theta)?.is_break() {
                return Ok((theta, ControlFlow::Break(())));
            }
        }
        Ok((theta, ControlFlow::Continue(())))
    }

    /// The per-example objective L(θ)/N on all the training examples, without dropout; with
    /// `learn_sigma` and a Gaussian likelihood, σ is first set to its maximum-likelihood value
    /// (the RMS residual) at θ. Errors with [`Error::Diverged`] if it is not finite.
    pub(crate) fn loss(&mut self, theta: &Tensor, learn_sigma: bool, epoch: usize) -> Result<f64> {
        let f = self.model.forward(theta, &self.x)?;
        if learn_sigma && matches!(self.likelihood, Likelihood::Gaussian { .. }) {
            self.likelihood = Likelihood::gaussian_mle(&f, &self.y)?;
        }
        let nll = -sum_f64(&self.likelihood.log_lik(&f, &self.y)?)?;
        let penalty = 0.5 * self.prior_precision * sum_f64(&theta.sqr()?)?;
        let loss = (nll + penalty) / self.order.len() as f64;
        finite(loss, "training", epoch)
    }
}

/// How many predictive samples to average, and the seed of their streams.
///
/// Sample s draws its randomness (a SWAG parameter draw, dropout masks) from the stream
/// `seed.index(s)`, so any sample can be reproduced alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sampling {
    /// S, the number of samples (16 in the subnetwork-inference paper's baselines).
    pub samples: usize,
    /// The root of the per-sample streams.
    pub seed: Seed,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            samples: 16,
            seed: Seed(0),
        }
    }
}

impl Sampling {
    /// The equally weighted mixture (1/S) Σ_s p(y | f_s) of the point predictives of the
    /// outputs f_s = `outputs(rng_s)`, rng_s the stream of sample s.
    pub(crate) fn mixture(
        &self,
        likelihood: Likelihood,
        mut outputs: impl FnMut(&mut ChaCha8Rng) -> Result<Tensor>,
    ) -> Result<Predictive> {
        if self.samples == 0 {
            return Err(Error::InvalidConfig(
                "a sampled predictive needs samples >= 1".to_owned(),
            ));
        }
        let components = (0..self.samples as u64)
            .map(|s| {
                let f = outputs(&mut self.seed.index(s).rng())?;
                Ok(likelihood.point_predictive(&f)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Predictive::mixture(&components)?)
    }
}

/// The number of examples shared by `x` and `y`.
pub(crate) fn paired_rows(x: &Tensor, y: &Tensor) -> Result<usize> {
    let x_rows = x.dims().first().copied().unwrap_or(0);
    let y_rows = y.dims().first().copied().unwrap_or(0);
    if x_rows != y_rows || x.rank() == 0 || y.rank() == 0 {
        return Err(Error::RowMismatch { x_rows, y_rows });
    }
    Ok(x_rows)
}

/// The rows `index` of `t` (along the first axis).
pub(crate) fn rows(t: &Tensor, index: &[usize]) -> Result<Tensor> {
    let idx: Vec<u32> = index.iter().map(|&i| i as u32).collect();
    let idx = Tensor::from_vec(idx, index.len(), &Device::Cpu)?.to_device(t.device())?;
    Ok(t.index_select(&idx, 0)?)
}

/// The mean negative log-likelihood −(1/N) Σ_n log p(y_n | f(x_n; θ)), without dropout.
pub(crate) fn mean_nll(
    model: &impl Model,
    theta: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
) -> Result<f64> {
    let f = model.forward(theta, x)?;
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
