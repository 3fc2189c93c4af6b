//! The diagonal Laplace posterior over all parameters: q(θ) = N(θ̂, diag(σ²)),
//! σ_d² = 1 / (h_dd + λ_d) with h the GGN diagonal.

use bdl_likelihoods::Likelihood;
use bdl_models::Model;
use candle_core::Tensor;

use crate::{LaplaceConfig, LinearizedPosterior, Result};

/// A diagonal (mean-field) Laplace posterior over every parameter.
#[derive(Clone, Debug)]
pub struct DiagLaplace {
    ggn_diagonal: Vec<f64>,
    prior: Vec<f64>,
    variances: Vec<f64>,
    batch_size: usize,
}

impl DiagLaplace {
    /// Fits the posterior at the MAP `theta` on the training inputs `x` (`config`'s subset
    /// scaling of the prior does not apply: the posterior covers every parameter).
    pub fn fit(
        model: &impl Model,
        theta: &Tensor,
        likelihood: &Likelihood,
        x: &Tensor,
        config: &LaplaceConfig,
    ) -> Result<Self> {
        let d = model.layout().len();
        let ggn_diagonal = crate::ggn_diagonal(model, theta, likelihood, x, config.batch_size)?;
        let all: Vec<usize> = (0..d).collect();
        let prior = config.prior.for_subset(&all, d, false)?;
        let variances = crate::selection::diagonal_variances(&ggn_diagonal, &prior);
        Ok(Self {
            ggn_diagonal,
            prior,
            variances,
            batch_size: config.batch_size.max(1),
        })
    }

    /// diag(H), the GGN diagonal.
    pub fn ggn_diagonal(&self) -> &[f64] {
        &self.ggn_diagonal
    }

    /// λ_d, the prior precision of each parameter.
    pub fn prior_precision(&self) -> &[f64] {
        &self.prior
    }

    /// σ_d², the marginal posterior variances (what the Wasserstein selection ranks).
    pub fn variances(&self) -> &[f64] {
        &self.variances
    }
}

impl LinearizedPosterior for DiagLaplace {
    /// J(x_n) diag(σ²) J(x_n)ᵀ at each row of `x`, shape `[N, K, K]` (f64).
    fn f_covariance(&self, model: &impl Model, theta: &Tensor, x: &Tensor) -> Result<Tensor> {
        let all: Vec<usize> = (0..self.variances.len()).collect();
        crate::linearized::f_covariance(model, theta, x, &all, self.batch_size, |mut w| {
            for (d, var) in self.variances.iter().enumerate() {
                let sd = var.sqrt();
                for c in 0..w.ncols() {
                    w[(d, c)] *= sd;
                }
            }
        })
    }
}
