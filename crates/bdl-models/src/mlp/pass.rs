//! The MLP's forward and backward passes on the CPU: loops over contiguous slices, compiled for
//! the processor's widest vector instructions ([`bdl_tensor::vectorized`]).
//!
//! With a_l (`[N, d_l]`) the input of layer l, W_l (`[d_{l+1}, d_l]`, PyTorch order), b_l, the
//! activation φ_l and the scaled dropout mask m_l (1 without dropout):
//!
//! - forward: z_l = a_l W_lᵀ + b_l, h_l = φ_l(z_l), a_{l+1} = h_l ∘ m_l;
//! - backward from r = ∂ℓ/∂f: δ_L = r ∘ m_L ∘ φ_L'(z_L), δ_l = (δ_{l+1} W_{l+1}) ∘ m_l ∘ φ_l'(z_l);
//! - Σ_n g_n(W_l) = δ_lᵀ a_l and Σ_n g_n(b_l) = 1ᵀ δ_l; Σ_n g_n∘g_n = (δ_l∘δ_l)ᵀ(a_l∘a_l) and
//!   1ᵀ(δ_l∘δ_l).
//!
//! Every matrix product is one [`product`]: c_pq = Σ_r a_pr b_rq summed in the order of r, one
//! fused multiply-add a term, starting from zero. Tiles of rows and columns decide only which
//! sums run side by side in registers, never the order within one, so the result is the same
//! for every tiling and every vector width: the same bits with AVX-512, with AVX2 or with
//! neither. (They are not candle's bits: its `gemm` picks among kernels whose summation orders
//! differ by shape.)

use bdl_tensor::{Real, vectorized};

use crate::Activation;

/// A matrix read through strides: entry (p, r) is `data[p * row + r * col]`.
#[derive(Clone, Copy)]
pub(super) struct Strided<'a, T> {
    pub data: &'a [T],
    pub row: usize,
    pub col: usize,
}

impl<'a, T> Strided<'a, T> {
    /// A row-major `[·, width]` matrix.
    pub(super) fn rows(data: &'a [T], width: usize) -> Self {
        Self {
            data,
            row: width,
            col: 1,
        }
    }

    /// The transpose of a row-major `[·, width]` matrix.
    pub(super) fn transposed(data: &'a [T], width: usize) -> Self {
        Self {
            data,
            row: 1,
            col: width,
        }
    }
}

/// The shape of a product C = A B: A is `[p, r]`, B `[r, q]`, C `[p, q]`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dims {
    pub p: usize,
    pub q: usize,
    pub r: usize,
}

/// C = A B for A read through strides, B and C row-major (`b.len() == r·q`, `c.len() == p·q`; C
/// is overwritten): c_pq = Σ_r a_pr b_rq, in the order of r, one fused multiply-add a term.
pub(super) fn product<T: Real>(a: Strided<'_, T>, b: &[T], dims: Dims, c: &mut [T]) {
    assert_eq!(b.len(), dims.r * dims.q, "B is [r, q]");
    assert_eq!(c.len(), dims.p * dims.q, "C is [p, q]");
    if dims.r == 0 {
        c.fill(T::from_f64(0.0));
        return;
    }
    vectorized(
        #[inline(always)]
        || {
            if dims.q == 1 {
                return column(a, b, dims, c);
            }
            if dims.r == 1 {
                return outer(a, b, c);
            }
            let mut panel = Vec::new();
            let mut p0 = 0;
            while p0 < dims.p {
                if dims.p - p0 >= ROWS {
                    row_block::<T, ROWS>(a, b, dims, p0, &mut panel, c);
                    p0 += ROWS;
                } else {
                    row_block::<T, 1>(a, b, dims, p0, &mut panel, c);
                    p0 += 1;
                }
            }
        },
    )
}

/// C = A b for a one-column B: the sums of eight rows side by side, each term read from A where
/// it lies (packing A would cost as much as the products).
#[inline(always)]
fn column<T: Real>(a: Strided<'_, T>, b: &[T], dims: Dims, c: &mut [T]) {
    let mut p0 = 0;
    while p0 < dims.p {
        p0 += if dims.p - p0 >= 8 {
            column_rows::<T, 8>(a, b, p0, c)
        } else {
            column_rows::<T, 1>(a, b, p0, c)
        };
    }
}

/// Rows p0 … p0 + P − 1 of C = A b; returns P.
#[inline(always)]
fn column_rows<T: Real, const P: usize>(
    a: Strided<'_, T>,
    b: &[T],
    p0: usize,
    c: &mut [T],
) -> usize {
    let mut base = [0; P];
    for (p, base) in base.iter_mut().enumerate() {
        *base = (p0 + p) * a.row;
    }
    let mut acc = [T::from_f64(0.0); P];
    for (r, &b) in b.iter().enumerate() {
        let at = r * a.col;
        for (s, &base) in acc.iter_mut().zip(&base) {
            *s = a.data[base + at].mul_add(b, *s);
        }
    }
    for (p, s) in acc.into_iter().enumerate() {
        c[p0 + p] = s;
    }
    P
}

/// C = A B for a one-row B (an outer product): c_pq = a_p b_q, one rounding, as the fused sum
/// from zero would give.
#[inline(always)]
fn outer<T: Real>(a: Strided<'_, T>, b: &[T], c: &mut [T]) {
    for (p, row) in c.chunks_exact_mut(b.len()).enumerate() {
        let a = a.data[p * a.row];
        row.iter_mut().zip(b).for_each(|(c, &b)| *c = a * b);
    }
}

/// Rows of C computed together: each B row loaded is used this many times.
const ROWS: usize = 4;

/// Rows p0 … p0 + P − 1 of C: A's rows packed into an r-major panel (P numbers per r), then the
/// columns in tiles of 16, 8, 4, 2 and 1.
#[inline(always)]
fn row_block<T: Real, const P: usize>(
    a: Strided<'_, T>,
    b: &[T],
    dims: Dims,
    p0: usize,
    panel_buffer: &mut Vec<T>,
    c: &mut [T],
) {
    panel_buffer.resize(dims.r * P, T::from_f64(0.0));
    let (panel, _) = panel_buffer.as_chunks_mut::<P>();
    if a.col == 1 {
        // A's rows are contiguous: each fills one place of every r.
        for p in 0..P {
            let row = &a.data[(p0 + p) * a.row..][..dims.r];
            for (at_r, &x) in panel.iter_mut().zip(row) {
                at_r[p] = x;
            }
        }
    } else if a.row == 1 {
        // A's columns are contiguous: the P numbers of one r lie side by side.
        for (r, at_r) in panel.iter_mut().enumerate() {
            let start = p0 + r * a.col;
            *at_r = a.data[start..start + P].try_into().expect("P numbers");
        }
    } else {
        for (r, at_r) in panel.iter_mut().enumerate() {
            for (p, x) in at_r.iter_mut().enumerate() {
                *x = a.data[(p0 + p) * a.row + r * a.col];
            }
        }
    }
    let mut q0 = 0;
    while q0 < dims.q {
        q0 += match dims.q - q0 {
            16.. => tile::<T, P, 16>(panel, b, dims.q, p0, q0, c),
            8.. => tile::<T, P, 8>(panel, b, dims.q, p0, q0, c),
            4.. => tile::<T, P, 4>(panel, b, dims.q, p0, q0, c),
            2.. => tile::<T, P, 2>(panel, b, dims.q, p0, q0, c),
            _ => tile::<T, P, 1>(panel, b, dims.q, p0, q0, c),
        };
    }
}

/// The P × Q tile of C at (p0, q0), its sums held in registers; returns Q.
///
/// The sums are stored by value at the end: a slice copy would take their address, and every
/// possibly panicking bounds check in the loop would then keep them in memory (a load and a
/// store around each multiply-add, measured twenty times slower).
#[inline(always)]
fn tile<T: Real, const P: usize, const Q: usize>(
    panel: &[[T; P]],
    b: &[T],
    width: usize,
    p0: usize,
    q0: usize,
    c: &mut [T],
) -> usize {
    let zero = T::from_f64(0.0);
    let mut acc = [[zero; Q]; P];
    for (a, b) in panel.iter().zip(b.chunks_exact(width)) {
        let b: &[T; Q] = b[q0..q0 + Q].try_into().expect("Q columns");
        for (acc, &a) in acc.iter_mut().zip(a) {
            for (s, &b) in acc.iter_mut().zip(b) {
                *s = a.mul_add(b, *s);
            }
        }
    }
    for (p, sums) in acc.into_iter().enumerate() {
        let start = (p0 + p) * width + q0;
        let dst: &mut [T; Q] = (&mut c[start..start + Q]).try_into().expect("Q columns");
        *dst = sums;
    }
    Q
}

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

impl<T: Real> Dense<'_, T> {
    /// z = a Wᵀ + b for the `n` rows of `a`, and h = φ(z) unless φ is the identity.
    pub(super) fn forward(&self, a: &[T], n: usize) -> (Vec<T>, Option<Vec<T>>) {
        let (d_in, d_out) = (self.inputs, self.outputs);
        // Wᵀ, `[inputs, outputs]`: row k holds the weights of input k.
        let mut w_t = Vec::with_capacity(d_in * d_out);
        for k in 0..d_in {
            w_t.extend(self.weight.iter().skip(k).step_by(d_in));
        }
        let mut z = vec![T::from_f64(0.0); n * d_out];
        product(
            Strided::rows(a, d_in),
            &w_t,
            Dims {
                p: n,
                q: d_out,
                r: d_in,
            },
            &mut z,
        );
        vectorized(
            #[inline(always)]
            || {
                if let Some(b) = self.bias {
                    for row in z.chunks_exact_mut(d_out) {
                        row.iter_mut().zip(b).for_each(|(z, &b)| *z += b);
                    }
                }
                let h = if self.activation == Activation::Identity {
                    None
                } else {
                    let mut h = vec![T::from_f64(0.0); z.len()];
                    self.activation.apply_to_slice(&z, &mut h);
                    Some(h)
                };
                (z, h)
            },
        )
    }

    /// ∂ℓ/∂a = δ W for the layer's deltas δ (`[n, outputs]`), shape `[n, inputs]`.
    pub(super) fn backward_to_input(&self, delta: &[T], n: usize) -> Vec<T> {
        let mut grad = vec![T::from_f64(0.0); n * self.inputs];
        product(
            Strided::rows(delta, self.outputs),
            self.weight,
            Dims {
                p: n,
                q: self.inputs,
                r: self.outputs,
            },
            &mut grad,
        );
        grad
    }
}

/// δ ← δ ∘ m elementwise.
pub(super) fn mask_in_place<T: Real>(delta: &mut [T], mask: &[T]) {
    vectorized(
        #[inline(always)]
        || delta.iter_mut().zip(mask).for_each(|(d, &m)| *d *= m),
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
        vectorized(
            #[inline(always)]
            || v.iter().map(|&x| x * x).collect(),
        )
    };
    let (delta_sq, input_sq);
    let (delta, input) = if squared {
        (delta_sq, input_sq) = (square(delta), square(input));
        (&delta_sq[..], &input_sq[..])
    } else {
        (delta, input)
    };
    // The wider of the two sides runs along the registers' lanes: δᵀ a directly, or (aᵀ δ)ᵀ.
    if inputs >= outputs {
        product(
            Strided::transposed(delta, outputs),
            input,
            Dims {
                p: outputs,
                q: inputs,
                r: n,
            },
            weight,
        );
    } else {
        let mut transposed = vec![T::from_f64(0.0); inputs * outputs];
        product(
            Strided::transposed(input, inputs),
            delta,
            Dims {
                p: inputs,
                q: outputs,
                r: n,
            },
            &mut transposed,
        );
        for (o, row) in weight.chunks_exact_mut(inputs).enumerate() {
            row.iter_mut()
                .zip(transposed.iter().skip(o).step_by(outputs))
                .for_each(|(w, &t)| *w = t);
        }
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
}

#[cfg(test)]
mod tests {
    use bdl_tensor::Seed;
    use rand::Rng;

    use super::*;

    /// c_pq = Σ_r a_pr b_rq one term after the other, each fused into the running sum.
    fn sequential(a: Strided<'_, f64>, b: &[f64], dims: Dims) -> Vec<f64> {
        let mut c = vec![0.0; dims.p * dims.q];
        for p in 0..dims.p {
            for q in 0..dims.q {
                c[p * dims.q + q] = (0..dims.r).fold(0.0, |sum, r| {
                    a.data[p * a.row + r * a.col].mul_add(b[r * dims.q + q], sum)
                });
            }
        }
        c
    }

    /// Every tiling (row blocks of 4 and 1; column tiles of 16, 8, 4, 2, 1; the one-column and
    /// one-term shortcuts) and both ways of reading A give exactly the sums taken in order:
    /// equal values, not merely close ones (the lanes only decide which sums run side by side).
    #[test]
    fn products_are_the_sums_taken_in_order() {
        let mut rng = Seed(11).rng();
        for &(p, q, r) in &[
            (1, 1, 1),
            (3, 1, 50),
            (128, 1, 50),
            (128, 50, 1),
            (128, 50, 14),
            (50, 14, 128),
            (14, 50, 128),
            (7, 31, 5),
            (9, 16, 3),
            (5, 2, 17),
            (4, 3, 0),
        ] {
            let a: Vec<f64> = (0..p * r).map(|_| rng.random_range(-2.0..2.0)).collect();
            let b: Vec<f64> = (0..r * q).map(|_| rng.random_range(-2.0..2.0)).collect();
            let dims = Dims { p, q, r };
            for a in [Strided::rows(&a, r), Strided::transposed(&a, p)] {
                let mut c = vec![f64::NAN; p * q];
                product(a, &b, dims, &mut c);
                assert_eq!(
                    c,
                    sequential(a, &b, dims),
                    "{dims:?}, strides {}, {}",
                    a.row,
                    a.col
                );
            }
        }
    }
}
