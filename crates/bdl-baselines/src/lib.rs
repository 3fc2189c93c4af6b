//! Baselines of bdl: the sampling methods the subnetwork Laplace is compared with. Each is a
//! [`Posterior`](bdl_inference::Posterior); MAP training, which they start from, is
//! [`bdl_inference::train_map`].
//!
//! | item | method | predictive |
//! |---|---|---|
//! | [`train_swag`] → [`SwagPosterior`] | SWAG (Maddox et al. 2019): moments of constant-learning-rate iterates, snapshots every `snapshot_every` steps or epochs; diagonal N(θ̄, diag(θ²̄ − θ̄²)) or low-rank plus diagonal ½ Σ_diag + D̂D̂ᵀ/(2(K − 1)) | mixture over S draws; [`Swag::variances`] for subnetwork selection |
//! | [`McDropout`] | MC dropout (Gal & Ghahramani 2016): train with the model's dropout, average S passes with seeded masks | mixture over S passes |
//! | [`train_ensemble`] → [`Ensemble`] | deep ensembles (Lakshminarayanan et al. 2017): M MAP fits from `init(seed.index(m))`, optionally in parallel | mixture over M members |
//!
//! Every random number (minibatch orders, held-out splits, dropout masks, SWAG draws, ensemble
//! initialisations) comes from a named [`Seed`](bdl_tensor::Seed) stream; sample s of a sampled
//! predictive uses `options.seed.index(s)`. Configurations are serde structs with `Default`,
//! checked once into a [`Valid`](bdl_inference::Valid); bad input and divergence are typed
//! [`Error`]s.
//!
//! ```
//! use bdl_baselines::{SwagConfig, train_swag};
//! use bdl_inference::{MapConfig, Posterior, PredictOptions, Validate, train_map};
//! use bdl_likelihoods::Likelihood;
//! use bdl_models::{Activation, Mlp, MlpSpec, Network};
//! use bdl_tensor::Seed;
//! use candle_core::{DType, Device, Tensor};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let net = Network::from(Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?);
//! let x = Tensor::arange(0u32, 32, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.0625, -1.0)?.unsqueeze(1)?;
//! let y = (x.clone() * 3.0)?.sin()?;
//! let lik = Likelihood::Gaussian { sigma: 1.0 };
//! let theta0 = net.init(Seed(0), DType::F32, &Device::Cpu)?;
//! // MAP, then SWAG from it with the learned noise.
//! let map_config = MapConfig { learning_rate: 1e-2, learn_sigma: true, ..MapConfig::default() }.check()?;
//! let map = train_map(&net, &theta0, lik, &x, &y, &map_config)?.estimate;
//! let swag_config = SwagConfig { batch_size: 8, snapshots: 5, ..SwagConfig::default() }.check()?;
//! let swag = train_swag(&net, map.theta(), map.likelihood(), &x, &y, &swag_config)?.posterior;
//! let pred = swag.predictive(&x, &PredictOptions::default())?;
//! assert_eq!(pred.mean()?.dims(), &[32, 1]);
//! # Ok(()) }
//! ```

mod dropout;
mod ensemble;
mod error;
mod swag;

pub use dropout::McDropout;
pub use ensemble::{Ensemble, EnsembleConfig, EnsembleFit, train_ensemble};
pub use error::{Error, Result};
pub use swag::{
    SnapshotUnit, Swag, SwagConfig, SwagCovariance, SwagFit, SwagPosterior, train_swag,
};
