//! [`fit()`]: one call from a [`MethodSpec`] and a [`Problem`] to a fitted [`Posterior`].

use std::time::Instant;

use bdl_baselines::McDropout;
use bdl_data::{Dataset, Provenance, Task};
use bdl_inference::{MapEstimate, Posterior, Valid, Validate};
use bdl_laplace::selection::Candidates;
use bdl_laplace::{
    DiagLaplace, Evidence, KronConfig, KronLaplace, KronScope, LaplaceConfig, PriorPrecision,
    SubnetLaplace, SubsetScaling,
};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{Blocking, ChainWindow, Sampler};
use bdl_models::{Model as _, Network};
use candle_core::{DType, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Lift, Result};
use crate::shared::SharedFits;
use crate::{GibbsSpec, Hessian, LaplaceSpec, MethodSpec, PriorBy, SubsetRule};

/// What every method is fitted to: the network, its parameters θ (the start of training or
/// sampling, or the MAP a Laplace is taken at), the likelihood and the training data (x, y).
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a> {
    /// The network.
    pub network: &'a Network,
    /// θ, flat `[D]`, in the network's compute dtype.
    pub theta: &'a Tensor,
    /// The likelihood (with its σ for regression).
    pub likelihood: Likelihood,
    /// The training inputs, `[N, d]` (or images), in θ's dtype.
    pub x: &'a Tensor,
    /// The training targets: `[N, k]` for regression, u32 labels `[N]` for classification.
    pub y: &'a Tensor,
    /// Held-out examples (x, y), for the methods that choose a hyper-parameter on them.
    pub validation: Option<(&'a Tensor, &'a Tensor)>,
    /// What the fits on this problem share (their SWAG runs), when given.
    pub shared: Option<&'a SharedFits>,
}

impl<'a> Problem<'a> {
    /// The problem of fitting `network` from `theta` under `likelihood` to the examples (x, y).
    pub fn new(
        network: &'a Network,
        theta: &'a Tensor,
        likelihood: Likelihood,
        x: &'a Tensor,
        y: &'a Tensor,
    ) -> Self {
        Self {
            network,
            theta,
            likelihood,
            x,
            y,
            validation: None,
            shared: None,
        }
    }

    /// The same problem, its fits sharing what they can through `shared` (a SWAG fit's
    /// variances with a Wasserstein rule of the same SWAG configuration).
    pub fn with_shared(self, shared: &'a SharedFits) -> Self {
        Self {
            shared: Some(shared),
            ..self
        }
    }

    /// The same problem with held-out examples (x_val, y_val), on which a Laplace posterior
    /// can choose λ (`"prior_by": "validation"`).
    pub fn with_validation(self, x: &'a Tensor, y: &'a Tensor) -> Self {
        Self {
            validation: Some((x, y)),
            ..self
        }
    }

    /// The examples as a checked [`Dataset`] in f32 (finite inputs and targets, labels below
    /// the class count), for the sampler, which reads its data from one.
    fn dataset(&self, method: &'static str) -> Result<Dataset> {
        let x = self.x.to_dtype(DType::F32).lift(method)?;
        let names = |prefix: &str, n: usize| (0..n).map(|i| format!("{prefix}{i}")).collect();
        let task = match (self.likelihood, self.y.dtype()) {
            (Likelihood::Categorical { classes }, DType::U32) => Task::Classification {
                classes: names("class ", classes),
            },
            (Likelihood::Bernoulli, DType::U32) => Task::Classification {
                classes: names("class ", 2),
            },
            _ => Task::Regression {
                targets: names("y", self.y.dims().get(1).copied().unwrap_or(1)),
            },
        };
        let y = match task {
            Task::Regression { .. } => self.y.to_dtype(DType::F32).lift(method)?,
            Task::Classification { .. } => self.y.clone(),
        };
        let provenance = Provenance {
            description: format!("the training examples of {method}"),
            files: Vec::new(),
        };
        let features = names("x", x.dims().get(1).copied().unwrap_or(0));
        Dataset::new(x, y, task, features, provenance).lift(method)
    }

    /// The checks every fit makes before it starts, so that bad input is the same typed error
    /// whichever method meets it: at least one example; as many rows of y as of x; finite
    /// inputs and targets; class labels below the likelihood's class count; θ of the network's
    /// length and finite; x of the network's input shape (a forward pass of its first row).
    fn check(&self, method: &'static str) -> Result<()> {
        let invalid = |param: &str, value: String, requirement: &str| Error::Failed {
            method,
            source: Box::new(bdl_inference::InvalidParam::new(param, value, requirement).into()),
        };
        let n = bdl_inference::paired_rows(self.x, self.y).lift(method)?;
        if n == 0 {
            return Err(invalid("x", "0 rows".into(), "at least one example"));
        }
        bdl_tensor::check_finite(self.x, "x").lift(method)?;
        if self.y.dtype().is_float() {
            bdl_tensor::check_finite(self.y, "y").lift(method)?;
        }
        let classes = match self.likelihood {
            Likelihood::Categorical { classes } => Some(classes),
            Likelihood::Bernoulli => Some(2),
            Likelihood::Gaussian { .. } => None,
        };
        if let (Some(classes), DType::U32) = (classes, self.y.dtype()) {
            let labels: Vec<u32> = self.y.flatten_all().lift(method)?.to_vec1().lift(method)?;
            if let Some(bad) = labels.iter().find(|&&c| c as usize >= classes) {
                return Err(invalid(
                    "y",
                    format!("label {bad}"),
                    &format!("a class index below {classes}"),
                ));
            }
        }
        self.network.layout().check_flat(self.theta).lift(method)?;
        bdl_tensor::check_finite(self.theta, "θ").lift(method)?;
        let first = self.x.narrow(0, 0, 1).lift(method)?;
        self.network.forward(self.theta, &first).lift(method)?;
        Ok(())
    }

    /// θ with its network and likelihood, as the MAP estimate a Laplace or MC dropout uses.
    fn estimate(&self, method: &'static str) -> Result<MapEstimate> {
        MapEstimate::new(self.network.clone(), self.theta.clone(), self.likelihood).lift(method)
    }
}

/// A fitted method: its posterior, what the fit reports, and the seconds it took.
pub struct Fitted {
    /// The posterior, for predictives, samples and saving.
    pub posterior: Box<dyn Posterior>,
    /// What the fit reports besides the posterior.
    pub diagnostics: Diagnostics,
    /// Wall-clock seconds of the fit (selection included).
    pub seconds: f64,
}

/// What a fit reports besides its posterior (fields a method does not have stay empty).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// The mean per-example training loss after every epoch (MAP, MC dropout, SWAG; the
    /// variational methods' negative log-likelihood at the mean; a deep ensemble's first
    /// member).
    pub losses: Vec<f64>,
    /// The scalar prior precision of a Laplace posterior (the grid's choice when it had one).
    pub prior_precision: Option<f64>,
    /// A Laplace posterior's λ of every layer, when they were tuned per layer.
    pub layer_prior_precisions: Vec<f64>,
    /// The flat indices of the parameters the posterior is over (ascending), when a subnetwork
    /// rule chose them: a later fit can take the same ones (`SubsetRule::Indices`).
    pub subnetwork: Option<Vec<usize>>,
    /// Blocked Gibbs: the acceptance rate of every layer over the sampled iterations; HMC and
    /// NUTS: the one acceptance rate (statistic) after the burn-in.
    pub acceptance: Vec<f64>,
}

/// Fits `spec` to `problem`.
///
/// ```
/// use bdl_inference::PredictOptions;
/// use bdl_likelihoods::Likelihood;
/// use bdl_methods::{MethodSpec, Problem, fit};
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let x = Tensor::arange(0u32, 32, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.0625, -1.0)?.unsqueeze(1)?;
/// let y = (x.clone() * 3.0)?.sin()?;
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?);
/// let theta0 = net.init(Seed(0), DType::F32, &Device::Cpu)?;
/// let lik = Likelihood::Gaussian { sigma: 0.1 };
/// let map_spec: MethodSpec =
///     serde_json::from_str(r#"{"method": "map", "config": {"learning_rate": 0.01, "epochs": 200}}"#)?;
/// let map = fit(&map_spec, &Problem::new(&net, &theta0, lik, &x, &y))?;
/// // The Laplace at the MAP: the MAP's θ is the next problem's.
/// let theta = map.posterior.sample(1, Seed(0))?.unwrap().squeeze(0)?;
/// let laplace_spec: MethodSpec = serde_json::from_str(r#"{"method": "laplace", "config": {}}"#)?;
/// let laplace = fit(&laplace_spec, &Problem::new(&net, &theta, lik, &x, &y))?;
/// assert_eq!(laplace.posterior.method(), "full Laplace");
/// let pred = laplace.posterior.predictive(&x, &PredictOptions::default())?;
/// assert_eq!(pred.mean()?.dims(), &[32, 1]);
/// # Ok(()) }
/// ```
pub fn fit(spec: &MethodSpec, problem: &Problem<'_>) -> Result<Fitted> {
    let start = Instant::now();
    let method = spec.name();
    problem.check(method)?;
    let (x, y) = (problem.x, problem.y);
    let (net, theta, lik) = (problem.network, problem.theta, problem.likelihood);
    let mut diagnostics = Diagnostics::default();
    let posterior: Box<dyn Posterior> = match spec {
        MethodSpec::Map(config) => {
            let config = config.clone().check().lift(method)?;
            let fit = bdl_inference::train_map(net, theta, lik, x, y, &config).lift(method)?;
            diagnostics.losses = fit.losses;
            Box::new(fit.estimate)
        }
        MethodSpec::McDropout(config) => {
            if net.dropout() == 0.0 {
                return Err(Error::Unsupported {
                    method,
                    what: "fit a network without dropout (give it a dropout probability)".into(),
                });
            }
            let config = config.clone().check().lift(method)?;
            let fit = bdl_inference::train_map(net, theta, lik, x, y, &config).lift(method)?;
            diagnostics.losses = fit.losses;
            Box::new(McDropout::new(fit.estimate))
        }
        MethodSpec::Swag(spec) => {
            let (rule, d) = (&spec.subnetwork, &mut diagnostics);
            let config = with_rule(&spec.config, |c| &mut c.subset, rule, problem, method, d)?;
            let fit = bdl_baselines::train_swag(net, theta, lik, x, y, &config).lift(method)?;
            if let Some(shared) = problem.shared
                && config.subset.is_none()
            {
                shared.keep_swag(&spec.config, fit.posterior.swag().variances());
            }
            diagnostics.losses = fit.losses;
            Box::new(fit.posterior)
        }
        MethodSpec::Ensemble(config) => {
            let config = config.clone().check().lift(method)?;
            let fit = bdl_baselines::train_ensemble(net, lik, x, y, theta.dtype(), &config)
                .lift(method)?;
            diagnostics.losses = fit
                .members
                .first()
                .map(|m| m.losses.clone())
                .unwrap_or_default();
            Box::new(fit.posterior)
        }
        MethodSpec::Laplace(spec) => laplace(spec, problem, method, &mut diagnostics)?,
        MethodSpec::Variational(spec) => {
            let (rule, d) = (&spec.subnetwork, &mut diagnostics);
            let config = with_rule(&spec.config, |c| &mut c.subset, rule, problem, method, d)?;
            let fit = bdl_variational::fit(net, theta, lik, x, y, &config).lift(method)?;
            diagnostics.losses = fit.nll;
            Box::new(fit.posterior)
        }
        MethodSpec::Gibbs(spec) => gibbs(spec, problem, method, &mut diagnostics)?,
        MethodSpec::Sgmcmc(spec) => {
            let (rule, d) = (&spec.subnetwork, &mut diagnostics);
            let config = with_rule(&spec.config, |c| &mut c.subset, rule, problem, method, d)?;
            let fit = bdl_mcmc::sample_sgmcmc(net, theta, lik, x, y, &config).lift(method)?;
            Box::new(fit.posterior)
        }
        MethodSpec::Hmc(spec) => {
            let (rule, d) = (&spec.subnetwork, &mut diagnostics);
            let config = with_rule(&spec.config, |c| &mut c.subset, rule, problem, method, d)?;
            let fit = bdl_mcmc::sample_hmc(net, theta, lik, x, y, &config).lift(method)?;
            diagnostics.acceptance = vec![fit.acceptance];
            Box::new(fit.posterior)
        }
        MethodSpec::Nuts(spec) => {
            let (rule, d) = (&spec.subnetwork, &mut diagnostics);
            let config = with_rule(&spec.config, |c| &mut c.subset, rule, problem, method, d)?;
            let fit = bdl_mcmc::sample_nuts(net, theta, lik, x, y, &config).lift(method)?;
            diagnostics.acceptance = vec![fit.acceptance];
            Box::new(fit.posterior)
        }
    };
    Ok(Fitted {
        posterior,
        diagnostics,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The Laplace family at θ.
fn laplace(
    spec: &LaplaceSpec,
    problem: &Problem<'_>,
    method: &'static str,
    diagnostics: &mut Diagnostics,
) -> Result<Box<dyn Posterior>> {
    let map = problem.estimate(method)?;
    if spec.layerwise_prior && (spec.hessian != Hessian::Full || spec.prior_grid.is_some()) {
        return Err(Error::Unsupported {
            method,
            what: "tune λ per layer with a diagonal or Kronecker-factored GGN or a prior grid \
                   (full GGN only, no grid)"
                .into(),
        });
    }
    Ok(match spec.hessian {
        Hessian::Diagonal => diagonal_laplace(spec, problem, &map, method, diagnostics)?,
        Hessian::Full => Box::new(full_laplace(spec, problem, &map, method, diagnostics)?),
        Hessian::Kron => Box::new(kron_laplace(spec, problem, &map, method, diagnostics)?),
    })
}

/// The scalar λ of a prior, if it is one.
fn scalar(prior: &PriorPrecision) -> Option<f64> {
    match prior {
        PriorPrecision::Scalar(l) => Some(*l),
        PriorPrecision::PerParameter(_) => None,
    }
}

/// The diagonal Laplace at the MAP: one GGN diagonal h, then λ as given or the grid's best:
/// a [`DiagLaplace`], σ_d² = 1/(h_dd + λ_d) over every parameter or over the subnetwork S (the
/// rest fixed at θ̂), O(D) either way.
fn diagonal_laplace(
    spec: &LaplaceSpec,
    problem: &Problem<'_>,
    map: &MapEstimate,
    method: &'static str,
    diagnostics: &mut Diagnostics,
) -> Result<Box<dyn Posterior>> {
    let config = spec.config.clone().check().lift(method)?;
    let h = bdl_laplace::ggn_diagonal(
        map.network(),
        map.theta(),
        &map.likelihood(),
        problem.x,
        config.batch_size,
    )
    .lift(method)?;
    let subset = spec.subnetwork.choose(problem, method)?;
    diagnostics.subnetwork.clone_from(&subset);
    let at = |prior, subset_scaling| {
        let config = LaplaceConfig {
            prior,
            subset_scaling,
            ..spec.config.clone()
        }
        .check()
        .lift(method)?;
        let (map, h) = (map.clone(), h.clone());
        match &subset {
            None => DiagLaplace::from_ggn_diagonal(map, h, &config),
            Some(s) => DiagLaplace::from_ggn_diagonal_on(map, h, s.clone(), &config),
        }
        .lift(method)
    };
    let evidence = |p: &DiagLaplace| p.log_marginal_likelihood(0.0).lift(method);
    Ok(Box::new(prior_or_grid(
        spec,
        problem,
        method,
        diagnostics,
        at,
        evidence,
    )?))
}

/// The posterior `at` the spec's prior, or at the candidate of its grid that scores best
/// ([`grid_best`]; a grid's λ as it is, not scaled to the subnetwork), with λ recorded.
fn prior_or_grid<P: Posterior>(
    spec: &LaplaceSpec,
    problem: &Problem<'_>,
    method: &'static str,
    diagnostics: &mut Diagnostics,
    at: impl Fn(PriorPrecision, SubsetScaling) -> Result<P>,
    evidence: impl Fn(&P) -> Result<f64>,
) -> Result<P> {
    let Some(grid) = &spec.prior_grid else {
        diagnostics.prior_precision = scalar(&spec.config.prior);
        return at(spec.config.prior.clone(), spec.config.subset_scaling);
    };
    let at_l = |l| at(PriorPrecision::Scalar(l), SubsetScaling::None);
    let (post, lambda) = grid_best(spec, problem, method, grid, at_l, evidence)?;
    diagnostics.prior_precision = Some(lambda);
    Ok(post)
}

/// The posterior of the candidate λ in `grid` that scores best: by the mean log-likelihood of
/// the validation examples when the spec asks for it, else by `evidence` (the Laplace marginal
/// likelihood up to log p(D | θ̂), the same for every λ, so 0 in its place gives the same
/// argmax). `at(λ)` is the posterior at λ.
fn grid_best<P: Posterior>(
    spec: &LaplaceSpec,
    problem: &Problem<'_>,
    method: &'static str,
    grid: &[f64],
    at: impl Fn(f64) -> Result<P>,
    evidence: impl Fn(&P) -> Result<f64>,
) -> Result<(P, f64)> {
    let validation = validation_of(spec, problem, method)?;
    best(grid, method, |l| {
        let post = at(l)?;
        let score = match validation {
            Some((xv, yv)) => validation_log_lik(&post, xv, yv, method)?,
            None => evidence(&post)?,
        };
        Ok((post, score))
    })
}

/// The mean log-likelihood of the validation examples under a posterior's predictive.
fn validation_log_lik(
    post: &dyn Posterior,
    xv: &Tensor,
    yv: &Tensor,
    method: &'static str,
) -> Result<f64> {
    let pred = post
        .predictive(xv, &bdl_inference::PredictOptions::default())
        .lift(method)?;
    let ll = pred.log_lik(yv).map_err(bdl_inference::Error::from);
    let ll = bdl_tensor::to_f64_vec(&ll.lift(method)?).lift(method)?;
    Ok(ll.iter().sum::<f64>() / ll.len() as f64)
}

/// The KFAC Laplace over every parameter or the whole last layer: λ as given or the grid's
/// best (one set of factor eigendecompositions serves every candidate).
fn kron_laplace(
    spec: &LaplaceSpec,
    problem: &Problem<'_>,
    map: &MapEstimate,
    method: &'static str,
    diagnostics: &mut Diagnostics,
) -> Result<KronLaplace> {
    let scope = match &spec.subnetwork {
        SubsetRule::All => KronScope::All,
        SubsetRule::LastLayer {
            candidates: Candidates::All,
        } => KronScope::LastLayer,
        _ => {
            return Err(Error::Unsupported {
                method,
                what: "take a subnetwork other than every parameter or the whole last layer \
                       (`\"rule\": \"last-layer\", \"candidates\": \"all\"`)"
                    .into(),
            });
        }
    };
    let lambda = scalar(&spec.config.prior).ok_or_else(|| Error::Unsupported {
        method,
        what: "take a per-parameter prior (give a scalar)".into(),
    })?;
    let config = KronConfig {
        scope,
        prior_precision: lambda,
        batch_size: spec.config.batch_size,
    }
    .check()
    .lift(method)?;
    let post = KronLaplace::fit(map, problem.x, &config).lift(method)?;
    if scope == KronScope::LastLayer {
        diagnostics.subnetwork = Some(post.subset().to_vec());
    }
    let Some(grid) = &spec.prior_grid else {
        diagnostics.prior_precision = Some(lambda);
        return Ok(post);
    };
    let at = |l| post.with_prior_precision(l).lift(method);
    let (post, lambda) = grid_best(spec, problem, method, grid, at, |p| {
        p.log_marginal_likelihood(0.0).lift(method)
    })?;
    diagnostics.prior_precision = Some(lambda);
    Ok(post)
}

/// The full-GGN Laplace over the rule's subnetwork: λ as given, tuned per layer, or the grid's
/// best by the evidence or on the validation examples.
fn full_laplace(
    spec: &LaplaceSpec,
    problem: &Problem<'_>,
    map: &MapEstimate,
    method: &'static str,
    diagnostics: &mut Diagnostics,
) -> Result<SubnetLaplace> {
    let (x, y) = (problem.x, problem.y);
    let config = spec.config.clone().check().lift(method)?;
    let d = map.network().layout().len();
    let subset = spec.subnetwork.choose(problem, method)?;
    diagnostics.subnetwork.clone_from(&subset);
    let subset = subset.unwrap_or_else(|| (0..d).collect());
    match &spec.prior_grid {
        None if spec.layerwise_prior => {
            let start = scalar(&spec.config.prior).ok_or_else(|| Error::Unsupported {
                method,
                what: "tune λ per layer from a per-parameter prior (give a scalar)".into(),
            })?;
            let tuned = bdl_laplace::layerwise_prior(map, x, subset, start, LAYERWISE_STEPS)
                .lift(method)?;
            diagnostics.layer_prior_precisions = tuned.lambdas;
            Ok(tuned.posterior)
        }
        None => {
            diagnostics.prior_precision = scalar(&spec.config.prior);
            SubnetLaplace::fit(map, x, subset, &config).lift(method)
        }
        Some(grid) => {
            let sigma = match map.likelihood() {
                Likelihood::Gaussian { sigma } => sigma,
                _ => 1.0,
            };
            let evidence = Evidence::new(map, x, y, subset, config.batch_size).lift(method)?;
            let ((), lambda) = match validation_of(spec, problem, method)? {
                Some((xv, yv)) => {
                    let val = evidence.validation(xv, yv).lift(method)?;
                    best(grid, method, |l| {
                        Ok((
                            (),
                            evidence.validation_log_lik(&val, l, sigma).lift(method)?,
                        ))
                    })?
                }
                None => best(grid, method, |l| Ok(((), evidence.log_evidence(l, sigma))))?,
            };
            diagnostics.prior_precision = Some(lambda);
            evidence.posterior(lambda, sigma).lift(method)
        }
    }
}

/// The validation examples when `spec` chooses λ on them (an error when the problem has none).
fn validation_of<'a>(
    spec: &LaplaceSpec,
    problem: &Problem<'a>,
    method: &'static str,
) -> Result<Option<(&'a Tensor, &'a Tensor)>> {
    match (spec.prior_by, problem.validation) {
        (PriorBy::Evidence, _) => Ok(None),
        (PriorBy::Validation, Some(v)) => Ok(Some(v)),
        (PriorBy::Validation, None) => Err(Error::Unsupported {
            method,
            what: "choose λ on validation examples the problem does not have \
                   (Problem::with_validation)"
                .into(),
        }),
    }
}

/// The most fixed-point steps of a per-layer prior.
const LAYERWISE_STEPS: usize = 500;

/// The candidate of `grid` with the largest score (the first of equals), its value and λ.
fn best<P>(
    grid: &[f64],
    method: &'static str,
    mut score: impl FnMut(f64) -> Result<(P, f64)>,
) -> Result<(P, f64)> {
    let mut best: Option<(P, f64, f64)> = None;
    for &lambda in grid {
        let (value, s) = score(lambda)?;
        if best.as_ref().is_none_or(|b| s > b.2) {
            best = Some((value, lambda, s));
        }
    }
    best.map(|(value, lambda, _)| (value, lambda))
        .ok_or_else(|| Error::Unsupported {
            method,
            what: "choose λ from an empty prior grid".into(),
        })
}

/// `config` with the subnetwork `rule` chooses as its own `subset` of explicit indices (the
/// field `subset` picks, which must then be empty: one of the two, not both), checked.
fn with_rule<C: Clone + Validate>(
    config: &C,
    subset: fn(&mut C) -> &mut Option<Vec<usize>>,
    rule: &SubsetRule,
    problem: &Problem<'_>,
    method: &'static str,
    diagnostics: &mut Diagnostics,
) -> Result<Valid<C>> {
    let mut config = config.clone();
    if let Some(chosen) = rule.choose(problem, method)? {
        let own = subset(&mut config);
        if own.is_some() {
            return Err(Error::Unsupported {
                method,
                what: "take both a `subset` and a `subnetwork` rule (give one)".into(),
            });
        }
        diagnostics.subnetwork = Some(chosen.clone());
        *own = Some(chosen);
    }
    config.check().lift(method)
}

/// A blocked-Gibbs chain from θ, in memory, and the window of its kept draws.
fn gibbs(
    spec: &GibbsSpec,
    problem: &Problem<'_>,
    method: &'static str,
    diagnostics: &mut Diagnostics,
) -> Result<Box<dyn Posterior>> {
    let Network::Mlp(mlp) = problem.network else {
        return Err(Error::Unsupported {
            method,
            what: "sample a network that is not an MLP".into(),
        });
    };
    if spec.burn_in >= spec.sweeps {
        return Err(Error::Failed {
            method,
            source: Box::new(
                bdl_inference::InvalidParam::new(
                    "burn_in",
                    spec.burn_in,
                    format!("below sweeps ({})", spec.sweeps),
                )
                .into(),
            ),
        });
    }
    let mut gibbs = spec.gibbs.clone();
    if let Some(subset) = spec.subnetwork.choose(problem, method)? {
        diagnostics.subnetwork = Some(subset.clone());
        gibbs.blocking = Blocking::Subnetwork {
            subset,
            within: Box::new(gibbs.blocking),
        };
    }
    let gibbs = gibbs.check().lift(method)?;
    let data = problem.dataset(method)?;
    let (lik, seed) = (problem.likelihood, spec.seed);
    let mut sampler = Sampler::new(mlp, lik, &data, &gibbs, problem.theta, seed).lift(method)?;
    let mut rng = seed.fork("sweeps").rng();
    if let Some(pilot) = &spec.pilot {
        let pilot = pilot.clone().check().lift(method)?;
        sampler
            .tune(&pilot, &spec.gibbs.proposal, mlp.n_layers(), &mut rng)
            .lift(method)?;
    }
    let every = spec.keep_every.max(1);
    let (mut draws, mut kept) = (Vec::new(), Vec::new());
    for t in 0..spec.sweeps {
        sampler.iterate(t, &mut rng).lift(method)?;
        if t >= spec.burn_in && (t - spec.burn_in + 1).is_multiple_of(every) {
            draws.push(sampler.params().lift(method)?);
            kept.push(t);
        }
    }
    diagnostics.acceptance = sampler.acceptance().layer_rates(sampler.blocks());
    let draws = Tensor::stack(&draws, 0).lift(method)?;
    let window = ChainWindow::new(problem.network.clone(), lik, draws, kept).lift(method)?;
    Ok(Box::new(window))
}
