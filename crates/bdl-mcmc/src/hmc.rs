//! Hamiltonian Monte Carlo on the full-batch posterior of any network: the reference sampler for
//! small networks (exact up to Monte Carlo error, where the minibatch samplers are not).
//!
//! With U(θ) = −Σ_n log p(y_n | f(x_n; θ)) + (λ/2)‖θ‖² and momenta p ~ N(0, I), one iteration
//! integrates H(θ, p) = U(θ) + ½‖p‖² by a number of leapfrog steps of size ε drawn uniformly
//! from 1 … L (a fixed trajectory length can resonate with the dynamics),
//! p ← p − (ε/2)∇U(θ), θ ← θ + εp, p ← p − (ε/2)∇U(θ), and accepts the end point with
//! probability min(1, exp(H₀ − H₁)) (a non-finite H₁ is a rejection). During the burn-in ε is
//! adapted by dual averaging to a target acceptance (Hoffman & Gelman 2014, §3.2: μ = log 10ε₀,
//! γ = 0.05, t₀ = 10, κ = 0.75), then fixed at its averaged value.
//!
//! With a `subset` S, only θ_S moves: the chain runs on U(θ_S) with the other coordinates at
//! θ₀ (the prior's terms of the fixed ones are a constant), and every draw is θ₀ with θ_S
//! replaced (subnetwork inference).

use bdl_inference::{InvalidParam, Valid, Validate, at_least_one, non_negative, positive, require};
use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network};
use bdl_tensor::Seed;
use candle_core::Tensor;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::{ChainWindow, Result};

/// How to run HMC.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_mcmc::HmcConfig;
/// let config: HmcConfig = serde_json::from_str(
///     r#"{"step_size": 0.01, "leapfrog_steps": 20, "iterations": 2000, "burn_in": 500,
///         "prior_precision": 1.0}"#,
/// ).unwrap();
/// assert_eq!(config.target_acceptance, Some(0.8));
/// assert!(HmcConfig { leapfrog_steps: 0, ..config }.check().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HmcConfig {
    /// ε (the starting value when adapted).
    pub step_size: f64,
    /// L, the most leapfrog steps of an iteration (each draws its number from 1 … L).
    pub leapfrog_steps: usize,
    /// Iterations, the burn-in included.
    pub iterations: u64,
    /// Iterations before the first kept draw (where ε adapts).
    pub burn_in: u64,
    /// Keep every this many iterations' draw after the burn-in.
    #[serde(default = "one")]
    pub keep_every: u64,
    /// λ of the prior N(0, λ⁻¹ I).
    pub prior_precision: f64,
    /// Adapt ε during the burn-in to this acceptance rate (`None`: keep ε).
    #[serde(default = "eighty_percent")]
    pub target_acceptance: Option<f64>,
    /// The root of the momenta and acceptance tests.
    #[serde(default = "seed_zero")]
    pub seed: Seed,
    /// The flat indices that move (ascending, distinct, below D); `None`: every parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<Vec<usize>>,
}

fn one() -> u64 {
    1
}

fn eighty_percent() -> Option<f64> {
    Some(0.8)
}

fn seed_zero() -> Seed {
    Seed(0)
}

impl Validate for HmcConfig {
    /// A positive ε, at least one leapfrog step, kept step and kept draw; λ ≥ 0; a target
    /// acceptance in (0, 1).
    fn validate(&self) -> Result<(), InvalidParam> {
        positive("step_size", self.step_size)?;
        at_least_one("leapfrog_steps", self.leapfrog_steps)?;
        at_least_one("keep_every", self.keep_every as usize)?;
        non_negative("prior_precision", self.prior_precision)?;
        require(
            self.burn_in < self.iterations,
            "burn_in",
            self.burn_in,
            &format!("below iterations ({})", self.iterations),
        )?;
        if let Some(a) = self.target_acceptance {
            require(a > 0.0 && a < 1.0, "target_acceptance", a, "in (0, 1)")?;
        }
        Ok(())
    }
}

/// What an HMC run gives.
#[derive(Clone, Debug)]
pub struct HmcFit {
    /// The kept draws, a posterior named "HMC".
    pub posterior: ChainWindow,
    /// The acceptance rate after the burn-in.
    pub acceptance: f64,
    /// The step size after the burn-in (the adapted one, or the given one).
    pub step_size: f64,
}

/// U(θ) and ∇U(θ) on the whole data set, as functions of the moving coordinates q = θ_S.
struct Potential<'a> {
    network: &'a Network,
    likelihood: Likelihood,
    x: &'a Tensor,
    y: &'a Tensor,
    lambda: f64,
    theta0: &'a Tensor,
    /// S, the coordinates that move (`None`: every one).
    subset: Option<&'a [usize]>,
    /// θ₀, flat: the fixed coordinates' values.
    base: Vec<f64>,
}

impl<'a> Potential<'a> {
    /// The potential of `network` about `theta0` on (x, y) with the prior precision λ, moving
    /// `subset`, after the checks its samplers need: a valid likelihood, θ₀ of the network's
    /// length, valid indices, paired rows, and finite data, so that a non-finite output means an
    /// overflowed θ (an infinite potential).
    fn new(
        network: &'a Network,
        theta0: &'a Tensor,
        likelihood: Likelihood,
        (x, y): (&'a Tensor, &'a Tensor),
        (lambda, subset): (f64, Option<&'a [usize]>),
    ) -> Result<Self> {
        likelihood.check().map_err(bdl_inference::Error::from)?;
        network.layout().check_flat(theta0)?;
        if let Some(subset) = subset {
            bdl_models::check_param_indices(subset, network.layout().len())?;
        }
        bdl_inference::paired_rows(x, y)?;
        bdl_tensor::check_finite(x, "x")?;
        if y.dtype().is_float() {
            bdl_tensor::check_finite(y, "y")?;
        }
        Ok(Self {
            network,
            likelihood,
            x,
            y,
            lambda,
            theta0,
            subset,
            base: bdl_tensor::to_f64_vec(theta0)?,
        })
    }

    /// The chain's start: θ₀'s moving coordinates.
    fn start(&self) -> Vec<f64> {
        match self.subset {
            Some(subset) => subset.iter().map(|&i| self.base[i]).collect(),
            None => self.base.clone(),
        }
    }

    /// θ: θ₀ with its moving coordinates set to q.
    fn theta(&self, q: &[f64]) -> Vec<f64> {
        let Some(subset) = self.subset else {
            return q.to_vec();
        };
        let mut theta = self.base.clone();
        subset.iter().zip(q).for_each(|(&i, &v)| theta[i] = v);
        theta
    }

    /// The kept draws θ (each of length D) at iterations `kept`, as the posterior of `method`.
    fn window(
        &self,
        draws: Vec<Vec<f64>>,
        kept: Vec<u64>,
        seed: Seed,
        method: &'static str,
    ) -> Result<ChainWindow> {
        let (s, d) = (draws.len(), self.base.len());
        let draws = Tensor::from_vec(draws.concat(), (s, d), self.theta0.device())?
            .to_dtype(self.theta0.dtype())?;
        Ok(
            ChainWindow::new(self.network.clone(), self.likelihood, draws, kept)?
                .with_seed(seed)
                .by(method),
        )
    }
}

impl Potential<'_> {
    /// (U, ∇U) at the moving coordinates q (up to the fixed coordinates' constant prior
    /// term); U is infinite where the outputs are not finite.
    fn at(&self, q: &[f64]) -> Result<(f64, Vec<f64>)> {
        let theta = self.theta(q);
        let t = Tensor::from_slice(&theta, theta.len(), self.theta0.device())?
            .to_dtype(self.theta0.dtype())?;
        let (lik, y) = (self.likelihood, self.y);
        let mut nll = f64::INFINITY;
        let output_gradient = |f: &Tensor| -> bdl_inference::Result<Tensor> {
            let ll = bdl_tensor::to_f64_vec(&lik.log_lik(f, y)?)?;
            nll = -ll.iter().sum::<f64>();
            Ok(lik.grad_f(f, y)?.to_dtype(f.dtype())?)
        };
        let g = match self
            .network
            .loss_gradient(&t, self.x, None, output_gradient, false)
        {
            Ok(g) => g.sum,
            // An overflowed output: an infinite potential, rejected.
            Err(bdl_inference::Error::Likelihood(bdl_likelihoods::Error::NonFinite { .. })) => {
                return Ok((f64::INFINITY, vec![0.0; q.len()]));
            }
            Err(e) => return Err(e.into()),
        };
        let prior: f64 = q.iter().map(|v| v * v).sum::<f64>() * self.lambda / 2.0;
        let g_q = match self.subset {
            Some(subset) => subset.iter().map(|&i| g[i]).collect(),
            None => g,
        };
        let grad = g_q
            .iter()
            .zip(q)
            .map(|(g, t)| g + self.lambda * t)
            .collect();
        Ok((nll + prior, grad))
    }
}

/// Dual averaging of log ε towards a target acceptance (Hoffman & Gelman 2014).
struct DualAveraging {
    mu: f64,
    h_bar: f64,
    log_eps_bar: f64,
    m: f64,
    target: f64,
}

impl DualAveraging {
    fn new(eps0: f64, target: f64) -> Self {
        Self {
            mu: (10.0 * eps0).ln(),
            h_bar: 0.0,
            log_eps_bar: 0.0,
            m: 0.0,
            target,
        }
    }

    /// The next ε after an iteration accepted with probability `alpha`.
    fn update(&mut self, alpha: f64) -> f64 {
        const GAMMA: f64 = 0.05;
        const T0: f64 = 10.0;
        const KAPPA: f64 = 0.75;
        self.m += 1.0;
        let w = 1.0 / (self.m + T0);
        self.h_bar = (1.0 - w) * self.h_bar + w * (self.target - alpha);
        let log_eps = self.mu - self.m.sqrt() / GAMMA * self.h_bar;
        let eta = self.m.powf(-KAPPA);
        self.log_eps_bar = eta * log_eps + (1.0 - eta) * self.log_eps_bar;
        log_eps.exp()
    }

    /// The averaged ε, used after the burn-in.
    fn averaged(&self) -> f64 {
        self.log_eps_bar.exp()
    }
}

/// Runs HMC for `network` from `theta0` (its dtype is the compute dtype) on the data (x, y)
/// under `likelihood`.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_likelihoods::Likelihood;
/// use bdl_mcmc::{HmcConfig, sample_hmc};
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 4, 1], Activation::Tanh))?);
/// let x = Tensor::arange(0u32, 20, &Device::Cpu)?.to_dtype(DType::F64)?.affine(0.1, -1.0)?.unsqueeze(1)?;
/// let y = (x.clone() * 2.0)?.sin()?;
/// let theta0 = net.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let config = HmcConfig {
///     step_size: 0.01, leapfrog_steps: 10, iterations: 300, burn_in: 100, keep_every: 2,
///     prior_precision: 1.0, target_acceptance: Some(0.8), seed: Seed(1), subset: None,
/// }.check()?;
/// let fit = sample_hmc(&net, &theta0, Likelihood::Gaussian { sigma: 0.1 }, &x, &y, &config)?;
/// assert_eq!(fit.posterior.draws().dims(), &[100, net.layout().len()]);
/// assert!(fit.acceptance > 0.3);
/// # Ok(()) }
/// ```
pub fn sample_hmc(
    network: &Network,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<HmcConfig>,
) -> Result<HmcFit> {
    let prior = (config.prior_precision, config.subset.as_deref());
    let potential = Potential::new(network, theta0, likelihood, (x, y), prior)?;
    let mut theta = potential.start();
    let d = theta.len();
    let (mut u, mut grad) = potential.at(&theta)?;
    let mut rng = config.seed.fork("hmc").rng();
    let mut eps = config.step_size;
    let mut adapt = config
        .target_acceptance
        .map(|t| DualAveraging::new(config.step_size, t));
    let (mut draws, mut kept, mut accepted) = (Vec::new(), Vec::new(), 0u64);
    for t in 0..config.iterations {
        if t == config.burn_in
            && let Some(a) = &adapt
        {
            eps = a.averaged();
            adapt = None;
        }
        let mut p: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
        let h0 = u + p.iter().map(|v| v * v).sum::<f64>() / 2.0;
        let (mut q, mut g) = (theta.clone(), grad.clone());
        let mut u1 = u;
        // A trajectory of 1 … L steps, drawn afresh: a fixed length can be close to a period of
        // the dynamics in some direction, which then hardly moves (Neal 2011, §5.4.2.2).
        let steps = rng.random_range(1..=config.leapfrog_steps);
        for _ in 0..steps {
            p.iter_mut().zip(&g).for_each(|(p, g)| *p -= eps / 2.0 * g);
            q.iter_mut().zip(&p).for_each(|(q, p)| *q += eps * p);
            (u1, g) = potential.at(&q)?;
            if !u1.is_finite() {
                break;
            }
            p.iter_mut().zip(&g).for_each(|(p, g)| *p -= eps / 2.0 * g);
        }
        let h1 = u1 + p.iter().map(|v| v * v).sum::<f64>() / 2.0;
        let alpha = if h1.is_finite() {
            (h0 - h1).exp().min(1.0)
        } else {
            0.0
        };
        if rng.random::<f64>() < alpha {
            (theta, u, grad) = (q, u1, g);
            if t >= config.burn_in {
                accepted += 1;
            }
        }
        if let Some(a) = adapt.as_mut() {
            eps = a.update(alpha);
        }
        if t >= config.burn_in && (t - config.burn_in).is_multiple_of(config.keep_every) {
            draws.push(potential.theta(&theta));
            kept.push(t);
        }
    }
    let window = potential.window(draws, kept, config.seed, "HMC")?;
    Ok(HmcFit {
        posterior: window,
        acceptance: accepted as f64 / (config.iterations - config.burn_in) as f64,
        step_size: eps,
    })
}

/// How to run NUTS: HMC without a trajectory length to choose.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_mcmc::NutsConfig;
/// let config: NutsConfig = serde_json::from_str(
///     r#"{"step_size": 0.01, "iterations": 2000, "burn_in": 500, "prior_precision": 1.0}"#,
/// ).unwrap();
/// assert_eq!((config.max_depth, config.target_acceptance), (10, Some(0.8)));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NutsConfig {
    /// ε (the starting value when adapted).
    pub step_size: f64,
    /// The deepest tree: at most 2^depth − 1 leapfrog steps an iteration.
    #[serde(default = "ten")]
    pub max_depth: usize,
    /// Iterations, the burn-in included.
    pub iterations: u64,
    /// Iterations before the first kept draw (where ε adapts).
    pub burn_in: u64,
    /// Keep every this many iterations' draw after the burn-in.
    #[serde(default = "one")]
    pub keep_every: u64,
    /// λ of the prior N(0, λ⁻¹ I).
    pub prior_precision: f64,
    /// Adapt ε during the burn-in to this mean acceptance statistic (`None`: keep ε).
    #[serde(default = "eighty_percent")]
    pub target_acceptance: Option<f64>,
    /// The root of the momenta, directions and choices.
    #[serde(default = "seed_zero")]
    pub seed: Seed,
    /// The flat indices that move (ascending, distinct, below D); `None`: every parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<Vec<usize>>,
}

fn ten() -> usize {
    10
}

impl Validate for NutsConfig {
    /// A positive ε, a depth from 1 to 20, at least one kept step; λ ≥ 0; a burn-in below the
    /// iterations; a target acceptance in (0, 1).
    fn validate(&self) -> Result<(), InvalidParam> {
        HmcConfig {
            step_size: self.step_size,
            leapfrog_steps: 1,
            iterations: self.iterations,
            burn_in: self.burn_in,
            keep_every: self.keep_every,
            prior_precision: self.prior_precision,
            target_acceptance: self.target_acceptance,
            seed: self.seed,
            subset: None,
        }
        .validate()?;
        require(
            (1..=20).contains(&self.max_depth),
            "max_depth",
            self.max_depth,
            "from 1 to 20",
        )
    }
}

/// A point of a trajectory: position, momentum, potential and its gradient.
#[derive(Clone)]
struct Point {
    q: Vec<f64>,
    p: Vec<f64>,
    u: f64,
    g: Vec<f64>,
}

impl Point {
    /// H = U + ½‖p‖².
    fn energy(&self) -> f64 {
        self.u + self.p.iter().map(|v| v * v).sum::<f64>() / 2.0
    }

    /// One leapfrog step of size `eps` (negative: backwards in time).
    fn leapfrog(&self, eps: f64, potential: &Potential<'_>) -> Result<Self> {
        let mut p = self.p.clone();
        p.iter_mut()
            .zip(&self.g)
            .for_each(|(p, g)| *p -= eps / 2.0 * g);
        let q: Vec<f64> = self.q.iter().zip(&p).map(|(q, p)| q + eps * p).collect();
        let (u, g) = potential.at(&q)?;
        p.iter_mut().zip(&g).for_each(|(p, g)| *p -= eps / 2.0 * g);
        Ok(Self { q, p, u, g })
    }
}

/// A subtree of NUTS (Hoffman & Gelman 2014, Algorithm 3).
struct Tree {
    minus: Point,
    plus: Point,
    proposal: Point,
    /// Points inside the slice.
    n: f64,
    /// No U-turn and no divergence so far.
    keep_going: bool,
    /// Σ min(1, exp(H₀ − H)) over the leaves, and their count (the adaptation statistic).
    alpha: f64,
    n_alpha: f64,
}

/// Energy errors beyond this end a trajectory as divergent.
const MAX_ENERGY_ERROR: f64 = 1000.0;

/// Whether the trajectory from `minus` to `plus` has not turned back on itself.
fn no_u_turn(minus: &Point, plus: &Point) -> bool {
    let dq: Vec<f64> = plus.q.iter().zip(&minus.q).map(|(a, b)| a - b).collect();
    let dot = |p: &[f64]| dq.iter().zip(p).map(|(a, b)| a * b).sum::<f64>();
    dot(&minus.p) >= 0.0 && dot(&plus.p) >= 0.0
}

/// Builds a subtree of 2^depth leaves from `from` in direction `dir` (±1); `log_slice` is the
/// log of the slice variable, `h0` the starting energy.
#[allow(clippy::too_many_arguments)]
fn build_tree(
    from: &Point,
    log_slice: f64,
    dir: f64,
    depth: usize,
    eps: f64,
    h0: f64,
    potential: &Potential<'_>,
    rng: &mut bdl_tensor::ChaCha8Rng,
) -> Result<Tree> {
    if depth == 0 {
        let point = from.leapfrog(dir * eps, potential)?;
        let h = point.energy();
        let h = if h.is_finite() { h } else { f64::INFINITY };
        let inside = -h >= log_slice;
        return Ok(Tree {
            minus: point.clone(),
            plus: point.clone(),
            proposal: point,
            n: if inside { 1.0 } else { 0.0 },
            keep_going: -h > log_slice - MAX_ENERGY_ERROR,
            alpha: (h0 - h).exp().min(1.0),
            n_alpha: 1.0,
        });
    }
    let mut tree = build_tree(from, log_slice, dir, depth - 1, eps, h0, potential, rng)?;
    if !tree.keep_going {
        return Ok(tree);
    }
    let edge = if dir < 0.0 { &tree.minus } else { &tree.plus };
    let other = build_tree(edge, log_slice, dir, depth - 1, eps, h0, potential, rng)?;
    if dir < 0.0 {
        tree.minus = other.minus.clone();
    } else {
        tree.plus = other.plus.clone();
    }
    let total = tree.n + other.n;
    if total > 0.0 && rng.random::<f64>() < other.n / total {
        tree.proposal = other.proposal.clone();
    }
    tree.alpha += other.alpha;
    tree.n_alpha += other.n_alpha;
    tree.n = total;
    tree.keep_going = other.keep_going && no_u_turn(&tree.minus, &tree.plus);
    Ok(tree)
}

/// What a NUTS run gives.
#[derive(Clone, Debug)]
pub struct NutsFit {
    /// The kept draws, a posterior named "NUTS".
    pub posterior: ChainWindow,
    /// The mean acceptance statistic after the burn-in.
    pub acceptance: f64,
    /// The step size after the burn-in.
    pub step_size: f64,
    /// The mean tree depth after the burn-in.
    pub mean_depth: f64,
}

/// Runs the No-U-Turn sampler (Hoffman & Gelman 2014, Algorithm 6: slice variable, doubling
/// trees, dual averaging of ε towards a mean acceptance statistic) for `network` from
/// `theta0` on the data (x, y) under `likelihood`, on the same full-batch potential as
/// [`sample_hmc`].
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_likelihoods::Likelihood;
/// use bdl_mcmc::{NutsConfig, sample_nuts};
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 4, 1], Activation::Tanh))?);
/// let x = Tensor::arange(0u32, 20, &Device::Cpu)?.to_dtype(DType::F64)?.affine(0.1, -1.0)?.unsqueeze(1)?;
/// let y = (x.clone() * 2.0)?.sin()?;
/// let theta0 = net.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let config = NutsConfig {
///     step_size: 0.01, max_depth: 8, iterations: 200, burn_in: 100, keep_every: 1,
///     prior_precision: 1.0, target_acceptance: Some(0.8), seed: Seed(1), subset: None,
/// }.check()?;
/// let fit = sample_nuts(&net, &theta0, Likelihood::Gaussian { sigma: 0.1 }, &x, &y, &config)?;
/// assert_eq!(fit.posterior.draws().dims(), &[100, net.layout().len()]);
/// assert!(fit.mean_depth >= 1.0);
/// # Ok(()) }
/// ```
pub fn sample_nuts(
    network: &Network,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<NutsConfig>,
) -> Result<NutsFit> {
    let prior = (config.prior_precision, config.subset.as_deref());
    let potential = Potential::new(network, theta0, likelihood, (x, y), prior)?;
    let q = potential.start();
    let d = q.len();
    let (u, g) = potential.at(&q)?;
    let mut current = Point {
        q,
        p: vec![0.0; d],
        u,
        g,
    };
    let mut rng = config.seed.fork("nuts").rng();
    let mut eps = config.step_size;
    let mut adapt = config
        .target_acceptance
        .map(|t| DualAveraging::new(config.step_size, t));
    let (mut draws, mut kept) = (Vec::new(), Vec::new());
    let (mut alpha_sum, mut depth_sum) = (0.0, 0.0);
    for t in 0..config.iterations {
        if t == config.burn_in
            && let Some(a) = &adapt
        {
            eps = a.averaged();
            adapt = None;
        }
        current.p = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
        let h0 = current.energy();
        let log_slice = rng.random::<f64>().ln() - h0;
        let (mut minus, mut plus) = (current.clone(), current.clone());
        let mut next = current.clone();
        let (mut n, mut depth, mut keep_going) = (1.0, 0, true);
        let (mut alpha, mut n_alpha) = (0.0, 0.0);
        while keep_going && depth < config.max_depth {
            let dir = if rng.random::<bool>() { 1.0 } else { -1.0 };
            let edge = if dir < 0.0 { &minus } else { &plus };
            let tree = build_tree(edge, log_slice, dir, depth, eps, h0, &potential, &mut rng)?;
            if dir < 0.0 {
                minus = tree.minus.clone();
            } else {
                plus = tree.plus.clone();
            }
            if tree.keep_going && rng.random::<f64>() < (tree.n / n).min(1.0) {
                next = tree.proposal.clone();
            }
            n += tree.n;
            alpha += tree.alpha;
            n_alpha += tree.n_alpha;
            keep_going = tree.keep_going && no_u_turn(&minus, &plus);
            depth += 1;
        }
        current = next;
        let statistic = alpha / n_alpha.max(1.0);
        if let Some(a) = adapt.as_mut() {
            eps = a.update(statistic);
        }
        if t >= config.burn_in {
            alpha_sum += statistic;
            depth_sum += depth as f64;
            if (t - config.burn_in).is_multiple_of(config.keep_every) {
                draws.push(potential.theta(&current.q));
                kept.push(t);
            }
        }
    }
    let after = (config.iterations - config.burn_in) as f64;
    let window = potential.window(draws, kept, config.seed, "NUTS")?;
    Ok(NutsFit {
        posterior: window,
        acceptance: alpha_sum / after,
        step_size: eps,
        mean_depth: depth_sum / after,
    })
}
