//! Baselines of bdl. For now: MAP training, the starting point of every Laplace approximation.
//!
//! [`train_map`] minimises the regularised negative log-likelihood
//!
//! L(θ) = −Σ_n log p(y_n | f(x_n; θ)) + ½ λ ‖θ‖²
//!
//! (the MAP under the prior N(0, λ⁻¹ I)) with Adam over seeded minibatches, using the models'
//! backward pass of the likelihood's output gradients.

mod error;
mod map;

pub use error::{Error, Result};
pub use map::{MapConfig, MapFit, train_map};
