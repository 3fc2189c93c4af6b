//! Numerically stable scalar helpers in f64, for the predictive computations and the
//! per-example log-likelihood.

/// log Σᵢ exp(xᵢ), shifted by the maximum so that it neither overflows nor underflows.
pub(crate) fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + xs.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
}

/// softplus(x) = log(1 + eˣ) = max(x, 0) + log(1 + e^{−|x|}), without overflow or loss of the
/// small tail.
pub(crate) fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// softmax(xs) into `out` (same length).
pub(crate) fn softmax(xs: &[f64], out: &mut [f64]) {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    for (o, x) in out.iter_mut().zip(xs) {
        *o = (x - max).exp();
    }
    let sum: f64 = out.iter().sum();
    out.iter_mut().for_each(|o| *o /= sum);
}

/// σ(x) = 1 / (1 + e^{−x}), without overflow in either tail.
pub(crate) fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}
