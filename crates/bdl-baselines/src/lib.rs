//! Baselines of bdl: the MAP fit every Laplace approximation starts from, and the sampling
//! baselines it is compared with. Each ends in a [`Predictive`](bdl_likelihoods::Predictive).
//!
//! | item | method | predictive |
//! |---|---|---|
//! | [`train_map`] → [`MapFit`] | MAP: minimise −Σ_n log p(y_n \| f(x_n; θ)) + ½λ‖θ‖² with [`Optimizer::Adam`] or [`Optimizer::Sgd`] (momentum) over seeded minibatches; early stopping on a seeded held-out fraction; σ by maximum likelihood | [`MapFit::predictive`]: N(f, σ²), σ(f) or softmax(f) |
//! | [`train_swag`] → [`Swag`] | SWAG (Maddox et al. 2019): moments of constant-learning-rate iterates, snapshots every `snapshot_every` steps or epochs; diagonal N(θ̄, diag(θ²̄ − θ̄²)) or low-rank plus diagonal ½ Σ_diag + D̂D̂ᵀ/(2(K − 1)) | [`Swag::predictive`]: mixture over S draws; [`Swag::variances`] for subnetwork selection |
//! | [`mc_dropout_predictive`] | MC dropout (Gal & Ghahramani 2016): train with the model's dropout, average S passes with seeded masks | mixture over S passes |
//! | [`train_ensemble`] → [`Ensemble`] | deep ensembles (Lakshminarayanan et al. 2017): M MAP fits from `init(seed.index(m))`, optionally in parallel | [`Ensemble::predictive`]: mixture over M members |
//!
//! All training shares one minibatch loop and one optimiser step: each step follows the
//! minibatch gradient of the per-example objective, (1/B) Σ_{n∈B} J_nᵀ ∂ℓ_n/∂f + (λ/N) θ, so
//! step sizes do not depend on N. Every random number (minibatch orders, held-out splits,
//! dropout masks, SWAG draws, ensemble initialisations) comes from a named
//! [`Seed`](bdl_tensor::Seed) stream; sample s of a sampled predictive uses
//! `sampling.seed.index(s)` ([`Sampling`]). Configurations are plain serde structs with
//! `Default` and a `check`; bad input and divergence are typed [`Error`]s.
//!
//! ```
//! use bdl_baselines::{MapConfig, Sampling, SwagConfig, SwagCovariance, train_map, train_swag};
//! use bdl_likelihoods::Likelihood;
//! use bdl_models::{Activation, Mlp, MlpSpec};
//! use bdl_tensor::Seed;
//! use candle_core::{DType, Device, Tensor};
//! # fn main() -> Result<(), bdl_baselines::Error> {
//! let mlp = Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?;
//! let x = Tensor::arange(0u32, 32, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.0625, -1.0)?.unsqueeze(1)?;
//! let y = (x.clone() * 3.0)?.sin()?;
//! let lik = Likelihood::Gaussian { sigma: 1.0 };
//! let theta0 = mlp.init(Seed(0), DType::F32, &Device::Cpu)?;
//! // MAP, then SWAG from it with the learned noise.
//! let map = train_map(&mlp, &theta0, lik, &x, &y, &MapConfig { learning_rate: 1e-2, learn_sigma: true, ..MapConfig::default() })?;
//! let swag = train_swag(&mlp, &map.theta, map.likelihood, &x, &y, &SwagConfig { batch_size: 8, snapshots: 5, ..SwagConfig::default() })?.swag;
//! let pred = swag.predictive(&mlp, map.likelihood, &x, SwagCovariance::LowRankPlusDiagonal, &Sampling::default())?;
//! assert_eq!(pred.mean()?.dims(), &[32, 1]);
//! # Ok(()) }
//! ```

mod dropout;
mod ensemble;
mod error;
mod map;
mod optim;
mod swag;
mod train;

pub use dropout::mc_dropout_predictive;
pub use ensemble::{Ensemble, EnsembleConfig, train_ensemble};
pub use error::{Error, Result};
pub use map::{MapConfig, MapFit, Validation, train_map};
pub use optim::Optimizer;
pub use swag::{SnapshotUnit, Swag, SwagConfig, SwagCovariance, SwagFit, train_swag};
pub use train::Sampling;
