//! Models of bdl: networks over one flat parameter vector, with cached forward passes and the
//! per-example products that Bayesian inference needs.
//!
//! - [`Model`]: the interface every inference crate programs against: forward with a [`Cache`],
//!   backward of per-example output gradients, Σ_n g_n∘g_n and subset Jacobians built from each
//!   layer's inputs a and deltas δ ([`LayerFactors`]), never from per-example tensors.
//! - [`Mlp`]: a multilayer perceptron with identity, ReLU, tanh or sigmoid [`Activation`]s,
//!   dropout with seeded masks, PyTorch-compatible safetensors checkpoints.
//!
//! Parameters are addressed through the [`bdl_tensor::ParamLayout`] each model owns.

mod activation;
mod cache;
mod error;
mod factors;
mod mlp;
mod model;

pub use activation::Activation;
pub use cache::Cache;
pub use error::{Error, Result};
pub use factors::LayerFactors;
pub use mlp::{Mlp, MlpSpec};
pub use model::Model;
