//! The MLP's forward and backward passes on the CPU, as loops over contiguous slices compiled
//! for the processor's widest vector instructions ([`bdl_tensor::vectorized`]).
//!
//! With a_l (`[N, d_l]`) the input of layer l, W_l (`[d_{l+1}, d_l]`, PyTorch order), b_l, the
//! activation φ_l and the scaled dropout mask m_l (1 without dropout):
//!
//! - forward: z_l = a_l W_lᵀ + b_l, h_l = φ_l(z_l), a_{l+1} = h_l ∘ m_l;
//! - backward from r = ∂ℓ/∂f: δ_L = r ∘ φ_L'(z_L), δ_l = (δ_{l+1} W_{l+1}) ∘ m_l ∘ φ_l'(z_l);
//! - Σ_n g_n(W_l) = δ_lᵀ a_l and Σ_n g_n(b_l) = 1ᵀ δ_l; Σ_n g_n∘g_n = (δ_l∘δ_l)ᵀ(a_l∘a_l) and
//!   1ᵀ(δ_l∘δ_l).
//!
//! Each matrix product is one [`product`] whose tiles go out through a [`Store`] that adds the
//! bias (forward) or multiplies by m ∘ φ' (backward) on the way, so no pass over a whole layer
//! is spent on them.

use bdl_tensor::{Real, recycle, recycled, vectorized};

use super::product::{Dims, Plain, Store, Strided, product};
use crate::Activation;

/// One dense layer's parameters, slices of the flat vector.
#[derive(Clone, Copy)]
pub(super) struct Dense<'a, T> {
    /// W, `[outputs, inputs]`.
    pub weight: &'a [T],
    /// b, `[outputs]`.
    pub bias: Option<&'a [T]>,
    pub inputs: usize,
    pub outputs: usize,
    pub activation: Activation,
}

/// The forward store: z = sums + b. (φ runs as a pass of its own over z: applied tile by tile
/// in the store it made the whole product a fifth slower, the tiles' sums going through memory.)
struct Affine<'a, T> {
    z: &'a mut [T],
    bias: Option<&'a [T]>,
    width: usize,
}

impl<T: Real> Store<T> for Affine<'_, T> {
    #[inline(always)]
    fn store<const Q: usize>(&mut self, p: usize, q0: usize, sums: [T; Q]) {
        let mut z = sums;
        if let Some(b) = self.bias {
            for (z, &b) in z.iter_mut().zip(&b[q0..q0 + Q]) {
                *z += b;
            }
        }
        Plain {
            c: &mut *self.z,
            width: self.width,
        }
        .store(p, q0, z);
    }
}

/// The backward store: δ = sums ∘ m ∘ φ'(z), from the layer's z and h = φ(z).
struct Backprop<'a, T> {
    delta: &'a mut [T],
    z: &'a [T],
    h: &'a [T],
    mask: Option<&'a [T]>,
    activation: Activation,
    width: usize,
}

impl<T: Real> Store<T> for Backprop<'_, T> {
    #[inline(always)]
    fn store<const Q: usize>(&mut self, p: usize, q0: usize, sums: [T; Q]) {
        let at = p * self.width + q0..p * self.width + q0 + Q;
        let mut delta = sums;
        if let Some(m) = self.mask {
            for (d, &m) in delta.iter_mut().zip(&m[at.clone()]) {
                *d *= m;
            }
        }
        self.activation
            .scale_by_derivative(&self.z[at.clone()], &self.h[at], &mut delta);
        Plain {
            c: &mut *self.delta,
            width: self.width,
        }
        .store(p, q0, delta);
    }
}

impl<T: Real> Dense<'_, T> {
    /// z = a Wᵀ + b for the `n` rows of `a` into `z`, and h = φ(z) into `h` (which the identity
    /// does not need: `None`).
    pub(super) fn forward(&self, a: &[T], n: usize, z: &mut [T], h: Option<&mut [T]>) {
        let (d_in, d_out) = (self.inputs, self.outputs);
        assert_eq!(z.len(), n * d_out, "z is [n, outputs]");
        // Wᵀ, `[inputs, outputs]`: row k holds the weights of input k.
        let mut w_t = recycled(d_in * d_out);
        for (o, row) in self.weight.chunks_exact(d_in).enumerate() {
            for (k, &w) in row.iter().enumerate() {
                w_t[k * d_out + o] = w;
            }
        }
        let dims = Dims {
            p: n,
            q: d_out,
            r: d_in,
        };
        let mut out = Affine {
            z: &mut *z,
            bias: self.bias,
            width: d_out,
        };
        product(Strided::rows(a, d_in), &w_t, dims, &mut out);
        recycle(w_t);
        if let Some(h) = h {
            let activation = self.activation;
            vectorized(
                #[inline(always)]
                || activation.apply_to_slice(z, h),
            );
        }
    }

    /// The deltas of the layer below, (δ W) ∘ m ∘ φ'(z) for this layer's deltas δ (`[n,
    /// outputs]`) and the lower layer's z, h = φ(z) and mask m (`[n, inputs]`), into `below`.
    pub(super) fn backward(&self, delta: &[T], n: usize, lower: Lower<'_, T>, below: &mut [T]) {
        assert_eq!(below.len(), n * self.inputs, "δ below is [n, inputs]");
        let dims = Dims {
            p: n,
            q: self.inputs,
            r: self.outputs,
        };
        let mut out = Backprop {
            delta: below,
            z: lower.z,
            h: lower.h,
            mask: lower.mask,
            activation: lower.activation,
            width: self.inputs,
        };
        product(
            Strided::rows(delta, self.outputs),
            self.weight,
            dims,
            &mut out,
        );
    }
}

/// What the backward pass needs of the layer below: its z, h = φ(z), dropout mask and φ.
#[derive(Clone, Copy)]
pub(super) struct Lower<'a, T> {
    pub z: &'a [T],
    pub h: &'a [T],
    pub mask: Option<&'a [T]>,
    pub activation: Activation,
}

/// δ ← δ ∘ φ'(z) for the top layer's deltas (its output gradients r on entry).
pub(super) fn top_deltas<T: Real>(delta: &mut [T], top: Lower<'_, T>) {
    vectorized(
        #[inline(always)]
        || {
            if let Some(m) = top.mask {
                delta.iter_mut().zip(m).for_each(|(d, &m)| *d *= m);
            }
            top.activation.scale_by_derivative(top.z, top.h, delta);
        },
    )
}

/// δᵀ a (`[outputs, inputs]`, written to `weight`) and 1ᵀ δ (`[outputs]`, written to `bias`) for
/// deltas δ `[n, outputs]` and inputs a `[n, inputs]`: the layer's summed gradient, or with
/// `squared` its sum of squared per-example gradients, (δ∘δ)ᵀ(a∘a) and 1ᵀ(δ∘δ).
pub(super) fn weight_products<T: Real>(
    delta: &[T],
    input: &[T],
    (n, inputs, outputs): (usize, usize, usize),
    squared: bool,
    weight: &mut [T],
    bias: Option<&mut [T]>,
) {
    let square = |v: &[T]| -> Vec<T> {
        let mut sq = recycled(v.len());
        vectorized(
            #[inline(always)]
            || sq.iter_mut().zip(v).for_each(|(s, &x)| *s = x * x),
        );
        sq
    };
    let squares = squared.then(|| (square(delta), square(input)));
    let (delta, input) = match &squares {
        Some((delta, input)) => (&delta[..], &input[..]),
        None => (delta, input),
    };
    // The wider of the two sides runs along the registers' lanes: δᵀ a directly, or (aᵀ δ)ᵀ.
    if inputs >= outputs {
        let dims = Dims {
            p: outputs,
            q: inputs,
            r: n,
        };
        let mut out = Plain {
            c: weight,
            width: inputs,
        };
        product(Strided::transposed(delta, outputs), input, dims, &mut out);
    } else {
        let mut transposed = recycled(inputs * outputs);
        let dims = Dims {
            p: inputs,
            q: outputs,
            r: n,
        };
        let mut out = Plain {
            c: &mut transposed,
            width: outputs,
        };
        product(Strided::transposed(input, inputs), delta, dims, &mut out);
        for (k, column) in transposed.chunks_exact(outputs).enumerate() {
            for (o, &t) in column.iter().enumerate() {
                weight[o * inputs + k] = t;
            }
        }
        recycle(transposed);
    }
    if let Some(bias) = bias {
        vectorized(
            #[inline(always)]
            || {
                bias.fill(T::from_f64(0.0));
                for row in delta.chunks_exact(outputs) {
                    bias.iter_mut().zip(row).for_each(|(s, &d)| *s += d);
                }
            },
        );
    }
    if let Some((delta, input)) = squares {
        recycle(delta);
        recycle(input);
    }
}
