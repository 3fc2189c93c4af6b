//! What a forward pass keeps for the backward pass.

use candle_core::Tensor;

use crate::Result;

/// The intermediate values of one forward pass, per parametrised layer l (first layer first).
///
/// Everything a per-example product needs is here: the layer inputs a_l, the pre-activations z_l,
/// the dropout masks, and the output f. Rows (the first axis of every tensor) are examples, or
/// for a convolution's tensors (example, output position) pairs, example-major.
#[derive(Clone, Debug)]
pub struct Cache {
    /// a_l: the input of layer l, as the layer consumes it (for a convolution, the unfolded
    /// input, one row per example and output position).
    pub inputs: Vec<Tensor>,
    /// z_l: the pre-activation of layer l.
    pub pre: Vec<Tensor>,
    /// h_l = φ(z_l) (before any dropout mask), kept for the activation derivative.
    pub post: Vec<Tensor>,
    /// The scaled dropout mask m_l / (1 − p) applied to h_l, when dropout was on (a ResNet's
    /// one mask, on its pooled features, sits at its classifier's entry: the mask on that
    /// layer's input).
    pub masks: Vec<Option<Tensor>>,
    /// Integer tensors the backward pass needs besides (a max pool's argmax sources, u32),
    /// example-major like the rest; empty for most models.
    pub indices: Vec<Tensor>,
    /// The network output f, shape `[N, K]`.
    pub output: Tensor,
    /// The number of examples N.
    pub n_examples: usize,
}

impl Cache {
    /// For each hidden layer (every parametrised layer but the last), the units whose activation
    /// φ(z) is zero at every example: dead ReLUs, through which no gradient and no Jacobian
    /// passes on these inputs. For a convolution a unit is a channel, dead when zero at every
    /// example and position.
    pub fn dead_units(&self) -> Result<Vec<Vec<usize>>> {
        let hidden = &self.post[..self.post.len().saturating_sub(1)];
        hidden
            .iter()
            .map(|h| {
                let units = h.dims()[h.rank() - 1];
                let largest = h.abs()?.reshape(((), units))?.max(0)?;
                Ok(bdl_tensor::to_f64_vec(&largest)?
                    .iter()
                    .enumerate()
                    .filter_map(|(u, &m)| (m == 0.0).then_some(u))
                    .collect())
            })
            .collect()
    }

    /// The cache of a batch in which every example appears `k` times in a row (example 0 k times,
    /// then example 1, …): the rows of a Jacobian with K outputs.
    pub(crate) fn repeat_interleave(&self, k: usize) -> Result<Cache> {
        if k == 1 {
            return Ok(self.clone());
        }
        let n = self.n_examples;
        let rows_per_example = |t: &Tensor| t.dims()[0] / n;
        let repeat = |t: &Tensor| -> Result<Tensor> {
            let r = rows_per_example(t);
            let idx: Vec<usize> = (0..n)
                .flat_map(|i| (0..k).flat_map(move |_| i * r..(i + 1) * r))
                .collect();
            Ok(bdl_tensor::select_rows(t, &idx)?)
        };
        let all = |v: &[Tensor]| v.iter().map(repeat).collect::<Result<Vec<_>>>();
        Ok(Cache {
            inputs: all(&self.inputs)?,
            pre: all(&self.pre)?,
            post: all(&self.post)?,
            masks: self
                .masks
                .iter()
                .map(|m| m.as_ref().map(repeat).transpose())
                .collect::<Result<_>>()?,
            indices: all(&self.indices)?,
            output: repeat(&self.output)?,
            n_examples: n * k,
        })
    }
}
