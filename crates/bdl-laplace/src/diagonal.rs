//! The diagonal Laplace posterior over all parameters: q(θ) = N(θ̂, diag(σ²)),
//! σ_d² = 1 / (h_dd + λ_d) with h the GGN diagonal.

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    FunctionMoments, MapEstimate, Posterior, PredictOptions, Prediction, Predictor, Valid,
};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::Tensor;

use crate::{Error, LaplaceConfig, LinearizedPosterior, Result, SubsetScaling};

/// A diagonal (mean-field) Laplace posterior over every parameter of a MAP estimate.
#[derive(Clone, Debug)]
pub struct DiagLaplace {
    map: MapEstimate,
    config: LaplaceConfig,
    ggn_diagonal: Vec<f64>,
    prior: Vec<f64>,
    variances: Vec<f64>,
}

impl DiagLaplace {
    /// Fits the posterior at the MAP estimate `map` on the training inputs `x` (`config`'s
    /// subset scaling of the prior does not apply: the posterior covers every parameter).
    pub fn fit(map: &MapEstimate, x: &Tensor, config: &Valid<LaplaceConfig>) -> Result<Self> {
        let ggn_diagonal = crate::ggn_diagonal(
            map.network(),
            map.theta(),
            &map.likelihood(),
            x,
            config.batch_size,
        )?;
        Self::from_ggn_diagonal(map.clone(), ggn_diagonal, config)
    }

    /// Builds the posterior from a GGN diagonal already computed at `map` (by
    /// [`ggn_diagonal`](crate::ggn_diagonal)): one GGN serves every prior precision of a
    /// search, each posterior costing O(D). Errors when a precision h_dd + λ_d is not positive.
    pub fn from_ggn_diagonal(
        map: MapEstimate,
        ggn_diagonal: Vec<f64>,
        config: &Valid<LaplaceConfig>,
    ) -> Result<Self> {
        let d = map.network().layout().len();
        let all: Vec<usize> = (0..d).collect();
        let prior = config
            .prior
            .for_subset(&all, map.network().layout(), SubsetScaling::None)?;
        // A NaN (or infinite) precision is refused as well as a zero one.
        let positive = |p: f64| p > 0.0 && p.is_finite();
        if let Some(index) = (0..d).find(|&i| !positive(ggn_diagonal[i] + prior[i])) {
            return Err(Error::NonPositiveDiagonal {
                index,
                precision: ggn_diagonal[index] + prior[index],
                ggn: ggn_diagonal[index],
                prior: prior[index],
            });
        }
        let variances = crate::selection::diagonal_variances(&ggn_diagonal, &prior);
        Ok(Self {
            map,
            config: (**config).clone(),
            ggn_diagonal,
            prior,
            variances,
        })
    }

    /// The Laplace log marginal likelihood given the log-likelihood at the MAP, with the
    /// diagonal posterior precision h_dd + λ_d in place of the full one:
    ///
    /// log Z ≈ log p(D | θ̂) − ½ Σ_d [log(h_dd + λ_d) − log λ_d + λ_d θ̂_d²].
    ///
    /// For a search over λ the log-likelihood is a constant: any value gives the same argmax.
    pub fn log_marginal_likelihood(&self, log_lik: f64) -> Result<f64> {
        let theta = bdl_tensor::to_f64_vec(self.map.theta())?;
        let penalty: f64 = (self.ggn_diagonal.iter().zip(&self.prior).zip(&theta))
            .map(|((h, l), t)| (h + l).ln() - l.ln() + l * t * t)
            .sum();
        Ok(log_lik - 0.5 * penalty)
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
    fn estimate(&self) -> &MapEstimate {
        &self.map
    }

    /// J(x_n) diag(σ²) J(x_n)ᵀ at each row of `x`, shape `[N, K, K]` (f64).
    fn f_covariance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        let all: Vec<usize> = (0..self.variances.len()).collect();
        crate::linearized::f_covariance(&self.map, x, &all, batch_size, |mut w| {
            for (d, var) in self.variances.iter().enumerate() {
                let sd = var.sqrt();
                for c in 0..w.ncols() {
                    w[(d, c)] *= sd;
                }
            }
            None
        })
    }

    /// Σ_d σ_d² J_kd(x_n)² at each row of `x`, shape `[N, K]` (f64), from the layers' factors
    /// ([`Model::weighted_jacobian_sq`]) without forming the Jacobian.
    fn f_variance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        let (model, theta) = (self.map.network(), self.map.theta());
        let variances = Tensor::from_slice(&self.variances, self.variances.len(), theta.device())?
            .to_dtype(theta.dtype())?;
        let n = bdl_inference::n_rows(x, "x")?;
        let mut blocks = Vec::new();
        for start in (0..n).step_by(batch_size.max(1)) {
            let xb = x.narrow(0, start, batch_size.max(1).min(n - start))?;
            let cache = model.forward_cached(theta, &xb)?;
            blocks.push(model.weighted_jacobian_sq(theta, &cache, &variances)?);
        }
        Ok(Tensor::cat(&blocks, 0)?.to_dtype(candle_core::DType::F64)?)
    }
}

const KIND: &str = "diag-laplace";

impl Posterior for DiagLaplace {
    fn method(&self) -> &str {
        "diagonal Laplace"
    }

    fn predictor(&self) -> &Predictor {
        self.map.predictor()
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        Ok(self.linearized_predictive(x, options)?)
    }

    /// `n` draws θ̂ + σ∘z, z ~ N(0, I), draw i from the stream `seed.index(i)`.
    fn sample(&self, n: usize, seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        let d = self.variances.len();
        let draws = crate::linearized::gaussian_draws(self.map.theta(), n, seed, d, |z, draw| {
            for ((t, v), z) in draw.iter_mut().zip(&self.variances).zip(z) {
                *t += v.sqrt() * z;
            }
        })?;
        Ok(Some(draws))
    }

    /// Draws of the linearized outputs f(x; θ̂) + J(θ_s − θ̂) (the Jacobian over every
    /// parameter: N·K × D per batch of rows).
    fn f_samples(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<Option<Tensor>> {
        let all: Vec<usize> = (0..self.variances.len()).collect();
        crate::linearized::samples(self, x, options, &all)
    }

    /// The linearized Gaussian's moments, exact: f(x; θ̂) and J diag(σ²) Jᵀ.
    fn f_moments(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<FunctionMoments> {
        crate::linearized::moments(self, x, options)
    }

    /// Saves θ̂ and the GGN diagonal; the variances follow from them and the config.
    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let header = Header {
            kind: KIND,
            predictor: self.map.predictor(),
            seed: self.map.seed(),
            config: &self.config,
        };
        let tensors = vec![
            ("theta", self.map.theta().clone()),
            (
                "ggn_diagonal",
                checkpoint::vector_tensor(&self.ggn_diagonal)?,
            ),
        ];
        checkpoint::save(path, &header, tensors)
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<Valid<LaplaceConfig>>(path, KIND)?;
        let d = saved.n_params();
        let theta = saved.params("theta")?;
        let h = saved.vector("ggn_diagonal", d)?;
        let mut map = MapEstimate::of(saved.predictor, theta)?;
        if let Some(seed) = saved.seed {
            map = map.with_seed(seed);
        }
        Ok(Self::from_ggn_diagonal(map, h, &saved.config)?)
    }
}
