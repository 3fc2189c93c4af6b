//! The generalized Gauss–Newton matrix H = Σ_n J_nᵀ Λ_n J_n.
//!
//! J_n = ∂f(x_n; θ)/∂θ at the MAP (K × D) and Λ_n = −∇²_f log p(y_n | f) at f(x_n; θ̂) (σ⁻² I,
//! p(1 − p), diag(p) − ppᵀ). With the likelihood's factor Λ_n = L_n L_nᵀ, the rows of
//! M_n = L_nᵀ J_n stack into one matrix M and H = MᵀM: one symmetric rank-k update per
//! minibatch, accumulated in f64. Only the chosen columns of J are ever built.

use bdl_likelihoods::Likelihood;
use bdl_models::{Cache, Model};
use candle_core::{DType, Tensor};
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatMut, MatRef};

use crate::Result;

/// The rows of x in consecutive minibatches of at most `batch_size` (at least one row each).
fn batches(x: &Tensor, batch_size: usize) -> Result<Vec<Tensor>> {
    let n = bdl_inference::n_rows(x, "x")?;
    let size = batch_size.max(1);
    (0..n.div_ceil(size))
        .map(|b| {
            let start = b * size;
            Ok(x.narrow(0, start, size.min(n - start))?)
        })
        .collect()
}

/// Runs the forward pass on each minibatch of `x` and hands the cache and Λ's factor L
/// (`[B, K, K]`) to `visit`.
fn for_each_batch(
    model: &impl Model,
    theta: &Tensor,
    likelihood: &Likelihood,
    x: &Tensor,
    batch_size: usize,
    mut visit: impl FnMut(&Cache, &Tensor) -> Result<()>,
) -> Result<()> {
    for xb in batches(x, batch_size)? {
        let cache = model.forward_cached(theta, &xb)?;
        let factor = likelihood
            .hess_factor(&cache.output)?
            .to_dtype(theta.dtype())?;
        visit(&cache, &factor)?;
    }
    Ok(())
}

/// H_S = Σ_n J_S(x_n)ᵀ Λ_n J_S(x_n) for the parameter columns `subset`, over the rows of `x` in
/// minibatches of `batch_size`; an |S| × |S| symmetric positive semi-definite matrix in f64.
///
/// The rows of M are gathered over minibatches into chunks of about 64 MB (one row-major f64
/// tensor, concatenated by memory copies) and each chunk is one symmetric rank-k update on every
/// thread of the current pool, read in place through a row-major view: a rank-250 update per
/// minibatch leaves most of the machine idle, and a column-major copy of M costs as much as its
/// Jacobian. The chunks depend on the data and s only, so the sums, and the result, are the same
/// bits on any number of threads.
pub fn ggn(
    model: &impl Model,
    theta: &Tensor,
    likelihood: &Likelihood,
    x: &Tensor,
    subset: &[usize],
    batch_size: usize,
) -> Result<Mat<f64>> {
    let s = subset.len();
    let mut h = Mat::<f64>::zeros(s, s);
    let chunk_rows = (CHUNK_BYTES / (8 * s.max(1))).max(1);
    let mut pending: Vec<Tensor> = Vec::new();
    let flush = |pending: &mut Vec<Tensor>, h: &mut Mat<f64>| -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let m = Tensor::cat(pending, 0)?;
        pending.clear();
        // Only the lower triangle of MᵀM is computed (a SYRK); the upper is mirrored at the end.
        bdl_tensor::with_mat_ref(&m, |m| add_lower_gram(h.as_mut(), m.transpose()))?;
        Ok(())
    };
    for_each_factor_rows(model, theta, likelihood, x, subset, batch_size, |m, _| {
        pending.push(m);
        if pending.iter().map(|m| m.dims()[0]).sum::<usize>() >= chunk_rows {
            flush(&mut pending, &mut h)?;
        }
        Ok(())
    })?;
    flush(&mut pending, &mut h)?;
    mirror_lower(&mut h);
    Ok(h)
}

/// h += a aᵀ on the lower triangle of the square `h` only (a symmetric rank-k update, on every
/// thread of the current pool); the upper triangle is not touched.
pub(crate) fn add_lower_gram(h: MatMut<'_, f64>, a: MatRef<'_, f64>) {
    triangular::matmul(
        h,
        BlockStructure::TriangularLower,
        Accum::Add,
        a,
        BlockStructure::Rectangular,
        a.transpose(),
        BlockStructure::Rectangular,
        1.0,
        faer::get_global_parallelism(),
    );
}

/// Copies the lower triangle of the square `h` onto its upper, in tiles that stay in cache (a
/// plain loop reads one triangle with a stride of a whole column).
fn mirror_lower(h: &mut Mat<f64>) {
    const TILE: usize = 64;
    let s = h.nrows();
    for jb in (0..s).step_by(TILE) {
        for ib in (0..=jb).step_by(TILE) {
            for j in jb..(jb + TILE).min(s) {
                for i in ib..(ib + TILE).min(j) {
                    h[(i, j)] = h[(j, i)];
                }
            }
        }
    }
}

/// The bytes of the rows of M gathered for one rank-k update of [`ggn`].
const CHUNK_BYTES: usize = 64 << 20;

/// M, the rows M_n = L_nᵀ J_S(x_n) of every example stacked (N·K × |S|, f64): H_S = MᵀM.
///
/// Each minibatch's rows are copied straight into their place, so M is held once (with one
/// minibatch of rows besides), never as a list of parts and their concatenation.
pub(crate) fn factor_rows(
    model: &impl Model,
    theta: &Tensor,
    likelihood: &Likelihood,
    x: &Tensor,
    subset: &[usize],
    batch_size: usize,
) -> Result<Mat<f64>> {
    let (n, s) = (bdl_inference::n_rows(x, "x")?, subset.len());
    let mut m: Option<Mat<f64>> = None;
    let mut filled = 0;
    for_each_factor_rows(
        model,
        theta,
        likelihood,
        x,
        subset,
        batch_size,
        |part, k| {
            bdl_tensor::with_mat_ref(&part, |part| {
                let rows = part.nrows();
                let m = m.get_or_insert_with(|| Mat::zeros(n * k, s));
                m.as_mut().subrows_mut(filled, rows).copy_from(part);
                filled += rows;
            })?;
            Ok(())
        },
    )?;
    let m = m.unwrap_or_else(|| Mat::zeros(0, s));
    assert_eq!(filled, m.nrows(), "every example gave its K factor rows");
    Ok(m)
}

/// Visits the rows of M one minibatch at a time, as contiguous row-major f64 tensors
/// `[B·K, |S|]`, with K.
fn for_each_factor_rows(
    model: &impl Model,
    theta: &Tensor,
    likelihood: &Likelihood,
    x: &Tensor,
    subset: &[usize],
    batch_size: usize,
    mut visit: impl FnMut(Tensor, usize) -> Result<()>,
) -> Result<()> {
    let s = subset.len();
    for_each_batch(model, theta, likelihood, x, batch_size, |cache, factor| {
        let (b, k, _) = factor.dims3()?;
        let j = model.jacobian(theta, cache, subset)?.reshape((b, k, s))?;
        let m = if k == 1 {
            // One output: L_n is a scalar, so M_n is J_n scaled (no batched product).
            j.broadcast_mul(factor)?
        } else {
            factor.transpose(1, 2)?.matmul(&j)?
        };
        visit(
            m.reshape((b * k, s))?.to_dtype(DType::F64)?.contiguous()?,
            k,
        )
    })
}

/// The diagonal of the full GGN, diag(Σ_n J_nᵀ Λ_n J_n) ∈ ℝᴰ, without any Jacobian
/// ([`Model::ggn_diagonal`]: K backward passes per minibatch).
pub fn ggn_diagonal(
    model: &impl Model,
    theta: &Tensor,
    likelihood: &Likelihood,
    x: &Tensor,
    batch_size: usize,
) -> Result<Vec<f64>> {
    let mut diag = vec![0.0; model.layout().len()];
    for_each_batch(model, theta, likelihood, x, batch_size, |cache, factor| {
        let part = bdl_tensor::to_f64_vec(&model.ggn_diagonal(theta, cache, factor)?)?;
        diag.iter_mut().zip(part).for_each(|(d, v)| *d += v);
        Ok(())
    })?;
    Ok(diag)
}
