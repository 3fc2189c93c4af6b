//! Deep ensembles (Lakshminarayanan et al. 2017): independently seeded MAP fits, mixed.

use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::Tensor;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::map::{fit_map, holdout};
use crate::train::paired_rows;
use crate::{Error, MapConfig, MapFit, Result};

/// How to train a deep ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnsembleConfig {
    /// M, the number of members (5 in the subnetwork-inference paper's baselines).
    pub members: usize,
    /// How each member is trained. Its `seed` is the ensemble's: member m starts from
    /// `init(seed.index(m))` and shuffles (and drops out) with `seed.index(m)`; the held-out
    /// split, if any, comes from `seed` and is the same for every member.
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

impl EnsembleConfig {
    /// Checks the configuration: at least one member and a valid MAP configuration.
    pub fn check(&self) -> Result<()> {
        if self.members == 0 {
            return Err(Error::InvalidConfig(
                "an ensemble needs members >= 1".to_owned(),
            ));
        }
        self.map.check()
    }
}

/// A trained deep ensemble.
#[derive(Clone, Debug)]
pub struct Ensemble {
    /// The members' fits, member m at index m.
    pub members: Vec<MapFit>,
}

impl Ensemble {
    /// The ensemble predictive (1/M) Σ_m p(y* | f(x*; θ_m)), each member with its own likelihood
    /// (its own σ when learned): a Gaussian mixture for regression, averaged class probabilities
    /// for classification.
    pub fn predictive(&self, model: &impl Model, x: &Tensor) -> Result<Predictive> {
        let members = self
            .members
            .iter()
            .map(|m| m.predictive(model, x))
            .collect::<Result<Vec<_>>>()?;
        Ok(Predictive::mixture(&members)?)
    }
}

/// Trains M members by [`train_map`](crate::train_map), member m from `init(seed.index(m))`
/// with minibatch (and dropout) streams from `seed.index(m)`, `seed` = `config.map.seed`.
///
/// `init` maps a seed to initial parameters (for instance `|s| mlp.init(s, DType::F32, &dev)`).
/// Members are independent, so with `parallel` they train on rayon's pool; each member's
/// numbers depend only on its seed, so the ensemble is the same either way.
///
/// ```
/// use bdl_baselines::{EnsembleConfig, MapConfig, train_ensemble};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec};
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), bdl_baselines::Error> {
/// let mlp = Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?;
/// let x = Tensor::arange(0u32, 20, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.1, -1.0)?.unsqueeze(1)?;
/// let y = x.sqr()?;
/// let config = EnsembleConfig {
///     members: 3,
///     map: MapConfig { learning_rate: 1e-2, epochs: 30, ..MapConfig::default() },
///     ..EnsembleConfig::default()
/// };
/// let init = |seed| mlp.init(seed, DType::F32, &Device::Cpu);
/// let ensemble = train_ensemble(&mlp, init, Likelihood::Gaussian { sigma: 0.1 }, &x, &y, &config)?;
/// let pred = ensemble.predictive(&mlp, &x)?; // a mixture of 3 Gaussians per point
/// assert_eq!(pred.variance()?.dims(), &[20, 1]);
/// # Ok(()) }
/// ```
pub fn train_ensemble<M, F, E>(
    model: &M,
    init: F,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &EnsembleConfig,
) -> Result<Ensemble>
where
    M: Model + Sync,
    F: Fn(Seed) -> Result<Tensor, E> + Sync,
    E: Into<Error>,
{
    config.check()?;
    let split = holdout(paired_rows(x, y)?, &config.map)?;
    let member = |m: usize| -> Result<MapFit> {
        let seed = config.map.seed.index(m as u64);
        let theta0 = init(seed).map_err(Into::into)?;
        fit_map(
            model,
            &theta0,
            likelihood,
            x,
            y,
            &config.map,
            split.clone(),
            seed,
        )
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
    Ok(Ensemble { members })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train_map;
    use bdl_models::{Activation, Mlp, MlpSpec};
    use candle_core::{DType, Device};

    fn values(t: &Tensor) -> Vec<f64> {
        bdl_tensor::to_f64_vec(t).unwrap()
    }

    /// Three classes of 2-D points on rays (angle by class, noisy radius): 30 points.
    fn classification() -> (Mlp, Tensor, Tensor) {
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
        (mlp, x, y)
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

    #[test]
    fn one_member_is_the_map_fit() {
        // Same init, same streams, same arithmetic: the predictives agree exactly.
        let (mlp, x, y) = classification();
        let lik = Likelihood::Categorical { classes: 3 };
        let init = |s| mlp.init(s, DType::F32, &Device::Cpu);
        let c = config(1, false);
        let ens = train_ensemble(&mlp, init, lik, &x, &y, &c).unwrap();
        let seed = c.map.seed.index(0);
        let map = train_map(
            &mlp,
            &init(seed).unwrap(),
            lik,
            &x,
            &y,
            &MapConfig { seed, ..c.map },
        )
        .unwrap();
        assert_eq!(
            values(&ens.predictive(&mlp, &x).unwrap().probs().unwrap()),
            values(&map.predictive(&mlp, &x).unwrap().probs().unwrap())
        );
    }

    #[test]
    fn members_differ_and_the_mixture_averages_them() {
        let (mlp, x, y) = classification();
        let lik = Likelihood::Categorical { classes: 3 };
        let init = |s| mlp.init(s, DType::F32, &Device::Cpu);
        let ens = train_ensemble(&mlp, init, lik, &x, &y, &config(4, true)).unwrap();
        assert_eq!(ens.members.len(), 4);
        let thetas: Vec<Vec<f64>> = ens.members.iter().map(|m| values(&m.theta)).collect();
        for a in 0..4 {
            for b in a + 1..4 {
                assert_ne!(thetas[a], thetas[b], "members {a} and {b}");
            }
        }
        // The mixture's probabilities are the average of the members' (f64 sums of 4 terms:
        // 1e-15).
        let probs = values(&ens.predictive(&mlp, &x).unwrap().probs().unwrap());
        let mut average = vec![0.0; probs.len()];
        for m in &ens.members {
            let p = values(&m.predictive(&mlp, &x).unwrap().probs().unwrap());
            average.iter_mut().zip(p).for_each(|(a, p)| *a += p / 4.0);
        }
        assert!(
            probs
                .iter()
                .zip(&average)
                .all(|(p, a)| (p - a).abs() <= 1e-15)
        );
        // Parallel and sequential training give the same members.
        let seq = train_ensemble(&mlp, init, lik, &x, &y, &config(4, false)).unwrap();
        for (p, s) in ens.members.iter().zip(&seq.members) {
            assert_eq!(values(&p.theta), values(&s.theta));
        }
    }

    #[test]
    fn members_share_the_held_out_split() {
        let (mlp, x, y) = classification();
        let lik = Likelihood::Categorical { classes: 3 };
        let mut c = config(2, true);
        c.map.validation_fraction = 0.2;
        c.map.epochs = 5;
        let ens = train_ensemble(
            &mlp,
            |s| mlp.init(s, DType::F32, &Device::Cpu),
            lik,
            &x,
            &y,
            &c,
        )
        .unwrap();
        let held: Vec<&Vec<usize>> = ens
            .members
            .iter()
            .map(|m| &m.validation.as_ref().unwrap().held_out)
            .collect();
        assert_eq!(held[0].len(), 6);
        assert_eq!(held[0], held[1]);
        assert!(matches!(
            train_ensemble(
                &mlp,
                |s| mlp.init(s, DType::F32, &Device::Cpu),
                lik,
                &x,
                &y,
                &config(0, true)
            ),
            Err(Error::InvalidConfig(_))
        ));
    }
}
