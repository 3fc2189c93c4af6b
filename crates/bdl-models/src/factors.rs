//! Per-example gradient products of one affine layer, from its inputs a and deltas δ.
//!
//! A parametrised layer computes z = a Wᵀ + b, row by row: for a dense layer one row per
//! example; for a convolution one row per example and output position (a is the unfolded input).
//! With δ = ∂ℓ/∂z, the gradient of example n is
//!
//! g_n(W_oj) = Σ_p δ_{n,p,o} a_{n,p,j},   g_n(b_o) = Σ_p δ_{n,p,o}
//!
//! over its P positions (P = 1 for a dense layer). A channelwise layer z = a∘γ + β (a
//! BatchNorm in evaluation mode, a its normalised input x̂) has one scale per column instead,
//!
//! g_n(γ_o) = Σ_p δ_{n,p,o} a_{n,p,o},   g_n(β_o) = Σ_p δ_{n,p,o}.
//!
//! Everything here is built from a and δ without materialising one gradient per example, except
//! where P > 1 (or a channelwise layer) forces it for Σ_n g_n∘g_n.

use candle_core::{DType, Device, Tensor};

use crate::Result;

/// A parameter of one layer, addressed by node o and input column j.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Column {
    /// The weight W_oj.
    Weight { o: usize, j: usize },
    /// The bias b_o.
    Bias { o: usize },
}

/// How a layer's weights act on its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Affine {
    /// z = a Wᵀ + b with W `[O, J]`: a dense layer, or a convolution on unfolded patches.
    #[default]
    Dense,
    /// z = a∘γ + β with one scale γ_o per column (`[O]`, so J = 1 and a is `[R·P, O]`): a
    /// BatchNorm in evaluation mode on its normalised input.
    Channelwise,
}

/// The inputs and deltas of one affine layer z = a Wᵀ + b (or z = a∘γ + β, see [`Affine`]).
#[derive(Clone, Debug)]
pub struct LayerFactors {
    /// How the weights act on a.
    pub map: Affine,
    /// a, shape `[R·P, J]` (`[R·P, O]` for a channelwise layer): the layer input, one row per
    /// example and position.
    pub input: Tensor,
    /// δ = ∂ℓ/∂z, shape `[R·P, O]`.
    pub delta: Tensor,
    /// P, the positions per example (1 for a dense layer).
    pub positions: usize,
    /// The index of the layer's weight segment in the model's layout.
    pub weight_segment: usize,
    /// The index of the layer's bias segment, if any.
    pub bias_segment: Option<usize>,
}

fn ones_row(n: usize, dtype: DType, device: &Device) -> Result<Tensor> {
    Ok(Tensor::ones((1, n), dtype, device)?)
}

fn index_tensor(idx: impl Iterator<Item = usize>, device: &Device) -> Result<Tensor> {
    let idx: Vec<u32> = idx.map(|i| i as u32).collect();
    let n = idx.len();
    Ok(Tensor::from_vec(idx, n, device)?)
}

impl LayerFactors {
    /// R, the number of rows (examples, or examples × outputs for a Jacobian).
    pub fn rows(&self) -> usize {
        self.delta.dims()[0] / self.positions
    }

    /// J, the number of weights per output (1 for a channelwise layer).
    pub fn fan_in(&self) -> usize {
        match self.map {
            Affine::Dense => self.input.dims()[1],
            Affine::Channelwise => 1,
        }
    }

    /// Whether Σ_n g_n∘g_n needs the per-example gradients (it does not for a dense layer
    /// with one position per example).
    fn per_row(&self) -> bool {
        self.positions > 1 || self.map == Affine::Channelwise
    }

    /// Sums `[R·P, C]` over each example's P positions, giving `[R, C]`.
    fn sum_positions(&self, t: Tensor) -> Result<Tensor> {
        if self.positions == 1 {
            return Ok(t);
        }
        let c = t.dims()[1];
        Ok(t.reshape((self.rows(), self.positions, c))?.sum(1)?)
    }

    /// Σ_n g_n(W) = δᵀ a, shape `[O, J]` (1ᵀ(δ∘a), shape `[O, 1]`, for a channelwise layer).
    pub fn weight_grad(&self) -> Result<Tensor> {
        match self.map {
            Affine::Dense => Ok(self.delta.t()?.matmul(&self.input)?),
            Affine::Channelwise => {
                let products = (&self.delta * &self.input)?;
                let ones = ones_row(products.dims()[0], products.dtype(), products.device())?;
                Ok(ones.matmul(&products)?.t()?)
            }
        }
    }

    /// Σ_n g_n(b) = 1ᵀ δ, shape `[O]` (a product with a row of ones: candle's reductions over the
    /// first axis are slow).
    pub fn bias_grad(&self) -> Result<Tensor> {
        let ones = ones_row(
            self.delta.dims()[0],
            self.delta.dtype(),
            self.delta.device(),
        )?;
        Ok(ones.matmul(&self.delta)?.squeeze(0)?)
    }

    /// Σ_n g_n(W)∘g_n(W), shape `[O, J]`: (δ∘δ)ᵀ(a∘a) for a dense layer; for P > 1 the
    /// per-example gradients δ_nᵀ a_n are formed by one batched product and squared.
    pub fn weight_sum_sq(&self) -> Result<Tensor> {
        if !self.per_row() {
            return Ok(self.delta.sqr()?.t()?.matmul(&self.input.sqr()?)?);
        }
        let (o, j) = (self.delta.dims()[1], self.fan_in());
        let per_example = self.per_row_weight_grads()?;
        let ones = ones_row(self.rows(), per_example.dtype(), per_example.device())?;
        Ok(ones.matmul(&per_example.sqr()?)?.reshape((o, j))?)
    }

    /// The per-row weight gradients g_r(W) = δ_rᵀ a_r, shape `[R, O·J]` (each row the `[O, J]`
    /// weight matrix, row-major): one batched product over the rows; for a channelwise layer
    /// Σ_p δ_r∘a_r, shape `[R, O]`.
    fn per_row_weight_grads(&self) -> Result<Tensor> {
        if self.map == Affine::Channelwise {
            return self.sum_positions((&self.delta * &self.input)?);
        }
        let (r, p) = (self.rows(), self.positions);
        let (o, j) = (self.delta.dims()[1], self.input.dims()[1]);
        let delta = self.delta.reshape((r, p, o))?.transpose(1, 2)?;
        let input = self.input.reshape((r, p, j))?;
        Ok(delta.matmul(&input)?.reshape((r, o * j))?)
    }

    /// Σ_n g_n(b)∘g_n(b), shape `[O]`.
    pub fn bias_sum_sq(&self) -> Result<Tensor> {
        let per_example = self.sum_positions(self.delta.clone())?;
        let ones = ones_row(
            per_example.dims()[0],
            per_example.dtype(),
            per_example.device(),
        )?;
        Ok(ones.matmul(&per_example.sqr()?)?.squeeze(0)?)
    }

    /// The per-row gradients of the given parameters, shape `[R, columns.len()]`: column c holds
    /// Σ_p a_{r,p,j} δ_{r,p,o} for a weight and Σ_p δ_{r,p,o} for a bias.
    pub(crate) fn columns(&self, columns: &[Column]) -> Result<Tensor> {
        if let Some(whole) = self.whole_layer(columns)? {
            return Ok(whole);
        }
        let device = self.delta.device();
        if self.per_row() {
            // A convolution (or a channelwise layer): its few weights' per-row gradients by one
            // batched product, then the requested columns (a gather over every position would
            // cost P times more).
            let (o, j) = (self.delta.dims()[1], self.fan_in());
            let all = Tensor::cat(
                &[
                    self.per_row_weight_grads()?,
                    self.sum_positions(self.delta.clone())?,
                ],
                1,
            )?;
            let idx = index_tensor(
                columns.iter().map(|c| match *c {
                    Column::Weight { o: row, j: col } => row * j + col,
                    Column::Bias { o: row } => o * j + row,
                }),
                device,
            )?;
            return Ok(all.index_select(&idx, 1)?);
        }
        let o_idx = index_tensor(
            columns.iter().map(|c| match *c {
                Column::Weight { o, .. } | Column::Bias { o } => o,
            }),
            device,
        )?;
        let delta = self.delta.index_select(&o_idx, 1)?;
        // A bias column is a weight column whose input is 1: select the inputs, with a column of
        // ones appended for the biases.
        let j_bias = self.input.dims()[1];
        let input = if columns.iter().any(|c| matches!(c, Column::Bias { .. })) {
            let ones = Tensor::ones((self.input.dims()[0], 1), self.input.dtype(), device)?;
            Tensor::cat(&[&self.input, &ones], 1)?
        } else {
            self.input.clone()
        };
        let j_idx = index_tensor(
            columns.iter().map(|c| match *c {
                Column::Weight { j, .. } => j,
                Column::Bias { .. } => j_bias,
            }),
            device,
        )?;
        let input = input.index_select(&j_idx, 1)?;
        self.sum_positions((input * delta)?)
    }

    /// Σ_oj w_oj g_r(W_oj)² (+ Σ_o b_o g_r(b_o)² with bias weights `b`) for every row r, shape
    /// `[R]`, for weights `w` of the `[O, J]` matrix flattened row-major: for a dense layer
    /// ((δ∘δ) W ∘ (a∘a)) 1 without any per-row gradient, for P > 1 the per-row gradients
    /// squared against w.
    pub(crate) fn weighted_row_sq(&self, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
        let (o, j) = (self.delta.dims()[1], self.fan_in());
        let weights = if !self.per_row() {
            let spread = self.delta.sqr()?.matmul(&w.reshape((o, j))?)?;
            (spread * self.input.sqr()?)?.sum(1)?
        } else {
            self.per_row_weight_grads()?
                .sqr()?
                .matmul(&w.reshape((o * j, 1))?)?
                .squeeze(1)?
        };
        let Some(b) = b else {
            return Ok(weights);
        };
        let bias = self.sum_positions(self.delta.clone())?;
        Ok((weights + bias.sqr()?.matmul(&b.reshape((o, 1))?)?.squeeze(1)?)?)
    }

    /// [`columns`](Self::columns) when they are the whole weight matrix in layout order
    /// (row-major), optionally followed by every bias in order: the per-row gradients by one
    /// batched product instead of a gather per column (a full or last-layer Jacobian); `None`
    /// for any other selection.
    fn whole_layer(&self, columns: &[Column]) -> Result<Option<Tensor>> {
        let (o, j) = (self.delta.dims()[1], self.fan_in());
        let Some((weights, rest)) = columns.split_at_checked(o * j) else {
            return Ok(None);
        };
        let in_order = weights
            .iter()
            .enumerate()
            .all(|(c, col)| *col == Column::Weight { o: c / j, j: c % j });
        let biases = rest.is_empty()
            || (rest.len() == o
                && rest
                    .iter()
                    .enumerate()
                    .all(|(c, col)| *col == Column::Bias { o: c }));
        if !(in_order && biases) {
            return Ok(None);
        }
        let grads = self.per_row_weight_grads()?;
        if rest.is_empty() {
            return Ok(Some(grads));
        }
        let bias = self.sum_positions(self.delta.clone())?;
        Ok(Some(Tensor::cat(&[grads, bias], 1)?))
    }
}
