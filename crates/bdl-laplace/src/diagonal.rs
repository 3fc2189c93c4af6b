//! The diagonal Laplace posterior over all parameters or over a subnetwork S:
//! q(θ) = N(θ̂, diag(σ²)), σ_d² = 1 / (h_dd + λ_d) with h the GGN diagonal for d ∈ S, and
//! σ_d² = 0 (θ_d fixed at θ̂_d) outside S.

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    FunctionMoments, InvalidParam, MapEstimate, Posterior, PredictOptions, Prediction, Predictor,
    Valid,
};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::Tensor;

use crate::{Error, LaplaceConfig, LinearizedPosterior, Result, SubsetScaling};

/// A diagonal (mean-field) Laplace posterior over every parameter of a MAP estimate, or over
/// a subnetwork with the other parameters fixed at the MAP.
///
/// ```
/// use bdl_inference::{MapEstimate, Validate};
/// use bdl_laplace::{DiagLaplace, LaplaceConfig};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device};
///
/// let mlp = Mlp::new(MlpSpec::new(&[1, 4, 1], Activation::Tanh))?;
/// let theta = mlp.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let d = mlp.layout().len();
/// let map = MapEstimate::new(Network::from(mlp), theta, Likelihood::Gaussian { sigma: 0.1 })?;
/// let config = LaplaceConfig::default().check()?; // λ = 1
/// // Over the first layer's four weights alone; the rest keep their MAP values.
/// let post = DiagLaplace::from_ggn_diagonal_on(map, vec![3.0; d], vec![0, 1, 2, 3], &config)?;
/// assert_eq!(post.variances()[0], 1.0 / (3.0 + 1.0));
/// assert_eq!(post.variances()[4], 0.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct DiagLaplace {
    map: MapEstimate,
    config: LaplaceConfig,
    /// diag(H) over every parameter.
    ggn_diagonal: Vec<f64>,
    /// The subnetwork's flat indices; `None` for every parameter.
    subset: Option<Vec<usize>>,
    /// λ_d of each parameter of the subnetwork, in its order.
    prior: Vec<f64>,
    /// σ_d² of every parameter (0 outside the subnetwork).
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
        Self::build(map, ggn_diagonal, None, config)
    }

    /// The posterior over the subnetwork `subset` (flat indices, distinct) from the GGN
    /// diagonal over every parameter, the others fixed at θ̂, with `config`'s prior for the
    /// subset scaled by its subset scaling: O(D) memory and time, where a
    /// [`SubnetLaplace`](crate::SubnetLaplace) with a diagonal H_S would be O(S²) and O(S³).
    pub fn from_ggn_diagonal_on(
        map: MapEstimate,
        ggn_diagonal: Vec<f64>,
        subset: Vec<usize>,
        config: &Valid<LaplaceConfig>,
    ) -> Result<Self> {
        Self::build(map, ggn_diagonal, Some(subset), config)
    }

    fn build(
        map: MapEstimate,
        ggn_diagonal: Vec<f64>,
        subset: Option<Vec<usize>>,
        config: &Valid<LaplaceConfig>,
    ) -> Result<Self> {
        let d = map.network().layout().len();
        if ggn_diagonal.len() != d {
            let got = format!("{} entries", ggn_diagonal.len());
            let want = format!("one per parameter ({d})");
            return Err(InvalidParam::new("ggn_diagonal", got, want).into());
        }
        if let Some(subset) = &subset {
            crate::posterior::check_subset(subset, d)?;
        }
        let indices: Vec<usize> = subset.clone().unwrap_or_else(|| (0..d).collect());
        let scaling = match subset {
            Some(_) => config.subset_scaling,
            None => SubsetScaling::None,
        };
        let prior = (config.prior).for_subset(&indices, map.network().layout(), scaling)?;
        // A NaN (or infinite) precision is refused as well as a zero one.
        let positive = |p: f64| p > 0.0 && p.is_finite();
        let mut variances = vec![0.0; d];
        for (&i, &l) in indices.iter().zip(&prior) {
            let h = ggn_diagonal[i];
            if !positive(h + l) {
                return Err(Error::NonPositiveDiagonal {
                    index: i,
                    precision: h + l,
                    ggn: h,
                    prior: l,
                });
            }
            variances[i] = 1.0 / (h + l);
        }
        Ok(Self {
            map,
            config: (**config).clone(),
            ggn_diagonal,
            subset,
            prior,
            variances,
        })
    }

    /// The flat indices the posterior covers, in the order of [`prior_precision`](
    /// Self::prior_precision).
    fn indices(&self) -> Vec<usize> {
        (self.subset.clone()).unwrap_or_else(|| (0..self.variances.len()).collect())
    }

    /// The Laplace log marginal likelihood given the log-likelihood at the MAP, with the
    /// diagonal posterior precision h_dd + λ_d in place of the full one, over the parameters
    /// d ∈ S the posterior covers:
    ///
    /// log Z ≈ log p(D | θ̂) − ½ Σ_{d∈S} [log(h_dd + λ_d) − log λ_d + λ_d θ̂_d²].
    ///
    /// For a search over λ the log-likelihood is a constant: any value gives the same argmax.
    pub fn log_marginal_likelihood(&self, log_lik: f64) -> Result<f64> {
        let theta = bdl_tensor::to_f64_vec(self.map.theta())?;
        let penalty: f64 = (self.indices().iter().zip(&self.prior))
            .map(|(&i, l)| {
                let (h, t) = (self.ggn_diagonal[i], theta[i]);
                (h + l).ln() - l.ln() + l * t * t
            })
            .sum();
        Ok(log_lik - 0.5 * penalty)
    }

    /// The subnetwork's flat indices; `None` when the posterior covers every parameter.
    pub fn subset(&self) -> Option<&[usize]> {
        self.subset.as_deref()
    }

    /// diag(H), the GGN diagonal.
    pub fn ggn_diagonal(&self) -> &[f64] {
        &self.ggn_diagonal
    }

    /// λ_d, the prior precision of each parameter the posterior covers (in the subnetwork's
    /// order).
    pub fn prior_precision(&self) -> &[f64] {
        &self.prior
    }

    /// σ_d², the marginal posterior variances of every parameter, 0 outside the subnetwork
    /// (what the Wasserstein selection ranks).
    pub fn variances(&self) -> &[f64] {
        &self.variances
    }
}

impl LinearizedPosterior for DiagLaplace {
    fn estimate(&self) -> &MapEstimate {
        &self.map
    }

    /// J_S(x_n) diag(σ_S²) J_S(x_n)ᵀ at each row of `x`, shape `[N, K, K]` (f64).
    fn f_covariance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        let indices = self.indices();
        crate::linearized::f_covariance(&self.map, x, &indices, batch_size, |mut w| {
            for (row, &d) in indices.iter().enumerate() {
                let sd = self.variances[d].sqrt();
                for c in 0..w.ncols() {
                    w[(row, c)] *= sd;
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
        match self.subset {
            None => "diagonal Laplace",
            Some(_) => "diagonal subnetwork Laplace",
        }
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

    /// Draws of the linearized outputs f(x; θ̂) + J_S(θ_s − θ̂)_S (the Jacobian over the
    /// covered parameters: N·K × S per batch of rows).
    fn f_samples(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<Option<Tensor>> {
        crate::linearized::samples(self, x, options, &self.indices())
    }

    /// The linearized Gaussian's moments, exact: f(x; θ̂) and J_S diag(σ_S²) J_Sᵀ.
    fn f_moments(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<FunctionMoments> {
        crate::linearized::moments(self, x, options)
    }

    /// Saves θ̂, the GGN diagonal and the subnetwork (when it is not every parameter); the
    /// variances follow from them and the config.
    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let header = Header {
            kind: KIND,
            predictor: self.map.predictor(),
            seed: self.map.seed(),
            config: &self.config,
        };
        let mut tensors = vec![
            ("theta", self.map.theta().clone()),
            (
                "ggn_diagonal",
                checkpoint::vector_tensor(&self.ggn_diagonal)?,
            ),
        ];
        if let Some(subset) = &self.subset {
            tensors.push(("subset", checkpoint::index_tensor(subset)?));
        }
        checkpoint::save(path, &header, tensors)
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<Valid<LaplaceConfig>>(path, KIND)?;
        let d = saved.n_params();
        let theta = saved.params("theta")?;
        let h = saved.vector("ggn_diagonal", d)?;
        let subset = match saved.rows("subset") {
            Some(_) => Some(saved.indices("subset", d)?),
            None => None,
        };
        let mut map = MapEstimate::of(saved.predictor.clone(), theta)?;
        if let Some(seed) = saved.seed {
            map = map.with_seed(seed);
        }
        Ok(Self::build(map, h, subset, &saved.config)?)
    }
}
