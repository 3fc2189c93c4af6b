//! The Gaussian posterior over a subnetwork S: q(θ_S) = N(θ̂_S, (H_S + diag λ_S)⁻¹).
//!
//! The full-network Laplace is the case S = all parameters and the last-layer Laplace the case
//! S = the last layer's parameters; every variant shares one predictive path, the linearization
//! f(x*; θ) ≈ f(x*; θ̂) + J_S(x*)(θ_S − θ̂_S), so that f(x*) ~ N(f(x*; θ̂), J_S Σ_S J_Sᵀ).

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    InvalidParam, MapEstimate, Posterior, PredictOptions, Prediction, Predictor, Valid, Validate,
    at_least_one,
};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt;
use faer::linalg::triangular_solve;
use faer::{Mat, MatMut};
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::{Error, LinearizedPosterior, PriorPrecision, Result, SubsetScaling};

/// How to fit a Laplace posterior.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_laplace::{LaplaceConfig, PriorPrecision};
/// let config: LaplaceConfig = serde_json::from_str(
///     r#"{"prior": {"scalar": 3.0}, "subset_scaling": "weights"}"#,
/// ).unwrap();
/// assert_eq!((config.prior.clone(), config.batch_size), (PriorPrecision::Scalar(3.0), 256));
/// let bad = LaplaceConfig { prior: PriorPrecision::Scalar(-1.0), ..config };
/// assert_eq!(bad.check().unwrap_err().param, "prior");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LaplaceConfig {
    /// The prior precision (scalar or per parameter).
    pub prior: PriorPrecision,
    /// The scaling λ_S = λ·S/D of a subnetwork's prior precision, and what D counts.
    pub subset_scaling: SubsetScaling,
    /// Rows per minibatch when accumulating the GGN.
    pub batch_size: usize,
}

impl Default for LaplaceConfig {
    fn default() -> Self {
        Self {
            prior: PriorPrecision::Scalar(1.0),
            subset_scaling: SubsetScaling::None,
            batch_size: 256,
        }
    }
}

impl Validate for LaplaceConfig {
    /// Every prior precision finite and ≥ 0, at least one row per batch.
    fn validate(&self) -> Result<(), InvalidParam> {
        self.prior.validate()?;
        at_least_one("batch_size", self.batch_size)
    }
}

/// A full-covariance Laplace posterior over the parameter subset S of a MAP estimate.
///
/// P_S = H_S + diag(λ_S) with H_S the GGN of the subset (Λ includes σ⁻² for a Gaussian
/// likelihood), factored once by Cholesky in the GGN's own storage, P_S = L Lᵀ. H_S is kept
/// bit for bit as a packed triangle (for [`ggn`](Self::ggn), [`precision`](Self::precision) and
/// saving): 12·s² bytes in all, 19.2 GB at s = 40,000, where a second s × s matrix would not fit
/// in 24 GiB. It owns the MAP estimate (network, θ̂, likelihood with its σ) its predictive
/// linearizes.
#[derive(Debug)]
pub struct SubnetLaplace {
    map: MapEstimate,
    config: LaplaceConfig,
    subset: Vec<usize>,
    theta_s: Vec<f64>,
    /// H_S's lower triangle, diagonal included, row by row: entry (i, j ≤ i) at i(i + 1)/2 + j.
    ggn_lower: Vec<f64>,
    prior: Vec<f64>,
    /// The Cholesky factor L in the lower triangle (the upper triangle is not read).
    factor: Mat<f64>,
}

impl SubnetLaplace {
    /// Fits the posterior over `subset` at the MAP estimate `map` on the training inputs `x`.
    pub fn fit(
        map: &MapEstimate,
        x: &Tensor,
        subset: Vec<usize>,
        config: &Valid<LaplaceConfig>,
    ) -> Result<Self> {
        check_subset(&subset, map.network().layout().len())?;
        let ggn = crate::ggn(
            map.network(),
            map.theta(),
            &map.likelihood(),
            x,
            &subset,
            config.batch_size,
        )?;
        Self::from_ggn(map.clone(), subset, ggn, config)
    }

    /// Builds the posterior from a GGN already computed for `subset` (its lower triangle is read),
    /// factoring P_S = H_S + diag(λ_S) by Cholesky in the GGN's own storage.
    pub fn from_ggn(
        map: MapEstimate,
        subset: Vec<usize>,
        mut ggn: Mat<f64>,
        config: &Valid<LaplaceConfig>,
    ) -> Result<Self> {
        let d = map.network().layout().len();
        check_subset(&subset, d)?;
        let s = subset.len();
        if ggn.nrows() != s || ggn.ncols() != s {
            return Err(bdl_tensor::Error::ShapeMismatch {
                context: format!("the GGN of a subnetwork of {s} parameters"),
                expected: vec![s, s],
                actual: vec![ggn.nrows(), ggn.ncols()],
            }
            .into());
        }
        let prior =
            config
                .prior
                .for_subset(&subset, map.network().layout(), config.subset_scaling)?;
        let all = bdl_tensor::to_f64_vec(map.theta())?;
        let theta_s = subset.iter().map(|&i| all[i]).collect();
        let ggn_lower: Vec<f64> = (0..s)
            .flat_map(|i| (0..=i).map(move |j| (i, j)))
            .map(|ij| ggn[ij])
            .collect();
        for (i, l) in prior.iter().enumerate() {
            ggn[(i, i)] += l;
        }
        let mut factor = ggn;
        let par = faer::get_global_parallelism();
        let mut scratch = MemBuffer::new(llt::factor::cholesky_in_place_scratch::<f64>(
            s,
            par,
            Default::default(),
        ));
        llt::factor::cholesky_in_place(
            factor.as_mut(),
            Default::default(),
            par,
            MemStack::new(&mut scratch),
            Default::default(),
        )
        .map_err(|llt::factor::LltError::NonPositivePivot { index }| {
            Error::NotPositiveDefinite {
                size: s,
                pivot: index,
            }
        })?;
        Ok(Self {
            map,
            config: (**config).clone(),
            subset,
            theta_s,
            ggn_lower,
            prior,
            factor,
        })
    }

    /// The subnetwork's flat parameter indices.
    pub fn subset(&self) -> &[usize] {
        &self.subset
    }

    /// H_S, the GGN of the subnetwork (a new matrix).
    pub fn ggn(&self) -> Mat<f64> {
        let s = self.subset.len();
        Mat::from_fn(s, s, |i, j| {
            let (r, c) = (i.max(j), i.min(j));
            self.ggn_lower[r * (r + 1) / 2 + c]
        })
    }

    /// λ_S, the prior precision of each subnetwork parameter.
    pub fn prior_precision(&self) -> &[f64] {
        &self.prior
    }

    /// θ̂_S, the MAP values of the subnetwork's parameters.
    pub fn theta_s(&self) -> &[f64] {
        &self.theta_s
    }

    /// P_S = H_S + diag(λ_S) (a new matrix).
    pub fn precision(&self) -> Mat<f64> {
        let mut p = self.ggn();
        for (i, l) in self.prior.iter().enumerate() {
            p[(i, i)] += l;
        }
        p
    }

    /// Solves L X = B in place (B has s rows).
    fn solve_l(&self, b: MatMut<'_, f64>) {
        triangular_solve::solve_lower_triangular_in_place(
            self.factor.as_ref(),
            b,
            faer::get_global_parallelism(),
        );
    }

    /// L⁻¹ (lower triangular, a new matrix).
    fn factor_inverse(&self) -> Mat<f64> {
        let s = self.subset.len();
        let mut l_inv = Mat::<f64>::identity(s, s);
        self.solve_l(l_inv.as_mut());
        l_inv
    }

    /// Σ_S = P_S⁻¹ = L⁻ᵀ L⁻¹ (a new matrix).
    pub fn covariance(&self) -> Mat<f64> {
        let l_inv = self.factor_inverse();
        l_inv.transpose() * &l_inv
    }

    /// diag(Σ_S), the exact marginal posterior variances of the subnetwork's parameters (in the
    /// order of [`subset`](Self::subset)): (Σ_S)_ii = Σ_k (L⁻¹)_ki², without forming Σ_S.
    ///
    /// ```
    /// # use bdl_laplace::{LaplaceConfig, PriorPrecision, SubnetLaplace};
    /// # use bdl_inference::{MapEstimate, Validate};
    /// # use bdl_likelihoods::Likelihood;
    /// # use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
    /// # use bdl_tensor::Seed;
    /// # use candle_core::{DType, Device, Tensor};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let net = Network::from(Mlp::new(MlpSpec::new(&[2, 4, 1], Activation::Tanh))?);
    /// let theta = net.init(Seed(0), DType::F64, &Device::Cpu)?;
    /// let map = MapEstimate::new(net, theta, Likelihood::Gaussian { sigma: 0.5 })?;
    /// let x = Tensor::from_vec(vec![0.5f64, -1.0, 1.5, 0.25, -0.5, 2.0], (3, 2), &Device::Cpu)?;
    /// let config = LaplaceConfig { prior: PriorPrecision::Scalar(2.0), ..Default::default() }.check()?;
    /// let post = SubnetLaplace::fit(&map, &x, vec![0, 3, 8, 12], &config)?;
    /// let sigma = post.covariance();
    /// for (i, v) in post.marginal_variances().iter().enumerate() {
    ///     assert!((v - sigma[(i, i)]).abs() <= 1e-12 * sigma[(i, i)]);
    ///     assert!(*v <= 1.0 / 2.0); // never above the prior variance 1/λ
    /// }
    /// # Ok(()) }
    /// ```
    pub fn marginal_variances(&self) -> Vec<f64> {
        let l_inv = self.factor_inverse();
        let s = self.subset.len();
        (0..s)
            .map(|i| (i..s).map(|k| l_inv[(k, i)] * l_inv[(k, i)]).sum())
            .collect()
    }

    /// log det P_S = 2 Σ_i log L_ii.
    pub fn log_det_precision(&self) -> f64 {
        2.0 * (0..self.subset.len())
            .map(|i| self.factor[(i, i)].ln())
            .sum::<f64>()
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

    /// `n` draws of the full parameter vector, shape `[n, D]` in θ̂'s dtype: θ̂ outside S,
    /// θ_S = θ̂_S + L⁻ᵀ z inside, z ~ N(0, I) from the stream `seed.fork("laplace-sample")`,
    /// so that Cov(θ_S) = (L Lᵀ)⁻¹ = Σ_S.
    pub fn sample(&self, n: usize, seed: Seed) -> Result<Tensor> {
        let s = self.subset.len();
        let mut rng = seed.fork("laplace-sample").rng();
        let mut z = Mat::<f64>::zeros(s, n);
        for j in 0..n {
            for i in 0..s {
                z[(i, j)] = StandardNormal.sample(&mut rng);
            }
        }
        triangular_solve::solve_upper_triangular_in_place(
            self.factor.as_ref().transpose(),
            z.as_mut(),
            faer::get_global_parallelism(),
        );
        let theta = self.map.theta();
        let map = bdl_tensor::to_f64_vec(theta)?;
        let d = map.len();
        let mut out = Vec::with_capacity(n * d);
        for j in 0..n {
            let start = out.len();
            out.extend_from_slice(&map);
            for (i, &p) in self.subset.iter().enumerate() {
                out[start + p] = self.theta_s[i] + z[(i, j)];
            }
        }
        Ok(Tensor::from_vec(out, (n, d), theta.device())?.to_dtype(theta.dtype())?)
    }
}

/// Every index below the model's D and none repeated.
fn check_subset(subset: &[usize], d: usize) -> Result<()> {
    if let Some(&bad) = subset.iter().find(|&&i| i >= d) {
        return Err(bdl_models::Error::ParamIndex { index: bad, len: d }.into());
    }
    let mut sorted = subset.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(InvalidParam::new(
            "subset",
            format!("index {} twice", w[0]),
            "distinct indices",
        )
        .into());
    }
    Ok(())
}

impl LinearizedPosterior for SubnetLaplace {
    fn estimate(&self) -> &MapEstimate {
        &self.map
    }

    /// The covariance J_S(x_n) Σ_S J_S(x_n)ᵀ of the linearized outputs at each row of `x`,
    /// shape `[N, K, K]` (f64). With Σ_S = L⁻ᵀL⁻¹, W = L⁻¹ J_Sᵀ by one triangular solve.
    fn f_covariance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        crate::linearized::f_covariance(&self.map, x, &self.subset, batch_size, |w| self.solve_l(w))
    }
}

const KIND: &str = "subnet-laplace";

impl Posterior for SubnetLaplace {
    fn method(&self) -> &str {
        if self.subset.len() == self.map.network().layout().len() {
            "full Laplace"
        } else {
            "subnetwork Laplace"
        }
    }

    fn predictor(&self) -> &Predictor {
        self.map.predictor()
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        Ok(self.linearized_predictive(x, options)?)
    }

    fn sample(&self, n: usize, seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        Ok(Some(SubnetLaplace::sample(self, n, seed)?))
    }

    /// Saves θ̂, the subset and H_S; [`load`](Posterior::load) factors P_S again (the same
    /// arithmetic, so the same factor bit for bit).
    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let tensors = vec![
            ("theta", self.map.theta().clone()),
            ("subset", checkpoint::index_tensor(&self.subset)?),
            (
                "ggn",
                bdl_tensor::from_mat(self.ggn().as_ref(), DType::F64, &Device::Cpu)?,
            ),
        ];
        let header = Header {
            kind: KIND,
            predictor: self.map.predictor(),
            seed: self.map.seed(),
            config: &self.config,
        };
        checkpoint::save(path, &header, tensors)
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<Valid<LaplaceConfig>>(path, KIND)?;
        let d = saved.n_params();
        let theta = saved.params("theta")?;
        let subset = saved.indices("subset", d)?;
        let s = subset.len();
        let ggn = bdl_tensor::to_mat(&saved.tensor("ggn", &[s, s])?)?;
        let mut map = MapEstimate::of(saved.predictor, theta)?;
        if let Some(seed) = saved.seed {
            map = map.with_seed(seed);
        }
        Ok(Self::from_ggn(map, subset, ggn, &saved.config)?)
    }
}
