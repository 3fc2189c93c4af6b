//! The homoscedastic Gaussian likelihood p(y | f) = N(y; f, σ² I).

use std::f64::consts::PI;

use bdl_tensor::Real;
use candle_core::{D, DType, Tensor};

use crate::function::FunctionGaussian;
use crate::{Error, Predictive, Result, check, ops};

/// log p(y_n | f_n) = −½ Σ_k (y_nk − f_nk)²/σ² − (K/2) log(2πσ²), `[N]`.
pub(crate) fn log_lik(sigma: f64, f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let k = f.dim(1)? as f64;
    let r2 = residuals(f, y)?.sqr()?.sum(D::Minus1)?;
    Ok(r2.affine(
        -0.5 / (sigma * sigma),
        -0.5 * k * (2.0 * PI * sigma * sigma).ln(),
    )?)
}

/// ∂(−log p)/∂f = (f − y)/σ², `[N, K]`. On the CPU one pass over the elements where they lie
/// (a network's backward pass asks for it at every step, where candle's two operations and
/// their buffers cost more than the arithmetic); the numbers are those of
/// `residuals(f, y)?.affine(σ⁻², 0)`, in the same operations and roundings.
pub(crate) fn grad_f(sigma: f64, f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let scale = 1.0 / (sigma * sigma);
    if bdl_tensor::host_kernels(f.device()) {
        let (n, k) = f.dims2()?;
        let y = check::real_targets(y, n, k, f.dtype(), "y")?;
        match f.dtype() {
            DType::F32 => return scaled_residuals::<f32>(scale, f, &y),
            DType::F64 => return scaled_residuals::<f64>(scale, f, &y),
            _ => {}
        }
    }
    Ok(residuals(f, y)?.affine(scale, 0.0)?)
}

/// (f − y) · scale + 0 elementwise in T, as candle's subtraction and `affine(scale, 0)` compute
/// it (the + 0 included: it turns −0 into +0).
fn scaled_residuals<T: Real>(scale: f64, f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (mul, add) = (T::from_f64(scale), T::from_f64(0.0));
    let r: Vec<T> = bdl_tensor::elements::<T>(f)?
        .iter()
        .zip(bdl_tensor::elements::<T>(y)?.iter())
        .map(|(&f, &y)| (f - y) * mul + add)
        .collect();
    Ok(Tensor::from_vec(r, f.shape(), f.device())?)
}

/// Λ_n = σ⁻² I (scale = σ⁻²) or its factor L_n = σ⁻¹ I (scale = σ⁻¹), `[N, K, K]`.
pub(crate) fn scaled_identity(f: &Tensor, scale: f64) -> Result<Tensor> {
    ops::diag_embed(&f.ones_like()?.affine(scale, 0.0)?)
}

/// ∂ log p(y_n | f_n)/∂ log σ = Σ_k (y_nk − f_nk)²/σ² − K, `[N]`.
pub(crate) fn grad_log_sigma(sigma: f64, f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let k = f.dim(1)? as f64;
    let r2 = residuals(f, y)?.sqr()?.sum(D::Minus1)?;
    Ok(r2.affine(1.0 / (sigma * sigma), -k)?)
}

/// The maximum-likelihood σ: σ² = (1/(N K)) Σ_nk (y_nk − f_nk)², accumulated in f64.
pub(crate) fn sigma_mle(f: &Tensor, y: &Tensor) -> Result<f64> {
    let r = residuals(f, y)?.to_dtype(DType::F64)?;
    let sigma = r.sqr()?.mean_all()?.to_scalar::<f64>()?.sqrt();
    if sigma > 0.0 {
        Ok(sigma)
    } else {
        Err(Error::ZeroResidual)
    }
}

/// The predictive N(m, diag Σ + σ²) of y = f + ε; off-diagonal covariances are dropped (the
/// predictive keeps independent outputs).
pub(crate) fn predictive(sigma: f64, g: &FunctionGaussian) -> Result<Predictive> {
    let (n, k) = (g.n(), g.k());
    let var: Vec<f64> = (0..n * k)
        .map(|i| g.variance(i / k, i % k) + sigma * sigma)
        .collect();
    let mean = Tensor::from_slice(g.means(), (n, k), g.device())?;
    Predictive::gaussian(&mean, &Tensor::from_vec(var, (n, k), g.device())?)
}

/// f − y, `[N, K]`, with `y` validated as real targets in f's dtype.
fn residuals(f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (n, k) = f.dims2()?;
    let y = check::real_targets(y, n, k, f.dtype(), "y")?;
    Ok((f - y)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_tensor::ChaCha8Rng;
    use candle_core::Device;
    use rand::{Rng, SeedableRng};

    /// The one-pass gradient gives candle's two operations' numbers bit for bit, in f32 and
    /// f64, with targets as `[N]` or `[N, K]`, in the other dtype, and for outputs laid out
    /// transposed. The first row has f = y, and the second begins with f = −0, y = +0, whose
    /// residual −0 the + 0 turns into +0.
    #[test]
    fn the_one_pass_gradient_is_candles_to_the_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (n, k, sigma) = (37, 3, 0.37);
        let mut f: Vec<f64> = (0..n * k).map(|_| rng.random_range(-5.0..5.0)).collect();
        let mut y: Vec<f64> = (0..n * k).map(|_| rng.random_range(-5.0..5.0)).collect();
        f[..k].copy_from_slice(&y[..k]);
        (f[k], y[k]) = (-0.0, 0.0);
        let dev = &Device::Cpu;
        let f = Tensor::from_vec(f, (n, k), dev).unwrap();
        let y = Tensor::from_vec(y, (n, k), dev).unwrap();
        let bits = |t: &Tensor| -> Vec<u64> {
            let t = t.to_dtype(DType::F64).unwrap().flatten_all().unwrap();
            t.to_vec1::<f64>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        for dtype in [DType::F32, DType::F64] {
            let f = f.to_dtype(dtype).unwrap();
            let candle = residuals(&f, &y)
                .unwrap()
                .affine(1.0 / (sigma * sigma), 0.0)
                .unwrap();
            for y in [y.clone(), y.to_dtype(dtype).unwrap()] {
                assert_eq!(
                    bits(&grad_f(sigma, &f, &y).unwrap()),
                    bits(&candle),
                    "{dtype:?}"
                );
            }
            let f_t = f.t().unwrap().contiguous().unwrap().t().unwrap();
            assert!(!f_t.is_contiguous());
            assert_eq!(bits(&grad_f(sigma, &f_t, &y).unwrap()), bits(&candle));
            let column = f.narrow(1, 0, 1).unwrap();
            let targets = y.narrow(1, 0, 1).unwrap().flatten_all().unwrap();
            let candle = residuals(&column, &targets)
                .unwrap()
                .affine(1.0 / (sigma * sigma), 0.0);
            assert_eq!(
                bits(&grad_f(sigma, &column, &targets).unwrap()),
                bits(&candle.unwrap())
            );
        }
        let zero = grad_f(sigma, &f, &y).unwrap().flatten_all().unwrap();
        assert!(
            zero.to_vec1::<f64>().unwrap()[..=k]
                .iter()
                .all(|v| v.to_bits() == 0)
        );
    }
}
