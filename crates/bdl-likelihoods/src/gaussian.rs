//! The homoscedastic Gaussian likelihood p(y | f) = N(y; f, σ² I).

use std::f64::consts::PI;

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

/// ∂(−log p)/∂f = (f − y)/σ², `[N, K]`.
pub(crate) fn grad_f(sigma: f64, f: &Tensor, y: &Tensor) -> Result<Tensor> {
    Ok(residuals(f, y)?.affine(1.0 / (sigma * sigma), 0.0)?)
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
