//! The MLP's passes on slices of f32 or f64 CPU storage ([`pass`](super::pass)), behind the
//! [`Model`] methods: a forward pass kept as plain vectors, the backward pass over
//! views of them (or of a [`Cache`]'s tensors), and the gradient sums.

use bdl_tensor::{ChaCha8Rng, Elements, Real, elements, recycle, recycled};
use candle_core::{Device, Tensor};

use super::Mlp;
use super::pass::{Dense, Lower, top_deltas, weight_products};
use crate::{Activation, Cache, LayerFactors, LossGradient, Model, Result};

/// One layer's values in a forward pass.
pub(super) struct Values<T> {
    /// z.
    z: Vec<T>,
    /// h = φ(z); `None` for the identity, whose h is z.
    h: Option<Vec<T>>,
    /// The scaled dropout mask m, when dropout is on.
    mask: Option<Tensor>,
    /// a = h ∘ m, the next layer's input; `None` without a mask, when it is h.
    next: Option<Vec<T>>,
}

impl<T> Values<T> {
    fn h(&self) -> &[T] {
        self.h.as_deref().unwrap_or(&self.z)
    }

    fn output(&self) -> &[T] {
        self.next.as_deref().unwrap_or(self.h())
    }
}

/// What the backward pass reads of one layer: its input a, z, h = φ(z) and mask.
struct View<'a, T> {
    input: &'a [T],
    z: &'a [T],
    h: &'a [T],
    mask: Option<&'a [T]>,
}

/// Σ_n g_n and, when asked, Σ_n g_n∘g_n, in the parameters' dtype.
struct Sums<T> {
    sum: Vec<T>,
    sum_sq: Option<Vec<T>>,
}

impl Mlp {
    /// The layers' parameters as slices of the flat vector `theta`.
    fn dense<'a, T: Real>(&self, theta: &'a [T]) -> Vec<Dense<'a, T>> {
        let segments = self.layout.segments();
        (self.layers.iter().zip(&self.spec.activations))
            .enumerate()
            .map(|(l, (layer, &activation))| Dense {
                weight: &theta[segments[layer.weight].range()],
                bias: layer.bias.map(|b| &theta[segments[b].range()]),
                inputs: self.spec.widths[l],
                outputs: self.spec.widths[l + 1],
                activation,
            })
            .collect()
    }

    /// The forward pass on the `n` rows of `x`, layer after layer, with fresh dropout masks from
    /// `dropout` (drawn in the order the tensor pass draws them).
    pub(super) fn slice_forward<T: Real>(
        &self,
        theta: &[T],
        x: &[T],
        n: usize,
        mut dropout: Option<&mut ChaCha8Rng>,
        device: &Device,
    ) -> Result<Vec<Values<T>>> {
        let mut layers: Vec<Values<T>> = Vec::with_capacity(self.n_layers());
        for (l, dense) in self.dense(theta).iter().enumerate() {
            let input = layers.last().map_or(x, Values::output);
            let mut z = recycled(n * dense.outputs);
            let mut h =
                (dense.activation != Activation::Identity).then(|| recycled(n * dense.outputs));
            dense.forward(input, n, &mut z, h.as_deref_mut());
            let mask = self.dropout_mask(l, n, dropout.as_deref_mut(), (T::DTYPE, device))?;
            let mut values = Values {
                z,
                h,
                mask,
                next: None,
            };
            if let Some(m) = &values.mask {
                let m = elements::<T>(m)?;
                let next = values
                    .h()
                    .iter()
                    .zip(m.iter())
                    .map(|(&h, &m)| h * m)
                    .collect();
                values.next = Some(next);
            }
            layers.push(values);
        }
        Ok(layers)
    }

    /// The forward pass on checked inputs in the parameters' dtype, kept as a [`Cache`].
    pub(super) fn slice_forward_cache<T: Real>(
        &self,
        params: &Tensor,
        x: Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Cache> {
        let n = x.dims()[0];
        let layers = {
            let theta = elements::<T>(params)?;
            let inputs = elements::<T>(&x)?;
            self.slice_forward(&theta, &inputs, n, dropout, x.device())?
        };
        self.slice_cache(x, layers)
    }

    /// The outputs `[N, K]` of a slice forward pass on checked inputs in the parameters' dtype;
    /// the layers' buffers go back to the thread's pool.
    pub(super) fn slice_output<T: Real>(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Tensor> {
        let n = x.dims()[0];
        let layers = {
            let theta = elements::<T>(params)?;
            let inputs = elements::<T>(x)?;
            self.slice_forward(&theta, &inputs, n, dropout, x.device())?
        };
        let f = layers.last().expect("an MLP has a layer").output();
        let f = Tensor::from_slice(f, (n, self.n_outputs()), x.device())?;
        give_back(layers);
        Ok(f)
    }

    /// The cache of a slice forward pass on the inputs `x` (its tensors own the vectors).
    fn slice_cache<T: Real>(&self, x: Tensor, layers: Vec<Values<T>>) -> Result<Cache> {
        let n = x.dims()[0];
        let device = x.device().clone();
        let (mut inputs, mut pre, mut post, mut masks) = (vec![x], vec![], vec![], vec![]);
        for (l, values) in layers.into_iter().enumerate() {
            let shape = (n, self.spec.widths[l + 1]);
            let z = Tensor::from_vec(values.z, shape, &device)?;
            let h = match values.h {
                Some(h) => Tensor::from_vec(h, shape, &device)?,
                None => z.clone(),
            };
            inputs.push(match values.next {
                Some(a) => Tensor::from_vec(a, shape, &device)?,
                None => h.clone(),
            });
            pre.push(z);
            post.push(h);
            masks.push(values.mask);
        }
        let output = inputs.pop().expect("an MLP has a layer");
        Ok(Cache {
            inputs,
            pre,
            post,
            masks,
            indices: Vec::new(),
            output,
            n_examples: n,
        })
    }

    /// Backpropagates the output gradients `r` (`[n, K]`) through the layers `views`, calling
    /// `each(l, δ_l)` for every layer, the top one first.
    fn backpropagate<T: Real>(
        &self,
        dense: &[Dense<'_, T>],
        views: &[View<'_, T>],
        n: usize,
        r: Vec<T>,
        mut each: impl FnMut(usize, &[T]),
    ) {
        let lower = |l: usize| Lower {
            z: views[l].z,
            h: views[l].h,
            mask: views[l].mask,
            activation: dense[l].activation,
        };
        let top = dense.len() - 1;
        let mut delta = r;
        top_deltas(&mut delta, lower(top));
        for l in (0..=top).rev() {
            each(l, &delta);
            if l > 0 {
                let mut below = recycled(n * dense[l].inputs);
                dense[l].backward(&delta, n, lower(l - 1), &mut below);
                recycle(std::mem::replace(&mut delta, below));
            }
        }
        recycle(delta);
    }

    /// Σ_n g_n and, with `squares`, Σ_n g_n∘g_n for the output gradients `r`.
    fn sums<T: Real>(
        &self,
        theta: &[T],
        views: &[View<'_, T>],
        n: usize,
        r: Vec<T>,
        squares: bool,
    ) -> Sums<T> {
        let d = self.layout.len();
        let mut sum = vec![T::from_f64(0.0); d];
        let mut sum_sq = squares.then(|| vec![T::from_f64(0.0); d]);
        let dense = self.dense(theta);
        self.backpropagate(&dense, views, n, r, |l, delta| {
            self.layer_products(l, delta, views[l].input, n, false, &mut sum);
            if let Some(sum_sq) = sum_sq.as_deref_mut() {
                self.layer_products(l, delta, views[l].input, n, true, sum_sq);
            }
        });
        Sums { sum, sum_sq }
    }

    /// Layer l's δᵀ a and 1ᵀ δ (or their squared forms) into its segments of `out`.
    fn layer_products<T: Real>(
        &self,
        l: usize,
        delta: &[T],
        input: &[T],
        n: usize,
        squared: bool,
        out: &mut [T],
    ) {
        let segments = self.layout.segments();
        let (inputs, outputs) = (self.spec.widths[l], self.spec.widths[l + 1]);
        let weight = segments[self.layers[l].weight].range();
        let (weight, bias) = match self.layers[l].bias {
            Some(b) => {
                let bias = segments[b].range();
                assert!(
                    weight.end <= bias.start,
                    "a layer's bias follows its weight"
                );
                let (low, high) = out.split_at_mut(bias.start);
                (&mut low[weight], Some(&mut high[..bias.len()]))
            }
            None => (&mut out[weight], None),
        };
        weight_products(delta, input, (n, inputs, outputs), squared, weight, bias);
    }

    /// The backward pass's views of a cache, with the element guards they borrow.
    fn cache_elements<'c, T: Real>(&self, cache: &'c Cache) -> Result<CacheElements<'c, T>> {
        let all = |v: &'c [Tensor]| {
            v.iter()
                .map(elements::<T>)
                .collect::<bdl_tensor::Result<Vec<_>>>()
        };
        Ok(CacheElements {
            inputs: all(&cache.inputs)?,
            pre: all(&cache.pre)?,
            post: all(&cache.post)?,
            masks: cache
                .masks
                .iter()
                .map(|m| m.as_ref().map(elements::<T>).transpose())
                .collect::<bdl_tensor::Result<_>>()?,
        })
    }

    /// δ_l = ∂ℓ/∂z_l for every layer, first layer first, from a cache.
    pub(super) fn slice_factors<T: Real>(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
    ) -> Result<Vec<LayerFactors>> {
        let theta = elements::<T>(params)?;
        let guards = self.cache_elements::<T>(cache)?;
        let views = guards.views();
        let n = cache.n_examples;
        let mut deltas = vec![None; self.n_layers()];
        self.backpropagate(
            &self.dense(&theta),
            &views,
            n,
            elements::<T>(grad_f)?.to_vec(),
            |l, delta| deltas[l] = Some(delta.to_vec()),
        );
        deltas
            .into_iter()
            .enumerate()
            .map(|(l, delta)| {
                let delta = delta.expect("every layer is visited");
                let delta = Tensor::from_vec(delta, (n, self.spec.widths[l + 1]), params.device())?;
                Ok(self.factors_of(l, cache, delta))
            })
            .collect()
    }

    /// Σ_n g_n (or with `squared`, Σ_n g_n∘g_n) from a cache, as a `[D]` tensor.
    pub(super) fn slice_gradient<T: Real>(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
        squared: bool,
    ) -> Result<Tensor> {
        let theta = elements::<T>(params)?;
        let guards = self.cache_elements::<T>(cache)?;
        let r = elements::<T>(grad_f)?.to_vec();
        let sums = self.sums(&theta, &guards.views(), cache.n_examples, r, squared);
        let out = if squared {
            sums.sum_sq.expect("asked for")
        } else {
            sums.sum
        };
        let d = out.len();
        Ok(Tensor::from_vec(out, d, params.device())?)
    }

    /// The loss gradient of one minibatch without a cache: the forward pass as vectors, r from
    /// `output_gradient` on the outputs, the backward pass over views of the vectors; the sums
    /// in f64.
    pub(super) fn slice_loss_gradient<T: Real, E: From<crate::Error>>(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
        output_gradient: impl FnOnce(&Tensor) -> std::result::Result<Tensor, E>,
        squares: bool,
    ) -> std::result::Result<LossGradient, E> {
        let n = x.dims()[0];
        let theta = elements::<T>(params).map_err(crate::Error::from)?;
        let inputs = elements::<T>(x).map_err(crate::Error::from)?;
        let layers = self.slice_forward(&theta, &inputs, n, dropout, x.device())?;
        let f = layers.last().expect("an MLP has a layer").output();
        let f =
            Tensor::from_slice(f, (n, self.n_outputs()), x.device()).map_err(crate::Error::from)?;
        let r = output_gradient(&f)?;
        self.check_output_shape(n, &r)?;
        let r = {
            let r = elements::<T>(&r).map_err(crate::Error::from)?;
            let mut owned = recycled(r.len());
            owned.copy_from_slice(&r);
            owned
        };
        let masks: Vec<Option<Elements<'_, T>>> = layers
            .iter()
            .map(|v| v.mask.as_ref().map(elements::<T>).transpose())
            .collect::<bdl_tensor::Result<_>>()
            .map_err(crate::Error::from)?;
        let views: Vec<View<'_, T>> = (layers.iter().zip(&masks))
            .enumerate()
            .map(|(l, (values, mask))| View {
                input: if l == 0 {
                    &inputs
                } else {
                    layers[l - 1].output()
                },
                z: &values.z,
                h: values.h(),
                mask: mask.as_deref(),
            })
            .collect();
        let sums = self.sums(&theta, &views, n, r, squares);
        drop(views);
        drop(masks);
        give_back(layers);
        let wide = |v: Vec<T>| v.into_iter().map(|x| x.to_f64()).collect();
        Ok(LossGradient {
            sum: wide(sums.sum),
            sum_sq: sums.sum_sq.map(wide),
        })
    }
}

/// Gives the layers' buffers back to the thread's pool.
fn give_back<T: Real>(layers: Vec<Values<T>>) {
    for values in layers {
        let owned = [Some(values.z), values.h, values.next];
        owned.into_iter().flatten().for_each(recycle);
    }
}

/// The element guards of a cache's tensors.
struct CacheElements<'c, T> {
    inputs: Vec<Elements<'c, T>>,
    pre: Vec<Elements<'c, T>>,
    post: Vec<Elements<'c, T>>,
    masks: Vec<Option<Elements<'c, T>>>,
}

impl<T: Real> CacheElements<'_, T> {
    fn views(&self) -> Vec<View<'_, T>> {
        (0..self.pre.len())
            .map(|l| View {
                input: &self.inputs[l],
                z: &self.pre[l],
                h: &self.post[l],
                mask: self.masks[l].as_deref(),
            })
            .collect()
    }
}
