//! The function-space view of a posterior: its belief about the network outputs f at chosen
//! inputs, as moments ([`FunctionMoments`]) and as draws joint across the inputs.

use bdl_models::Model;
use candle_core::{DType, Device, Tensor};

use crate::{Result, forward_batched};

/// The moments of f at N inputs: per input the mean of its K outputs and their covariance.
///
/// ```
/// use bdl_inference::FunctionMoments;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_inference::Error> {
/// // Two draws of f at one input with two outputs: (0, 1) and (2, 5).
/// let draws = Tensor::new(&[[[0.0f64, 1.0]], [[2.0, 5.0]]], &Device::Cpu)?;
/// let m = FunctionMoments::of_draws(&draws)?;
/// assert_eq!(m.mean.to_vec2::<f64>()?, [[1.0, 3.0]]);
/// // Covariances with 1/S: var 1 and 4, covariance 2.
/// assert_eq!(m.covariance.to_vec3::<f64>()?, [[[1.0, 2.0], [2.0, 4.0]]]);
/// assert_eq!(m.variance()?.to_vec2::<f64>()?, [[1.0, 4.0]]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FunctionMoments {
    /// E[f(x_n)], `[N, K]` (f64).
    pub mean: Tensor,
    /// Cov[f(x_n)] across the K outputs, `[N, K, K]` (f64).
    pub covariance: Tensor,
}

impl FunctionMoments {
    /// The empirical moments of S draws of f, `[S, N, K]`: the mean over draws and the
    /// covariance with 1/S, each entry summed in draw order in f64 (two passes, the mean
    /// first).
    pub fn of_draws(draws: &Tensor) -> Result<Self> {
        let (s, n, k) = draws.dims3()?;
        let f: Vec<f64> = bdl_tensor::to_f64_vec(draws)?;
        let at = |draw: usize, row: usize, out: usize| f[(draw * n + row) * k + out];
        let mut mean = vec![0.0; n * k];
        for (i, m) in mean.iter_mut().enumerate() {
            *m = (0..s).map(|d| at(d, i / k, i % k)).sum::<f64>() / s as f64;
        }
        let mut covariance = vec![0.0; n * k * k];
        for row in 0..n {
            for a in 0..k {
                for b in 0..k {
                    let (ma, mb) = (mean[row * k + a], mean[row * k + b]);
                    covariance[(row * k + a) * k + b] = (0..s)
                        .map(|d| (at(d, row, a) - ma) * (at(d, row, b) - mb))
                        .sum::<f64>()
                        / s as f64;
                }
            }
        }
        Ok(Self {
            mean: Tensor::from_vec(mean, (n, k), &Device::Cpu)?,
            covariance: Tensor::from_vec(covariance, (n, k, k), &Device::Cpu)?,
        })
    }

    /// The variances of the outputs, the covariances' diagonals, `[N, K]`.
    pub fn variance(&self) -> Result<Tensor> {
        let (n, k, _) = self.covariance.dims3()?;
        let c = bdl_tensor::to_f64_vec(&self.covariance)?;
        let v: Vec<f64> = (0..n * k).map(|i| c[i * k + i % k]).collect();
        Ok(Tensor::from_vec(v, (n, k), &Device::Cpu)?)
    }
}

/// f(x; θ_s) at each row θ_s of `weights` (`[S, D]`), `[S, N, K]` in f64, `batch_size` rows of x
/// per forward pass.
pub fn outputs_at(
    model: &impl Model,
    weights: &Tensor,
    x: &Tensor,
    batch_size: usize,
) -> Result<Tensor> {
    let s = weights.dims2()?.0;
    let x = x.to_dtype(weights.dtype())?;
    let draws = (0..s)
        .map(|i| {
            Ok(
                forward_batched(model, &weights.get(i)?, &x, batch_size, None)?
                    .to_dtype(DType::F64)?,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Tensor::stack(&draws, 0)?)
}
