//! The linearized predictive shared by every Laplace posterior.
//!
//! For a Gaussian posterior over the parameters S with covariance Σ_S = A Aᵀ − B Bᵀ, the
//! linearized outputs at x_n are f(x_n) ~ N(f(x_n; θ̂), J_n Σ_S J_nᵀ), J_n = ∂f(x_n)/∂θ_S.
//! With W = Aᵀ J_Sᵀ and V = Bᵀ J_Sᵀ each K × K block is W_nᵀ W_n − V_nᵀ V_n; a posterior supplies
//! only the map J_Sᵀ ↦ (W, V) (a triangular solve for a Cholesky-factored precision, B = 0; a
//! row scaling for a diagonal covariance; a row scaling and a solve with the small factor for a
//! low-rank precision, [`Woodbury`](crate::SubnetLaplace)).

use bdl_inference::{
    FunctionMoments, Link, MapEstimate, Posterior, PredictOptions, Valid, Validate,
};
use bdl_likelihoods::{FunctionVariance, Likelihood, Predictive};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use faer::{Mat, MatMut};

use crate::Result;

/// J_S Σ_S J_Sᵀ at each row of `x`, shape `[N, K, K]` (f64), where `whiten` turns J_Sᵀ into
/// W = Aᵀ J_Sᵀ in place and returns V = Bᵀ J_Sᵀ when there is one, for Σ_S = A Aᵀ − B Bᵀ.
pub(crate) fn f_covariance(
    map: &MapEstimate,
    x: &Tensor,
    subset: &[usize],
    batch_size: usize,
    whiten: impl Fn(MatMut<'_, f64>) -> Option<Mat<f64>>,
) -> Result<Tensor> {
    let (model, theta) = (map.network(), map.theta());
    let k = model.n_outputs();
    let n = bdl_inference::n_rows(x, "x")?;
    let mut out = Vec::with_capacity(n * k * k);
    for start in (0..n).step_by(batch_size.max(1)) {
        let xb = x.narrow(0, start, batch_size.max(1).min(n - start))?;
        let cache = model.forward_cached(theta, &xb)?;
        let j = model
            .jacobian(theta, &cache, subset)?
            .to_dtype(DType::F64)?;
        // Jᵀ from J's row-major storage: its transpose is column-major, copied straight.
        let mut w = bdl_tensor::with_mat_ref(&j, |m| m.transpose().to_owned())?;
        let v = whiten(w.as_mut());
        for p in 0..cache.n_examples {
            let wp = w.subcols(p * k, k);
            let mut block = wp.transpose() * wp;
            if let Some(v) = &v {
                let vp = v.subcols(p * k, k);
                block -= vp.transpose() * vp;
            }
            out.extend(
                (0..k)
                    .flat_map(|a| (0..k).map(move |b| (a, b)))
                    .map(|(a, b)| block[(a, b)]),
            );
        }
    }
    Ok(Tensor::from_vec(out, (n, k, k), &Device::Cpu)?.to_device(x.device())?)
}

/// f(x; θ̂) + J_S(x)(θ_s − θ̂)_S for each weight draw θ_s (the rows of `weights`, `[S, D]`):
/// draws of the linearized outputs at the rows of `x`, `[S, N, K]` (f64), each joint across the
/// rows; `batch_size` rows per Jacobian.
pub(crate) fn linearized_draws(
    map: &MapEstimate,
    x: &Tensor,
    subset: &[usize],
    weights: &Tensor,
    batch_size: usize,
) -> Result<Tensor> {
    let (model, theta) = (map.network(), map.theta());
    let k = model.n_outputs();
    let n = bdl_inference::n_rows(x, "x")?;
    let s = weights.dims2()?.0;
    let centre = bdl_tensor::to_f64_vec(theta)?;
    let w = bdl_tensor::to_f64_vec(weights)?;
    let d = centre.len();
    // Δ_S, [s, S]: column j the draw's step from θ̂ on the subset.
    let delta: Vec<f64> = subset
        .iter()
        .flat_map(|&i| (0..s).map(move |j| (i, j)))
        .map(|(i, j)| w[j * d + i] - centre[i])
        .collect();
    let delta = Tensor::from_vec(delta, (subset.len(), s), &Device::Cpu)?;
    let mut parts = Vec::new();
    for start in (0..n).step_by(batch_size.max(1)) {
        let rows = batch_size.max(1).min(n - start);
        let cache = model.forward_cached(theta, &x.narrow(0, start, rows)?)?;
        let j = model
            .jacobian(theta, &cache, subset)?
            .to_dtype(DType::F64)?
            .to_device(&Device::Cpu)?;
        // [rows·K, S] → [S, rows, K], plus f(x; θ̂).
        let step = j.matmul(&delta)?.t()?.reshape((s, rows, k))?;
        let f = cache.output.to_dtype(DType::F64)?.to_device(&Device::Cpu)?;
        parts.push(step.broadcast_add(&f.unsqueeze(0)?)?);
    }
    Ok(Tensor::cat(&parts, 1)?)
}

/// `n` draws θ̂ + Δ(z) of a Gaussian posterior around `theta`: z ~ N(0, I) of length `len` from
/// the stream `seed.index(i)` for draw i, and `step(z, draw)` adding Δ(z) to a copy of θ̂ (f64),
/// `[n, D]` in θ̂'s dtype. The diagonal Laplace's Δ scales z by σ; the KFAC Laplace's rotates it
/// block by block.
pub(crate) fn gaussian_draws(
    theta: &Tensor,
    n: usize,
    seed: Seed,
    len: usize,
    step: impl Fn(&[f64], &mut [f64]),
) -> Result<Tensor> {
    let mean = bdl_tensor::to_f64_vec(theta)?;
    let d = mean.len();
    let mut out = Vec::with_capacity(n * d);
    for i in 0..n as u64 {
        let z = bdl_tensor::normal(
            &mut seed.index(i).rng(),
            len,
            0.0,
            1.0,
            DType::F64,
            &Device::Cpu,
        )?;
        let mut draw = mean.clone();
        step(&bdl_tensor::to_f64_vec(&z)?, &mut draw);
        out.extend(draw);
    }
    Ok(Tensor::from_vec(out, (n, d), theta.device())?.to_dtype(theta.dtype())?)
}

/// The draws of f of a linearized posterior `post` over `subset` ([`Posterior::f_samples`]):
/// [`linearized_draws`] at its weight draws.
pub(crate) fn samples<P: LinearizedPosterior + Posterior>(
    post: &P,
    x: &Tensor,
    options: &PredictOptions,
    subset: &[usize],
) -> bdl_inference::Result<Option<Tensor>> {
    let options = options.clone().check()?;
    let Some(w) = post.sample(options.samples, options.seed)? else {
        return Ok(None);
    };
    let draws = linearized_draws(post.estimate(), x, subset, &w, options.batch_size)?;
    Ok(Some(draws))
}

/// The exact moments of a linearized posterior ([`Posterior::f_moments`]).
pub(crate) fn moments<P: LinearizedPosterior>(
    post: &P,
    x: &Tensor,
    options: &PredictOptions,
) -> bdl_inference::Result<FunctionMoments> {
    let options = options.clone().check()?;
    Ok(post.linearized_moments(x, options.batch_size)?)
}

/// A Gaussian posterior whose predictive is the linearization of the network at its MAP
/// estimate.
///
/// Implementors give the MAP estimate and the output covariance J Σ Jᵀ; the predictive
/// N(f(x; θ̂), J Σ Jᵀ) pushed through the likelihood (+ σ² for a Gaussian likelihood, the
/// options' link for classification) is shared. Its mean is the MAP output.
pub trait LinearizedPosterior {
    /// The MAP estimate the posterior is centred on (network, θ̂, likelihood).
    fn estimate(&self) -> &MapEstimate;

    /// J(x_n) Σ J(x_n)ᵀ at each row of `x`, shape `[N, K, K]` (f64), evaluated `batch_size`
    /// rows at a time.
    fn f_covariance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor>;

    /// The diagonal of [`f_covariance`](Self::f_covariance), shape `[N, K]` (f64): all that the
    /// probit link reads. By default taken from the full covariances; a posterior that can
    /// compute it directly (the diagonal Laplace) overrides it.
    fn f_variance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        let cov = self.f_covariance(x, batch_size)?;
        let (n, k, _) = cov.dims3()?;
        let diagonal: Vec<u32> = (0..k as u32).map(|i| i * (k as u32 + 1)).collect();
        let diagonal = Tensor::from_vec(diagonal, k, cov.device())?;
        Ok(cov.reshape((n, k * k))?.index_select(&diagonal, 1)?)
    }

    /// The exact moments of the linearized outputs at the rows of `x`: mean f(x; θ̂),
    /// covariance J Σ Jᵀ (the function-space view the predictive pushes through the
    /// likelihood).
    fn linearized_moments(&self, x: &Tensor, batch_size: usize) -> Result<FunctionMoments> {
        Ok(FunctionMoments {
            mean: self
                .estimate()
                .outputs(x, batch_size)?
                .to_dtype(DType::F64)?
                .to_device(&Device::Cpu)?,
            covariance: self.f_covariance(x, batch_size)?.to_device(&Device::Cpu)?,
        })
    }

    /// The linearized predictive at the rows of `x`: with the probit link for classification
    /// only the output variances are formed ([`f_variance`](Self::f_variance)), otherwise the
    /// full output covariances.
    fn linearized_predictive(
        &self,
        x: &Tensor,
        options: &Valid<PredictOptions>,
    ) -> Result<Predictive> {
        let map = self.estimate();
        let likelihood = map.likelihood();
        let probit = options.link == Link::Probit
            && matches!(
                likelihood,
                Likelihood::Categorical { .. } | Likelihood::Bernoulli
            );
        let variance = if probit {
            FunctionVariance::Diagonal(self.f_variance(x, options.batch_size)?)
        } else {
            FunctionVariance::Full(self.f_covariance(x, options.batch_size)?)
        };
        let mean = map.outputs(x, options.batch_size)?.to_dtype(DType::F64)?;
        Ok(likelihood.predictive(&mean, &variance, options.class_link())?)
    }
}
