//! Likelihoods of bdl, their output-space curvature, and the predictive distribution.
//!
//! - [`Likelihood`]: Gaussian (homoscedastic σ, fixed or learned), Bernoulli (sigmoid) and
//!   Categorical (softmax). Per-example log p(y | f), the output gradient ∂(−log p)/∂f, the
//!   curvature Λ = ∂²(−log p)/∂f² and a factor L Lᵀ = Λ, so that a generalised Gauss–Newton
//!   matrix Σ_n J_nᵀ Λ_n J_n is one symmetric rank-k update of the rows L_nᵀ J_n.
//! - [`Predictive`]: what every inference method ends in and evaluation consumes: per test
//!   point a Gaussian, a Gaussian mixture (ensembles, MC samples, chains) or class
//!   probabilities, in f64, with mean, variance and the per-point test log-likelihood.
//! - [`ClassLink`] and [`FunctionVariance`]: class probabilities from a Gaussian over logits
//!   f ~ N(m, Σ) by the probit approximation, Monte Carlo, or the Laplace bridge
//!   ([`Likelihood::predictive`]).
//!
//! Every random number comes from a seeded [`Seed`] stream; bad input is a typed [`Error`].
//!
//! Sibling crates: `bdl-tensor` (the shared tensor layer this crate stands on), `bdl-models`
//! (networks whose outputs f these likelihoods score), `bdl-data`, and the inference crates
//! (`bdl-variational`, `bdl-mcmc`, `bdl-laplace`, `bdl-baselines`) and `bdl-eval` built on them.
//!
//! ```
//! use bdl_likelihoods::{ClassLink, FunctionVariance, Likelihood, Predictive};
//! use candle_core::{DType, Device, Tensor};
//! # fn main() -> Result<(), bdl_likelihoods::Error> {
//! let dev = Device::Cpu;
//! let lik = Likelihood::Gaussian { sigma: 0.5 };
//! // Linearised predictive: f ~ N(m, v) at 2 test points, one output; noise is added.
//! let m = Tensor::new(&[[1.0f64], [2.0]], &dev)?;
//! let v = FunctionVariance::Diagonal(Tensor::new(&[[0.75f64], [0.0]], &dev)?);
//! let pred = lik.predictive(&m, &v, ClassLink::Probit)?;
//! assert_eq!(pred.variance()?.to_vec2::<f64>()?, [[1.0], [0.25]]);
//! // An ensemble of two point predictions is a Gaussian mixture.
//! let ens = Predictive::mixture(&[lik.point_predictive(&m)?, lik.point_predictive(&m.affine(1.0, 1.0)?)?])?;
//! let ll = ens.log_lik(&Tensor::new(&[1.5f64, 2.5], &dev)?)?; // per-point, [2]
//! assert_eq!(ll.dims(), &[2]);
//! # Ok(()) }
//! ```

mod bernoulli;
mod categorical;
mod check;
mod error;
mod function;
mod gaussian;
mod likelihood;
mod link;
mod ops;
mod predictive;
mod scalar;

pub use bdl_tensor::Seed;
pub use error::{Error, Result};
pub use function::FunctionVariance;
pub use likelihood::Likelihood;
pub use link::ClassLink;
pub use predictive::Predictive;
