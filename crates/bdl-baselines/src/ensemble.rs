//! Deep ensembles (Lakshminarayanan et al. 2017): independently seeded MAP fits, mixed.

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    FunctionMoments, Holdout, InvalidParam, MapConfig, MapEstimate, MapFit, Posterior,
    PredictOptions, Prediction, Predictor, Valid, Validate, at_least_one, paired_rows,
    train_map_on,
};
use bdl_likelihoods::Likelihood;
use bdl_models::Network;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use rand::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::Result;

/// How to train a deep ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnsembleConfig {
    /// M, the number of members (5 in the subnetwork-inference paper's baselines).
    pub members: usize,
    /// How each member is trained. Its `seed` is the ensemble's: member m starts from
    /// `network.init(seed.index(m))` and shuffles (and drops out) with `seed.index(m)`; the
    /// held-out split, if any, comes from `seed` and is the same for every member.
    pub map: MapConfig,
    /// Train the members in parallel (rayon). The result does not depend on it.
    pub parallel: bool,
}

impl Default for EnsembleConfig {
    fn default() -> Self {
        Self {
            members: 5,
            map: MapConfig::default(),
            parallel: true,
        }
    }
}

impl Validate for EnsembleConfig {
    /// At least one member and a valid MAP configuration.
    fn validate(&self) -> Result<(), InvalidParam> {
        at_least_one("members", self.members)?;
        self.map.validate().map_err(|e| e.within("map"))
    }
}

/// A deep ensemble: M MAP estimates of one network, each with its own likelihood (its own σ
/// when learned). The predictive is the mixture (1/M) Σ_m p(y* | f(x*; θ_m)): a Gaussian
/// mixture for regression, averaged class probabilities for classification.
#[derive(Clone, Debug)]
pub struct Ensemble {
    members: Vec<MapEstimate>,
}

impl Ensemble {
    /// The ensemble of `members`: at least one, all of one network and likelihood family.
    pub fn new(members: Vec<MapEstimate>) -> Result<Self> {
        let Some(first) = members.first() else {
            return Err(InvalidParam::new("members", 0, ">= 1").into());
        };
        let (spec, family) = (
            first.network().spec(),
            std::mem::discriminant(&first.likelihood()),
        );
        for (m, member) in members.iter().enumerate() {
            bdl_inference::require(
                member.network().spec() == spec
                    && std::mem::discriminant(&member.likelihood()) == family,
                "members",
                format!(
                    "member {m}: {:?} under {:?}",
                    member.network().spec(),
                    member.likelihood()
                ),
                "of one network and one likelihood family",
            )?;
        }
        Ok(Self { members })
    }

    /// M, the number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there are no members (never: [`new`](Self::new) refuses it).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Member m.
    pub fn member(&self, m: usize) -> &MapEstimate {
        &self.members[m]
    }
}

const KIND: &str = "ensemble";

impl Posterior for Ensemble {
    fn method(&self) -> &str {
        "deep ensemble"
    }

    /// Member 0's network and likelihood (with learned σ, each member keeps its own for the
    /// predictive).
    fn predictor(&self) -> &Predictor {
        self.members[0].predictor()
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        bdl_inference::mixture(self.members.len(), |m| {
            self.members[m].predictive(x, options)
        })
    }

    /// The moments over every member (exact, not a resample).
    fn f_moments(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<FunctionMoments> {
        let options = options.clone().check()?;
        let f = bdl_inference::outputs_at(self.network(), &self.stacked()?, x, options.batch_size)?;
        FunctionMoments::of_draws(&f)
    }

    /// `n` members drawn uniformly with replacement from the stream of `seed`.
    fn sample(&self, n: usize, seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        let mut rng = seed.rng();
        let picks: Vec<u32> = (0..n)
            .map(|_| rng.random_range(0..self.members.len() as u32))
            .collect();
        let index = Tensor::from_vec(picks, n, &Device::Cpu)?;
        Ok(Some(self.stacked()?.index_select(&index, 0)?))
    }

    /// Saves the members' parameters; the sidecar lists each member's likelihood and seed.
    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let members: Vec<SavedMember> = self
            .members
            .iter()
            .map(|m| SavedMember {
                likelihood: m.likelihood(),
                seed: m.seed(),
            })
            .collect();
        let header = Header {
            kind: KIND,
            predictor: self.predictor(),
            seed: None,
            config: &members,
        };
        checkpoint::save(path, &header, vec![("members", self.stacked()?)])
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<Vec<SavedMember>>(path, KIND)?;
        let thetas = saved.tensor("members", &[saved.config.len(), saved.n_params()])?;
        let members = saved
            .config
            .iter()
            .enumerate()
            .map(|(i, member)| {
                let predictor = saved.predictor.with_likelihood(member.likelihood)?;
                let map = MapEstimate::of(predictor, thetas.get(i)?)?;
                Ok(match member.seed {
                    Some(seed) => map.with_seed(seed),
                    None => map,
                })
            })
            .collect::<bdl_inference::Result<Vec<_>>>()?;
        Ok(Self::new(members)?)
    }
}

/// A member as the sidecar records it.
#[derive(Serialize, Deserialize)]
struct SavedMember {
    likelihood: Likelihood,
    seed: Option<Seed>,
}

impl Ensemble {
    /// The members' parameters, `[M, D]`.
    fn stacked(&self) -> bdl_inference::Result<Tensor> {
        let thetas: Vec<&Tensor> = self.members.iter().map(|m| m.theta()).collect();
        Ok(Tensor::stack(&thetas, 0)?)
    }
}

/// A trained ensemble and each member's training record.
#[derive(Clone, Debug)]
pub struct EnsembleFit {
    /// The posterior.
    pub posterior: Ensemble,
    /// Member m's MAP fit at index m (losses, validation).
    pub members: Vec<MapFit>,
}

/// Trains M members by [`train_map`](bdl_inference::train_map), member m from
/// `network.init(seed.index(m))` in `dtype` (on the device of `x`) with minibatch (and
/// dropout) streams from `seed.index(m)`, `seed` = `config.map.seed`.
///
/// Members are independent, so with `parallel` they train on rayon's pool; each member's
/// numbers depend only on its seed, so the ensemble is the same either way.
///
/// ```
/// use bdl_baselines::{EnsembleConfig, train_ensemble};
/// use bdl_inference::{MapConfig, Posterior, PredictOptions, Validate};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Network};
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?);
/// let x = Tensor::arange(0u32, 20, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.1, -1.0)?.unsqueeze(1)?;
/// let y = x.sqr()?;
/// let config = EnsembleConfig {
///     members: 3,
///     map: MapConfig { learning_rate: 1e-2, epochs: 30, ..MapConfig::default() },
///     ..EnsembleConfig::default()
/// }
/// .check()?;
/// let fit = train_ensemble(&net, Likelihood::Gaussian { sigma: 0.1 }, &x, &y, DType::F32, &config)?;
/// let pred = fit.posterior.predictive(&x, &PredictOptions::default())?; // 3 Gaussians per point
/// assert_eq!(pred.variance()?.dims(), &[20, 1]);
/// # Ok(()) }
/// ```
pub fn train_ensemble(
    network: &Network,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    dtype: DType,
    config: &Valid<EnsembleConfig>,
) -> Result<EnsembleFit> {
    let map = config.map.clone().check()?;
    let holdout = Holdout::of(paired_rows(x, y)?, &map)?;
    let member = |m: usize| -> Result<MapFit> {
        let seed = map.seed.index(m as u64);
        let theta0 = network.init(seed, dtype, x.device())?;
        Ok(train_map_on(
            network,
            &theta0,
            likelihood,
            x,
            y,
            &map,
            holdout.as_ref(),
            seed,
        )?)
    };
    let members = if config.parallel {
        (0..config.members)
            .into_par_iter()
            .map(member)
            .collect::<Result<Vec<_>>>()?
    } else {
        (0..config.members)
            .map(member)
            .collect::<Result<Vec<_>>>()?
    };
    let posterior = Ensemble::new(members.iter().map(|f| f.estimate.clone()).collect())?;
    Ok(EnsembleFit { posterior, members })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_inference::train_map;
    use bdl_models::{Activation, Mlp, MlpSpec};
    use candle_core::Device;

    fn values(t: &Tensor) -> Vec<f64> {
        bdl_tensor::to_f64_vec(t).unwrap()
    }

    fn probs(p: &impl Posterior, x: &Tensor) -> Vec<f64> {
        let pred = p.predictive(x, &PredictOptions::default()).unwrap();
        values(&pred.probs().unwrap())
    }

    /// Three classes of 2-D points on rays (angle by class, noisy radius): 30 points.
    fn classification() -> (Network, Tensor, Tensor) {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for i in 0..30u32 {
            let class = i % 3;
            let angle = f32::from(class as u8) * 2.1 + 0.05 * (i as f32).sin();
            let r = 0.5 + 0.05 * i as f32;
            xs.extend([r * angle.cos(), r * angle.sin()]);
            ys.push(class);
        }
        let mlp = Mlp::new(MlpSpec::new(&[2, 16, 3], Activation::Relu)).unwrap();
        let x = Tensor::from_vec(xs, (30, 2), &Device::Cpu).unwrap();
        let y = Tensor::from_vec(ys, 30, &Device::Cpu).unwrap();
        (mlp.into(), x, y)
    }

    fn config(members: usize, parallel: bool) -> EnsembleConfig {
        EnsembleConfig {
            members,
            map: MapConfig {
                learning_rate: 1e-2,
                epochs: 40,
                batch_size: 10,
                seed: Seed(21),
                ..MapConfig::default()
            },
            parallel,
        }
    }

    fn train(net: &Network, x: &Tensor, y: &Tensor, config: EnsembleConfig) -> EnsembleFit {
        let lik = Likelihood::Categorical { classes: 3 };
        train_ensemble(net, lik, x, y, DType::F32, &config.check().unwrap()).unwrap()
    }

    #[test]
    fn one_member_is_the_map_fit() {
        // Same init, same streams, same arithmetic: the member is the MAP fit bit for bit, and
        // the ensemble's predictive is exactly the one-component mixture of the MAP predictive
        // (`bdl_inference::mixture` renormalises the averaged probabilities, which can move
        // the last bit, so the reference goes through the same mixture).
        let (net, x, y) = classification();
        let c = config(1, false);
        let ens = train(&net, &x, &y, c.clone());
        let seed = c.map.seed.index(0);
        let theta0 = net.init(seed, DType::F32, &Device::Cpu).unwrap();
        let map_config = MapConfig { seed, ..c.map }.check().unwrap();
        let lik = Likelihood::Categorical { classes: 3 };
        let map = train_map(&net, &theta0, lik, &x, &y, &map_config).unwrap();
        let member = ens.posterior.member(0);
        assert_eq!(values(member.theta()), values(map.estimate.theta()));
        assert_eq!(member.likelihood(), map.estimate.likelihood());
        assert_eq!(ens.members[0].losses, map.losses);
        assert_eq!(probs(&ens.posterior, &x), probs(&map.estimate, &x));
    }

    #[test]
    fn members_differ_and_the_mixture_averages_them() {
        let (net, x, y) = classification();
        let ens = train(&net, &x, &y, config(4, true));
        assert_eq!(ens.posterior.len(), 4);
        let thetas: Vec<Vec<f64>> = (0..4)
            .map(|m| values(ens.posterior.member(m).theta()))
            .collect();
        for a in 0..4 {
            for b in a + 1..4 {
                assert_ne!(thetas[a], thetas[b], "members {a} and {b}");
            }
        }
        // The mixture's probabilities are the average of the members' (f64 sums of 4 terms:
        // 1e-15).
        let mixed = probs(&ens.posterior, &x);
        let mut average = vec![0.0; mixed.len()];
        for m in &ens.members {
            let p = probs(&m.estimate, &x);
            average.iter_mut().zip(p).for_each(|(a, p)| *a += p / 4.0);
        }
        assert!(
            mixed
                .iter()
                .zip(&average)
                .all(|(p, a)| (p - a).abs() <= 1e-15)
        );
        // Parallel and sequential training give the same members.
        let seq = train(&net, &x, &y, config(4, false));
        for m in 0..4 {
            assert_eq!(
                values(ens.posterior.member(m).theta()),
                values(seq.posterior.member(m).theta())
            );
        }
    }

    #[test]
    fn members_share_the_held_out_split() {
        let (net, x, y) = classification();
        let mut c = config(2, true);
        c.map.validation_fraction = 0.2;
        c.map.epochs = 5;
        let ens = train(&net, &x, &y, c);
        let held: Vec<&Vec<usize>> = ens
            .members
            .iter()
            .map(|m| &m.validation.as_ref().unwrap().holdout.held_out)
            .collect();
        assert_eq!(held[0].len(), 6);
        assert_eq!(held[0], held[1]);
        assert_eq!(config(0, true).check().unwrap_err().param, "members");
    }
}
