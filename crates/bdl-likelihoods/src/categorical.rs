//! The categorical likelihood with the softmax link: p(y = c | f) = softmax(f)_c.

use candle_core::Tensor;

use crate::{Result, check, ops};

/// log p(y_n | f_n) = f_{n, y_n} − log Σ_c e^{f_nc} (log-sum-exp), `[N]`.
pub(crate) fn log_lik(classes: usize, f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let n = f.dim(0)?;
    let labels = check::labels(y, n, classes, "y")?;
    let index = Tensor::from_vec(labels, (n, 1), f.device())?;
    let picked = f.contiguous()?.gather(&index, 1)?.squeeze(1)?;
    Ok((picked - f.log_sum_exp(1)?)?)
}

/// ∂(−log p)/∂f = p − onehot(y), `[N, C]`.
pub(crate) fn grad_f(classes: usize, f: &Tensor, y: &Tensor) -> Result<Tensor> {
    let n = f.dim(0)?;
    let mut one_hot = vec![0.0f64; n * classes];
    for (row, label) in check::labels(y, n, classes, "y")?.into_iter().enumerate() {
        one_hot[row * classes + label as usize] = 1.0;
    }
    let one_hot = Tensor::from_vec(one_hot, (n, classes), f.device())?.to_dtype(f.dtype())?;
    Ok((ops::softmax(f)? - one_hot)?)
}

/// Λ_n = diag(p) − p pᵀ, `[N, C, C]`.
pub(crate) fn hess_f(f: &Tensor) -> Result<Tensor> {
    let p = ops::softmax(f)?;
    ops::diag_minus_outer(&p, &p, &p)
}

/// L_n = diag(√p) − p √pᵀ, `[N, C, C]`, with L Lᵀ = diag(p) − p pᵀ because Σ p = 1.
pub(crate) fn hess_factor(f: &Tensor) -> Result<Tensor> {
    let p = ops::softmax(f)?;
    let r = p.sqrt()?;
    ops::diag_minus_outer(&r, &p, &r)
}
