//! MAP training with Adam.

use bdl_likelihoods::Likelihood;
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How to train to the MAP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapConfig {
    /// Adam's step size α.
    pub learning_rate: f64,
    /// Adam's decay rates (β₁, β₂).
    pub betas: (f64, f64),
    /// The prior precision λ (the weight decay of the summed loss).
    pub prior_precision: f64,
    /// Passes over the data.
    pub epochs: usize,
    /// Examples per minibatch (the whole set when larger than it).
    pub batch_size: usize,
    /// Re-estimate a Gaussian likelihood's σ by maximum likelihood (the RMS residual) after
    /// every epoch.
    pub learn_sigma: bool,
    /// The seed of the minibatch shuffles.
    pub seed: Seed,
}

impl Default for MapConfig {
    fn default() -> Self {
        Self {
            learning_rate: 1e-3,
            betas: (0.9, 0.999),
            prior_precision: 1.0,
            epochs: 100,
            batch_size: 128,
            learn_sigma: false,
            seed: Seed(0),
        }
    }
}

/// The result of MAP training.
#[derive(Clone, Debug)]
pub struct MapFit {
    /// θ̂, the trained parameters.
    pub theta: Tensor,
    /// The likelihood, with σ re-estimated when asked.
    pub likelihood: Likelihood,
    /// The mean per-example loss L(θ)/N after each epoch.
    pub losses: Vec<f64>,
}

/// Trains `model` from `theta0` to the MAP of the data (x, y) under `likelihood` and the prior
/// N(0, λ⁻¹ I). Each Adam step uses the minibatch gradient rescaled to the whole data set,
/// (N/B) Σ_{n∈B} J_nᵀ ∂ℓ_n/∂f + λθ, divided by N so that step sizes do not depend on N.
pub fn train_map(
    model: &impl Model,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &MapConfig,
) -> Result<MapFit> {
    if !(config.learning_rate > 0.0 && config.prior_precision >= 0.0 && config.batch_size > 0) {
        return Err(Error::InvalidConfig(format!(
            "need learning_rate > 0, prior_precision >= 0 and batch_size > 0, got {config:?}"
        )));
    }
    let n = x.dims()[0];
    let dtype = theta0.dtype();
    let device = theta0.device();
    let (b1, b2) = config.betas;
    let lambda_per_example = config.prior_precision / n as f64;
    let mut theta = theta0.clone();
    let mut m = theta.zeros_like()?;
    let mut v = theta.zeros_like()?;
    let mut likelihood = likelihood;
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = config.seed.fork("map-minibatches").rng();
    let mut losses = Vec::with_capacity(config.epochs);
    let mut t = 0;
    for epoch in 0..config.epochs {
        order.shuffle(&mut rng);
        for chunk in order.chunks(config.batch_size) {
            let idx = Tensor::from_vec(
                chunk.iter().map(|&i| i as u32).collect::<Vec<_>>(),
                chunk.len(),
                &Device::Cpu,
            )?
            .to_device(device)?;
            let (xb, yb) = (x.index_select(&idx, 0)?, y.index_select(&idx, 0)?);
            let cache = model.forward_cached(&theta, &xb)?;
            let r = likelihood.grad_f(&cache.output, &yb)?.to_dtype(dtype)?;
            let grad = ((model.backward(&theta, &cache, &r)? / chunk.len() as f64)?
                + (&theta * lambda_per_example)?)?;
            t += 1;
            m = ((m * b1)? + (&grad * (1.0 - b1))?)?;
            v = ((v * b2)? + (grad.sqr()? * (1.0 - b2))?)?;
            let m_hat = (&m / (1.0 - b1.powi(t)))?;
            let v_hat = (&v / (1.0 - b2.powi(t)))?;
            let step = (m_hat / (v_hat.sqrt()? + 1e-8)?)?;
            theta = (theta - (step * config.learning_rate)?)?;
        }
        let f = model.forward(&theta, x)?;
        if config.learn_sigma && matches!(likelihood, Likelihood::Gaussian { .. }) {
            likelihood = Likelihood::gaussian_mle(&f, y)?;
        }
        let nll = -likelihood
            .log_lik(&f, y)?
            .to_dtype(DType::F64)?
            .sum_all()?
            .to_scalar::<f64>()?;
        let penalty = 0.5
            * config.prior_precision
            * theta
                .sqr()?
                .sum_all()?
                .to_dtype(DType::F64)?
                .to_scalar::<f64>()?;
        let loss = (nll + penalty) / n as f64;
        if !loss.is_finite() {
            return Err(Error::Diverged { epoch, loss });
        }
        losses.push(loss);
    }
    Ok(MapFit {
        theta,
        likelihood,
        losses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_models::{Activation, Mlp, MlpSpec};

    #[test]
    fn linear_regression_reaches_the_ridge_solution() {
        // A linear model y = w x + b with a Gaussian likelihood (σ = 1) and prior precision λ:
        // the MAP solves (XᵀX + λI)θ = Xᵀy with X = [x, 1]. Adam with a small final step gets
        // within 1e-3 of it.
        let model = Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity)).unwrap();
        let xs: Vec<f64> = (0..50).map(|i| i as f64 / 25.0 - 1.0).collect();
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| 2.0 * x - 0.5 + 0.1 * (7.0 * x).sin())
            .collect();
        let x = Tensor::from_vec(xs.clone(), (50, 1), &Device::Cpu).unwrap();
        let y = Tensor::from_vec(ys.clone(), (50, 1), &Device::Cpu).unwrap();
        let lambda = 3.0;
        let config = MapConfig {
            learning_rate: 0.01,
            prior_precision: lambda,
            epochs: 3000,
            batch_size: 50,
            ..MapConfig::default()
        };
        let theta0 = Tensor::zeros(2, DType::F64, &Device::Cpu).unwrap();
        let fit = train_map(
            &model,
            &theta0,
            Likelihood::Gaussian { sigma: 1.0 },
            &x,
            &y,
            &config,
        )
        .unwrap();
        let (sxx, sx, sxy, sy) = (
            xs.iter().map(|x| x * x).sum::<f64>(),
            xs.iter().sum::<f64>(),
            xs.iter().zip(&ys).map(|(x, y)| x * y).sum::<f64>(),
            ys.iter().sum::<f64>(),
        );
        let (a, b, c, d) = (sxx + lambda, sx, sx, 50.0 + lambda);
        let det = a * d - b * c;
        let w = (d * sxy - b * sy) / det;
        let bias = (a * sy - c * sxy) / det;
        let got: Vec<f64> = fit.theta.to_vec1().unwrap();
        assert!(
            (got[0] - w).abs() < 1e-3 && (got[1] - bias).abs() < 1e-3,
            "{got:?} vs {w}, {bias}"
        );
        assert!(
            fit.losses
                .windows(2)
                .last()
                .is_some_and(|w| w[1] <= w[0] + 1e-12)
        );
    }
}
