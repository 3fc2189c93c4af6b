//! The mean-field Gaussian q(θ) = N(μ, diag σ²) that every method ends in, and the posterior
//! that predicts with it.

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{Posterior, PredictOptions, Prediction, Predictor, Valid};
use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use rand_distr::{Distribution, StandardNormal};

use crate::{Result, VariationalConfig};

/// A diagonal Gaussian over the D parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagGaussian {
    /// μ.
    pub mean: Vec<f64>,
    /// σ², each ≥ 0 (the methods keep them > 0; a BBVI σ may underflow to 0).
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

    /// Draw i of the seeded family θ_i = μ + σ∘ε_i, ε_i from the stream
    /// `seed.fork("q-sample").index(i)` alone, in `dtype`.
    pub fn draw(&self, i: usize, seed: Seed, dtype: DType, device: &Device) -> Result<Tensor> {
        let mut rng = seed.fork("q-sample").index(i as u64).rng();
        let theta: Vec<f64> = self
            .mean
            .iter()
            .zip(&self.var)
            .map(|(m, v)| {
                let e: f64 = StandardNormal.sample(&mut rng);
                m + v.sqrt() * e
            })
            .collect();
        Ok(Tensor::from_vec(theta, self.mean.len(), device)?.to_dtype(dtype)?)
    }

    /// Draws 0..n of [`draw`](Self::draw), shape `[n, D]`.
    pub fn sample(&self, n: usize, seed: Seed, dtype: DType, device: &Device) -> Result<Tensor> {
        let draws = (0..n)
            .map(|i| self.draw(i, seed, dtype, device))
            .collect::<Result<Vec<_>>>()?;
        Ok(if draws.is_empty() {
            Tensor::zeros((0, self.mean.len()), dtype, device)?
        } else {
            Tensor::stack(&draws, 0)?
        })
    }
}

/// A variational posterior: q(θ) with the network and likelihood it predicts with and the
/// configuration that fitted it. Its predictive is the Monte Carlo mixture
/// (1/S) Σ_s p(y | f(x; θ_s)) over the draws θ_s of [`DiagGaussian::draw`] with
/// `options.seed`, in the dtype of the network's computation (that of the inputs).
#[derive(Clone, Debug)]
pub struct MeanField {
    predictor: Predictor,
    q: DiagGaussian,
    config: VariationalConfig,
}

impl MeanField {
    /// q (with one mean and variance per parameter of `network`) fitted with `config` (its
    /// method, hyper-parameters and seed; saved in the sidecar).
    pub fn new(
        network: Network,
        likelihood: Likelihood,
        q: DiagGaussian,
        config: VariationalConfig,
    ) -> Result<Self> {
        let d = network.layout().len();
        bdl_inference::require(
            q.mean.len() == d && q.var.len() == d,
            "q",
            format!("{} means and {} variances", q.mean.len(), q.var.len()),
            &format!("one of each per parameter ({d})"),
        )?;
        bdl_inference::require(
            q.var.iter().all(|v| *v >= 0.0 && v.is_finite())
                && q.mean.iter().all(|m| m.is_finite()),
            "q",
            "a non-finite mean or a negative variance",
            "finite means and variances >= 0 (0: a weight at its mean)",
        )?;
        Ok(Self {
            predictor: Predictor::new(network, likelihood)?,
            q,
            config,
        })
    }

    /// q(θ) = N(μ, diag σ²).
    pub fn q(&self) -> &DiagGaussian {
        &self.q
    }

    /// The configuration it was fitted with.
    pub fn config(&self) -> &VariationalConfig {
        &self.config
    }
}

const KIND: &str = "mean-field";

impl Posterior for MeanField {
    fn method(&self) -> &str {
        self.config.method.name()
    }

    fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        self.predictor
            .weight_mixture(x, options.batch_size, options.samples, |s| {
                Ok(self.q.draw(s, options.seed, x.dtype(), x.device())?)
            })
    }

    fn sample(&self, n: usize, seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        Ok(Some(self.q.sample(n, seed, DType::F64, &Device::Cpu)?))
    }

    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let header = Header {
            kind: KIND,
            predictor: &self.predictor,
            seed: Some(self.config.seed),
            config: &self.config,
        };
        let tensors = vec![
            ("mean", checkpoint::vector_tensor(&self.q.mean)?),
            ("var", checkpoint::vector_tensor(&self.q.var)?),
        ];
        checkpoint::save(path, &header, tensors)
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<VariationalConfig>(path, KIND)?;
        let d = saved.n_params();
        let q = DiagGaussian {
            mean: saved.vector("mean", d)?,
            var: saved.vector("var", d)?,
        };
        let network = saved.predictor.network().clone();
        let likelihood = saved.predictor.likelihood();
        Ok(Self::new(network, likelihood, q, saved.config)?)
    }
}
