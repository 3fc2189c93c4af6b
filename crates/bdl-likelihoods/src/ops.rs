//! Numerically stable elementwise and row-wise tensor operations, in the input's dtype.

use candle_core::{D, Tensor};

use crate::Result;

/// softplus(x) = log(1 + eˣ), computed as max(x, 0) + log(1 + e^{−|x|}) so that it neither
/// overflows nor loses the small tail.
pub(crate) fn softplus(x: &Tensor) -> Result<Tensor> {
    let tail = x.abs()?.neg()?.exp()?.affine(1.0, 1.0)?.log()?;
    Ok((x.relu()? + tail)?)
}

/// σ(x) = 1 / (1 + e^{−x}) = exp(−softplus(−x)), accurate in both tails.
pub(crate) fn sigmoid(x: &Tensor) -> Result<Tensor> {
    Ok(softplus(&x.neg()?)?.neg()?.exp()?)
}

/// Row-wise softmax over the last dimension: exp(x − max) / Σ exp(x − max).
pub(crate) fn softmax(x: &Tensor) -> Result<Tensor> {
    let e = x.broadcast_sub(&x.max_keepdim(D::Minus1)?)?.exp()?;
    Ok(e.broadcast_div(&e.sum_keepdim(D::Minus1)?)?)
}

/// Per row n, the K × K matrix diag(a_n) − u_n v_nᵀ, for `a`, `u`, `v` of shape `[N, K]`.
pub(crate) fn diag_minus_outer(a: &Tensor, u: &Tensor, v: &Tensor) -> Result<Tensor> {
    let outer = u.unsqueeze(2)?.broadcast_mul(&v.unsqueeze(1)?)?;
    Ok((diag_embed(a)? - outer)?)
}

/// Per row n, the diagonal matrix diag(a_n): `[N, K]` → `[N, K, K]`.
pub(crate) fn diag_embed(a: &Tensor) -> Result<Tensor> {
    let eye = Tensor::eye(a.dim(1)?, a.dtype(), a.device())?;
    Ok(a.unsqueeze(2)?.broadcast_mul(&eye.unsqueeze(0)?)?)
}
