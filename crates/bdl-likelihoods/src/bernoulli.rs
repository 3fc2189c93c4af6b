//! The Bernoulli likelihood with the sigmoid link: p(y = 1 | f) = σ(f), one output.

use candle_core::Tensor;

use crate::{Result, check, ops};

/// log p(y_n | f_n) = y f − softplus(f) (= y log σ(f) + (1 − y) log σ(−f)), `[N]`.
pub(crate) fn log_lik(f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let y = targets(f, y)?;
    Ok(((y * f)? - ops::softplus(f)?)?.squeeze(1)?)
}

/// ∂(−log p)/∂f = σ(f) − y, `[N, 1]`.
pub(crate) fn grad_f(f: &Tensor, y: &Tensor) -> Result<Tensor> {
    Ok((ops::sigmoid(f)? - targets(f, y)?)?)
}

/// Λ_n = σ(f)(1 − σ(f)), `[N, 1, 1]`.
pub(crate) fn hess_f(f: &Tensor) -> Result<Tensor> {
    ops::diag_embed(&curvature(f)?)
}

/// L_n = √(σ(f)(1 − σ(f))), `[N, 1, 1]`.
pub(crate) fn hess_factor(f: &Tensor) -> Result<Tensor> {
    ops::diag_embed(&curvature(f)?.sqrt()?)
}

/// σ(f) σ(−f) = exp(−softplus(f) − softplus(−f)): no cancellation in 1 − σ(f) for large f.
fn curvature(f: &Tensor) -> Result<Tensor> {
    Ok((ops::softplus(f)? + ops::softplus(&f.neg()?)?)?
        .neg()?
        .exp()?)
}

/// The labels y ∈ {0, 1} as `[N, 1]` in f's dtype.
fn targets(f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let n = f.dim(0)?;
    let labels = check::labels(y, n, 2, "y")?;
    Ok(Tensor::from_vec(labels, (n, 1), f.device())?.to_dtype(f.dtype())?)
}
