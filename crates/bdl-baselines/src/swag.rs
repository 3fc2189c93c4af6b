//! SWAG: the Gaussian fitted to the iterates of constant-learning-rate SGD (Maddox et al. 2019).

use std::collections::VecDeque;
use std::f64::consts::FRAC_1_SQRT_2;
use std::ops::ControlFlow;
use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    InvalidParam, MinibatchLoop, Optimizer, Posterior, PredictOptions, Prediction, Predictor,
    Trainer, Valid, Validate, at_least_one,
};
use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network};
use bdl_tensor::{ChaCha8Rng, Seed};
use candle_core::{DType, Device, Tensor};
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// What `snapshot_every` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotUnit {
    /// Optimiser steps (minibatches).
    Steps,
    /// Passes over the data (the paper's choice: one snapshot per epoch).
    Epochs,
}

/// Which SWAG covariance to sample from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwagCovariance {
    /// SWAG-Diagonal: Σ = Σ_diag = diag(θ²̄ − θ̄²). Needs one snapshot.
    Diagonal,
    /// SWAG: Σ = ½ Σ_diag + D̂D̂ᵀ / (2(K − 1)), D̂ the last K deviations. Needs K ≥ 2.
    #[default]
    LowRankPlusDiagonal,
}

impl SwagCovariance {
    fn name(self) -> &'static str {
        match self {
            Self::Diagonal => "diagonal",
            Self::LowRankPlusDiagonal => "low-rank-plus-diagonal",
        }
    }
}

/// How to collect SWAG snapshots.
///
/// Training runs the optimiser with the constant `learning_rate` from the given start (usually
/// the MAP) and collects a snapshot every `snapshot_every` steps or epochs until `snapshots` are
/// held: `snapshots × snapshot_every` units of training in all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SwagConfig {
    /// The update rule (SGD with momentum 0.9 by default, as the paper).
    pub optimizer: Optimizer,
    /// The constant learning rate.
    pub learning_rate: f64,
    /// The prior precision λ (the weight decay of the summed loss).
    pub prior_precision: f64,
    /// Examples per minibatch.
    pub batch_size: usize,
    /// The number of snapshots T to collect.
    pub snapshots: usize,
    /// Collect a snapshot after every this many units.
    pub snapshot_every: usize,
    /// The unit of `snapshot_every`.
    pub snapshot_unit: SnapshotUnit,
    /// K, the most deviation columns the low-rank part keeps (the paper: 20); 0 keeps none.
    pub rank: usize,
    /// The covariance the posterior samples from.
    pub covariance: SwagCovariance,
    /// The seed of the minibatch shuffles and dropout masks.
    pub seed: Seed,
    /// Only these flat indices move (subnetwork SWAG: the others stay at θ₀, so their mean is
    /// θ₀ and their variance zero); `None`: every parameter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subset: Option<Vec<usize>>,
}

impl Default for SwagConfig {
    fn default() -> Self {
        Self {
            optimizer: Optimizer::Sgd { momentum: 0.9 },
            learning_rate: 1e-2,
            prior_precision: 1.0,
            batch_size: 128,
            snapshots: 20,
            snapshot_every: 1,
            snapshot_unit: SnapshotUnit::Epochs,
            rank: 20,
            covariance: SwagCovariance::LowRankPlusDiagonal,
            seed: Seed(0),
            subset: None,
        }
    }
}

impl Validate for SwagConfig {
    /// A valid optimiser, learning rate finite and > 0, prior precision finite and ≥ 0, batch
    /// size, snapshots and snapshot period ≥ 1, and K ≥ 2 for the low-rank covariance.
    fn validate(&self) -> Result<(), InvalidParam> {
        bdl_inference::check_descent(
            &self.optimizer,
            self.learning_rate,
            self.prior_precision,
            self.batch_size,
        )?;
        at_least_one("snapshots", self.snapshots)?;
        at_least_one("snapshot_every", self.snapshot_every)?;
        if self.covariance == SwagCovariance::LowRankPlusDiagonal {
            bdl_inference::require(
                self.rank >= 2 && self.snapshots >= 2,
                "rank",
                self.rank,
                ">= 2, with snapshots >= 2, for the low-rank-plus-diagonal covariance",
            )?;
        }
        Ok(())
    }
}

/// The SWAG posterior N(θ̄, Σ) over the parameters, from snapshots θ_1, …, θ_T.
///
/// - θ̄ = (1/T) Σ_t θ_t, and the diagonal Σ_diag = diag(θ²̄ − θ̄²) with θ²̄ = (1/T) Σ_t θ_t∘θ_t
///   (accumulated in f64 by Welford's update, which avoids the cancellation of θ²̄ − θ̄²);
/// - the deviations D̂ = [θ_t − θ̄_t] of the last K snapshots, θ̄_t the running mean after θ_t
///   (the paper's Algorithm 1);
/// - SWAG-Diagonal samples θ = θ̄ + Σ_diag^{1/2} z; SWAG samples
///   θ = θ̄ + (1/√2) Σ_diag^{1/2} z₁ + D̂ z₂ / √(2(K − 1)), z₁ ~ N(0, I_D), z₂ ~ N(0, I_K), whose
///   covariance is ½ Σ_diag + D̂D̂ᵀ / (2(K − 1)).
///
/// [`variances`](Swag::variances) is the plain slice of marginal variances a subnetwork selection
/// takes.
///
/// ```
/// use bdl_baselines::{Swag, SwagCovariance};
/// use bdl_tensor::Seed;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_baselines::Error> {
/// let mut swag = Swag::new(2, 2);
/// for theta in [[1.0f64, 2.0], [3.0, 0.0], [2.0, 4.0]] {
///     swag.collect(&Tensor::new(&theta, &Device::Cpu)?)?;
/// }
/// assert_eq!(swag.mean(), [2.0, 2.0]);
/// let var = swag.variances(); // [2/3, 8/3]
/// assert!((var[0] - 2.0 / 3.0).abs() < 1e-12 && (var[1] - 8.0 / 3.0).abs() < 1e-12);
/// let theta = swag.sample(SwagCovariance::LowRankPlusDiagonal, &mut Seed(0).rng())?;
/// assert_eq!(theta.dims(), &[2]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Swag {
    /// T, the snapshots collected.
    n: usize,
    /// θ̄.
    mean: Vec<f64>,
    /// Σ_t (θ_t − θ̄)², by Welford's update.
    m2: Vec<f64>,
    /// The last `rank` deviations, oldest first.
    deviations: VecDeque<Vec<f64>>,
    rank: usize,
    /// The dtype and device of the snapshots, for the samples.
    like: Option<(DType, Device)>,
}

impl Swag {
    /// An empty accumulator over `dim` parameters that keeps the last `rank` deviations.
    pub fn new(dim: usize, rank: usize) -> Self {
        Self {
            n: 0,
            mean: vec![0.0; dim],
            m2: vec![0.0; dim],
            deviations: VecDeque::with_capacity(rank),
            rank,
            like: None,
        }
    }

    /// Adds the snapshot `theta` (flat `[D]`, finite; its dtype and device are those of the
    /// samples): updates θ̄ and Σ_diag and appends θ − θ̄ to the deviations, dropping the oldest
    /// beyond K.
    pub fn collect(&mut self, theta: &Tensor) -> Result<()> {
        bdl_tensor::check_finite(theta, "SWAG snapshot")?;
        let values = theta
            .flatten_all()?
            .to_dtype(DType::F64)?
            .to_vec1::<f64>()?;
        if theta.rank() != 1 || values.len() != self.mean.len() {
            return Err(Error::SnapshotLength {
                expected: self.mean.len(),
                actual: values.len(),
            });
        }
        self.n += 1;
        let n = self.n as f64;
        for ((mean, m2), &v) in self.mean.iter_mut().zip(&mut self.m2).zip(&values) {
            let before = v - *mean;
            *mean += before / n;
            *m2 += before * (v - *mean);
        }
        if self.rank > 0 {
            if self.deviations.len() == self.rank {
                self.deviations.pop_front();
            }
            let dev = values.iter().zip(&self.mean).map(|(v, m)| v - m).collect();
            self.deviations.push_back(dev);
        }
        self.like = Some((theta.dtype(), theta.device().clone()));
        Ok(())
    }

    /// D, the number of parameters.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// K, the most deviation columns kept.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// T, the snapshots collected.
    pub fn n_snapshots(&self) -> usize {
        self.n
    }

    /// θ̄, the SWA mean.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// The marginal variances θ²̄ − θ̄² (the diagonal of Σ_diag), one per parameter; all zero
    /// before any snapshot. This is the slice a largest-variance subnetwork selection takes.
    pub fn variances(&self) -> Vec<f64> {
        let n = self.n.max(1) as f64;
        self.m2.iter().map(|m2| m2 / n).collect()
    }

    /// The columns of D̂, θ_t − θ̄_t for the last min(T, K) snapshots, oldest first.
    pub fn deviations(&self) -> impl ExactSizeIterator<Item = &[f64]> {
        self.deviations.iter().map(Vec::as_slice)
    }

    /// One draw from N(θ̄, Σ) for the chosen covariance, in the snapshots' dtype and device.
    /// Draws z₁ (D numbers) and then, for the low-rank part, z₂ (K numbers) from `rng`.
    pub fn sample(&self, covariance: SwagCovariance, rng: &mut ChaCha8Rng) -> Result<Tensor> {
        let (dtype, device) = self.check(covariance)?;
        let (diag_scale, k) = match covariance {
            SwagCovariance::Diagonal => (1.0, 0),
            SwagCovariance::LowRankPlusDiagonal => (FRAC_1_SQRT_2, self.deviations.len()),
        };
        let mut theta = self.mean.clone();
        for (t, var) in theta.iter_mut().zip(self.variances()) {
            let z: f64 = StandardNormal.sample(rng);
            *t += diag_scale * var.sqrt() * z;
        }
        if k > 0 {
            let scale = (2.0 * (k - 1) as f64).sqrt().recip();
            for dev in &self.deviations {
                let z: f64 = StandardNormal.sample(rng);
                theta
                    .iter_mut()
                    .zip(dev)
                    .for_each(|(t, d)| *t += scale * z * d);
            }
        }
        let d = theta.len();
        Ok(Tensor::from_vec(theta, d, &Device::Cpu)?
            .to_dtype(dtype)?
            .to_device(&device)?)
    }

    /// The snapshots' dtype and device, if there are enough snapshots for `covariance`.
    fn check(&self, covariance: SwagCovariance) -> Result<(DType, Device)> {
        let (needed, collected) = match covariance {
            SwagCovariance::Diagonal => (1, self.n),
            SwagCovariance::LowRankPlusDiagonal => (2, self.deviations.len()),
        };
        match &self.like {
            Some(like) if collected >= needed => Ok(like.clone()),
            _ => Err(Error::TooFewSnapshots {
                covariance: covariance.name(),
                needed,
                collected,
            }),
        }
    }
}

/// A SWAG posterior: the moments with the network and likelihood they predict with, and the
/// covariance to sample from. Its predictive is the Bayesian model average
/// (1/S) Σ_s p(y* | f(x*; θ_s)) over S draws, draw s from the stream `options.seed.index(s)`:
/// a Gaussian mixture for regression, averaged class probabilities for classification.
#[derive(Clone, Debug)]
pub struct SwagPosterior {
    predictor: Predictor,
    swag: Swag,
    covariance: SwagCovariance,
    seed: Option<Seed>,
}

impl SwagPosterior {
    /// The moments `swag` (with enough snapshots for `covariance`) over the parameters of
    /// `network`.
    pub fn new(
        network: Network,
        likelihood: Likelihood,
        swag: Swag,
        covariance: SwagCovariance,
    ) -> Result<Self> {
        if swag.dim() != network.layout().len() {
            return Err(Error::SnapshotLength {
                expected: network.layout().len(),
                actual: swag.dim(),
            });
        }
        swag.check(covariance)?;
        Ok(Self {
            predictor: Predictor::new(network, likelihood)?,
            swag,
            covariance,
            seed: None,
        })
    }

    /// The same posterior, recording the seed of the run that collected it (saved in its
    /// sidecar).
    pub fn with_seed(mut self, seed: Seed) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The moments.
    pub fn swag(&self) -> &Swag {
        &self.swag
    }

    /// The covariance the posterior samples from.
    pub fn covariance(&self) -> SwagCovariance {
        self.covariance
    }

    /// The same moments with the other covariance.
    pub fn with_covariance(&self, covariance: SwagCovariance) -> Result<Self> {
        self.swag.check(covariance)?;
        Ok(Self {
            covariance,
            ..self.clone()
        })
    }
}

/// The sidecar state of a saved SWAG posterior.
#[derive(Serialize, Deserialize)]
struct SwagState {
    snapshots: usize,
    rank: usize,
    covariance: SwagCovariance,
    dtype: String,
}

const KIND: &str = "swag";

impl Posterior for SwagPosterior {
    fn method(&self) -> &str {
        match self.covariance {
            SwagCovariance::Diagonal => "SWAG-diagonal",
            SwagCovariance::LowRankPlusDiagonal => "SWAG",
        }
    }

    fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        self.predictor
            .weight_mixture(x, options.batch_size, options.samples, |s| {
                let mut rng = options.seed.index(s as u64).rng();
                Ok(self.swag.sample(self.covariance, &mut rng)?)
            })
    }

    fn sample(&self, n: usize, seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        let draws = (0..n as u64)
            .map(|s| self.swag.sample(self.covariance, &mut seed.index(s).rng()))
            .collect::<Result<Vec<_>>>()?;
        let d = self.swag.dim();
        Ok(Some(if draws.is_empty() {
            Tensor::zeros((0, d), DType::F64, &Device::Cpu)?
        } else {
            Tensor::stack(&draws, 0)?
        }))
    }

    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let (dtype, _) = self.swag.check(self.covariance)?;
        let state = SwagState {
            snapshots: self.swag.n,
            rank: self.swag.rank,
            covariance: self.covariance,
            dtype: dtype.as_str().to_owned(),
        };
        let d = self.swag.dim();
        let k = self.swag.deviations.len();
        let deviations: Vec<f64> = self.swag.deviations.iter().flatten().copied().collect();
        let tensors = vec![
            ("mean", checkpoint::vector_tensor(&self.swag.mean)?),
            ("m2", checkpoint::vector_tensor(&self.swag.m2)?),
            (
                "deviations",
                Tensor::from_vec(deviations, (k, d), &Device::Cpu)?,
            ),
        ];
        let header = Header {
            kind: KIND,
            predictor: &self.predictor,
            seed: self.seed,
            config: &state,
        };
        checkpoint::save(path, &header, tensors)
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<SwagState>(path, KIND)?;
        let d = saved.n_params();
        let state = &saved.config;
        let (n, rank, covariance) = (state.snapshots, state.rank, state.covariance);
        let dtype: DType = state
            .dtype
            .parse()
            .map_err(|_| bdl_inference::Error::Checkpoint {
                path: path.to_path_buf(),
                reason: format!("unknown dtype `{}`", state.dtype),
            })?;
        let k = n.min(rank);
        let deviations = saved.tensor("deviations", &[k, d])?;
        let swag = Swag {
            n,
            mean: saved.vector("mean", d)?,
            m2: saved.vector("m2", d)?,
            deviations: deviations.to_vec2::<f64>()?.into(),
            rank,
            like: Some((dtype, Device::Cpu)),
        };
        let posterior = Self::new(
            saved.predictor.network().clone(),
            saved.predictor.likelihood(),
            swag,
            covariance,
        )?;
        Ok(Self {
            seed: saved.seed,
            ..posterior
        })
    }
}

/// The result of SWAG training.
#[derive(Clone, Debug)]
pub struct SwagFit {
    /// The posterior.
    pub posterior: SwagPosterior,
    /// The mean per-example loss L(θ)/N after each epoch run (the last one possibly partial).
    pub losses: Vec<f64>,
}

/// Runs the optimiser on the regularised loss of [`train_map`](bdl_inference::train_map) from
/// `theta0` (usually the MAP, for instance [`MapEstimate::theta`](bdl_inference::MapEstimate::theta))
/// with a constant learning rate, and collects SWAG snapshots on the schedule of `config`.
///
/// ```
/// use bdl_baselines::{SnapshotUnit, SwagConfig, train_swag};
/// use bdl_inference::{Posterior, PredictOptions, Validate};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh))?);
/// let x = Tensor::arange(0u32, 32, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.0625, -1.0)?.unsqueeze(1)?;
/// let y = x.sin()?;
/// let config = SwagConfig {
///     batch_size: 8,
///     snapshots: 10,
///     snapshot_every: 2, // every other minibatch step
///     snapshot_unit: SnapshotUnit::Steps,
///     rank: 5,
///     ..SwagConfig::default()
/// }
/// .check()?;
/// let theta0 = net.init(Seed(0), DType::F32, &Device::Cpu)?;
/// let lik = Likelihood::Gaussian { sigma: 0.1 };
/// let fit = train_swag(&net, &theta0, lik, &x, &y, &config)?;
/// let swag = fit.posterior.swag();
/// assert_eq!((swag.n_snapshots(), swag.deviations().len()), (10, 5));
/// let variances: Vec<f64> = swag.variances(); // for a subnetwork selection
/// assert_eq!(variances.len(), 8 + 8 + 8 + 1);
/// let pred = fit.posterior.predictive(&x, &PredictOptions::default())?;
/// assert_eq!(pred.mean()?.dims(), &[32, 1]);
/// # Ok(()) }
/// ```
pub fn train_swag(
    network: &Network,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<SwagConfig>,
) -> Result<SwagFit> {
    let stream = config.seed.fork("swag");
    let data = MinibatchLoop::new(x, y, config.batch_size, stream)?;
    let mut trainer = Trainer::new(
        network,
        theta0,
        data,
        likelihood,
        config.prior_precision,
        config.optimizer,
        stream,
    )?
    .moving(config.subset.as_deref())?;
    let mut swag = Swag::new(network.layout().len(), config.rank);
    let mut losses = Vec::new();
    let mut steps = 0;
    while swag.n_snapshots() < config.snapshots {
        let epoch = losses.len();
        trainer.epoch(config.learning_rate, |theta| {
            if config.snapshot_unit == SnapshotUnit::Steps {
                steps += 1;
                if steps % config.snapshot_every == 0 {
                    swag.collect(theta).map_err(bdl_inference::Error::from)?;
                    if swag.n_snapshots() == config.snapshots {
                        return Ok(ControlFlow::Break(()));
                    }
                }
            }
            Ok(ControlFlow::Continue(()))
        })?;
        losses.push(trainer.loss(false)?);
        if config.snapshot_unit == SnapshotUnit::Epochs && (epoch + 1) % config.snapshot_every == 0
        {
            swag.collect(&trainer.theta()?)?;
        }
    }
    Ok(SwagFit {
        posterior: SwagPosterior::new(network.clone(), likelihood, swag, config.covariance)?
            .with_seed(config.seed),
        losses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_inference::rows;
    use bdl_likelihoods::Predictive;
    use bdl_models::{Activation, Mlp, MlpSpec};

    fn snapshot(v: &[f64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), v.len(), &Device::Cpu).unwrap()
    }

    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| (a - b).abs() <= tol)
    }

    #[test]
    fn moments_match_a_hand_computation() {
        // Snapshots (1, 2), (3, 0), (2, 5): θ̄ = (2, 7/3), θ²̄ = (14/3, 29/3), so
        // Σ_diag = (14/3 − 4, 29/3 − 49/9) = (2/3, 38/9). Running means (1, 2), (2, 1), (2, 7/3)
        // give deviations (0, 0), (1, −1), (0, 8/3); K = 2 keeps the last two. Exact in f64 up
        // to a few ulps.
        let mut swag = Swag::new(2, 2);
        for s in [[1.0, 2.0], [3.0, 0.0], [2.0, 5.0]] {
            swag.collect(&snapshot(&s)).unwrap();
        }
        assert_eq!(swag.n_snapshots(), 3);
        assert!(close(swag.mean(), &[2.0, 7.0 / 3.0], 1e-14));
        assert!(close(&swag.variances(), &[2.0 / 3.0, 38.0 / 9.0], 1e-14));
        let devs: Vec<&[f64]> = swag.deviations().collect();
        assert_eq!(devs.len(), 2);
        assert!(close(devs[0], &[1.0, -1.0], 1e-14));
        assert!(close(devs[1], &[0.0, 8.0 / 3.0], 1e-14));
    }

    /// Five snapshots of three parameters with K = 4 (so D̂ has four columns).
    fn five_snapshot_swag() -> Swag {
        let mut swag = Swag::new(3, 4);
        for s in [
            [0.5, -1.0, 2.0],
            [1.5, 0.0, 1.0],
            [0.0, -2.5, 2.5],
            [1.0, -0.5, 0.5],
            [2.0, -1.5, 1.5],
        ] {
            swag.collect(&snapshot(&s)).unwrap();
        }
        swag
    }

    /// Σ of the chosen covariance from the public moments, as a dense 3 × 3.
    fn swag_covariance(swag: &Swag, covariance: SwagCovariance) -> [[f64; 3]; 3] {
        let var = swag.variances();
        let mut c = [[0.0; 3]; 3];
        let half = matches!(covariance, SwagCovariance::LowRankPlusDiagonal);
        for i in 0..3 {
            c[i][i] = if half { 0.5 * var[i] } else { var[i] };
        }
        if half {
            let k = swag.deviations().len() as f64;
            for d in swag.deviations() {
                for i in 0..3 {
                    for j in 0..3 {
                        c[i][j] += d[i] * d[j] / (2.0 * (k - 1.0));
                    }
                }
            }
        }
        c
    }

    #[test]
    fn sample_moments_match_the_swag_covariance() {
        // 20,000 seeded draws. For Gaussian draws the sample mean's standard error is
        // √(Σ_ii/N) and the sample covariance's is √((Σ_ii Σ_jj + Σ_ij²)/N); every entry must
        // lie within 5 standard errors (a false alarm has probability < 1e-5 over all entries;
        // the seed is fixed, so the test is deterministic). Dropping the 1/√2 or the
        // 1/√(2(K−1)) scale moves entries by tens of standard errors.
        let swag = five_snapshot_swag();
        let n = 20_000;
        for covariance in [
            SwagCovariance::Diagonal,
            SwagCovariance::LowRankPlusDiagonal,
        ] {
            let sigma = swag_covariance(&swag, covariance);
            let mut rng = Seed(11).rng();
            let draws: Vec<Vec<f64>> = (0..n)
                .map(|_| {
                    swag.sample(covariance, &mut rng)
                        .unwrap()
                        .to_vec1()
                        .unwrap()
                })
                .collect();
            let mean: Vec<f64> = (0..3)
                .map(|i| draws.iter().map(|d| d[i]).sum::<f64>() / n as f64)
                .collect();
            for i in 0..3 {
                let se = (sigma[i][i] / n as f64).sqrt();
                assert!(
                    (mean[i] - swag.mean()[i]).abs() <= 5.0 * se,
                    "{covariance:?} mean {i}: {} vs {}",
                    mean[i],
                    swag.mean()[i]
                );
                for j in 0..3 {
                    let c = draws
                        .iter()
                        .map(|d| (d[i] - mean[i]) * (d[j] - mean[j]))
                        .sum::<f64>()
                        / (n - 1) as f64;
                    let se =
                        ((sigma[i][i] * sigma[j][j] + sigma[i][j] * sigma[i][j]) / n as f64).sqrt();
                    assert!(
                        (c - sigma[i][j]).abs() <= 5.0 * se,
                        "{covariance:?} cov {i},{j}: {c} vs {} (se {se})",
                        sigma[i][j]
                    );
                }
            }
        }
        // The low-rank part is not negligible here: it carries off-diagonal covariance.
        let low = swag_covariance(&swag, SwagCovariance::LowRankPlusDiagonal);
        assert!(low[0][1].abs() > 0.1 && low[1][2].abs() > 0.1, "{low:?}");
    }

    #[test]
    fn same_seed_same_samples() {
        let swag = five_snapshot_swag();
        let draw = |seed: u64| {
            swag.sample(SwagCovariance::LowRankPlusDiagonal, &mut Seed(seed).rng())
                .unwrap()
                .to_vec1::<f64>()
                .unwrap()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }

    #[test]
    fn too_few_snapshots_and_wrong_lengths_are_errors() {
        let mut swag = Swag::new(2, 1);
        let mut rng = Seed(0).rng();
        assert!(matches!(
            swag.sample(SwagCovariance::Diagonal, &mut rng),
            Err(Error::TooFewSnapshots { needed: 1, .. })
        ));
        assert!(matches!(
            swag.collect(&snapshot(&[1.0, 2.0, 3.0])),
            Err(Error::SnapshotLength {
                expected: 2,
                actual: 3
            })
        ));
        assert!(swag.collect(&snapshot(&[f64::NAN, 0.0])).is_err());
        swag.collect(&snapshot(&[1.0, 2.0])).unwrap();
        swag.collect(&snapshot(&[2.0, 2.0])).unwrap();
        assert!(swag.sample(SwagCovariance::Diagonal, &mut rng).is_ok());
        // K = 1 keeps one deviation: the low-rank part needs two.
        assert!(matches!(
            swag.sample(SwagCovariance::LowRankPlusDiagonal, &mut rng),
            Err(Error::TooFewSnapshots {
                needed: 2,
                collected: 1,
                ..
            })
        ));
        let err = SwagConfig {
            snapshots: 0,
            ..SwagConfig::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(err.param, "snapshots");
    }

    /// A linear model on y = 2x − 0.5 + noise, 40 points, σ = 0.3, and its ridge solution.
    fn linear_problem() -> (Network, Tensor, Tensor, [f64; 2]) {
        use rand::Rng;
        let mut rng = Seed(5).rng();
        let xs: Vec<f64> = (0..40).map(|i| i as f64 / 20.0 - 1.0).collect();
        let ys: Vec<f64> = xs
            .iter()
            .map(|x| 2.0 * x - 0.5 + 0.5 * (rng.random::<f64>() - 0.5))
            .collect();
        let lambda = 1.0;
        let s2 = 0.09;
        // (XᵀX/σ² + λI) θ = Xᵀy/σ², X = [x, 1].
        let (sxx, sx, sxy, sy) = (
            xs.iter().map(|x| x * x).sum::<f64>() / s2 + lambda,
            xs.iter().sum::<f64>() / s2,
            xs.iter().zip(&ys).map(|(x, y)| x * y).sum::<f64>() / s2,
            ys.iter().sum::<f64>() / s2,
        );
        let d = 40.0 / s2 + lambda;
        let det = sxx * d - sx * sx;
        let ridge = [(d * sxy - sx * sy) / det, (sxx * sy - sx * sxy) / det];
        let model = Network::from(Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity)).unwrap());
        let x = Tensor::from_vec(xs, (40, 1), &Device::Cpu).unwrap();
        let y = Tensor::from_vec(ys, (40, 1), &Device::Cpu).unwrap();
        (model, x, y, ridge)
    }

    #[test]
    fn snapshot_schedules_in_steps_and_epochs_agree() {
        let (model, x, y, ridge) = linear_problem();
        let theta0 = snapshot(&ridge);
        let lik = Likelihood::Gaussian { sigma: 0.3 };
        let base = SwagConfig {
            learning_rate: 1e-3,
            batch_size: 20, // two steps per epoch
            snapshots: 6,
            rank: 3,
            ..SwagConfig::default()
        };
        let train = |config: SwagConfig| {
            train_swag(&model, &theta0, lik, &x, &y, &config.check().unwrap()).unwrap()
        };
        let by_epochs = train(base.clone());
        let by_steps = train(SwagConfig {
            snapshot_every: 2,
            snapshot_unit: SnapshotUnit::Steps,
            ..base.clone()
        });
        // Every second step is the end of an epoch: the same snapshots, bit for bit.
        assert_eq!(by_epochs.losses.len(), 6);
        assert_eq!(by_steps.losses, by_epochs.losses);
        let (steps, epochs) = (by_steps.posterior.swag(), by_epochs.posterior.swag());
        assert_eq!(steps.mean(), epochs.mean());
        assert_eq!(steps.variances(), epochs.variances());
        // Every third step, seven snapshots: 21 steps, i.e. ten full epochs and one step.
        let odd = train(SwagConfig {
            snapshots: 7,
            snapshot_every: 3,
            snapshot_unit: SnapshotUnit::Steps,
            ..base
        });
        assert_eq!(odd.posterior.swag().n_snapshots(), 7);
        assert_eq!(odd.losses.len(), 11);
    }

    #[test]
    fn subnetwork_swag_moves_only_its_subset() {
        // Only the slope w moves, from θ₀ = (0, 0): the intercept keeps 0 exactly (mean 0,
        // variance 0), and the slope's SWA mean sits within 3 SWAG standard deviations of its
        // ridge optimum given b = 0, w* = (Σ x y/σ²)/(Σ x²/σ² + λ).
        let (model, x, y, _) = linear_problem();
        let lik = Likelihood::Gaussian { sigma: 0.3 };
        let config = |subset: Vec<usize>| {
            SwagConfig {
                learning_rate: 5e-2,
                batch_size: 10,
                snapshots: 50,
                rank: 10,
                subset: Some(subset),
                ..SwagConfig::default()
            }
            .check()
            .unwrap()
        };
        let theta0 = snapshot(&[0.0, 0.0]);
        let fit = train_swag(&model, &theta0, lik, &x, &y, &config(vec![0])).unwrap();
        let (mean, var) = (
            fit.posterior.swag().mean(),
            fit.posterior.swag().variances(),
        );
        assert_eq!((mean[1], var[1]), (0.0, 0.0));
        let xs = x.flatten_all().unwrap().to_vec1::<f64>().unwrap();
        let ys = y.flatten_all().unwrap().to_vec1::<f64>().unwrap();
        let (sxy, sxx) = xs.iter().zip(&ys).fold((0.0, 0.0), |(a, b), (xi, yi)| {
            (a + xi * yi / 0.09, b + xi * xi / 0.09)
        });
        let w_star = sxy / (sxx + 1.0);
        assert!(var[0] > 0.0);
        assert!(
            (mean[0] - w_star).abs() <= 3.0 * var[0].sqrt(),
            "{} vs {w_star} (sd {})",
            mean[0],
            var[0].sqrt()
        );
        let err = train_swag(&model, &theta0, lik, &x, &y, &config(vec![2])).unwrap_err();
        assert!(err.to_string().contains("parameter index 2"), "{err}");
    }

    #[test]
    fn swag_on_linear_regression_centres_on_the_map_and_predicts_a_mixture() {
        // SGD with a constant step from the MAP of a quadratic loss wanders around it: the SWA
        // mean must sit within 3 SWAG standard deviations of the ridge solution (the iterates
        // are autocorrelated, so the mean is no tighter than that), with positive variances.
        let (model, x, y, ridge) = linear_problem();
        let lik = Likelihood::Gaussian { sigma: 0.3 };
        let config = SwagConfig {
            learning_rate: 5e-2,
            batch_size: 10,
            snapshots: 50,
            rank: 10,
            ..SwagConfig::default()
        }
        .check()
        .unwrap();
        let fit = train_swag(&model, &snapshot(&ridge), lik, &x, &y, &config).unwrap();
        let swag = fit.posterior.swag();
        let var = swag.variances();
        for i in 0..2 {
            assert!(var[i] > 0.0);
            assert!(
                (swag.mean()[i] - ridge[i]).abs() <= 3.0 * var[i].sqrt(),
                "{:?} vs {ridge:?}, var {var:?}",
                swag.mean()
            );
        }
        // The predictive mixes S = 8 draws, draw s from the stream seed.index(s).
        let options = PredictOptions {
            samples: 8,
            seed: Seed(2),
            ..PredictOptions::default()
        };
        let xt = rows(&x, &[0, 20, 39]).unwrap();
        let pred = fit.posterior.predictive(&xt, &options).unwrap();
        let Predictive::GaussianMixture { means, .. } = &pred else {
            panic!("expected a Gaussian mixture, got {pred:?}");
        };
        assert_eq!(means.dims(), &[8, 3, 1]);
        let mut average = vec![0.0; 3];
        for s in 0..8 {
            let theta = swag
                .sample(
                    SwagCovariance::LowRankPlusDiagonal,
                    &mut options.seed.index(s).rng(),
                )
                .unwrap();
            let f: Vec<Vec<f64>> = model.forward(&theta, &xt).unwrap().to_vec2().unwrap();
            for (a, f) in average.iter_mut().zip(f) {
                *a += f[0] / 8.0;
            }
        }
        let mean: Vec<Vec<f64>> = pred.mean().unwrap().to_vec2().unwrap();
        assert!(
            close(&mean.concat(), &average, 1e-12),
            "{mean:?} vs {average:?}"
        );
    }
}
