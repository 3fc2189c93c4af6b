//! The shared inference layer of bdl: what every inference method has in common.
//!
//! - [`Posterior`]: the trait every fitted method implements (MAP's [`MapEstimate`], the
//!   Laplace family, the variational methods, SWAG, MC dropout, deep ensembles, a window of a
//!   Gibbs chain): a predictive from one [`PredictOptions`] value, weight samples, the
//!   function-space view ([`FunctionMoments`] and draws of f joint across inputs), save and
//!   load. A posterior owns its network, parameters and likelihood.
//! - [`Validate`] / [`Valid`]: configurations check themselves once into a `Valid<C>`, which
//!   the entry points take; a violation is a structured [`InvalidParam`].
//! - [`checkpoint`]: safetensors plus a JSON sidecar (network, layout, likelihood,
//!   configuration, seed, version) for every posterior.
//! - [`MinibatchLoop`] (the one minibatch loop, on [`bdl_data::Minibatches`]),
//!   [`OptimizerState`] (the one Adam, and SGD with momentum), [`Trainer`] and [`train_map`]
//!   (the one MAP trainer), [`mixture()`] (the one Monte Carlo mixture predictive, parallel and
//!   independent of the thread count).
//!
//! The inference crates (`bdl-variational`, `bdl-mcmc`, `bdl-laplace`, `bdl-baselines`) build
//! on this crate and never on each other.
//!
//! ```
//! use bdl_inference::{MapConfig, MapEstimate, Posterior, PredictOptions, Validate, train_map};
//! use bdl_likelihoods::Likelihood;
//! use bdl_models::{Activation, Mlp, MlpSpec, Network};
//! use bdl_tensor::Seed;
//! use candle_core::{DType, Device, Tensor};
//! # fn main() -> Result<(), bdl_inference::Error> {
//! let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh))?);
//! let x = Tensor::arange(0u32, 20, &Device::Cpu)?.to_dtype(DType::F64)?.affine(0.1, -1.0)?.unsqueeze(1)?;
//! let y = x.sqr()?;
//! let config = MapConfig { learning_rate: 1e-2, epochs: 20, ..MapConfig::default() }.check()?;
//! let theta0 = net.init(Seed(0), DType::F64, &Device::Cpu)?;
//! let map = train_map(&net, &theta0, Likelihood::Gaussian { sigma: 0.1 }, &x, &y, &config)?.estimate;
//! // Save, load, and the same predictive bit for bit.
//! let path = std::env::temp_dir().join(format!("bdl-inference-doc-{}.safetensors", std::process::id()));
//! map.save(&path)?;
//! let back = MapEstimate::load(&path)?;
//! let options = PredictOptions::default();
//! let (a, b) = (map.predictive(&x, &options)?, back.predictive(&x, &options)?);
//! assert_eq!(a.mean()?.to_vec2::<f64>()?, b.mean()?.to_vec2::<f64>()?);
//! # std::fs::remove_file(&path).ok();
//! # std::fs::remove_file(path.with_extension("json")).ok();
//! # Ok(()) }
//! ```

mod batches;
pub mod checkpoint;
mod error;
mod function;
mod map;
mod method_error;
mod mixture;
mod optim;
mod point;
mod posterior;
mod predictor;
mod train;
mod valid;

pub use batches::{MinibatchLoop, n_rows, paired_rows, rows};
pub use error::{Error, InvalidParam, Result};
pub use function::{FunctionMoments, outputs_at};
pub use map::{Holdout, MapConfig, MapFit, Validation, train_map, train_map_on};
pub use mixture::{forward_batched, mixture};
pub use optim::{Optimizer, OptimizerState};
pub use point::MapEstimate;
pub use posterior::{Link, Posterior, PredictOptions, Prediction};
pub use predictor::Predictor;
pub use train::{Trainer, check_descent, mean_nll};
pub use valid::{Valid, Validate, at_least_one, non_negative, positive, require, unit_interval};

/// The crates below this layer, for [`method_error!`]'s conversions.
#[doc(hidden)]
pub mod __layers {
    pub use {bdl_data, bdl_likelihoods, bdl_models, bdl_tensor, candle_core};
}
