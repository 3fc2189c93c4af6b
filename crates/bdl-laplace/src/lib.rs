//! Linearized Laplace approximations for bdl models.
//!
//! After training to the MAP θ̂, the Laplace approximation is q(θ) = N(θ̂, P⁻¹) with
//! P = H + diag(λ), H the generalized Gauss–Newton matrix Σ_n J_nᵀ Λ_n J_n. Here
//!
//! - [`ggn()`] builds H_S for any parameter subset S, one symmetric rank-k update per minibatch in
//!   f64, never forming the D-wide Jacobian; [`ggn_diagonal()`] gives diag(H) over all parameters
//!   from K backward passes per minibatch;
//! - [`SubnetLaplace`] is the full-covariance posterior over a subset (S = all parameters gives
//!   the full Laplace, S = the last layer the last-layer Laplace), with the linearized predictive,
//!   the log marginal likelihood and the covariance;
//! - [`DiagLaplace`] is the diagonal posterior over all parameters, σ_d² = 1/(h_dd + λ_d);
//! - [`KronLaplace`] is the Kronecker-factored (KFAC) posterior over every dense layer or the
//!   last one, each block G ⊗ A from the layer's deltas and inputs ([`kron_ggn`]);
//! - [`Evidence`] tunes λ (and σ) by the Laplace marginal likelihood or by validation
//!   log-likelihood from one eigendecomposition of the GGN, each candidate costing O(s);
//! - [`layerwise_prior`] gives every layer its own λ by the marginal likelihood (MacKay's fixed
//!   point);
//! - [`marglik_training`] alternates MAP training and evidence steps on (λ, σ) (online
//!   marginal-likelihood training);
//! - [`selection`] chooses the subnetwork: the Wasserstein rule (largest marginal variance),
//!   random, magnitude, last layer, or a sensitivity score.

mod diagonal;
mod error;
mod evidence;
mod ggn;
mod kron;
mod layerwise;
mod linearized;
mod marglik;
mod posterior;
mod prior;
pub mod selection;

pub use diagonal::DiagLaplace;
pub use error::{Error, Result};
pub use evidence::{Evidence, Tuned, Validation};
pub use ggn::{ggn, ggn_diagonal};
pub use kron::{KronBlock, KronConfig, KronLaplace, KronScope, kron_ggn};
pub use layerwise::{LayerwisePrior, layerwise_prior};
pub use linearized::LinearizedPosterior;
pub use marglik::{MarglikConfig, MarglikFit, marglik_training};
pub use posterior::{LaplaceConfig, SubnetLaplace};
pub use prior::{PriorPrecision, SubsetScaling};
