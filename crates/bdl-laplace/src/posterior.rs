//! The Gaussian posterior over a subnetwork S: q(θ_S) = N(θ̂_S, (H_S + diag λ_S)⁻¹).
//!
//! The full-network Laplace is the case S = all parameters and the last-layer Laplace the case
//! S = the last layer's parameters; every variant shares one predictive path, the linearization
//! f(x*; θ) ≈ f(x*; θ̂) + J_S(x*)(θ_S − θ̂_S), so that f(x*) ~ N(f(x*; θ̂), J_S Σ_S J_Sᵀ).

use bdl_likelihoods::{ClassLink, Likelihood, Predictive};
use bdl_models::Model;
use candle_core::{DType, Tensor};
use faer::linalg::solvers::Llt;
use faer::{Mat, MatRef, Par, Side};

use crate::{Error, PriorPrecision, Result};

/// How to fit a Laplace posterior.
#[derive(Clone, Debug, PartialEq)]
pub struct LaplaceConfig {
    /// The prior precision (scalar or per parameter).
    pub prior: PriorPrecision,
    /// Scale the prior precision by |S|/D (λ_S = λ·S/D).
    pub scale_prior_to_subset: bool,
    /// Rows per minibatch when accumulating the GGN and evaluating Jacobians.
    pub batch_size: usize,
}

impl Default for LaplaceConfig {
    fn default() -> Self {
        Self {
            prior: PriorPrecision::Scalar(1.0),
            scale_prior_to_subset: false,
            batch_size: 256,
        }
    }
}

/// A full-covariance Laplace posterior over the parameter subset S.
///
/// P_S = H_S + diag(λ_S) with H_S the GGN of the subset (Λ includes σ⁻² for a Gaussian
/// likelihood), factored once by Cholesky, P_S = L Lᵀ.
#[derive(Debug)]
pub struct SubnetLaplace {
    subset: Vec<usize>,
    theta_s: Vec<f64>,
    ggn: Mat<f64>,
    prior: Vec<f64>,
    precision: Mat<f64>,
    llt: Llt<f64>,
    batch_size: usize,
}

impl SubnetLaplace {
    /// Fits the posterior at the MAP `theta` on the training inputs `x`.
    pub fn fit(
        model: &impl Model,
        theta: &Tensor,
        likelihood: &Likelihood,
        x: &Tensor,
        subset: Vec<usize>,
        config: &LaplaceConfig,
    ) -> Result<Self> {
        let d = model.layout().len();
        if let Some(&bad) = subset.iter().find(|&&i| i >= d) {
            return Err(bdl_models::Error::ParamIndex { index: bad, len: d }.into());
        }
        let ggn = crate::ggn(model, theta, likelihood, x, &subset, config.batch_size)?;
        let prior = config
            .prior
            .for_subset(&subset, d, config.scale_prior_to_subset)?;
        let all: Vec<f64> = theta.to_dtype(DType::F64)?.to_vec1()?;
        let theta_s = subset.iter().map(|&i| all[i]).collect();
        Self::from_ggn(ggn, subset, theta_s, prior, config.batch_size)
    }

    /// Builds the posterior from a GGN already computed for `subset`.
    pub fn from_ggn(
        ggn: Mat<f64>,
        subset: Vec<usize>,
        theta_s: Vec<f64>,
        prior: Vec<f64>,
        batch_size: usize,
    ) -> Result<Self> {
        let s = subset.len();
        if ggn.nrows() != s || ggn.ncols() != s || theta_s.len() != s || prior.len() != s {
            return Err(Error::InvalidArgument(format!(
                "subnetwork of {s} parameters needs an {s}×{s} GGN and {s} MAP values and prior \
                 precisions, got {}×{}, {} and {}",
                ggn.nrows(),
                ggn.ncols(),
                theta_s.len(),
                prior.len()
            )));
        }
        let precision = Mat::from_fn(s, s, |i, j| {
            ggn[(i, j)] + if i == j { prior[i] } else { 0.0 }
        });
        let llt = precision.llt(Side::Lower).map_err(
            |faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }| {
                Error::NotPositiveDefinite {
                    size: s,
                    pivot: index,
                }
            },
        )?;
        Ok(Self {
            subset,
            theta_s,
            ggn,
            prior,
            precision,
            llt,
            batch_size: batch_size.max(1),
        })
    }

    /// The subnetwork's flat parameter indices.
    pub fn subset(&self) -> &[usize] {
        &self.subset
    }

    /// H_S, the GGN of the subnetwork.
    pub fn ggn(&self) -> MatRef<'_, f64> {
        self.ggn.as_ref()
    }

    /// λ_S, the prior precision of each subnetwork parameter.
    pub fn prior_precision(&self) -> &[f64] {
        &self.prior
    }

    /// P_S = H_S + diag(λ_S).
    pub fn precision(&self) -> MatRef<'_, f64> {
        self.precision.as_ref()
    }

    /// Σ_S = P_S⁻¹.
    pub fn covariance(&self) -> Mat<f64> {
        use faer::linalg::solvers::DenseSolveCore;
        self.llt.inverse()
    }

    /// log det P_S = 2 Σ_i log L_ii.
    pub fn log_det_precision(&self) -> f64 {
        let l = self.llt.L();
        2.0 * (0..l.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>()
    }

    /// The Laplace log marginal likelihood given the log-likelihood at the MAP:
    ///
    /// log Z ≈ log p(D | θ̂) − ½ [log det P_S − Σ_i log λ_i + Σ_i λ_i θ̂_i²]
    ///
    /// over the subnetwork's parameters (the prior normalisers of the other parameters cancel
    /// against their point masses).
    pub fn log_marginal_likelihood(&self, log_lik: f64) -> f64 {
        let log_det_prior: f64 = self.prior.iter().map(|l| l.ln()).sum();
        let scatter: f64 = self
            .prior
            .iter()
            .zip(&self.theta_s)
            .map(|(l, t)| l * t * t)
            .sum();
        log_lik - 0.5 * (self.log_det_precision() - log_det_prior + scatter)
    }

    /// The covariance J_S(x_n) Σ_S J_S(x_n)ᵀ of the linearized outputs at each row of `x`,
    /// shape `[N, K, K]` (f64). With Σ_S = L⁻ᵀL⁻¹, W = L⁻¹ J_Sᵀ by one triangular solve.
    pub fn f_covariance(&self, model: &impl Model, theta: &Tensor, x: &Tensor) -> Result<Tensor> {
        crate::linearized::f_covariance(model, theta, x, &self.subset, self.batch_size, |w| {
            faer::linalg::triangular_solve::solve_lower_triangular_in_place(
                self.llt.L(),
                w,
                Par::Seq,
            )
        })
    }

    /// The linearized predictive at the rows of `x`: N(f(x; θ̂), J Σ Jᵀ + σ²) for a Gaussian
    /// likelihood (the noise is included), the chosen `link` for classification.
    pub fn predictive(
        &self,
        model: &impl Model,
        theta: &Tensor,
        likelihood: &Likelihood,
        x: &Tensor,
        link: ClassLink,
    ) -> Result<Predictive> {
        let cov = self.f_covariance(model, theta, x)?;
        crate::linearized::predictive(model, theta, likelihood, x, cov, link)
    }
}
