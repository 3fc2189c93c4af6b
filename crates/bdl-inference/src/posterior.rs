//! The [`Posterior`] trait every fitted method implements, and the [`PredictOptions`] of its
//! predictive.

use std::path::Path;

use bdl_likelihoods::{ClassLink, Likelihood, Predictive};
use bdl_models::Network;
use bdl_tensor::Seed;
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::valid::{Valid, Validate, at_least_one};
use crate::{Error, FunctionMoments, InvalidParam, Predictor, Result, outputs_at};

/// What a predictive computation returns.
pub type Prediction = Result<Predictive>;

/// How a Gaussian belief over logits becomes class probabilities (classification only; a
/// regression predictive ignores it). The Monte Carlo link draws [`PredictOptions::samples`]
/// samples from [`PredictOptions::seed`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// The probit (moderated softmax) approximation.
    #[default]
    Probit,
    /// Monte Carlo over the Gaussian.
    MonteCarlo,
    /// The Laplace bridge to a Dirichlet.
    LaplaceBridge,
}

/// How to form a predictive: Monte Carlo samples and their seed, the rows per forward pass, and
/// for classification the link. Closed-form predictives (MAP, the linearized Laplace family
/// with the probit link) ignore `samples` and `seed`.
///
/// ```
/// use bdl_inference::{Link, PredictOptions};
/// let regression = PredictOptions { samples: 100, ..PredictOptions::default() };
/// let classification = PredictOptions { link: Link::MonteCarlo, ..PredictOptions::default() };
/// assert_eq!((regression.batch_size, classification.samples), (1024, 16));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PredictOptions {
    /// S, the Monte Carlo samples of a sampled predictive (16, the subnetwork paper's setting).
    pub samples: usize,
    /// The root of the samples' streams: sample s draws from `seed.index(s)`.
    pub seed: Seed,
    /// Test rows per forward pass (memory, not the result: with a closed-form predictive any
    /// batch size gives the same numbers).
    pub batch_size: usize,
    /// Classification only: from a Gaussian over logits to class probabilities.
    pub link: Link,
}

impl Default for PredictOptions {
    fn default() -> Self {
        Self {
            samples: 16,
            seed: Seed(0),
            batch_size: 1024,
            link: Link::Probit,
        }
    }
}

impl PredictOptions {
    /// The likelihood-level link these options ask for.
    pub fn class_link(&self) -> ClassLink {
        match self.link {
            Link::Probit => ClassLink::Probit,
            Link::MonteCarlo => ClassLink::MonteCarlo {
                samples: self.samples,
                seed: self.seed,
            },
            Link::LaplaceBridge => ClassLink::LaplaceBridge,
        }
    }
}

impl Validate for PredictOptions {
    /// At least one sample and one row per batch.
    fn validate(&self) -> Result<(), InvalidParam> {
        at_least_one("samples", self.samples)?;
        at_least_one("batch_size", self.batch_size)
    }
}

/// A fitted approximate posterior over a network's weights: MAP (a point mass), the Laplace
/// family, the variational methods, SWAG, MC dropout, a deep ensemble, a window of a Gibbs
/// chain.
///
/// A posterior owns what it needs to predict: the network, its parameters and the likelihood
/// (with its σ), so a posterior tuned to one noise level cannot be used with another by
/// mistake. It saves to safetensors with a JSON sidecar ([`checkpoint`](crate::checkpoint)) and
/// loads back to the same predictive, bit for bit.
pub trait Posterior: Send + Sync {
    /// The method's name, as tables print it ("subnetwork Laplace", "Vadam", …).
    fn method(&self) -> &str;

    /// The network the posterior is over and the likelihood of its predictive.
    fn predictor(&self) -> &Predictor;

    /// The network the posterior is over.
    fn network(&self) -> &Network {
        self.predictor().network()
    }

    /// The likelihood of the predictive, with its σ for regression.
    fn likelihood(&self) -> Likelihood {
        self.predictor().likelihood()
    }

    /// The predictive p(y* | x*, D) at the rows of `x`: checks `options`, then
    /// [`predict`](Posterior::predict).
    fn predictive(&self, x: &Tensor, options: &PredictOptions) -> Result<Predictive> {
        self.predict(x, &options.clone().check()?)
    }

    /// The predictive for checked options (what implementors write).
    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction;

    /// `n` parameter vectors drawn from the posterior, `[n, D]`; `None` where the posterior is
    /// not a distribution over the weights (MC dropout draws masks, not weights). A point mass
    /// repeats θ̂; an ensemble or a chain window draws its members uniformly.
    fn sample(&self, n: usize, seed: Seed) -> Result<Option<Tensor>>;

    /// `options.samples` draws of the network outputs at the rows of `x`, `[S, N, K]` (f64),
    /// each joint across the rows (one function from the posterior), from the stream of
    /// `options.seed`. By default f(x; θ_s) at the weight draws of
    /// [`sample`](Posterior::sample); MC dropout draws masks instead, and the Laplace family its
    /// linearized Gaussian f(x; θ̂) + J(θ_s − θ̂). `None` where a posterior has neither.
    fn f_samples(&self, x: &Tensor, options: &PredictOptions) -> Result<Option<Tensor>> {
        let options = options.clone().check()?;
        match self.sample(options.samples, options.seed)? {
            Some(w) => Ok(Some(outputs_at(self.network(), &w, x, options.batch_size)?)),
            None => Ok(None),
        }
    }

    /// The moments of f at the rows of `x`: by default those of
    /// [`f_samples`](Posterior::f_samples); exact where the method has them (the Laplace
    /// family's linearized Gaussian, every member of an ensemble, every draw of a chain
    /// window).
    fn f_moments(&self, x: &Tensor, options: &PredictOptions) -> Result<FunctionMoments> {
        let draws = self
            .f_samples(x, options)?
            .ok_or_else(|| Error::NoFunctionSamples {
                method: self.method().to_owned(),
            })?;
        FunctionMoments::of_draws(&draws)
    }

    /// Saves the posterior to `path` (safetensors) and its sidecar (JSON, same stem).
    fn save(&self, path: &Path) -> Result<()>;

    /// Loads a posterior saved by [`save`](Posterior::save).
    fn load(path: &Path) -> Result<Self>
    where
        Self: Sized;
}
