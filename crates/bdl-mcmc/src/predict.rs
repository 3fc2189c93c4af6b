//! Bayesian marginalisation over draws: p(y | x, D) ≈ (1/S) Σ_s p(y | x, θ_s).

use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::Model;
use candle_core::Tensor;
use rayon::prelude::*;

use crate::{Error, Result};

/// Draws per parallel task; the groups' sums are added in order, so the result does not depend
/// on the number of threads.
const GROUP: usize = 16;

/// The posterior predictive (1/S) Σ_s p(y | x, θ_s) of the draws `draws` (`[S, D]`, S ≥ 1) at the
/// inputs `x`, as a [`Predictive`] mixture: for Bernoulli and Categorical the categorical of the
/// averaged class probabilities (accuracy is its argmax, e.g. `bdl_eval::metrics::accuracy`),
/// for the Gaussian the equally weighted mixture of N(f(x; θ_s), σ²).
///
/// The draws are evaluated in parallel (rayon) in groups of 16, each group summed on its own and
/// the sums added in order, so the result is the same on any number of threads. Memory is that
/// of one predictive per group for classification, and of all S components for the Gaussian.
pub fn predictive(
    model: &(impl Model + Sync),
    likelihood: &Likelihood,
    draws: &Tensor,
    x: &Tensor,
) -> Result<Predictive> {
    let (s, _) = draws.dims2()?;
    if s == 0 {
        return Err(Error::InvalidConfig(
            "the predictive needs at least one draw".into(),
        ));
    }
    let x = x.to_dtype(draws.dtype())?;
    let point = |i: usize| -> Result<Predictive> {
        let f = model.forward(&draws.get(i)?, &x)?;
        Ok(likelihood.point_predictive(&f)?)
    };
    if let Likelihood::Gaussian { .. } = likelihood {
        let components = (0..s)
            .into_par_iter()
            .map(point)
            .collect::<Result<Vec<_>>>()?;
        return Ok(Predictive::mixture(&components)?);
    }
    let sums = (0..s.div_ceil(GROUP))
        .into_par_iter()
        .map(|g| {
            let mut sum = point(g * GROUP)?.probs()?;
            for i in g * GROUP + 1..((g + 1) * GROUP).min(s) {
                sum = (sum + point(i)?.probs()?)?;
            }
            Ok(sum)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut total = sums[0].clone();
    for part in &sums[1..] {
        total = (total + part)?;
    }
    Ok(Predictive::categorical(
        &total.affine(1.0 / s as f64, 0.0)?,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_models::{Activation, Mlp, MlpSpec};
    use bdl_tensor::Seed;
    use candle_core::{DType, Device};

    /// The mixture equals the average of the per-draw predictives, for every likelihood, with S
    /// spanning several groups (f64 sums of ≤ 40 probabilities: agreement to 1e-14).
    #[test]
    fn mixture_is_the_average_of_the_draws() {
        let dev = Device::Cpu;
        let x = bdl_tensor::normal(&mut Seed(1).rng(), (7, 3), 0.0, 1.0, DType::F64, &dev).unwrap();
        for (lik, k) in [
            (Likelihood::Bernoulli, 1),
            (Likelihood::Categorical { classes: 4 }, 4),
            (Likelihood::Gaussian { sigma: 0.3 }, 2),
        ] {
            let mlp = Mlp::new(MlpSpec::new(&[3, 5, k], Activation::Tanh)).unwrap();
            let d = mlp.layout().len();
            let draws = bdl_tensor::normal(&mut Seed(2).rng(), (37, d), 0.0, 1.0, DType::F64, &dev)
                .unwrap();
            let pred = predictive(&mlp, &lik, &draws, &x).unwrap();
            let each: Vec<Predictive> = (0..37)
                .map(|s| {
                    let f = mlp.forward(&draws.get(s).unwrap(), &x).unwrap();
                    lik.point_predictive(&f).unwrap()
                })
                .collect();
            let reference = Predictive::mixture(&each).unwrap();
            let (a, b) = (pred.mean().unwrap(), reference.mean().unwrap());
            let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap();
            assert!(diff.to_scalar::<f64>().unwrap() < 1e-14, "{lik:?}");
            let (a, b) = (pred.variance().unwrap(), reference.variance().unwrap());
            let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap();
            assert!(diff.to_scalar::<f64>().unwrap() < 1e-12, "{lik:?}");
        }
        let none = Tensor::zeros((0, 4), DType::F64, &dev).unwrap();
        let mlp = Mlp::new(MlpSpec::new(&[3, 1], Activation::Identity)).unwrap();
        assert!(predictive(&mlp, &Likelihood::Bernoulli, &none, &x).is_err());
    }
}
