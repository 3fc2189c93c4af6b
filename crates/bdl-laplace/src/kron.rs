//! The Kronecker-factored (KFAC) Laplace posterior: the GGN block of every dense layer as a
//! Kronecker product of two small factors, over the whole network or its last layer.
//!
//! A dense layer z = a Wᵀ + b (W of shape O × J, stored row-major in θ) with inputs a_n and the
//! deltas δ_{n,c} = ∂(L_nᵀ f_n)_c/∂z_n of the columns of the likelihood's factor Λ_n = L_n L_nᵀ
//! has the exact GGN blocks
//!
//! H_W = Σ_n a_n a_nᵀ ⊗ Σ_c δ_{n,c} δ_{n,c}ᵀ,    H_b = Σ_n Σ_c δ_{n,c} δ_{n,c}ᵀ = G,
//!
//! and KFAC replaces the expectation of the Kronecker product by the product of expectations:
//! H_W ≈ G ⊗ A/N with G = Σ_{n,c} δ δᵀ (O × O) and A = Σ_n a aᵀ (J × J) (laplace-torch's
//! `KronLaplace`: weights and biases separate, the bias block exact). Blocks of different layers
//! are independent. With the eigendecompositions G = U_G diag(g) U_Gᵀ, A/N = U_A diag(α) U_Aᵀ,
//! the posterior precision of a weight block is (U_G ⊗ U_A) diag(g_o α_j + λ) (U_G ⊗ U_A)ᵀ, so
//! its inverse, log-determinant and square root cost one small eigendecomposition per factor:
//!
//! log det P = Σ_blocks Σ_{o,j} log(g_o α_j + λ),
//! log Z ≈ log p(D | θ̂) − ½ (log det P − S log λ + λ ‖θ̂_S‖²)
//!
//! over the S parameters in scope (the others fixed at θ̂, as a last-layer Laplace). In row-major
//! vectorisation (U_G ⊗ U_A)ᵀ vec(X) = vec(U_Gᵀ X U_A), which the predictive and the draws use.
//!
//! A convolution is the same affine map on its unfolded patches, one row per example and output
//! position; KFAC takes the N·P (example, position) pairs as the rows of both factors
//! (G = Σ_{n,p,c} δ δᵀ, A = Σ_{n,p} a aᵀ, the weight block G ⊗ A/(N·P): the "expand"
//! approximation of curvlinops, which laplace-torch's `KronLaplace` uses for `Conv2d`). A
//! channelwise layer (a BatchNorm) has no Kronecker structure: its (γ, β) get their exact GGN
//! block, one factor of 2C.

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    FunctionMoments, MapEstimate, Posterior, PredictOptions, Prediction, Predictor, Valid, Validate,
};
use bdl_likelihoods::Likelihood;
use bdl_models::{Affine, LayerFactors, Model};
use bdl_tensor::{ParamLayout, Seed};
use candle_core::{DType, Device, Tensor};
use faer::{Mat, MatMut, MatRef};
use serde::{Deserialize, Serialize};

use crate::{Error, LinearizedPosterior, Result};

/// The parameters a KFAC Laplace covers; the others stay at θ̂.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KronScope {
    /// Every parameter.
    #[default]
    All,
    /// The last layer's weight and bias.
    LastLayer,
}

/// A KFAC Laplace's settings: its scope, the scalar prior precision λ, and the GGN's rows per
/// minibatch.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_laplace::{KronConfig, KronScope};
/// let config = KronConfig { scope: KronScope::LastLayer, prior_precision: 2.0, batch_size: 128 };
/// assert!(config.check().is_ok());
/// let bad = KronConfig { prior_precision: -1.0, ..KronConfig::default() };
/// assert_eq!(bad.check().unwrap_err().param, "prior_precision");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KronConfig {
    /// Every parameter, or the last layer.
    pub scope: KronScope,
    /// λ, one prior precision for every parameter in scope.
    pub prior_precision: f64,
    /// Training rows per forward pass when accumulating the factors.
    pub batch_size: usize,
}

impl Default for KronConfig {
    fn default() -> Self {
        Self {
            scope: KronScope::All,
            prior_precision: 1.0,
            batch_size: 256,
        }
    }
}

impl Validate for KronConfig {
    /// λ finite and ≥ 0, at least one row per batch.
    fn validate(&self) -> std::result::Result<(), bdl_inference::InvalidParam> {
        if !(self.prior_precision.is_finite() && self.prior_precision >= 0.0) {
            return Err(bdl_inference::InvalidParam::new(
                "prior_precision",
                self.prior_precision.to_string(),
                "a finite λ ≥ 0",
            ));
        }
        bdl_inference::at_least_one("batch_size", self.batch_size)
    }
}

/// One block of the KFAC GGN: θ[offset ..] of a dense layer's weight (factors G and A/N, the
/// block G ⊗ A/N) or of its bias (the one factor G).
#[derive(Clone, Debug)]
pub struct KronBlock {
    /// The block's first flat parameter index.
    pub offset: usize,
    /// The factors, first ⊗ second (one for a bias).
    pub factors: Vec<Mat<f64>>,
}

impl KronBlock {
    /// The number of parameters of the block, the product of its factors' sizes.
    pub fn len(&self) -> usize {
        self.factors.iter().map(Mat::nrows).product()
    }

    /// Whether the block has no parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The layers of `layout` a scope covers.
fn scope_layers(layout: &ParamLayout, scope: KronScope) -> Vec<bdl_tensor::Layer> {
    let layers = layout.layers();
    let first = match scope {
        KronScope::All => 0,
        KronScope::LastLayer => layers.len().saturating_sub(1),
    };
    layers[first..].to_vec()
}

/// One weight segment's sums over the rows: G = Σ δδᵀ, A = Σ aaᵀ, and P, the rows per example.
#[derive(Clone)]
struct FactorSums {
    g: Mat<f64>,
    a: Mat<f64>,
    positions: usize,
}

/// The KFAC GGN over the segments of `scope`: per layer G = Σ_{n,c} δ_{n,c} δ_{n,c}ᵀ and
/// A = Σ_n a_n a_nᵀ over the rows of `x` in minibatches of `batch_size` (in f64; a
/// convolution's sums also over its P positions), each weight's block `[G, A/(N·P)]` and each
/// bias's `[G]`, in θ's order.
pub fn kron_ggn(
    model: &impl Model,
    theta: &Tensor,
    likelihood: &Likelihood,
    x: &Tensor,
    scope: KronScope,
    batch_size: usize,
) -> Result<Vec<KronBlock>> {
    let layout = model.layout();
    let segments: Vec<usize> = scope_layers(layout, scope)
        .iter()
        .flat_map(|l| std::iter::once(l.weight).chain(l.bias))
        .collect();
    let n = bdl_inference::n_rows(x, "x")?;
    let mut sums: Vec<Option<FactorSums>> = vec![None; layout.segments().len()];
    // A channelwise layer's exact GGN block over (γ, β), by its weight segment.
    let mut exact: Vec<Option<Mat<f64>>> = vec![None; layout.segments().len()];
    for start in (0..n).step_by(batch_size.max(1)) {
        let xb = x.narrow(0, start, batch_size.max(1).min(n - start))?;
        let cache = model.forward_cached(theta, &xb)?;
        let factor = likelihood
            .hess_factor(&cache.output)?
            .to_dtype(theta.dtype())?;
        for c in 0..factor.dims()[2] {
            let grad_f = factor.narrow(2, c, 1)?.squeeze(2)?;
            for layer in model.factors(theta, &cache, &grad_f)? {
                let w = layer.weight_segment;
                if !segments.contains(&w) {
                    continue;
                }
                if layer.map == Affine::Channelwise {
                    let rows = channelwise_rows(&layer)?;
                    let h = exact[w].get_or_insert_with(|| Mat::zeros(rows.ncols(), rows.ncols()));
                    *h += rows.transpose() * &rows;
                    continue;
                }
                let delta = bdl_tensor::to_mat(&layer.delta)?;
                let (o, j) = (delta.ncols(), layer.input.dims()[1]);
                let sum = sums[w].get_or_insert_with(|| FactorSums {
                    g: Mat::zeros(o, o),
                    a: Mat::zeros(j, j),
                    positions: layer.positions,
                });
                sum.g += delta.transpose() * &delta;
                if c == 0 {
                    let input = bdl_tensor::to_mat(&layer.input)?;
                    sum.a += input.transpose() * &input;
                }
            }
        }
    }
    let mut blocks = Vec::with_capacity(segments.len());
    for BlockShape {
        offset,
        sizes,
        weight,
    } in block_shapes(layout, scope)?
    {
        let missing = || Error::KronUnsupported {
            reason: format!(
                "the network gave no factors for `{}`",
                layout.segments()[weight].name
            ),
        };
        let factors = if let Some(h) = exact[weight].take() {
            vec![h]
        } else {
            let sum = sums[weight].as_ref().ok_or_else(missing)?;
            match sizes.len() {
                2 => vec![sum.g.clone(), &sum.a * ((n * sum.positions) as f64).recip()],
                _ => vec![sum.g.clone()], // a bias: its layer's G
            }
        };
        blocks.push(KronBlock { offset, factors });
    }
    Ok(blocks)
}

/// One block of a scope's KFAC: where it starts, its factors' sizes, and the weight segment of
/// the layer whose sums it is built from.
struct BlockShape {
    offset: usize,
    sizes: Vec<usize>,
    weight: usize,
}

/// The blocks of `scope`'s KFAC in θ's order: a dense or convolutional weight `[O, J]`, its
/// bias `[O]`; a channelwise layer (a 1-D weight γ, its β right after it) one exact block
/// `[2C]`. What [`kron_ggn`] builds and a saved posterior holds.
fn block_shapes(layout: &ParamLayout, scope: KronScope) -> Result<Vec<BlockShape>> {
    let segments = layout.segments();
    let mut shapes = Vec::new();
    for layer in scope_layers(layout, scope) {
        let w = &segments[layer.weight];
        let shape = |offset, sizes| BlockShape {
            offset,
            sizes,
            weight: layer.weight,
        };
        if w.shape.len() == 1 {
            let bias = layer.bias.map(|b| &segments[b]);
            let Some(b) = bias.filter(|b| b.offset == w.offset + w.numel()) else {
                return Err(Error::KronUnsupported {
                    reason: format!(
                        "`{}` is a channelwise scale without its shift right after it",
                        w.name
                    ),
                });
            };
            shapes.push(shape(w.offset, vec![w.numel() + b.numel()]));
            continue;
        }
        shapes.push(shape(w.offset, vec![w.shape[0], w.numel() / w.shape[0]]));
        if let Some(b) = layer.bias {
            shapes.push(shape(segments[b].offset, vec![segments[b].numel()]));
        }
    }
    Ok(shapes)
}

/// The per-row gradients of a channelwise layer's (γ, β), `[R, 2C]` in f64:
/// Σ_p δ_{r,p}∘a_{r,p} beside Σ_p δ_{r,p}.
fn channelwise_rows(layer: &LayerFactors) -> Result<Mat<f64>> {
    let (rows, positions) = (layer.rows(), layer.positions);
    let c = layer.delta.dims()[1];
    let per_row = |t: Tensor| -> Result<Tensor> { Ok(t.reshape((rows, positions, c))?.sum(1)?) };
    let gamma = per_row((&layer.delta * &layer.input)?)?;
    let beta = per_row(layer.delta.clone())?;
    let both = Tensor::cat(&[gamma, beta], 1)?;
    Ok(bdl_tensor::to_mat(&both)?)
}

/// A factor's eigendecomposition: eigenvalues (clamped at 0) and eigenvectors as columns.
#[derive(Clone, Debug)]
struct Eigen {
    values: Vec<f64>,
    vectors: Mat<f64>,
}

/// A Kronecker-factored linearized Laplace posterior at a MAP estimate.
#[derive(Clone, Debug)]
pub struct KronLaplace {
    map: MapEstimate,
    config: KronConfig,
    blocks: Vec<KronBlock>,
    eigen: Vec<Vec<Eigen>>,
    /// The flat indices in scope, ascending: the blocks' ranges one after another.
    subset: Vec<usize>,
}

impl KronLaplace {
    /// Fits the posterior at `map` on the training inputs `x`: the factors (one backward pass
    /// per output and minibatch), then one eigendecomposition per factor.
    ///
    /// ```
    /// use bdl_inference::{MapEstimate, Posterior, PredictOptions, Validate};
    /// use bdl_laplace::{KronConfig, KronLaplace};
    /// use bdl_likelihoods::Likelihood;
    /// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
    /// use bdl_tensor::Seed;
    /// use candle_core::{DType, Device, Tensor};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh))?);
    /// let theta = net.init(Seed(0), DType::F64, &Device::Cpu)?;
    /// let map = MapEstimate::new(net, theta, Likelihood::Gaussian { sigma: 0.1 })?;
    /// let x = Tensor::arange(0u32, 20, &Device::Cpu)?.to_dtype(DType::F64)?.affine(0.1, -1.0)?.unsqueeze(1)?;
    /// let kfac = KronLaplace::fit(&map, &x, &KronConfig::default().check()?)?;
    /// let far = Tensor::new(&[[0.0f64], [5.0]], &Device::Cpu)?;
    /// let var: Vec<Vec<f64>> = kfac.predictive(&far, &PredictOptions::default())?.variance()?.to_vec2()?;
    /// assert!(var[1][0] > var[0][0]);
    /// # Ok(()) }
    /// ```
    pub fn fit(map: &MapEstimate, x: &Tensor, config: &Valid<KronConfig>) -> Result<Self> {
        let blocks = kron_ggn(
            map.network(),
            map.theta(),
            &map.likelihood(),
            x,
            config.scope,
            config.batch_size,
        )?;
        Self::from_blocks(map.clone(), blocks, config)
    }

    /// The posterior from factors already computed at `map` (by [`kron_ggn`]).
    pub fn from_blocks(
        map: MapEstimate,
        blocks: Vec<KronBlock>,
        config: &Valid<KronConfig>,
    ) -> Result<Self> {
        let eigen = blocks
            .iter()
            .map(|b| b.factors.iter().map(eigen).collect::<Result<Vec<_>>>())
            .collect::<Result<Vec<_>>>()?;
        let subset = blocks
            .iter()
            .flat_map(|b| b.offset..b.offset + b.len())
            .collect();
        let post = Self {
            map,
            config: (**config).clone(),
            blocks,
            eigen,
            subset,
        };
        post.check_positive()?;
        Ok(post)
    }

    /// The same factors under another prior precision λ (no new eigendecomposition).
    pub fn with_prior_precision(&self, lambda: f64) -> Result<Self> {
        let config = KronConfig {
            prior_precision: lambda,
            ..self.config.clone()
        }
        .check()?;
        let post = Self {
            config: (*config).clone(),
            ..self.clone()
        };
        post.check_positive()?;
        Ok(post)
    }

    /// The blocks of the GGN's KFAC approximation, in θ's order.
    pub fn blocks(&self) -> &[KronBlock] {
        &self.blocks
    }

    /// The flat indices the posterior covers.
    pub fn subset(&self) -> &[usize] {
        &self.subset
    }

    /// λ.
    pub fn prior_precision(&self) -> f64 {
        self.config.prior_precision
    }

    /// The eigenvalues g_o α_j + λ of one block's posterior precision, row-major over (o, j).
    fn precision_eigenvalues(&self, block: usize) -> Vec<f64> {
        let lambda = self.config.prior_precision;
        match &self.eigen[block][..] {
            [g] => g.values.iter().map(|v| v + lambda).collect(),
            [g, a] => g
                .values
                .iter()
                .flat_map(|gv| a.values.iter().map(move |av| gv * av + lambda))
                .collect(),
            _ => unreachable!("a block has one or two factors"),
        }
    }

    /// A zero precision eigenvalue (no data signal under λ = 0) would be an infinite variance.
    fn check_positive(&self) -> Result<()> {
        for b in 0..self.blocks.len() {
            if let Some(pivot) = self
                .precision_eigenvalues(b)
                .iter()
                .position(|&e| !(e > 0.0 && e.is_finite()))
            {
                return Err(Error::NotPositiveDefinite {
                    size: self.blocks[b].len(),
                    pivot,
                });
            }
        }
        Ok(())
    }

    /// log det P, the sum of the logarithms of every block's precision eigenvalues.
    pub fn log_det_precision(&self) -> f64 {
        (0..self.blocks.len())
            .flat_map(|b| self.precision_eigenvalues(b))
            .map(f64::ln)
            .sum()
    }

    /// The Laplace log marginal likelihood given the log-likelihood at the MAP:
    /// log p(D | θ̂) − ½ (log det P − S log λ + λ ‖θ̂_S‖²). For a search over λ the
    /// log-likelihood is a constant.
    pub fn log_marginal_likelihood(&self, log_lik: f64) -> Result<f64> {
        let theta = bdl_tensor::to_f64_vec(self.map.theta())?;
        let lambda = self.config.prior_precision;
        let norm: f64 = self.subset.iter().map(|&i| theta[i] * theta[i]).sum();
        let s = self.subset.len() as f64;
        Ok(log_lik - 0.5 * (self.log_det_precision() - s * lambda.ln() + lambda * norm))
    }

    /// Σ_b^{1/2}ᵀ x (`transpose`) or Σ_b^{1/2} x for block `b`'s numbers `x` (row-major O × J for a
    /// weight), with Σ_b^{1/2} = V diag(1/√e), V = U_1 ⊗ U_2 and e the precision's eigenvalues:
    /// diag(1/√e) Vᵀ x, or V diag(1/√e) x.
    fn rotate(&self, b: usize, x: MatRef<'_, f64>, transpose: bool) -> Mat<f64> {
        let scale: Vec<f64> = (self.precision_eigenvalues(b).iter())
            .map(|e| e.sqrt().recip())
            .collect();
        let scaled = |m: Mat<f64>| {
            Mat::from_fn(m.nrows(), m.ncols(), |i, j| {
                m[(i, j)] * scale[i * m.ncols() + j]
            })
        };
        match &self.eigen[b][..] {
            [g] if transpose => scaled(g.vectors.transpose() * x),
            [g] => &g.vectors * scaled(x.to_owned()),
            [g, a] if transpose => scaled(g.vectors.transpose() * x * &a.vectors),
            [g, a] => &g.vectors * scaled(x.to_owned()) * a.vectors.transpose(),
            _ => unreachable!("a block has one or two factors"),
        }
    }

    /// Each block's shape as a matrix: O × J for a weight, O × 1 for a bias.
    fn shape(&self, b: usize) -> (usize, usize) {
        let f = &self.blocks[b].factors;
        (f[0].nrows(), f.get(1).map_or(1, Mat::nrows))
    }

    /// Σ^{1/2}ᵀ applied to the columns of `w` (rows: the subset's positions): row-blocks
    /// replaced by diag(1/√e) Vᵀ x.
    fn whiten(&self, mut w: MatMut<'_, f64>) {
        let mut row = 0;
        for b in 0..self.blocks.len() {
            let (o, j) = self.shape(b);
            for col in 0..w.ncols() {
                let x = Mat::from_fn(o, j, |p, q| w[(row + p * j + q, col)]);
                let y = self.rotate(b, x.as_ref(), true);
                for p in 0..o {
                    for q in 0..j {
                        w[(row + p * j + q, col)] = y[(p, q)];
                    }
                }
            }
            row += o * j;
        }
    }
}

/// The eigendecomposition of a symmetric factor.
fn eigen(m: &Mat<f64>) -> Result<Eigen> {
    let (values, vectors) = crate::evidence::eigen(m)?;
    Ok(Eigen { values, vectors })
}

impl LinearizedPosterior for KronLaplace {
    fn estimate(&self) -> &MapEstimate {
        &self.map
    }

    /// J_S(x_n) P⁻¹ J_S(x_n)ᵀ at each row of `x`, each block's inverse from its factors'
    /// eigendecompositions.
    fn f_covariance(&self, x: &Tensor, batch_size: usize) -> Result<Tensor> {
        crate::linearized::f_covariance(&self.map, x, &self.subset, batch_size, |w| {
            self.whiten(w);
            None
        })
    }
}

const KIND: &str = "kron-laplace";

impl Posterior for KronLaplace {
    fn method(&self) -> &str {
        match self.config.scope {
            KronScope::All => "KFAC Laplace",
            KronScope::LastLayer => "last-layer KFAC Laplace",
        }
    }

    fn predictor(&self) -> &Predictor {
        self.map.predictor()
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        Ok(self.linearized_predictive(x, options)?)
    }

    /// `n` draws θ̂ + V diag(1/√e) z over the subset (z ~ N(0, I) from `seed.index(i)`), the
    /// other parameters at θ̂.
    fn sample(&self, n: usize, seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        let draws = crate::linearized::gaussian_draws(
            self.map.theta(),
            n,
            seed,
            self.subset.len(),
            |z, draw| {
                let mut row = 0;
                for b in 0..self.blocks.len() {
                    let (o, j) = self.shape(b);
                    let zb = MatRef::from_row_major_slice(&z[row..row + o * j], o, j);
                    let step = self.rotate(b, zb, false);
                    let offset = self.blocks[b].offset;
                    for p in 0..o {
                        for q in 0..j {
                            draw[offset + p * j + q] += step[(p, q)];
                        }
                    }
                    row += o * j;
                }
            },
        )?;
        Ok(Some(draws))
    }

    /// Draws of the linearized outputs f(x; θ̂) + J_S(θ_s − θ̂)_S.
    fn f_samples(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<Option<Tensor>> {
        crate::linearized::samples(self, x, options, &self.subset)
    }

    /// The linearized Gaussian's moments, exact: f(x; θ̂) and J_S P⁻¹ J_Sᵀ.
    fn f_moments(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<FunctionMoments> {
        crate::linearized::moments(self, x, options)
    }

    /// Saves θ̂ and every block's factors; the eigendecompositions follow from them.
    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let header = Header {
            kind: KIND,
            predictor: self.map.predictor(),
            seed: self.map.seed(),
            config: &self.config,
        };
        let mut named = vec![("theta".to_owned(), self.map.theta().clone())];
        for (b, block) in self.blocks.iter().enumerate() {
            for (f, factor) in block.factors.iter().enumerate() {
                named.push((
                    format!("kfac.{b}.{f}"),
                    bdl_tensor::from_mat(factor.as_ref(), DType::F64, &Device::Cpu)?,
                ));
            }
        }
        let tensors = named.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
        checkpoint::save(path, &header, tensors)
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<Valid<KronConfig>>(path, KIND)?;
        let theta = saved.params("theta")?;
        let layout = saved.predictor.network().layout().clone();
        let mut blocks = Vec::new();
        for (b, BlockShape { offset, sizes, .. }) in block_shapes(&layout, saved.config.scope)?
            .into_iter()
            .enumerate()
        {
            let mut factors = Vec::new();
            for (f, &size) in sizes.iter().enumerate() {
                let t = saved.tensor(&format!("kfac.{b}.{f}"), &[size, size])?;
                factors.push(bdl_tensor::to_mat(&t)?);
            }
            blocks.push(KronBlock { offset, factors });
        }
        let mut map = MapEstimate::of(saved.predictor, theta)?;
        if let Some(seed) = saved.seed {
            map = map.with_seed(seed);
        }
        Ok(Self::from_blocks(map, blocks, &saved.config)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_models::{Activation, Mlp, MlpSpec, Network, ResNet, ResNetSpec, Stem};
    use faer::linalg::solvers::DenseSolveCore as _;

    fn problem() -> (MapEstimate, Tensor) {
        let net = Network::from(Mlp::new(MlpSpec::new(&[2, 3, 2], Activation::Tanh)).unwrap());
        let theta = net.init(Seed(4), DType::F64, &Device::Cpu).unwrap();
        let map = MapEstimate::new(net, theta, Likelihood::Categorical { classes: 2 }).unwrap();
        let x = bdl_tensor::normal(
            &mut Seed(5).rng(),
            (9, 2),
            0.0,
            1.0,
            DType::F64,
            &Device::Cpu,
        )
        .unwrap();
        (map, x)
    }

    /// The dense precision of every block, G ⊗ A/N + λI (or G + λI), and its inverse.
    fn dense_covariance(post: &KronLaplace) -> Mat<f64> {
        let s = post.subset().len();
        let mut cov = Mat::<f64>::zeros(s, s);
        let mut row = 0;
        for block in post.blocks() {
            let p = match &block.factors[..] {
                [g] => g.clone(),
                [g, a] => g.kron(a),
                _ => unreachable!(),
            };
            let n = p.nrows();
            let p = &p + Mat::<f64>::identity(n, n) * post.prior_precision();
            let inv = p.llt(faer::Side::Lower).unwrap().inverse();
            cov.as_mut().submatrix_mut(row, row, n, n).copy_from(&inv);
            row += n;
        }
        cov
    }

    #[test]
    fn the_predictive_covariance_is_the_jacobian_through_the_dense_inverse() {
        let (map, x) = problem();
        let config = KronConfig {
            prior_precision: 0.7,
            ..KronConfig::default()
        }
        .check()
        .unwrap();
        let post = KronLaplace::fit(&map, &x, &config).unwrap();
        let cov = dense_covariance(&post);
        let net = map.network();
        let cache = net.forward_cached(map.theta(), &x).unwrap();
        let j =
            bdl_tensor::to_mat(&net.jacobian(map.theta(), &cache, post.subset()).unwrap()).unwrap();
        let expected = &j * &cov * j.transpose();
        let ours = bdl_tensor::to_f64_vec(&post.f_covariance(&x, 4).unwrap()).unwrap();
        for n in 0..9 {
            for a in 0..2 {
                for b in 0..2 {
                    let (got, want) = (ours[n * 4 + a * 2 + b], expected[(n * 2 + a, n * 2 + b)]);
                    assert!(
                        (got - want).abs() < 1e-12 * (1.0 + want.abs()),
                        "{got} vs {want}"
                    );
                }
            }
        }
        // log det P from the eigenvalues is the dense one.
        let logdet: f64 = {
            let inv_det: f64 = cov
                .llt(faer::Side::Lower)
                .unwrap()
                .L()
                .diagonal()
                .column_vector()
                .iter()
                .map(|v| 2.0 * v.ln())
                .sum();
            -inv_det
        };
        assert!((post.log_det_precision() - logdet).abs() < 1e-10 * logdet.abs().max(1.0));
    }

    #[test]
    fn draws_have_the_posterior_covariance_and_the_last_layer_moves_alone() {
        let (map, x) = problem();
        let config = KronConfig {
            scope: KronScope::LastLayer,
            prior_precision: 2.0,
            ..KronConfig::default()
        }
        .check()
        .unwrap();
        let post = KronLaplace::fit(&map, &x, &config).unwrap();
        assert_eq!(post.subset(), (9..17).collect::<Vec<_>>());
        let n = 20_000;
        let draws = bdl_tensor::to_f64_vec(&post.sample(n, Seed(1)).unwrap().unwrap()).unwrap();
        let theta = bdl_tensor::to_f64_vec(map.theta()).unwrap();
        let d = theta.len();
        // The parameters out of scope are θ̂ in every draw.
        for s in 0..n {
            assert_eq!(draws[s * d..s * d + 9], theta[..9]);
        }
        let cov = dense_covariance(&post);
        for (a, &i) in post.subset().iter().enumerate() {
            for (b, &k) in post.subset().iter().enumerate() {
                let empirical: f64 = (0..n)
                    .map(|s| (draws[s * d + i] - theta[i]) * (draws[s * d + k] - theta[k]))
                    .sum::<f64>()
                    / n as f64;
                // Monte Carlo error of a covariance: about √((σ_ii σ_kk + σ_ik²)/n).
                let se = ((cov[(a, a)] * cov[(b, b)] + cov[(a, b)].powi(2)) / n as f64).sqrt();
                assert!(
                    (empirical - cov[(a, b)]).abs() < 5.0 * se,
                    "({i}, {k}): {empirical} vs {}",
                    cov[(a, b)]
                );
            }
        }
    }

    #[test]
    fn a_batch_norms_block_is_its_exact_ggn_and_a_zero_prior_without_signal_is_not_positive() {
        let spec = ResNetSpec {
            input: [1, 4, 4],
            widths: vec![2],
            blocks: vec![1],
            classes: 2,
            stem: Stem::Cifar,
            statistics: None,
            dropout: 0.0,
        };
        let resnet = Network::from(ResNet::new(spec).unwrap());
        let theta = resnet.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
        let likelihood = Likelihood::Categorical { classes: 2 };
        let x = bdl_tensor::normal(
            &mut Seed(1).rng(),
            (5, 1, 4, 4),
            0.0,
            1.0,
            DType::F64,
            &Device::Cpu,
        )
        .unwrap();
        let blocks = kron_ggn(&resnet, &theta, &likelihood, &x, KronScope::All, 2).unwrap();
        // (γ, β) of the stem's normalisation: one block of 2C = 4, the exact GGN over them.
        let gamma = resnet.layout().segment("bn1.weight").unwrap();
        let block = blocks.iter().find(|b| b.offset == gamma.offset).unwrap();
        assert_eq!(block.factors.len(), 1);
        let indices: Vec<usize> = (gamma.offset..gamma.offset + 4).collect();
        let exact = crate::ggn(&resnet, &theta, &likelihood, &x, &indices, 5).unwrap();
        let scale = (0..4).map(|i| exact[(i, i)]).fold(0.0f64, f64::max);
        for i in 0..4 {
            for j in 0..4 {
                let (a, b) = (block.factors[0][(i, j)], exact[(i, j)]);
                assert!((a - b).abs() <= 1e-12 * scale, "({i}, {j}): {a} vs {b}");
            }
        }
        // Every parameter is in one block, and a convolution's factors are O × O and J × J.
        let total: usize = blocks.iter().map(KronBlock::len).sum();
        assert_eq!(total, resnet.layout().len());
        let conv = resnet.layout().segment("layer1.0.conv1.weight").unwrap();
        let block = blocks.iter().find(|b| b.offset == conv.offset).unwrap();
        assert_eq!(
            block.factors.iter().map(Mat::nrows).collect::<Vec<_>>(),
            [2, 2 * 9]
        );

        let (map, x) = problem();
        let zero_inputs = Tensor::zeros((3, 2), DType::F64, &Device::Cpu).unwrap();
        let config = KronConfig {
            prior_precision: 0.0,
            ..KronConfig::default()
        }
        .check()
        .unwrap();
        let err = KronLaplace::fit(&map, &zero_inputs, &config).unwrap_err();
        assert!(matches!(err, Error::NotPositiveDefinite { .. }), "{err}");
        assert!(KronLaplace::fit(&map, &x, &KronConfig::default().check().unwrap()).is_ok());
    }
}
