//! Natural-gradient variational inference by weight perturbation.
//!
//! Khan, Nielsen, Tangkaratt, Lin, Gal, Srivastava, *Fast and Scalable Bayesian Deep Learning by
//! Weight-Perturbation in Adam*, ICML 2018; Shen et al., *Variational Learning is Effective for
//! Large Deep Networks*, ICML 2024 (IVON).
//!
//! Every method keeps a mean-field Gaussian q(θ) = N(μ, diag σ²), draws θ = μ + σ∘ε **before**
//! each gradient evaluation, and updates μ and the curvature from the gradient at θ (see
//! [`Method`] for the update rules). [`fit`] runs the minibatch loop and returns a
//! [`MeanField`] posterior, whose predictive is a Monte Carlo mixture; [`Online`] runs a method
//! step by step on any objective whose gradient the caller computes.

mod error;
pub mod exact;
mod method;
mod online;
mod posterior;
mod train;

pub use error::{Error, Result};
pub use method::Method;
pub use online::{Draw, Online};
pub use posterior::{DiagGaussian, MeanField};
pub use train::{VariationalConfig, VariationalFit, fit, fit_monitored};
