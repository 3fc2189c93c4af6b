//! The point-mass posterior at θ̂: MAP's predictive, and the start of every Laplace.

use std::path::Path;

use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network};
use bdl_tensor::Seed;
use candle_core::{Device, Tensor};

use crate::checkpoint::{self, Header};
use crate::{
    MapConfig, Posterior, PredictOptions, Prediction, Predictor, Result, Valid, forward_batched,
};

/// θ̂ with the network and likelihood it belongs to: the posterior δ(θ − θ̂), whose predictive
/// is the plug-in p(y* | f(x*; θ̂)) (N(f, σ²), σ(f) or softmax(f); no dropout).
#[derive(Clone, Debug)]
pub struct MapEstimate {
    predictor: Predictor,
    theta: Tensor,
    seed: Option<Seed>,
    /// How it was trained, when it was (saved in the sidecar).
    training: Option<MapConfig>,
}

impl MapEstimate {
    /// θ̂ (flat, of the network's length, finite) for `network` under `likelihood`.
    pub fn new(network: Network, theta: Tensor, likelihood: Likelihood) -> Result<Self> {
        Self::of(Predictor::new(network, likelihood)?, theta)
    }

    /// θ̂ (flat, of the network's length, finite) for `predictor`.
    pub fn of(predictor: Predictor, theta: Tensor) -> Result<Self> {
        predictor.network().layout().check_flat(&theta)?;
        bdl_tensor::check_finite(&theta, "θ̂")?;
        Ok(Self {
            predictor,
            theta,
            seed: None,
            training: None,
        })
    }

    /// The same estimate with θ̂ on `device` (a saved estimate loads onto the CPU).
    ///
    /// ```
    /// # use bdl_inference::MapEstimate;
    /// # use bdl_likelihoods::Likelihood;
    /// # use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
    /// # use candle_core::{DType, Device};
    /// let net = Network::from(Mlp::new(MlpSpec::new(&[2, 3, 1], Activation::Tanh))?);
    /// let theta = net.init(bdl_tensor::Seed(0), DType::F32, &Device::Cpu)?;
    /// let map = MapEstimate::new(net, theta, Likelihood::Gaussian { sigma: 1.0 })?;
    /// assert!(map.to_device(&Device::Cpu)?.theta().device().is_cpu());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_device(&self, device: &Device) -> Result<Self> {
        Ok(Self {
            theta: self.theta.to_device(device)?,
            ..self.clone()
        })
    }

    /// The same estimate, recording the seed it was trained with (saved in its sidecar).
    pub fn with_seed(mut self, seed: Seed) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The same estimate, recording the configuration it was trained with (saved in its
    /// sidecar).
    pub fn with_training(mut self, config: MapConfig) -> Self {
        self.training = Some(config);
        self
    }

    /// The configuration it was trained with, when known.
    pub fn training(&self) -> Option<&MapConfig> {
        self.training.as_ref()
    }

    /// The seed it was trained with, when known.
    pub fn seed(&self) -> Option<Seed> {
        self.seed
    }

    /// θ̂, in the compute dtype.
    pub fn theta(&self) -> &Tensor {
        &self.theta
    }

    /// The same θ̂ under another likelihood (a σ tuned after training).
    pub fn with_likelihood(&self, likelihood: Likelihood) -> Result<Self> {
        let mut map = Self::of(
            self.predictor.with_likelihood(likelihood)?,
            self.theta.clone(),
        )?;
        map.seed = self.seed;
        map.training = self.training.clone();
        Ok(map)
    }

    /// f(x; θ̂), `[N, K]`, in batches of `batch_size` rows.
    pub fn outputs(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        forward_batched(self.network(), &self.theta, x, batch_size, None)
    }
}

const KIND: &str = "map";

impl Posterior for MapEstimate {
    fn method(&self) -> &str {
        "MAP"
    }

    fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        self.predictor.point(&self.theta, x, options.batch_size)
    }

    fn sample(&self, n: usize, _seed: Seed) -> Result<Option<Tensor>> {
        let d = self.theta.dims()[0];
        Ok(Some(
            self.theta
                .unsqueeze(0)?
                .broadcast_as((n, d))?
                .contiguous()?,
        ))
    }

    fn save(&self, path: &Path) -> Result<()> {
        let header = Header {
            kind: KIND,
            predictor: &self.predictor,
            seed: self.seed,
            config: &self.training,
        };
        checkpoint::save(path, &header, vec![("theta", self.theta.clone())])
    }

    fn load(path: &Path) -> Result<Self> {
        let mut saved = checkpoint::load::<Option<MapConfig>>(path, KIND)?;
        let theta = saved.params("theta")?;
        let mut map = Self::of(saved.predictor, theta)?;
        map.seed = saved.seed;
        map.training = saved.config;
        Ok(map)
    }
}
