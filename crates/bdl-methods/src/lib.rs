//! The method layer of bdl: every method as one [`MethodSpec`] (serde, so a list of methods is a
//! JSON file), fitted by one call, [`fit()`], to one [`Problem`] (network, θ, likelihood,
//! training examples), ending in a [`Fitted`]: a boxed [`Posterior`](bdl_inference::Posterior), its
//! [`Diagnostics`] and the seconds it took.
//!
//! | spec | method | crate |
//! |---|---|---|
//! | `map` | MAP by Adam or SGD, early stopping | `bdl-inference` |
//! | `laplace` | linearized Laplace: full GGN over a [`SubsetRule`]'s subnetwork (all, last layer, Wasserstein, random, magnitude, indices) or diagonal; λ fixed or by the marginal likelihood over a grid | `bdl-laplace` |
//! | `variational` | Vadam, Vprop, VOGN, VadaGrad, VON, BBVI, IVON, over a subnetwork or all | `bdl-variational` |
//! | `swag`, `mc-dropout`, `ensemble` | SWAG, MC dropout, deep ensembles | `bdl-baselines` |
//! | `gibbs` | a window of a Metropolis-within-blocked-Gibbs chain (MLPs), over a subnetwork or all | `bdl-mcmc` |
//! | `sgmcmc` | SGLD or SGHMC, constant or cyclical step size, over a subnetwork or all (any network) | `bdl-mcmc` |
//! | `hmc`, `nuts` | Hamiltonian Monte Carlo and the No-U-Turn sampler on the full-batch posterior, ε adapted in the burn-in | `bdl-mcmc` |
//!
//! [`load()`] reads any saved posterior back, whichever method wrote it.
//!
//! A divergence is one error kind, [`Error::Diverged`], whichever method diverged; a
//! specification a method cannot follow (a diagonal Laplace over a subnetwork, Gibbs on a CNN)
//! is [`Error::Unsupported`].
//!
//! ```
//! use bdl_inference::PredictOptions;
//! use bdl_likelihoods::Likelihood;
//! use bdl_methods::{MethodSpec, Problem, fit};
//! use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
//! use bdl_tensor::Seed;
//! use candle_core::{DType, Device, Tensor};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let x = Tensor::arange(0u32, 40, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.05, -1.0)?.unsqueeze(1)?;
//! let y = (x.clone() * 3.0)?.sin()?;
//! let net = Network::from(Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?);
//! let theta0 = net.init(Seed(0), DType::F32, &Device::Cpu)?;
//! let problem = Problem::new(&net, &theta0, Likelihood::Gaussian { sigma: 0.2 }, &x, &y);
//! let specs: Vec<MethodSpec> = serde_json::from_str(r#"[
//!     {"method": "map", "config": {"learning_rate": 0.01, "epochs": 100}},
//!     {"method": "swag", "config": {"batch_size": 8, "snapshots": 5}},
//!     {"method": "variational", "config": {"method": {"kind": "vogn", "learning_rate": 0.01, "beta": 0.01},
//!         "prior_precision": 1.0, "epochs": 20, "batch_size": 8, "mc_samples": 1,
//!         "lr_decay": null, "seed": 3}},
//!     {"method": "ensemble", "config": {"members": 3, "map": {"learning_rate": 0.01, "epochs": 50}}}
//! ]"#)?;
//! for spec in &specs {
//!     let fitted = fit(spec, &problem)?;
//!     let pred = fitted.posterior.predictive(&x, &PredictOptions::default())?;
//!     assert_eq!(pred.mean()?.dims(), &[40, 1], "{}", spec.name());
//! }
//! # Ok(()) }
//! ```

mod error;
mod fit;
mod load;
mod shared;
mod spec;
mod subset;

pub use error::{Error, Result, diverged};
pub use fit::{Diagnostics, Fitted, Problem, fit};
pub use load::load;
pub use shared::SharedFits;
pub use spec::{
    GibbsSpec, Hessian, LaplaceSpec, MethodSpec, OnSubnetwork, PriorBy, SgmcmcSpec, SubsetRule,
    VariancesFrom, VariationalSpec,
};
