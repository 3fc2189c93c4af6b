//! The Monte Carlo mixture predictive shared by every sampled posterior, and batched forward
//! passes.

use bdl_likelihoods::Predictive;
use bdl_models::Model;
use bdl_tensor::ChaCha8Rng;
use candle_core::Tensor;
use rayon::prelude::*;

use crate::{InvalidParam, Result};

/// Components per parallel task: each group is summed on its own and the groups' sums are added
/// in order, so the result does not depend on the number of threads.
const GROUP: usize = 16;

/// The equally weighted mixture (1/S) Σ_s p_s of the S predictives `component(s)`: ensembles,
/// Monte Carlo samples, chain draws.
///
/// Components are evaluated in parallel (rayon) in fixed groups of 16; categorical components
/// are summed within each group and the groups' sums added in order (memory: one predictive
/// per group), Gaussian components are kept, in order, as a Gaussian mixture. The result is
/// the same on any number of threads.
///
/// ```
/// use bdl_likelihoods::Likelihood;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_inference::Error> {
/// let lik = Likelihood::Bernoulli;
/// // Logits −1, 0, 1 at one point: the mixture averages σ(f).
/// let pred = bdl_inference::mixture(3, |s| {
///     let f = Tensor::new(&[[s as f64 - 1.0]], &Device::Cpu)?;
///     Ok(lik.point_predictive(&f)?)
/// })?;
/// let p1 = pred.probs()?.to_vec2::<f64>()?[0][1];
/// assert!((p1 - 0.5).abs() < 1e-15);
/// # Ok(()) }
/// ```
pub fn mixture(
    samples: usize,
    component: impl Fn(usize) -> Result<Predictive> + Sync,
) -> Result<Predictive> {
    match samples {
        0 => return Err(InvalidParam::new("samples", 0, ">= 1").into()),
        1 => return component(0), // a mixture of one component is that component
        _ => {}
    }
    let groups = (0..samples.div_ceil(GROUP))
        .into_par_iter()
        .map(|g| {
            let members = g * GROUP..((g + 1) * GROUP).min(samples);
            let first = component(members.start)?;
            if !first.is_categorical() {
                let mut parts = vec![first];
                for s in members.skip(1) {
                    parts.push(component(s)?);
                }
                return Ok(Group::Components(parts));
            }
            let mut sum = first.probs()?;
            for s in members.skip(1) {
                sum = (sum + component(s)?.probs()?)?;
            }
            Ok(Group::ProbSum(sum))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut components = Vec::new();
    let mut sum: Option<Tensor> = None;
    for group in groups {
        match group {
            Group::Components(parts) => components.extend(parts),
            Group::ProbSum(s) => {
                sum = Some(match sum {
                    None => s,
                    Some(total) => (total + s)?,
                })
            }
        }
    }
    match sum {
        Some(_) if !components.is_empty() => Err(bdl_likelihoods::Error::WrongKind {
            op: "bdl_inference::mixture",
            expected: "components of one family (all Gaussian or all categorical)",
            actual: "both",
        }
        .into()),
        Some(total) => Ok(Predictive::categorical(
            &total.affine(1.0 / samples as f64, 0.0)?,
        )?),
        None => Ok(Predictive::mixture(&components)?),
    }
}

enum Group {
    Components(Vec<Predictive>),
    ProbSum(Tensor),
}

/// f(x; θ) over the rows of `x` in batches of `batch_size` (at most the model's
/// [`rows_per_pass`](Model::rows_per_pass)), with dropout masks from `dropout` when given (drawn
/// batch after batch), concatenated to `[N, K]`.
pub fn forward_batched(
    model: &impl Model,
    theta: &Tensor,
    x: &Tensor,
    batch_size: usize,
    mut dropout: Option<&mut ChaCha8Rng>,
) -> Result<Tensor> {
    let n = crate::n_rows(x, "x")?;
    let batch_size = batch_size.clamp(1, model.rows_per_pass().max(1));
    if n <= batch_size {
        return Ok(model.forward_with(theta, x, dropout)?);
    }
    let parts = (0..n)
        .step_by(batch_size)
        .map(|start| {
            let xb = x.narrow(0, start, batch_size.min(n - start))?;
            Ok(model.forward_with(theta, &xb, dropout.as_deref_mut())?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Tensor::cat(&parts, 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_likelihoods::Likelihood;
    use bdl_models::{Activation, Mlp, MlpSpec};
    use bdl_tensor::Seed;
    use candle_core::{DType, Device};

    /// The grouped mixture equals the plain average of the per-draw predictives, for every
    /// likelihood, with S spanning several groups (f64 sums of ≤ 40 probabilities agree to
    /// 1e-14; the Gaussian mixture keeps the components themselves).
    #[test]
    fn grouped_mixture_is_the_average_of_the_components() {
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
            let point = |s: usize| -> Result<Predictive> {
                let f = mlp.forward(&draws.get(s)?, &x)?;
                Ok(lik.point_predictive(&f)?)
            };
            let pred = mixture(37, point).unwrap();
            let each: Vec<Predictive> = (0..37).map(|s| point(s).unwrap()).collect();
            let reference = Predictive::mixture(&each).unwrap();
            for (a, b) in [
                (pred.mean().unwrap(), reference.mean().unwrap()),
                (pred.variance().unwrap(), reference.variance().unwrap()),
            ] {
                let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap();
                assert!(diff.to_scalar::<f64>().unwrap() < 1e-12, "{lik:?}");
            }
        }
        assert!(mixture(0, |_| unreachable!()).is_err());
    }

    #[test]
    fn batched_forward_equals_one_pass() {
        let dev = Device::Cpu;
        let mlp = Mlp::new(MlpSpec::new(&[3, 6, 2], Activation::Relu)).unwrap();
        let theta = mlp.init(Seed(0), DType::F64, &dev).unwrap();
        let x =
            bdl_tensor::normal(&mut Seed(1).rng(), (11, 3), 0.0, 1.0, DType::F64, &dev).unwrap();
        let whole = bdl_tensor::to_f64_vec(&mlp.forward(&theta, &x).unwrap()).unwrap();
        for b in [1, 4, 11, 64] {
            let f = forward_batched(&mlp, &theta, &x, b, None).unwrap();
            assert_eq!(bdl_tensor::to_f64_vec(&f).unwrap(), whole, "batch {b}");
        }
        let scalar = Tensor::new(1.0f64, &dev).unwrap();
        assert!(forward_batched(&mlp, &theta, &scalar, 4, None).is_err());
    }
}
