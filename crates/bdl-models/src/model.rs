//! The [`Model`] trait: a network over a flat parameter vector, with per-example products.

use candle_core::{DType, Tensor};

use bdl_tensor::{ChaCha8Rng, ParamLayout};

use crate::factors::{Column, LayerFactors};
use crate::{Cache, Error, Result};

/// A network f(x; θ) whose parameters θ ∈ ℝᴰ live in one flat vector laid out by
/// [`Model::layout`].
///
/// Implementors provide the forward pass with its cache and the backward pass to each layer's
/// inputs and deltas ([`LayerFactors`]); the per-example products that the inference methods need
/// follow from those without materialising per-example tensors:
///
/// - [`backward`](Model::backward): Σ_n J_nᵀ r_n, the gradient of Σ_n ℓ_n for output gradients
///   r_n = ∂ℓ_n/∂f_n;
/// - [`sum_sq_grads`](Model::sum_sq_grads): Σ_n g_n∘g_n with g_n = J_nᵀ r_n (VOGN, diagonal
///   empirical Fisher);
/// - [`jacobian`](Model::jacobian): ∂f/∂θ_S for a subset S of parameter columns, rows examples ×
///   outputs (subnetwork GGN).
pub trait Model {
    /// The layout of the flat parameter vector.
    fn layout(&self) -> &ParamLayout;

    /// K, the number of outputs.
    fn n_outputs(&self) -> usize;

    /// The most examples one forward pass should take when many inputs are evaluated in
    /// batches: a memory bound for models whose intermediates are large per example (a
    /// convolution's unfolded patches), unbounded otherwise.
    fn rows_per_pass(&self) -> usize {
        usize::MAX
    }

    /// The forward pass on inputs `x`, keeping what the backward pass needs. With `dropout`, a
    /// model that has dropout draws fresh masks from the stream; without, dropout is off.
    fn forward_cached_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Cache>;

    /// Backpropagates per-example output gradients `grad_f` (`[N, K]`, row n = ∂ℓ_n/∂f_n) to
    /// the inputs and deltas of every parametrised layer.
    fn factors(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor)
    -> Result<Vec<LayerFactors>>;

    /// The forward pass with dropout off, keeping what the backward pass needs.
    fn forward_cached(&self, params: &Tensor, x: &Tensor) -> Result<Cache> {
        self.forward_cached_with(params, x, None)
    }

    /// f(x; θ), shape `[N, K]`, with fresh dropout masks from `dropout` (as
    /// [`forward_cached_with`](Model::forward_cached_with)) or dropout off. A model may compute
    /// it without building a [`Cache`] (the MLP's slice passes do); by default it is the cache's
    /// output.
    fn forward_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Tensor> {
        Ok(self.forward_cached_with(params, x, dropout)?.output)
    }

    /// f(x; θ), shape `[N, K]`, dropout off.
    fn forward(&self, params: &Tensor, x: &Tensor) -> Result<Tensor> {
        self.forward_with(params, x, None)
    }

    /// One minibatch's loss gradient in one call: the forward pass on `x` (with fresh dropout
    /// masks from `dropout`, as [`forward_cached_with`](Model::forward_cached_with)), the output
    /// gradients r_n = ∂ℓ_n/∂f_n from `output_gradient(f)` for the outputs f (`[N, K]`), and the
    /// sums Σ_n g_n and, with `squares`, Σ_n g_n∘g_n (g_n = J_nᵀ r_n) in f64. A model may do it
    /// without building a [`Cache`] (the MLP's slice passes do); by default it is
    /// [`backward`](Model::backward) and [`sum_sq_grads`](Model::sum_sq_grads) on the cache.
    ///
    /// ```
    /// use bdl_models::{Activation, Mlp, MlpSpec, Model};
    /// use candle_core::{Device, Tensor};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // f(x) = 2x + 1 and ℓ = ½(f − y)²: r = f − y, Σ g = Σ r (x, 1).
    /// let mlp = Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity))?;
    /// let theta = Tensor::new(&[2.0f64, 1.0], &Device::Cpu)?;
    /// let (x, y) = (Tensor::new(&[[1.0f64], [2.0]], &Device::Cpu)?, Tensor::new(&[[2.0f64], [6.0]], &Device::Cpu)?);
    /// let residual = |f: &Tensor| -> bdl_models::Result<Tensor> { Ok((f - &y)?) };
    /// let g = mlp.loss_gradient(&theta, &x, None, residual, true)?;
    /// assert_eq!(g.sum, [1.0 * 1.0 + (-1.0) * 2.0, 1.0 - 1.0]);
    /// assert_eq!(g.sum_sq, Some(vec![1.0 + 4.0, 1.0 + 1.0]));
    /// # Ok(()) }
    /// ```
    fn loss_gradient<E: From<Error>>(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
        output_gradient: impl FnOnce(&Tensor) -> std::result::Result<Tensor, E>,
        squares: bool,
    ) -> std::result::Result<LossGradient, E>
    where
        Self: Sized,
    {
        loss_gradient_by_cache(self, params, x, dropout, output_gradient, squares)
    }

    /// Σ_n J_nᵀ r_n, shape `[D]`: the gradient of Σ_n ℓ_n when `grad_f` holds r_n = ∂ℓ_n/∂f_n.
    fn backward(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor) -> Result<Tensor> {
        let factors = self.factors(params, cache, grad_f)?;
        assemble(
            self.layout(),
            &factors,
            LayerFactors::weight_grad,
            LayerFactors::bias_grad,
        )
    }

    /// Σ_n g_n∘g_n, shape `[D]`, with g_n = J_nᵀ r_n the gradient of example n alone.
    fn sum_sq_grads(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor) -> Result<Tensor> {
        let factors = self.factors(params, cache, grad_f)?;
        assemble(
            self.layout(),
            &factors,
            LayerFactors::weight_sum_sq,
            LayerFactors::bias_sum_sq,
        )
    }

    /// diag(Σ_n J_nᵀ L_n L_nᵀ J_n), shape `[D]`, for per-example factors L_n (`factor`,
    /// `[N, K, R]`): the diagonal of the GGN when L_n L_nᵀ = Λ_n. Column r of the factor gives
    /// Σ_n (J_nᵀ L_n e_r)∘(J_nᵀ L_n e_r), one [`sum_sq_grads`](Model::sum_sq_grads), so the cost
    /// is R backward passes and no Jacobian.
    fn ggn_diagonal(&self, params: &Tensor, cache: &Cache, factor: &Tensor) -> Result<Tensor> {
        let r = factor.dims().get(2).copied().unwrap_or(0);
        let mut total = Tensor::zeros(self.layout().len(), params.dtype(), params.device())?;
        for col in 0..r {
            let grad_f = factor
                .narrow(2, col, 1)?
                .squeeze(2)?
                .to_dtype(params.dtype())?;
            total = (total + self.sum_sq_grads(params, cache, &grad_f)?)?;
        }
        Ok(total)
    }

    /// The per-example gradients g_n = J_nᵀ r_n, shape `[N, D]`. This materialises N·D numbers:
    /// use it for checks and small problems; [`backward`](Model::backward) and
    /// [`sum_sq_grads`](Model::sum_sq_grads) give their sums without it.
    fn per_example_grads(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor) -> Result<Tensor> {
        let factors = self.factors(params, cache, grad_f)?;
        let all: Vec<usize> = (0..self.layout().len()).collect();
        subset_columns(self.layout(), &factors, &all)
    }

    /// The Jacobian ∂f(x_n)/∂θ_S for the parameter columns `subset` (flat indices, any order),
    /// shape `[N·K, |S|]`: row n·K + k holds ∂f_k(x_n)/∂θ_S. Only the |S| columns are built.
    fn jacobian(&self, params: &Tensor, cache: &Cache, subset: &[usize]) -> Result<Tensor> {
        let factors = self.jacobian_factors(params, cache)?;
        subset_columns(self.layout(), &factors, subset)
    }

    /// The diagonal of J_n diag(w) J_nᵀ at every example: Σ_d w_d (∂f_k(x_n)/∂θ_d)², shape
    /// `[N, K]`, for weights `w` (`[D]`, the parameters' dtype). With w the variances of a
    /// diagonal Gaussian over θ these are the linearized output variances. Built from each
    /// layer's factors without the Jacobian: Σ_oj w_oj δ_ro² a_rj² = ((δ∘δ) W ∘ (a∘a)) 1 per row
    /// of a dense layer, the squared per-row gradients against w for a convolution.
    fn weighted_jacobian_sq(&self, params: &Tensor, cache: &Cache, w: &Tensor) -> Result<Tensor> {
        let segments = self.layout().segments();
        let segment = |i: usize| -> Result<Tensor> {
            Ok(w.narrow(0, segments[i].offset, segments[i].numel())?)
        };
        let mut total: Option<Tensor> = None;
        for f in self.jacobian_factors(params, cache)? {
            let bias = f.bias_segment.map(segment).transpose()?;
            let part = f.weighted_row_sq(&segment(f.weight_segment)?, bias.as_ref())?;
            total = Some(match total {
                Some(t) => (t + part)?,
                None => part,
            });
        }
        let total = total.expect("a model has at least one layer");
        Ok(total.reshape((cache.n_examples, self.n_outputs()))?)
    }

    /// The factors of the Jacobian: the cache repeated K times, backpropagated from the unit
    /// output gradients, so that row n·K + k belongs to ∂f_k(x_n)/∂θ.
    fn jacobian_factors(&self, params: &Tensor, cache: &Cache) -> Result<Vec<LayerFactors>> {
        let k = self.n_outputs();
        let n = cache.n_examples;
        let repeated = cache.repeat_interleave(k)?;
        let eye = Tensor::eye(k, params.dtype(), params.device())?
            .unsqueeze(0)?
            .broadcast_as((n, k, k))?
            .reshape((n * k, k))?;
        self.factors(params, &repeated, &eye)
    }
}

/// The sums of [`Model::loss_gradient`], in f64.
#[derive(Clone, Debug, PartialEq)]
pub struct LossGradient {
    /// Σ_n g_n, shape `[D]`.
    pub sum: Vec<f64>,
    /// Σ_n g_n∘g_n, shape `[D]`, when asked for.
    pub sum_sq: Option<Vec<f64>>,
}

/// [`Model::loss_gradient`] by the cache: forward, output gradients, backward (and Σ g∘g).
pub(crate) fn loss_gradient_by_cache<M: Model, E: From<Error>>(
    model: &M,
    params: &Tensor,
    x: &Tensor,
    dropout: Option<&mut ChaCha8Rng>,
    output_gradient: impl FnOnce(&Tensor) -> std::result::Result<Tensor, E>,
    squares: bool,
) -> std::result::Result<LossGradient, E> {
    let cache = model.forward_cached_with(params, x, dropout)?;
    let r = output_gradient(&cache.output)?;
    let wide = |t: Tensor| -> Result<Vec<f64>> { Ok(bdl_tensor::to_f64_vec(&t)?) };
    let sum = wide(model.backward(params, &cache, &r)?)?;
    let sum_sq = if squares {
        Some(wide(model.sum_sq_grads(params, &cache, &r)?)?)
    } else {
        None
    };
    Ok(LossGradient { sum, sum_sq })
}

/// Applies a per-layer product to every layer and lays the results out as one flat `[D]` vector.
pub(crate) fn assemble(
    layout: &ParamLayout,
    factors: &[LayerFactors],
    weight: impl Fn(&LayerFactors) -> Result<Tensor>,
    bias: impl Fn(&LayerFactors) -> Result<Tensor>,
) -> Result<Tensor> {
    let mut parts: Vec<Option<Tensor>> = vec![None; layout.segments().len()];
    for f in factors {
        parts[f.weight_segment] = Some(weight(f)?.flatten_all()?);
        if let Some(b) = f.bias_segment {
            parts[b] = Some(bias(f)?);
        }
    }
    let parts: Vec<Tensor> = parts
        .into_iter()
        .zip(layout.segments())
        .map(|(p, s)| {
            p.unwrap_or_else(|| panic!("model produced no factors for segment `{}`", s.name))
        })
        .collect();
    Ok(Tensor::cat(&parts, 0)?)
}

/// The per-row gradient columns of the flat parameters `subset`, in the order given.
fn subset_columns(
    layout: &ParamLayout,
    factors: &[LayerFactors],
    subset: &[usize],
) -> Result<Tensor> {
    let d = layout.len();
    let segments = layout.segments();
    // Which layer and which (o, j) each requested column belongs to.
    let mut per_layer: Vec<(Vec<usize>, Vec<Column>)> =
        vec![(Vec::new(), Vec::new()); factors.len()];
    for (pos, &index) in subset.iter().enumerate() {
        if index >= d {
            return Err(Error::ParamIndex { index, len: d });
        }
        let (layer, column) = factors
            .iter()
            .enumerate()
            .find_map(|(l, f)| {
                let w = &segments[f.weight_segment];
                if w.range().contains(&index) {
                    let fan_in = w.numel() / w.shape[0];
                    let k = index - w.offset;
                    return Some((
                        l,
                        Column::Weight {
                            o: k / fan_in,
                            j: k % fan_in,
                        },
                    ));
                }
                let b = &segments[f.bias_segment?];
                b.range().contains(&index).then(|| {
                    (
                        l,
                        Column::Bias {
                            o: index - b.offset,
                        },
                    )
                })
            })
            .expect("every flat index belongs to a layer");
        per_layer[layer].0.push(pos);
        per_layer[layer].1.push(column);
    }
    let rows = factors.first().map_or(0, LayerFactors::rows);
    let dtype = factors.first().map_or(DType::F32, |f| f.delta.dtype());
    let device = factors
        .first()
        .map(|f| f.delta.device().clone())
        .unwrap_or(candle_core::Device::Cpu);
    if subset.is_empty() {
        return Ok(Tensor::zeros((rows, 0), dtype, &device)?);
    }
    let mut blocks = Vec::new();
    let mut order: Vec<usize> = Vec::with_capacity(subset.len());
    for (f, (positions, columns)) in factors.iter().zip(&per_layer) {
        if !columns.is_empty() {
            blocks.push(f.columns(columns)?);
            order.extend(positions);
        }
    }
    let grouped = Tensor::cat(&blocks, 1)?;
    if order.iter().enumerate().all(|(c, &pos)| c == pos) {
        return Ok(grouped); // requested in layer order already (any ascending subset)
    }
    // `order[c]` is the requested position of grouped column c; invert it.
    let mut inverse = vec![0u32; subset.len()];
    for (c, &pos) in order.iter().enumerate() {
        inverse[pos] = c as u32;
    }
    let inverse = Tensor::from_vec(inverse, subset.len(), &device)?;
    Ok(grouped.index_select(&inverse, 1)?)
}
