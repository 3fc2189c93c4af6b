//! The MLP's passes by candle's tensor operations: for dtypes and devices the slice passes do
//! not cover, and for parameters or inputs that record candle's autograd graph.

use bdl_tensor::ChaCha8Rng;
use candle_core::{DType, Device, Tensor};

use super::{Mlp, product};
use crate::{Affine, Cache, LayerFactors, Result};

impl Mlp {
    /// The forward pass, z_l = a_l W_lᵀ + b_l, h_l = φ_l(z_l), a_{l+1} = h_l ∘ m_l.
    pub(super) fn tensor_forward(
        &self,
        params: &Tensor,
        x: Tensor,
        mut dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Cache> {
        let n = x.dims()[0];
        let segments = self.layout.split(params)?;
        let (mut inputs, mut pre, mut post, mut masks) = (vec![], vec![], vec![], vec![]);
        let mut a = x;
        for (l, layer) in self.layers.iter().enumerate() {
            let mut z = product(&a, &segments[layer.weight].t()?)?;
            if let Some(b) = layer.bias {
                z = z.broadcast_add(&segments[b])?;
            }
            let h = self.spec.activations[l].apply(&z)?;
            let mask = self.dropout_mask(l, n, dropout.as_deref_mut(), (h.dtype(), h.device()))?;
            let next = match &mask {
                Some(m) => (&h * m)?,
                None => h.clone(),
            };
            inputs.push(a);
            pre.push(z);
            post.push(h);
            masks.push(mask);
            a = next;
        }
        Ok(Cache {
            inputs,
            pre,
            post,
            masks,
            indices: Vec::new(),
            output: a,
            n_examples: n,
        })
    }

    /// The layers' factors: ∂ℓ/∂h_L, then δ_l = (∂ℓ/∂a_{l+1} ∘ m_l) ∘ φ'(z_l) and
    /// ∂ℓ/∂a_l = δ_l W_l.
    pub(super) fn tensor_factors(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
    ) -> Result<Vec<LayerFactors>> {
        let segments = self.layout.split(params)?;
        let n_layers = self.n_layers();
        let mut factors = Vec::with_capacity(n_layers);
        let mut grad_a = grad_f.to_dtype(params.dtype())?;
        for l in (0..n_layers).rev() {
            let mut delta = match &cache.masks[l] {
                Some(m) => (grad_a * m)?,
                None => grad_a,
            };
            if let Some(d) = self.spec.activations[l].derivative(&cache.pre[l], &cache.post[l])? {
                delta = (delta * d)?;
            }
            let next = if l > 0 {
                Some(product(&delta, &segments[self.layers[l].weight])?)
            } else {
                None
            };
            factors.push(self.factors_of(l, cache, delta));
            match next {
                Some(g) => grad_a = g,
                None => break,
            }
        }
        factors.reverse();
        Ok(factors)
    }

    /// Layer l's factors from the cache and its deltas.
    pub(super) fn factors_of(&self, l: usize, cache: &Cache, delta: Tensor) -> LayerFactors {
        LayerFactors {
            map: Affine::Dense,
            input: cache.inputs[l].clone(),
            delta,
            positions: 1,
            weight_segment: self.layers[l].weight,
            bias_segment: self.layers[l].bias,
        }
    }

    /// The scaled dropout mask of layer l's output (`[n, width]`), drawn when a stream is
    /// given, the spec has dropout and l is a hidden layer.
    pub(super) fn dropout_mask(
        &self,
        l: usize,
        n: usize,
        dropout: Option<&mut ChaCha8Rng>,
        (dtype, device): (DType, &Device),
    ) -> Result<Option<Tensor>> {
        match dropout {
            Some(rng) if self.spec.dropout > 0.0 && l + 1 < self.n_layers() => {
                Ok(Some(crate::dropout::inverted_mask(
                    rng,
                    (n, self.spec.widths[l + 1]),
                    self.spec.dropout,
                    (dtype, device),
                )?))
            }
            _ => Ok(None),
        }
    }
}
