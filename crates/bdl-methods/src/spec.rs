//! [`MethodSpec`]: every method of the workspace and its settings as one serde value, so that a
//! list of methods is a JSON file.

use bdl_baselines::{EnsembleConfig, SwagConfig};
use bdl_inference::MapConfig;
use bdl_laplace::LaplaceConfig;
use bdl_laplace::selection::Candidates;
use bdl_mcmc::{GibbsConfig, HmcConfig, NutsConfig, Pilot, SgmcmcConfig};
use bdl_tensor::Seed;
use bdl_variational::VariationalConfig;
use serde::{Deserialize, Serialize};

/// One method with its settings: in JSON an object `{"method": name, "config": settings}` with
/// the names `map`, `laplace`, `variational`, `swag`, `mc-dropout`, `ensemble`, `gibbs`,
/// `sgmcmc`, `hmc` and `nuts`.
///
/// Every method starts from the problem's parameters θ ([`Problem`](crate::Problem)): the MAP,
/// SWAG, MC dropout and the variational methods train from θ; the Laplace family is taken at θ
/// as the MAP; the Gibbs chain starts at θ; a deep ensemble trains its members from their own
/// initialisations and uses only θ's dtype.
///
/// ```
/// use bdl_methods::{Hessian, MethodSpec, SubsetRule};
/// let specs: Vec<MethodSpec> = serde_json::from_str(r#"[
///     {"method": "map", "config": {"epochs": 50}},
///     {"method": "laplace", "config": {"hessian": "diagonal", "prior": {"scalar": 3.0}}},
///     {"method": "laplace", "config": {"subnetwork": {"rule": "random", "size": 20, "seed": 1}}}
/// ]"#).unwrap();
/// assert_eq!(specs[0].name(), "MAP");
/// let MethodSpec::Laplace(laplace) = &specs[1] else { unreachable!() };
/// assert_eq!(laplace.hessian, Hessian::Diagonal);
/// let MethodSpec::Laplace(subnet) = &specs[2] else { unreachable!() };
/// assert!(matches!(subnet.subnetwork, SubsetRule::Random { size: 20, .. }));
/// // A spec survives a round trip through JSON.
/// let json = serde_json::to_string(&specs).unwrap();
/// assert_eq!(serde_json::from_str::<Vec<MethodSpec>>(&json).unwrap(), specs);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "config", rename_all = "kebab-case")]
pub enum MethodSpec {
    /// A point estimate: MAP training from θ (`bdl_inference::train_map`).
    Map(MapConfig),
    /// The linearized Laplace at θ: full-covariance GGN over a subnetwork (all of it, the last
    /// layer, or a rule's choice) or its diagonal.
    Laplace(LaplaceSpec),
    /// A mean-field Gaussian by one of the variational methods (Vadam, VOGN, IVON, BBVI, …),
    /// trained from θ, over every parameter or a subnetwork with the rest fixed at θ.
    Variational(VariationalSpec),
    /// SWAG from θ, over every parameter or a subnetwork with the rest fixed at θ.
    Swag(OnSubnetwork<SwagConfig>),
    /// MC dropout: the network's own dropout, trained to the MAP from θ.
    McDropout(MapConfig),
    /// A deep ensemble of independently initialised MAPs.
    Ensemble(EnsembleConfig),
    /// A window of a Metropolis-within-blocked-Gibbs chain from θ (MLPs only).
    Gibbs(GibbsSpec),
    /// Stochastic-gradient MCMC from θ (SGLD or SGHMC, constant or cyclical step size), over
    /// every parameter or a subnetwork with the rest fixed at θ.
    Sgmcmc(SgmcmcSpec),
    /// Hamiltonian Monte Carlo from θ on the full-batch posterior (the reference sampler for
    /// small networks), over every parameter or a subnetwork with the rest fixed at θ.
    Hmc(OnSubnetwork<HmcConfig>),
    /// The No-U-Turn sampler from θ on the full-batch posterior, over every parameter or a
    /// subnetwork with the rest fixed at θ.
    Nuts(OnSubnetwork<NutsConfig>),
}

impl MethodSpec {
    /// The method's name, as tables and errors print it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Map(_) => "MAP",
            Self::Laplace(l) => match (l.hessian, &l.subnetwork) {
                (Hessian::Diagonal, _) => "diagonal Laplace",
                (Hessian::Kron, SubsetRule::LastLayer { .. }) => "last-layer KFAC Laplace",
                (Hessian::Kron, _) => "KFAC Laplace",
                (Hessian::Full, SubsetRule::All) => "full Laplace",
                (Hessian::Full, SubsetRule::LastLayer { .. }) => "last-layer Laplace",
                (Hessian::Full, _) => "subnetwork Laplace",
            },
            Self::Variational(v) => v.config.method.name(),
            Self::Swag(_) => "SWAG",
            Self::McDropout(_) => "MC dropout",
            Self::Ensemble(_) => "deep ensemble",
            Self::Gibbs(_) => "blocked Gibbs",
            Self::Sgmcmc(s) => s.config.dynamics.name(),
            Self::Hmc(_) => "HMC",
            Self::Nuts(_) => "NUTS",
        }
    }
}

/// The curvature of a Laplace posterior.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hessian {
    /// The full GGN over the subnetwork S: Σ_S = (H_S + λ_S)⁻¹.
    #[default]
    Full,
    /// Its diagonal, over every parameter or over the subnetwork S (the rest fixed at θ):
    /// σ_d² = 1/(h_dd + λ_d).
    Diagonal,
    /// Kronecker-factored (KFAC) blocks G ⊗ A per dense layer, over every parameter or the
    /// last layer (`"subnetwork": {"rule": "last-layer", "candidates": "all"}`), one scalar λ.
    Kron,
}

/// A Laplace posterior at θ.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LaplaceSpec {
    /// Full GGN or its diagonal (over `subnetwork`), or Kronecker-factored (over everything or
    /// the last layer).
    pub hessian: Hessian,
    /// The parameters with a posterior; the others stay at θ.
    pub subnetwork: SubsetRule,
    /// The prior, its subnetwork scaling λ_S = λ·S/D, and the GGN's rows per batch.
    #[serde(flatten)]
    pub config: LaplaceConfig,
    /// Candidate scalar prior precisions: when given, λ is the candidate of largest Laplace
    /// marginal likelihood on the training data (from one eigendecomposition of H_S, or one GGN
    /// diagonal) instead of `config.prior`, used as the subnetwork's λ as it is (no scaling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_grid: Option<Vec<f64>>,
    /// What chooses λ from `prior_grid`: the marginal likelihood on the training data, or the
    /// log-likelihood of the problem's validation examples ([`Problem::with_validation`]).
    ///
    /// [`Problem::with_validation`]: crate::Problem::with_validation
    #[serde(skip_serializing_if = "is_default")]
    pub prior_by: PriorBy,
    /// One λ per layer by the marginal likelihood (MacKay's fixed point, from the scalar
    /// `config.prior`), full GGN only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub layerwise_prior: bool,
}

/// How a Laplace posterior's λ is chosen from its grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorBy {
    /// The Laplace marginal likelihood of the training data.
    #[default]
    Evidence,
    /// The mean log-likelihood of the validation examples under the linearized predictive.
    Validation,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// A variational fit, over every parameter or over a subnetwork.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariationalSpec {
    /// The method and its settings (its `subset` of explicit indices, or `subnetwork` here,
    /// not both).
    #[serde(flatten)]
    pub config: VariationalConfig,
    /// The parameters inferred; the others stay at θ with σ = 0.
    #[serde(default)]
    pub subnetwork: SubsetRule,
}

/// The settings of a method whose configuration takes explicit indices (its `subset`), with
/// a rule that chooses them instead: in JSON the configuration's own fields, and
/// `"subnetwork"` where it is not every parameter (a configuration's `subset` or this rule,
/// not both).
///
/// ```
/// use bdl_methods::{MethodSpec, SubsetRule};
/// let swag: MethodSpec = serde_json::from_str(r#"{"method": "swag", "config":
///     {"snapshots": 20, "subnetwork": {"rule": "last-layer"}}}"#).unwrap();
/// let MethodSpec::Swag(swag) = &swag else { unreachable!() };
/// assert!(matches!(swag.subnetwork, SubsetRule::LastLayer { .. }));
/// assert_eq!(swag.config.snapshots, 20);
/// // Over every parameter, the configuration's JSON alone.
/// let all = MethodSpec::Swag(swag.config.clone().into());
/// assert!(!serde_json::to_string(&all).unwrap().contains("subnetwork"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OnSubnetwork<C> {
    /// The method's own settings.
    #[serde(flatten)]
    pub config: C,
    /// The parameters inferred; the others stay at θ.
    #[serde(default, skip_serializing_if = "is_default")]
    pub subnetwork: SubsetRule,
}

impl<C> From<C> for OnSubnetwork<C> {
    /// The settings over every parameter.
    fn from(config: C) -> Self {
        Self {
            config,
            subnetwork: SubsetRule::All,
        }
    }
}

/// A blocked-Gibbs chain from θ, kept in memory: `sweeps` iterations after an optional pilot
/// that tunes the per-layer proposal variances, the draws of every `keep_every`-th iteration
/// after `burn_in` forming the posterior (a [`ChainWindow`](bdl_mcmc::ChainWindow)). Long,
/// resumable chains on disk are `bdl_mcmc::run_chain`'s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GibbsSpec {
    /// Blocks, proposal variances, prior variance, exact or minibatch acceptance.
    #[serde(flatten)]
    pub gibbs: GibbsConfig,
    /// Iterations (one sweep over every block each).
    pub sweeps: u64,
    /// Iterations discarded before the kept draws.
    #[serde(default)]
    pub burn_in: u64,
    /// Keep every this many iterations' draw after the burn-in.
    #[serde(default = "one")]
    pub keep_every: u64,
    /// Tune the proposal variances before sampling (from `gibbs.proposal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<Pilot>,
    /// The root of the chain's streams (minibatch orders, proposals, acceptance tests).
    #[serde(default = "seed_zero")]
    pub seed: Seed,
    /// The parameters sampled; the others stay at θ.
    #[serde(default)]
    pub subnetwork: SubsetRule,
}

/// A stochastic-gradient sampler, over every parameter or over a subnetwork.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SgmcmcSpec {
    /// The dynamics, schedule and run (its `subset` of explicit indices, or `subnetwork` here,
    /// not both).
    #[serde(flatten)]
    pub config: SgmcmcConfig,
    /// The parameters sampled; the others stay at θ.
    #[serde(default)]
    pub subnetwork: SubsetRule,
}

fn one() -> u64 {
    1
}

fn seed_zero() -> Seed {
    Seed(0)
}

/// Which parameters a method infers (the rest fixed at θ): in JSON `{"rule": name, …}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum SubsetRule {
    /// Every parameter.
    #[default]
    All,
    /// Every weight, the biases fixed at θ (the subnetwork paper's toy and UCI Laplace).
    Weights,
    /// These flat parameter indices.
    Indices {
        /// Ascending, distinct, each below D.
        indices: Vec<usize>,
    },
    /// The last layer (weights, or weights and bias with `"candidates": "all"`).
    LastLayer {
        /// Weights only, or weights and bias.
        #[serde(default)]
        candidates: Candidates,
    },
    /// The Wasserstein rule: the `size` candidates of largest marginal posterior variance.
    Wasserstein {
        /// s, the parameters chosen.
        size: usize,
        /// Weights only (the paper's) or every parameter.
        #[serde(default)]
        candidates: Candidates,
        /// Where the marginal variances come from.
        variances: VariancesFrom,
    },
    /// `size` candidates drawn uniformly from `seed`.
    Random {
        /// s.
        size: usize,
        /// Weights only or every parameter.
        #[serde(default)]
        candidates: Candidates,
        /// The draw's stream.
        #[serde(default = "seed_zero")]
        seed: Seed,
    },
    /// The `size` candidates of largest |θ_d|.
    Magnitude {
        /// s.
        size: usize,
        /// Weights only or every parameter.
        #[serde(default)]
        candidates: Candidates,
    },
}

/// The marginal variances of the Wasserstein rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VariancesFrom {
    /// A diagonal Laplace at θ: σ_d² = 1/(h_dd + λ) (the paper's UCI choice; parameters
    /// without data signal tie at 1/λ).
    DiagonalLaplace {
        /// λ.
        prior_precision: f64,
    },
    /// Diagonal SWAG from θ (the paper's choice for deep networks).
    Swag(SwagConfig),
}
