//! Bayesian deep learning in Rust: one crate to depend on.
//!
//! `bdl` re-exports the workspace's crates by module: [`laplace`] (full, diagonal, last-layer and
//! subnetwork linearized Laplace, per-layer and online prior tuning), [`variational`] (Vadam,
//! VOGN, Vprop, VadaGrad, VON, IVON, Bayes-by-Backprop), [`mcmc`] (blocked Gibbs, SGLD, SGHMC,
//! HMC, NUTS), [`baselines`] (SWAG, MC dropout, deep ensembles), [`methods`] (every method as
//! one serde [`MethodSpec`], fitted by one [`fit()`]), and below them [`data`], [`models`],
//! [`likelihoods`], [`inference`] (the [`Posterior`](inference::Posterior) trait), [`eval`]
//! (metrics, recalibration, plots) and [`tensor`]. [`prelude`] holds what most programs use.
//!
//! Cargo features: one per method family (`laplace`, `variational`, `mcmc`, `baselines`) and
//! `methods`, which needs all four; all are on by default. `cuda` (off by default) builds
//! candle's CUDA backend into every crate (it needs the CUDA toolkit; bdl's own kernels stay on
//! the host, see the README's "GPU" section). Every random number comes from a
//! seeded ChaCha stream: the same seed gives the same result on every run and thread count.
//!
//! Data in, a posterior out, its predictive, saved and loaded back:
//!
//! ```
//! use bdl::prelude::*;
//! use candle_core::{DType, Device, Tensor};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // y = sin(3x) + noise on 64 points: the training examples, as f32 tensors.
//! let dev = &Device::Cpu;
//! let x = Tensor::arange(0u32, 64, dev)?.to_dtype(DType::F32)?.affine(1.0 / 32.0, -1.0)?.unsqueeze(1)?;
//! let noise = bdl::tensor::normal(&mut Seed(1).rng(), (64, 1), 0.0, 0.1, DType::F32, dev)?;
//! let y = ((x.clone() * 3.0)?.sin()? + noise)?;
//!
//! // A network, its MAP, then a last-layer Laplace with λ by the marginal likelihood.
//! let net = Network::from(Mlp::new(MlpSpec::new(&[1, 32, 1], Activation::Tanh))?);
//! let theta0 = net.init(Seed(0), DType::F32, dev)?;
//! let map_spec: MethodSpec = serde_json::from_str(r#"{"method": "map", "config":
//!     {"learning_rate": 0.01, "epochs": 300, "batch_size": 16, "learn_sigma": true}}"#)?;
//! let map = fit(&map_spec, &Problem::new(&net, &theta0, Likelihood::Gaussian { sigma: 1.0 }, &x, &y))?;
//! let theta = map.posterior.sample(1, Seed(0))?.expect("a point mass").squeeze(0)?;
//! let laplace_spec: MethodSpec = serde_json::from_str(r#"{"method": "laplace", "config":
//!     {"subnetwork": {"rule": "last-layer", "candidates": "all"}, "prior_grid": [0.01, 0.1, 1, 10]}}"#)?;
//! let problem = Problem::new(&net, &theta, map.posterior.likelihood(), &x, &y);
//! let laplace = fit(&laplace_spec, &problem)?;
//!
//! // The predictive at new inputs: a Gaussian per point, wider away from the data.
//! let x_new = Tensor::new(&[[0.0f32], [3.0]], dev)?;
//! let pred = laplace.posterior.predictive(&x_new, &PredictOptions::default())?;
//! let var: Vec<Vec<f64>> = pred.variance()?.to_vec2()?;
//! assert!(var[1][0] > var[0][0]);
//!
//! // Saved and loaded back: the same predictive, bit for bit.
//! let path = std::env::temp_dir().join(format!("bdl-front-{}.safetensors", std::process::id()));
//! laplace.posterior.save(&path)?;
//! let back = bdl::laplace::SubnetLaplace::load(&path)?;
//! let again = back.predictive(&x_new, &PredictOptions::default())?;
//! assert_eq!(again.variance()?.to_vec2::<f64>()?, var);
//! # std::fs::remove_file(&path).ok();
//! # std::fs::remove_file(path.with_extension("json")).ok();
//! # Ok(()) }
//! ```

pub mod tensor {
    //! The shared tensor layer: [`ParamLayout`] (named segments over one flat parameter
    //! vector, PyTorch `state_dict` order), seeded streams ([`Seed`]), candle ⇄ faer,
    //! safetensors checkpoints.
    //!
    //! ```
    //! use bdl::tensor::{ParamLayout, Seed};
    //! let layout = ParamLayout::new([("0.weight", vec![4, 2]), ("0.bias", vec![4])]);
    //! assert_eq!(layout.len(), 12);
    //! // Named streams: the same name gives the same numbers.
    //! assert_eq!(Seed(1).fork("a"), Seed(1).fork("a"));
    //! ```
    pub use bdl_tensor::*;
}

pub mod data {
    //! Datasets and their formats (IDX, UCI standard and gap splits, CSV, MAT, NPY),
    //! standardisation, seeded minibatches, holdouts, image transforms.
    //!
    //! ```
    //! use bdl::data::{Dataset, Provenance, Task};
    //! use candle_core::{Device, Tensor};
    //! let x = Tensor::new(&[[0.0f32, 1.0], [2.0, f32::NAN]], &Device::Cpu).unwrap();
    //! let y = Tensor::new(&[0u32, 1], &Device::Cpu).unwrap();
    //! let task = Task::Classification { classes: vec!["a".into(), "b".into()] };
    //! // A NaN feature is a typed error, not a silent number.
    //! let names = vec!["u".into(), "v".into()];
    //! assert!(Dataset::new(x, y, task, names, Provenance::default()).is_err());
    //! ```
    pub use bdl_data::*;
}

pub mod likelihoods {
    //! Gaussian, Bernoulli and Categorical likelihoods with output-space gradients and
    //! curvature, and the [`Predictive`] every method ends in.
    //!
    //! ```
    //! use bdl::likelihoods::Predictive;
    //! use candle_core::{Device, Tensor};
    //! let dev = &Device::Cpu;
    //! let pred = Predictive::gaussian(&Tensor::new(&[[1.0f64]], dev).unwrap(), &Tensor::new(&[[4.0f64]], dev).unwrap()).unwrap();
    //! assert_eq!(pred.variance().unwrap().to_vec2::<f64>().unwrap(), [[4.0]]);
    //! ```
    pub use bdl_likelihoods::*;
}

pub mod models {
    //! The [`Model`] trait and its networks (an MLP, a LeNet-style CNN, both behind
    //! [`Network`]) over one flat parameter vector.
    //!
    //! ```
    //! use bdl::models::{Activation, Mlp, MlpSpec, Model};
    //! let mlp = Mlp::new(MlpSpec::new(&[3, 8, 2], Activation::Relu)).unwrap();
    //! assert_eq!(mlp.layout().len(), 3 * 8 + 8 + 8 * 2 + 2);
    //! ```
    pub use bdl_models::*;
}

pub mod inference {
    //! The shared inference layer: the [`Posterior`] trait, [`PredictOptions`], validated
    //! configuration, checkpoints, the MAP trainer.
    //!
    //! ```
    //! use bdl::inference::{MapConfig, Validate};
    //! let bad = MapConfig { epochs: 0, ..MapConfig::default() };
    //! assert_eq!(bad.check().unwrap_err().param, "epochs");
    //! ```
    pub use bdl_inference::*;
}

pub mod eval {
    //! Metrics of predictive distributions, recalibration (temperature scaling, widening,
    //! split conformal sets and intervals), the mutual information, tables and SVG plots.
    //!
    //! ```
    //! use bdl::eval::metrics::auroc;
    //! assert_eq!(auroc(&[0.1, 0.2], &[0.3, 0.4]).unwrap(), 1.0);
    //! ```
    pub use bdl_eval::*;
}

#[cfg(feature = "laplace")]
pub mod laplace {
    //! Linearized Laplace approximations: GGN curvature for any subset, full / diagonal /
    //! last-layer / subnetwork posteriors, subnetwork selection, the marginal likelihood.
    //!
    //! ```
    //! use bdl::laplace::{PriorPrecision, SubsetScaling};
    //! use bdl::tensor::ParamLayout;
    //! let layout = ParamLayout::new([("fc.weight", vec![2, 3]), ("fc.bias", vec![2])]);
    //! // λ_S = λ·S/D for a subnetwork of 3 of the 8 parameters.
    //! let lambda = PriorPrecision::Scalar(4.0).for_subset(&[0, 1, 2], &layout, SubsetScaling::AllParameters).unwrap();
    //! assert_eq!(lambda, [1.5; 3]);
    //! ```
    pub use bdl_laplace::*;
}

#[cfg(feature = "variational")]
pub mod variational {
    //! Natural-gradient variational inference by weight perturbation and Bayes-by-Backprop.
    //!
    //! ```
    //! use bdl::variational::{Method, VariationalConfig};
    //! let config = VariationalConfig::new(Method::vadam(1e-3), 1.0, 10, 32);
    //! assert_eq!(config.method.name(), "Vadam");
    //! ```
    pub use bdl_variational::*;
}

#[cfg(feature = "mcmc")]
pub mod mcmc {
    //! Sampling of network weights: minibatch Metropolis-within-blocked-Gibbs with resumable
    //! chains, SGLD and SGHMC (cyclical, within Gibbs), HMC and NUTS, ESS and R̂.
    //!
    //! ```
    //! use bdl::mcmc::split_rhat;
    //! let (a, b) = ([0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]);
    //! assert!(split_rhat(&[&a, &b]).unwrap() < 1.2);
    //! ```
    pub use bdl_mcmc::*;
}

#[cfg(feature = "baselines")]
pub mod baselines {
    //! SWAG, MC dropout and deep ensembles.
    //!
    //! ```
    //! use bdl::baselines::EnsembleConfig;
    //! assert_eq!(EnsembleConfig::default().members, 5);
    //! ```
    pub use bdl_baselines::*;
}

#[cfg(feature = "methods")]
pub mod methods {
    //! Every method as one serde [`MethodSpec`], fitted by one [`fit()`] to a [`Problem`].
    //!
    //! ```
    //! use bdl::methods::MethodSpec;
    //! let spec: MethodSpec = serde_json::from_str(r#"{"method": "nuts", "config":
    //!     {"step_size": 0.01, "iterations": 1000, "burn_in": 200, "prior_precision": 1.0}}"#).unwrap();
    //! assert_eq!(spec.name(), "NUTS");
    //! ```
    pub use bdl_methods::*;
}

#[cfg(feature = "methods")]
pub use bdl_methods::{Fitted, MethodSpec, Problem, fit};

pub mod prelude {
    //! What most programs use: the networks, the likelihoods, [`Posterior`] and its options,
    //! seeds, configuration checks, and (with `methods`) [`MethodSpec`], [`Problem`] and
    //! [`fit()`].
    //!
    //! ```
    //! use bdl::prelude::*;
    //! let net = Network::from(Mlp::new(MlpSpec::new(&[2, 4, 1], Activation::Tanh)).unwrap());
    //! assert_eq!(net.layout().len(), 17);
    //! ```
    pub use bdl_data::Dataset;
    pub use bdl_inference::{Posterior, PredictOptions, Validate};
    pub use bdl_likelihoods::{Likelihood, Predictive};
    #[cfg(feature = "methods")]
    pub use bdl_methods::{MethodSpec, Problem, fit};
    pub use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
    pub use bdl_tensor::Seed;
}
