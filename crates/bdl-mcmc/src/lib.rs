//! Minibatch Metropolis-within-blocked-Gibbs sampling of MLP weights.
//!
//! Papamarkou, *Approximate blocked Gibbs sampling for Bayesian neural networks*, Statistics and
//! Computing 33, 2023. The target is p(θ | D) ∝ Π_n p(y_n | f(x_n; θ)) · N(θ; 0, s² I)
//! (s² = 10).
//!
//! - [`Blocking`] groups the parameters into [`Block`]s: one per layer (LBG), one per node — its
//!   weight row and bias (NBG) — or node blocks cut into sub-blocks (FNBG).
//! - [`Kernel`] is one sweep of Metropolis-within-Gibbs: for each block in order, propose
//!   θ'_b ~ N(θ_b, v_b I) and accept with probability
//!   min(1, exp(ℓ̂(θ') + log p(θ') − ℓ̂(θ) − log p(θ))), ℓ̂ the log-likelihood of the same data
//!   batch for both; on rejection the block is restored. It works on any [`BlockTarget`]
//!   ([`DensityTarget`] wraps a closure). [`OnReject::KeepRejectedPublishedBug`] reproduces the
//!   published sampler's kernel, which does not restore, for comparisons only.
//! - [`Sampler`] runs the kernel on an MLP with *incremental* evaluation: the activations of the
//!   current state are cached, a block of layer l re-evaluates only the nodes it touches in layer
//!   l (z_l\[o\] += a_l\[block\]·Δw) and the layers above; one iteration is one minibatch (or the
//!   whole training set) and one sweep. It computes in f32 or f64, the dtype of the parameters.
//! - [`Pilot`] tunes the per-layer proposal variances by pre-runs until every layer's
//!   acceptance rate is inside a band ([`Sampler::tune`], or [`ChainConfig::pilot`] before a
//!   chain, which records the tuned variances in its manifest).
//! - [`run_chains`] runs chains in parallel with rayon and writes their draws in chunks
//!   (safetensors with a JSON sidecar); an interrupted or extended chain resumes with exactly
//!   the draws of an uninterrupted run. [`Chain`] reads the draws ([`Keep`]: burn-in, thinning,
//!   the last K iterations) and the acceptance counts.
//! - [`ChainWindow`] (from [`Chain::window`]) is the posterior of the kept draws: its predictive
//!   is the Bayesian marginalisation (1/S) Σ_s p(y | x, θ_s) over them.
//!
//! - [`sample_hmc`]: Hamiltonian Monte Carlo on the full-batch posterior of any network, ε
//!   adapted by dual averaging during the burn-in, and [`sample_nuts`], the No-U-Turn sampler on
//!   the same potential: the reference samplers for small networks.
//! - [`split_rhat`]: the split potential scale reduction R̂ across chains, beside the ESS.
//! - [`sample_sgmcmc`]: stochastic-gradient MCMC over the flat parameters of any network —
//!   SGLD, SGHMC, each with a constant or cyclical step size — over every parameter or a
//!   subset, its kept draws a [`ChainWindow`] named by the dynamics.
//!
//! Every random number comes from a seeded stream: the same [`ChainConfig::seed`] gives the same
//! chains, on every run and thread count.

mod blocks;
mod chain;
mod config;
mod curvature;
mod error;
mod ess;
mod hmc;
mod incremental;
mod kernel;
mod pilot;
mod rhat;
mod sampler;
mod sgmcmc;
mod window;

pub use bdl_tensor::Real;
pub use blocks::{Block, Blocking};
pub use chain::{Chain, ChainReport, ChunkReport, Draws, Keep, chain_dir, run_chain, run_chains};
pub use config::{BatchMode, ChainConfig, GibbsConfig, Precision, ProposalVariance};
pub use curvature::random_walk_acceptance;
pub use error::{Error, Result};
pub use ess::{LayerEss, effective_sample_size, ess_by_layer};
pub use hmc::{HmcConfig, HmcFit, NutsConfig, NutsFit, sample_hmc, sample_nuts};
pub use kernel::{Acceptance, BlockTarget, DensityTarget, Kernel, OnReject, State};
pub use pilot::{Pilot, PilotReport};
pub use rhat::split_rhat;
pub use sampler::Sampler;
pub use sgmcmc::{Dynamics, Schedule, SgmcmcConfig, SgmcmcFit, sample_sgmcmc};
pub use window::ChainWindow;
