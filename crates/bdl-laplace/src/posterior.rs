//! The Gaussian posterior over a subnetwork S: q(θ_S) = N(θ̂_S, (H_S + diag λ_S)⁻¹).
//!
//! The full-network Laplace is the case S = all parameters and the last-layer Laplace the case
//! S = the last layer's parameters; every variant shares one predictive path, the linearization
//! f(x*; θ) ≈ f(x*; θ̂) + J_S(x*)(θ_S − θ̂_S), so that f(x*) ~ N(f(x*; θ̂), J_S Σ_S J_Sᵀ).

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    FunctionMoments, InvalidParam, MapEstimate, Posterior, PredictOptions, Prediction, Predictor,
    Valid, Validate, at_least_one,
};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt;
use faer::linalg::triangular_solve;
use faer::{Mat, MatMut, MatRef};
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
/// likelihood), H_S = MᵀM for the N·K × s rows M of the GGN's factor. It is held in one of two
/// ways ([`fit`](Self::fit) picks the cheaper):
///
/// - **dense**: P_S = L Lᵀ by Cholesky in the GGN's own storage, H_S kept bit for bit as a packed
///   triangle (for [`ggn`](Self::ggn), [`precision`](Self::precision) and saving): 12·s² bytes,
///   19.2 GB at s = 40,000, where a second s × s matrix would not fit in 24 GiB;
/// - **low rank** (N·K < s and every λ_i > 0): M itself and the Cholesky factor of the N·K × N·K
///   matrix C = I + M D⁻¹ Mᵀ, D = diag(λ_S); by Woodbury, Σ_S = D⁻¹ − D⁻¹Mᵀ C⁻¹ M D⁻¹ and
///   det P_S = det D · det C. For the full Laplace of an MLP 8-50-50-1 on 1,000 points that is a
///   1,000 × 1,000 factorisation instead of a 3,051 × 3,051 one.
///
/// It owns the MAP estimate (network, θ̂, likelihood with its σ) its predictive linearizes.
#[derive(Debug)]
pub struct SubnetLaplace {
    map: MapEstimate,
    config: LaplaceConfig,
    subset: Vec<usize>,
    theta_s: Vec<f64>,
    prior: Vec<f64>,
    factor: Factor,
}

/// How P_S = H_S + diag(λ_S) is held.
#[derive(Debug)]
enum Factor {
    /// P_S = L Lᵀ.
    Dense {
        /// H_S's lower triangle, diagonal included, row by row: entry (i, j ≤ i) at
        /// i(i + 1)/2 + j.
        ggn_lower: Vec<f64>,
        /// L in the lower triangle (the upper triangle is not read).
        l: Mat<f64>,
    },
    /// H_S = MᵀM with fewer rows than columns; C = I + M D⁻¹ Mᵀ = L_C L_Cᵀ.
    LowRank {
        /// M, N·K × s.
        m: Mat<f64>,
        /// L_C in the lower triangle.
        lc: Mat<f64>,
    },
}

/// The Cholesky factor of the symmetric positive-definite `a` (its lower triangle read), in
/// place.
fn cholesky(mut a: Mat<f64>) -> Result<Mat<f64>> {
    let size = a.nrows();
    let par = faer::get_global_parallelism();
    let mut scratch = MemBuffer::new(llt::factor::cholesky_in_place_scratch::<f64>(
        size,
        par,
        Default::default(),
    ));
    llt::factor::cholesky_in_place(
        a.as_mut(),
        Default::default(),
        par,
        MemStack::new(&mut scratch),
        Default::default(),
    )
    .map_err(|llt::factor::LltError::NonPositivePivot { index }| {
        Error::NotPositiveDefinite { size, pivot: index }
    })?;
    Ok(a)
}

/// C += U Uᵀ (its lower triangle) with U = M D^{-1/2}, D = diag(`prior`), by rank updates of
/// `block` of U's columns at a time: U itself would be a second copy of M.
fn add_lower_scaled_gram(mut c: MatMut<'_, f64>, m: MatRef<'_, f64>, prior: &[f64], block: usize) {
    for first in (0..m.ncols()).step_by(block) {
        let cols = block.min(m.ncols() - first);
        let u = Mat::from_fn(m.nrows(), cols, |r, k| {
            m[(r, first + k)] / prior[first + k].sqrt()
        });
        crate::ggn::add_lower_gram(c.as_mut(), u.as_ref());
    }
}

fn solve_lower(l: &Mat<f64>, b: MatMut<'_, f64>) {
    triangular_solve::solve_lower_triangular_in_place(
        l.as_ref(),
        b,
        faer::get_global_parallelism(),
    );
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
        let rows = bdl_inference::n_rows(x, "x")? * map.network().n_outputs();
        let prior =
            config
                .prior
                .for_subset(&subset, map.network().layout(), config.subset_scaling)?;
        if rows < subset.len() && prior.iter().all(|&l| l > 0.0) {
            let m = crate::ggn::factor_rows(
                map.network(),
                map.theta(),
                &map.likelihood(),
                x,
                &subset,
                config.batch_size,
            )?;
            return Self::from_factor_rows(map.clone(), subset, m, config);
        }
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

    /// Builds the low-rank posterior from the rows M of the GGN's factor (H_S = MᵀM, `m` with
    /// one column per subset parameter), factoring C = I + M D⁻¹ Mᵀ by Cholesky. Errors when a
    /// prior precision is not positive (D⁻¹ must exist).
    pub fn from_factor_rows(
        map: MapEstimate,
        subset: Vec<usize>,
        m: Mat<f64>,
        config: &Valid<LaplaceConfig>,
    ) -> Result<Self> {
        check_subset(&subset, map.network().layout().len())?;
        let s = subset.len();
        if m.ncols() != s {
            return Err(bdl_tensor::Error::ShapeMismatch {
                context: format!("the GGN factor rows of a subnetwork of {s} parameters"),
                expected: vec![m.nrows(), s],
                actual: vec![m.nrows(), m.ncols()],
            }
            .into());
        }
        let (prior, theta_s) = Self::prior_and_mean(&map, &subset, config)?;
        if let Some(l) = prior.iter().find(|&&l| l <= 0.0 || l.is_nan()) {
            return Err(InvalidParam::new(
                "prior",
                format!("a precision {l}"),
                "> 0 for the low-rank posterior (D⁻¹ must exist)",
            )
            .into());
        }
        let mut c = Mat::<f64>::identity(m.nrows(), m.nrows());
        add_lower_scaled_gram(c.as_mut(), m.as_ref(), &prior, 1024);
        let lc = cholesky(c)?;
        Ok(Self {
            map,
            config: (**config).clone(),
            subset,
            theta_s,
            prior,
            factor: Factor::LowRank { m, lc },
        })
    }

    /// λ_S and θ̂_S of `subset`.
    fn prior_and_mean(
        map: &MapEstimate,
        subset: &[usize],
        config: &Valid<LaplaceConfig>,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        let prior =
            config
                .prior
                .for_subset(subset, map.network().layout(), config.subset_scaling)?;
        let all = bdl_tensor::to_f64_vec(map.theta())?;
        Ok((prior, subset.iter().map(|&i| all[i]).collect()))
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
        let (prior, theta_s) = Self::prior_and_mean(&map, &subset, config)?;
        let ggn_lower: Vec<f64> = (0..s)
            .flat_map(|i| (0..=i).map(move |j| (i, j)))
            .map(|ij| ggn[ij])
            .collect();
        for (i, l) in prior.iter().enumerate() {
            ggn[(i, i)] += l;
        }
        let l = cholesky(ggn)?;
        Ok(Self {
            map,
            config: (**config).clone(),
            subset,
            theta_s,
            prior,
            factor: Factor::Dense { ggn_lower, l },
        })
    }

    /// The subnetwork's flat parameter indices.
    pub fn subset(&self) -> &[usize] {
        &self.subset
    }

    /// H_S, the GGN of the subnetwork (a new matrix).
    pub fn ggn(&self) -> Mat<f64> {
        let s = self.subset.len();
        match &self.factor {
            Factor::Dense { ggn_lower, .. } => Mat::from_fn(s, s, |i, j| {
                let (r, c) = (i.max(j), i.min(j));
                ggn_lower[r * (r + 1) / 2 + c]
            }),
            Factor::LowRank { m, .. } => m.transpose() * m,
        }
    }

    /// Whether P_S is held as a low-rank update of its prior (N·K < s), not factored densely.
    pub fn is_low_rank(&self) -> bool {
        matches!(self.factor, Factor::LowRank { .. })
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

    /// A square root of Σ_S: Aᵀ with Σ_S = A Aᵀ for the dense factor (A = L⁻ᵀ), and for the
    /// low-rank one V = L_C⁻¹ M D⁻¹ with Σ_S = D⁻¹ − VᵀV; `b` (s rows) becomes Aᵀ b = L⁻¹ b
    /// or D^{-1/2} b, and the low-rank V b is returned.
    fn whiten(&self, mut b: MatMut<'_, f64>) -> Option<Mat<f64>> {
        match &self.factor {
            Factor::Dense { l, .. } => {
                solve_lower(l, b);
                None
            }
            Factor::LowRank { m, lc } => {
                let scaled = Mat::from_fn(b.nrows(), b.ncols(), |i, j| b[(i, j)] / self.prior[i]);
                let sd: Vec<f64> = self.prior.iter().map(|l| l.sqrt().recip()).collect();
                for c in 0..b.ncols() {
                    for (i, sd) in sd.iter().enumerate() {
                        b[(i, c)] *= sd;
                    }
                }
                let mut v = m * &scaled;
                solve_lower(lc, v.as_mut());
                Some(v)
            }
        }
    }

    /// Σ_S = P_S⁻¹ (a new matrix): L⁻ᵀ L⁻¹, or D⁻¹ − VᵀV.
    pub fn covariance(&self) -> Mat<f64> {
        let s = self.subset.len();
        let mut a = Mat::<f64>::identity(s, s);
        match self.whiten(a.as_mut()) {
            None => a.transpose() * &a,
            Some(v) => a.transpose() * &a - v.transpose() * &v,
        }
    }

    /// diag(Σ_S), the exact marginal posterior variances of the subnetwork's parameters (in the
    /// order of [`subset`](Self::subset)): (Σ_S)_ii = Σ_k (L⁻¹)_ki², or 1/λ_i − Σ_k V_ki², without
    /// forming Σ_S.
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
    /// assert!(post.is_low_rank()); // 3 examples, 4 parameters
    /// let sigma = post.covariance();
    /// for (i, v) in post.marginal_variances().iter().enumerate() {
    ///     assert!((v - sigma[(i, i)]).abs() <= 1e-12 * sigma[(i, i)]);
    ///     assert!(*v <= 1.0 / 2.0); // never above the prior variance 1/λ
    /// }
    /// # Ok(()) }
    /// ```
    pub fn marginal_variances(&self) -> Vec<f64> {
        let s = self.subset.len();
        let mut a = Mat::<f64>::identity(s, s);
        let v = self.whiten(a.as_mut());
        (0..s)
            .map(|i| {
                let own: f64 = a.col(i).iter().map(|x| x * x).sum();
                own - v
                    .as_ref()
                    .map_or(0.0, |v| v.col(i).iter().map(|x| x * x).sum())
            })
            .collect()
    }

    /// log det P_S = 2 Σ_i log L_ii, or Σ_i log λ_i + 2 Σ_k log (L_C)_kk (det P_S = det D ·
    /// det C).
    pub fn log_det_precision(&self) -> f64 {
        let log_diag = |l: &Mat<f64>| (0..l.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>();
        match &self.factor {
            Factor::Dense { l, .. } => 2.0 * log_diag(l),
            Factor::LowRank { lc, .. } => {
                self.prior.iter().map(|l| l.ln()).sum::<f64>() + 2.0 * log_diag(lc)
            }
        }
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
        let mut normals = |rows: usize| {
            let mut z = Mat::<f64>::zeros(rows, n);
            for j in 0..n {
                for i in 0..rows {
                    z[(i, j)] = StandardNormal.sample(&mut rng);
                }
            }
            z
        };
        let mut z = normals(s);
        match &self.factor {
            Factor::Dense { l, .. } => triangular_solve::solve_upper_triangular_in_place(
                l.as_ref().transpose(),
                z.as_mut(),
                faer::get_global_parallelism(),
            ),
            Factor::LowRank { m, lc } => {
                // y = z₁ + Uᵀz₂ ~ N(0, I + UᵀU) (U = M D^{-1/2}, z₂ from the same stream, after
                // z₁), then D^{-1/2}(I + UᵀU)⁻¹ y = D^{-1/2}(y − Uᵀ C⁻¹ U y) ~ N(0, Σ_S).
                let sd: Vec<f64> = self.prior.iter().map(|l| l.sqrt().recip()).collect();
                let z2 = normals(m.nrows());
                let ut = |w: &Mat<f64>| {
                    let out = m.transpose() * w;
                    Mat::from_fn(out.nrows(), out.ncols(), |i, j| out[(i, j)] * sd[i])
                };
                let y = &z + ut(&z2);
                let scaled = Mat::from_fn(s, n, |i, j| y[(i, j)] * sd[i]);
                let mut w = m * &scaled;
                solve_lower(lc, w.as_mut());
                triangular_solve::solve_upper_triangular_in_place(
                    lc.as_ref().transpose(),
                    w.as_mut(),
                    faer::get_global_parallelism(),
                );
                let correction = ut(&w);
                z = Mat::from_fn(s, n, |i, j| sd[i] * (y[(i, j)] - correction[(i, j)]));
            }
        }
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
pub(crate) fn check_subset(subset: &[usize], d: usize) -> Result<()> {
    bdl_models::check_param_indices(subset, d)?;
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
    /// shape `[N, K, K]` (f64). With Σ_S = L⁻ᵀL⁻¹, W = L⁻¹ J_Sᵀ by one triangular solve; for the
    /// low-rank factor, W = D^{-1/2} J_Sᵀ less the part V = L_C⁻¹ M D⁻¹ J_Sᵀ.
    fn f_covariance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        crate::linearized::f_covariance(&self.map, x, &self.subset, batch_size, |w| self.whiten(w))
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

    /// Draws of the linearized outputs f(x; θ̂) + J_S(θ_s − θ̂)_S.
    fn f_samples(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<Option<Tensor>> {
        crate::linearized::samples(self, x, options, &self.subset)
    }

    /// The linearized Gaussian's moments, exact: f(x; θ̂) and J_S Σ_S J_Sᵀ.
    fn f_moments(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<FunctionMoments> {
        crate::linearized::moments(self, x, options)
    }

    /// Saves θ̂, the subset and H_S (dense) or M (low rank); [`load`](Posterior::load) factors
    /// again (the same arithmetic, so the same factor bit for bit).
    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let curvature = match &self.factor {
            Factor::Dense { .. } => ("ggn", self.ggn()),
            Factor::LowRank { m, .. } => ("ggn_rows", m.clone()),
        };
        let tensors = vec![
            ("theta", self.map.theta().clone()),
            ("subset", checkpoint::index_tensor(&self.subset)?),
            (
                curvature.0,
                bdl_tensor::from_mat(curvature.1.as_ref(), DType::F64, &Device::Cpu)?,
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
        let mut map = MapEstimate::of(saved.predictor.clone(), theta)?;
        if let Some(seed) = saved.seed {
            map = map.with_seed(seed);
        }
        if let Some(rows) = saved.rows("ggn_rows") {
            let m = bdl_tensor::to_mat(&saved.tensor("ggn_rows", &[rows, s])?)?;
            return Ok(Self::from_factor_rows(map, subset, m, &saved.config)?);
        }
        let ggn = bdl_tensor::to_mat(&saved.tensor("ggn", &[s, s])?)?;
        Ok(Self::from_ggn(map, subset, ggn, &saved.config)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Gram matrix of M D^{-1/2} summed over column blocks of any size is the one-block sum
    /// and M D⁻¹ Mᵀ computed entry by entry (to rounding: the blocks change the order of the
    /// sums).
    #[test]
    fn the_scaled_gram_by_column_blocks_is_the_whole_product() {
        let (rows, cols) = (7, 11);
        let m = Mat::from_fn(rows, cols, |r, c| ((3 * r + 5 * c) % 7) as f64 - 2.5);
        let prior: Vec<f64> = (0..cols).map(|c| 0.5 + c as f64).collect();
        let lower = |block: usize| {
            let mut c = Mat::<f64>::zeros(rows, rows);
            add_lower_scaled_gram(c.as_mut(), m.as_ref(), &prior, block);
            c
        };
        let whole = lower(cols);
        for block in [1, 3, 4, 64] {
            let blocks = lower(block);
            for i in 0..rows {
                for j in 0..=i {
                    let exact: f64 = (0..cols).map(|k| m[(i, k)] * m[(j, k)] / prior[k]).sum();
                    assert!((blocks[(i, j)] - whole[(i, j)]).abs() <= 1e-12 * (1.0 + exact.abs()));
                    assert!((blocks[(i, j)] - exact).abs() <= 1e-12 * (1.0 + exact.abs()));
                }
            }
        }
    }
}
