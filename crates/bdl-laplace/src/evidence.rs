//! Tuning the prior precision λ (and the noise σ of a Gaussian likelihood) from one
//! eigendecomposition of the subnetwork GGN.
//!
//! Write the GGN as H_S = G/σ² for a Gaussian likelihood (G = Σ_n J_nᵀ J_n) or H_S = G for a
//! classification likelihood, and decompose G = V diag(g) Vᵀ once. Then for a scalar prior λ on
//! the s subnetwork parameters the Laplace log evidence
//!
//! log Z(λ, σ) = log p(D | θ̂, σ) − ½ [Σ_i log(g_i/σ² + λ) − s log λ + λ ‖θ̂_S‖²],
//! log p(D | θ̂, σ) = −SSE/(2σ²) − NK log(σ √(2π))   (Gaussian; fixed otherwise),
//!
//! and its gradient cost O(s) per evaluation, with no new factorisation. The same spectrum gives
//! the validation predictive at every candidate: with U = J_val V,
//! Var(f_val) = Σ_i U_i² / (g_i/σ² + λ).
//!
//! With fewer Jacobian rows than parameters (N·K < s, e.g. a full Laplace of 3,051 parameters on
//! 1,000 points), G = MᵀM has rank at most N·K and its range comes from the small Gram matrix:
//! M Mᵀ = U diag(g) Uᵀ gives the nonzero eigenvalues g and the eigenvectors V = Mᵀ U diag(g)^{-1/2}
//! (N·K columns instead of s); the s − r zero eigenvalues enter every formula as λ alone, and the
//! validation variance gains (‖J_val‖² − ‖U‖²)/λ for the part of J_val outside the range.

use bdl_inference::{InvalidParam, MapEstimate, Optimizer, OptimizerState, Posterior, Validate};
use bdl_likelihoods::{ClassLink, FunctionVariance, Likelihood};
use bdl_models::Model;
use candle_core::{DType, Tensor};
use faer::diag::Diag;
use faer::{Accum, Mat};

use crate::{Error, LaplaceConfig, PriorPrecision, Result, SubnetLaplace, SubsetScaling};

/// The log evidence of a subnetwork Laplace as a function of (λ, σ).
#[derive(Debug)]
pub struct Evidence {
    map: MapEstimate,
    subset: Vec<usize>,
    theta_s: Vec<f64>,
    /// The r eigenvalues of G kept (all s, or the nonzero ones of a rank-deficient G); the
    /// other s − r are zero.
    eigenvalues: Vec<f64>,
    /// Their eigenvectors, s × r.
    eigenvectors: Mat<f64>,
    likelihood: Likelihood,
    /// Σ_n ‖f(x_n) − y_n‖² and NK, for a Gaussian likelihood.
    residuals: Option<(f64, f64)>,
    /// log p(D | θ̂) for a classification likelihood.
    log_lik: f64,
    batch_size: usize,
}

/// A maximiser of the log evidence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tuned {
    /// The prior precision λ.
    pub lambda: f64,
    /// The noise standard deviation σ (unchanged for classification).
    pub sigma: f64,
    /// log Z at (λ, σ).
    pub log_evidence: f64,
}

impl Evidence {
    /// Computes G for `subset` on the training data (x, y) at the MAP estimate and decomposes
    /// it; the GGN is accumulated `batch_size` rows at a time.
    pub fn new(
        map: &MapEstimate,
        x: &Tensor,
        y: &Tensor,
        subset: Vec<usize>,
        batch_size: usize,
    ) -> Result<Self> {
        let (model, theta, likelihood) = (map.network(), map.theta(), &map.likelihood());
        let f = model.forward(theta, x)?.to_dtype(DType::F64)?;
        let (unit, residuals, log_lik) = match likelihood {
            Likelihood::Gaussian { .. } => {
                let y = y.to_dtype(DType::F64)?.reshape(f.shape())?;
                let sse = (&f - &y)?.sqr()?.sum_all()?.to_scalar::<f64>()?;
                (
                    Likelihood::Gaussian { sigma: 1.0 },
                    Some((sse, f.elem_count() as f64)),
                    0.0,
                )
            }
            other => {
                let ll = other
                    .log_lik(&f, y)?
                    .to_dtype(DType::F64)?
                    .sum_all()?
                    .to_scalar::<f64>()?;
                (*other, None, ll)
            }
        };
        let rows = bdl_inference::n_rows(x, "x")? * model.n_outputs();
        let (eigenvalues, eigenvectors) = if rows < subset.len() {
            eigen_of_range(&crate::ggn::factor_rows(
                model, theta, &unit, x, &subset, batch_size,
            )?)?
        } else {
            eigen(&crate::ggn(model, theta, &unit, x, &subset, batch_size)?)?
        };
        let all: Vec<f64> = theta.to_dtype(DType::F64)?.to_vec1()?;
        Ok(Self {
            map: map.clone(),
            theta_s: subset.iter().map(|&i| all[i]).collect(),
            subset,
            eigenvalues,
            eigenvectors,
            likelihood: *likelihood,
            residuals,
            log_lik,
            batch_size: batch_size.max(1),
        })
    }

    /// 1/σ² for a Gaussian likelihood, 1 otherwise: the scale of G in H_S.
    fn precision_scale(&self, sigma: f64) -> f64 {
        if self.residuals.is_some() {
            sigma.powi(-2)
        } else {
            1.0
        }
    }

    /// The number of zero eigenvalues of G left out of the kept spectrum, s − r.
    fn null_dimension(&self) -> f64 {
        (self.subset.len() - self.eigenvalues.len()) as f64
    }

    /// log Z(λ, σ) (σ is ignored for classification).
    pub fn log_evidence(&self, lambda: f64, sigma: f64) -> f64 {
        let c = self.precision_scale(sigma);
        let s = self.subset.len() as f64;
        let log_det: f64 = self
            .eigenvalues
            .iter()
            .map(|g| (c * g + lambda).ln())
            .sum::<f64>()
            + self.null_dimension() * lambda.ln();
        let theta_sq: f64 = self.theta_s.iter().map(|t| t * t).sum();
        let log_lik = match self.residuals {
            Some((sse, n_obs)) => {
                -0.5 * sse / (sigma * sigma)
                    - n_obs * (sigma * (2.0 * std::f64::consts::PI).sqrt()).ln()
            }
            None => self.log_lik,
        };
        log_lik - 0.5 * (log_det - s * lambda.ln() + lambda * theta_sq)
    }

    /// (∂ log Z/∂ log λ, ∂ log Z/∂ log σ); the second is 0 for classification.
    pub fn gradient(&self, lambda: f64, sigma: f64) -> [f64; 2] {
        let c = self.precision_scale(sigma);
        let s = self.subset.len() as f64;
        let theta_sq: f64 = self.theta_s.iter().map(|t| t * t).sum();
        let trace: f64 = self
            .eigenvalues
            .iter()
            .map(|g| (c * g + lambda).recip())
            .sum::<f64>()
            + self.null_dimension() / lambda;
        let d_lambda = -0.5 * (trace - s / lambda + theta_sq) * lambda;
        let d_sigma = match self.residuals {
            Some((sse, n_obs)) => {
                // ∂/∂σ of −SSE/(2σ²) − NK log σ − ½ Σ log(g/σ² + λ), times σ.
                let shrink: f64 = self
                    .eigenvalues
                    .iter()
                    .map(|g| c * g / (c * g + lambda))
                    .sum();
                sse / (sigma * sigma) - n_obs + shrink
            }
            None => 0.0,
        };
        [d_lambda, d_sigma]
    }

    /// Maximises log Z over (log λ, log σ) by gradient ascent (Adam on the log parameters; each
    /// step is O(s)), from (λ₀, σ₀).
    pub fn maximize(&self, lambda0: f64, sigma0: f64) -> Result<Tuned> {
        bdl_inference::positive("lambda0", lambda0)?;
        bdl_inference::positive("sigma0", sigma0)?;
        let mut p = [lambda0.ln(), sigma0.ln()];
        // Ascent on log Z is Adam's descent on −log Z.
        let mut adam = OptimizerState::new(
            Optimizer::Adam {
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-12,
            },
            2,
        );
        for _ in 0..3000 {
            let [dl, ds] = self.gradient(p[0].exp(), p[1].exp());
            adam.step(&mut p, &[-dl, -ds], 0.05);
        }
        let (lambda, sigma) = (p[0].exp(), p[1].exp());
        Ok(Tuned {
            lambda,
            sigma,
            log_evidence: self.log_evidence(lambda, sigma),
        })
    }

    /// The posterior at (λ, σ), rebuilt from the spectrum: P_S = V diag(g/σ² + λ) Vᵀ. It owns
    /// the MAP estimate with σ as its Gaussian likelihood's noise, so its predictive uses the
    /// tuned σ.
    pub fn posterior(&self, lambda: f64, sigma: f64) -> Result<SubnetLaplace> {
        let c = self.precision_scale(sigma);
        let v = &self.eigenvectors;
        let scaled = Mat::from_fn(v.nrows(), v.ncols(), |i, j| {
            v[(i, j)] * c * self.eigenvalues[j]
        });
        let ggn = &scaled * v.transpose();
        let config = LaplaceConfig {
            prior: PriorPrecision::Scalar(lambda),
            subset_scaling: SubsetScaling::None,
            batch_size: self.batch_size,
        }
        .check()?;
        let map = self.map.with_likelihood(self.tuned_likelihood(sigma))?;
        SubnetLaplace::from_ggn(map, self.subset.clone(), ggn, &config)
    }

    /// The likelihood with noise σ (for a Gaussian; classification likelihoods have none).
    fn tuned_likelihood(&self, sigma: f64) -> Likelihood {
        match self.likelihood {
            Likelihood::Gaussian { .. } => Likelihood::Gaussian { sigma },
            other => other,
        }
    }

    /// Prepares the validation log-likelihood of every later (λ, σ) candidate on (x_val, y_val).
    pub fn validation(&self, x_val: &Tensor, y_val: &Tensor) -> Result<Validation> {
        let (model, theta) = (self.map.network(), self.map.theta());
        let cache = model.forward_cached(theta, x_val)?;
        let j = model
            .jacobian(theta, &cache, &self.subset)?
            .to_dtype(DType::F64)?;
        let j = bdl_tensor::to_mat(&j)?;
        let projected = &j * &self.eigenvectors;
        // ‖J_val row‖² − ‖U row‖²: the part outside the kept range (only for a reduced one).
        let outside = (self.null_dimension() > 0.0).then(|| {
            (0..j.nrows())
                .map(|r| {
                    let total: f64 = j.row(r).iter().map(|v| v * v).sum();
                    let inside: f64 = projected.row(r).iter().map(|v| v * v).sum();
                    (total - inside).max(0.0)
                })
                .collect()
        });
        Ok(Validation {
            projected,
            outside,
            mean: cache.output.to_dtype(DType::F64)?,
            y: y_val.clone(),
        })
    }

    /// The mean per-point validation log-likelihood of the linearized predictive at (λ, σ)
    /// (probit link for classification).
    pub fn validation_log_lik(&self, val: &Validation, lambda: f64, sigma: f64) -> Result<f64> {
        let c = self.precision_scale(sigma);
        let (rows, s) = (val.projected.nrows(), val.projected.ncols());
        let var: Vec<f64> = (0..rows)
            .map(|r| {
                let inside: f64 = (0..s)
                    .map(|i| val.projected[(r, i)].powi(2) / (c * self.eigenvalues[i] + lambda))
                    .sum();
                inside + val.outside.as_ref().map_or(0.0, |o| o[r] / lambda)
            })
            .collect();
        let var = Tensor::from_vec(var, val.mean.shape(), val.mean.device())?;
        let pred = self.tuned_likelihood(sigma).predictive(
            &val.mean,
            &FunctionVariance::Diagonal(var),
            ClassLink::Probit,
        )?;
        let ll: Vec<f64> = pred.log_lik(&val.y)?.to_vec1()?;
        Ok(ll.iter().sum::<f64>() / ll.len() as f64)
    }

    /// The (λ, σ) of `candidates` with the highest validation log-likelihood.
    pub fn grid_search(
        &self,
        val: &Validation,
        candidates: &[(f64, f64)],
    ) -> Result<(f64, f64, f64)> {
        let mut best: Option<(f64, f64, f64)> = None;
        for &(lambda, sigma) in candidates {
            let ll = self.validation_log_lik(val, lambda, sigma)?;
            if best.is_none_or(|b| ll > b.2) {
                best = Some((lambda, sigma, ll));
            }
        }
        best.ok_or_else(|| InvalidParam::new("candidates", "none", "at least one (λ, σ)").into())
    }
}

/// G = V diag(g) Vᵀ for the symmetric G (its lower triangle is read), eigenvalues clamped at 0
/// (G is positive semi-definite; rounding can make the smallest slightly negative).
///
/// Computed sequentially: faer's parallel tridiagonalisation adds in another order, so a
/// threaded decomposition of an s ≥ 500 matrix differs in the last bits between thread counts,
/// and with it every λ and σ tuned from it. The decomposition is a small part of the tuning's
/// cost next to the GGN, and results must not depend on the machine.
pub(crate) fn eigen(g: &Mat<f64>) -> Result<(Vec<f64>, Mat<f64>)> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::evd::{self, ComputeEigenvectors};
    let n = g.nrows();
    let (mut values, mut vectors) = (Diag::<f64>::zeros(n), Mat::<f64>::zeros(n, n));
    let par = faer::Par::Seq;
    let mut scratch = MemBuffer::new(evd::self_adjoint_evd_scratch::<f64>(
        n,
        ComputeEigenvectors::Yes,
        par,
        Default::default(),
    ));
    evd::self_adjoint_evd(
        g.as_ref(),
        values.as_mut(),
        Some(vectors.as_mut()),
        par,
        MemStack::new(&mut scratch),
        Default::default(),
    )
    .map_err(|e| Error::Eigendecomposition {
        size: n,
        reason: format!("{e:?}"),
    })?;
    let values = values.column_vector().iter().map(|v| v.max(0.0)).collect();
    Ok((values, vectors))
}

/// The nonzero spectrum of G = MᵀM from the Gram matrix M Mᵀ = U diag(g) Uᵀ (M has fewer rows
/// than columns): eigenvalues g_i above the rank tolerance g_max · rows · ε, eigenvectors
/// V = Mᵀ U diag(g)^{-1/2}. The products run on the current pool (their sums do not depend on
/// it), the decomposition sequentially as in [`eigen`].
fn eigen_of_range(m: &Mat<f64>) -> Result<(Vec<f64>, Mat<f64>)> {
    use faer::linalg::matmul::matmul;
    let par = faer::get_global_parallelism();
    let rows = m.nrows();
    let mut gram = Mat::<f64>::zeros(rows, rows);
    matmul(
        gram.as_mut(),
        Accum::Replace,
        m.as_ref(),
        m.transpose(),
        1.0,
        par,
    );
    let (values, vectors) = eigen(&gram)?;
    let largest = values.iter().copied().fold(0.0, f64::max);
    let tolerance = largest * rows as f64 * f64::EPSILON;
    let kept: Vec<usize> = (0..rows).filter(|&i| values[i] > tolerance).collect();
    let u = Mat::from_fn(rows, kept.len(), |r, c| {
        vectors[(r, kept[c])] / values[kept[c]].sqrt()
    });
    let mut v = Mat::<f64>::zeros(m.ncols(), kept.len());
    matmul(
        v.as_mut(),
        Accum::Replace,
        m.transpose(),
        u.as_ref(),
        1.0,
        par,
    );
    Ok((kept.iter().map(|&i| values[i]).collect(), v))
}

/// Validation data projected on the GGN's eigenvectors (see [`Evidence::validation`]).
#[derive(Debug)]
pub struct Validation {
    projected: Mat<f64>,
    /// Per row, the squared norm of J_val outside the kept eigenvectors (a reduced range only).
    outside: Option<Vec<f64>>,
    mean: Tensor,
    y: Tensor,
}
