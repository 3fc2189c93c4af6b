//! The mean-field Gaussian q(θ) = N(μ, diag σ²) that every method ends in.

use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use rand_distr::{Distribution, StandardNormal};

use crate::Result;

/// A diagonal Gaussian over the D parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagGaussian {
    /// μ.
    pub mean: Vec<f64>,
    /// σ², each > 0.
    pub var: Vec<f64>,
}

impl DiagGaussian {
    /// The symmetric KL divergence ½[KL(self ‖ other) + KL(other ‖ self)] between diagonal
    /// Gaussians: ¼ Σ_j [(v₁ + (μ₁ − μ₂)²)/v₂ + (v₂ + (μ₁ − μ₂)²)/v₁ − 2].
    pub fn symmetric_kl(&self, other: &DiagGaussian) -> f64 {
        let terms = self
            .mean
            .iter()
            .zip(&self.var)
            .zip(other.mean.iter().zip(&other.var));
        0.25 * terms
            .map(|((m1, v1), (m2, v2))| {
                let d2 = (m1 - m2).powi(2);
                (v1 + d2) / v2 + (v2 + d2) / v1 - 2.0
            })
            .sum::<f64>()
    }

    /// `n` draws θ = μ + σ∘ε from a seeded stream, shape `[n, D]` in `dtype`; draw i comes from
    /// the stream `seed.index(i)` alone.
    pub fn sample(&self, n: usize, seed: Seed, dtype: DType, device: &Device) -> Result<Tensor> {
        let d = self.mean.len();
        let mut out = Vec::with_capacity(n * d);
        for i in 0..n {
            let mut rng = seed.fork("q-sample").index(i as u64).rng();
            out.extend(self.mean.iter().zip(&self.var).map(|(m, v)| {
                let e: f64 = StandardNormal.sample(&mut rng);
                m + v.sqrt() * e
            }));
        }
        Ok(Tensor::from_vec(out, (n, d), device)?.to_dtype(dtype)?)
    }

    /// The Monte Carlo predictive (1/S) Σ_s p(y | f(x; θ_s)) over `samples` draws: a mixture of
    /// the likelihood's point predictives.
    pub fn predictive(
        &self,
        model: &impl Model,
        likelihood: &Likelihood,
        x: &Tensor,
        samples: usize,
        seed: Seed,
    ) -> Result<Predictive> {
        let thetas = self.sample(samples, seed, x.dtype(), x.device())?;
        let parts = (0..samples)
            .map(|s| {
                let f = model.forward(&thetas.get(s)?, x)?;
                Ok(likelihood.point_predictive(&f)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Predictive::mixture(&parts)?)
    }
}
