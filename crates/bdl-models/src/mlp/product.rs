//! C = A B on slices, in tiles held in registers, each finished tile handed to a [`Store`]
//! (which may add a bias, apply an activation or its derivative on the way out).
//!
//! c_pq = Σ_r a_pr b_rq is summed in the order of r, one fused multiply-add a term, starting
//! from zero. Tiles of rows and columns decide only which sums run side by side, never the order
//! within one, so C is the same for every tiling and every vector width: the same bits with
//! AVX-512, with AVX2 or with neither. The widest column tile is two vector registers (four rows
//! of it are eight registers of sums), so the tiles differ by instruction set, the bits do not.
//! (Not candle's bits: its `gemm` picks among kernels whose summation orders differ by shape.)

use bdl_tensor::{Real, vectorized};

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

/// Where the finished entries of C go: `store(p, q0, sums)` receives c_{p, q0}, …,
/// c_{p, q0 + Q − 1}; every entry of C is stored exactly once.
pub(super) trait Store<T> {
    fn store<const Q: usize>(&mut self, p: usize, q0: usize, sums: [T; Q]);
}

/// C written as it is, row-major `[p, width]`.
pub(super) struct Plain<'a, T> {
    pub c: &'a mut [T],
    pub width: usize,
}

impl<T: Copy> Store<T> for Plain<'_, T> {
    #[inline(always)]
    fn store<const Q: usize>(&mut self, p: usize, q0: usize, sums: [T; Q]) {
        let start = p * self.width + q0;
        // Stored by value: a slice copy would take the sums' address, and every possibly
        // panicking bounds check in the tile's loop would then keep them in memory (a load and
        // a store around each multiply-add, measured twenty times slower).
        let dst: &mut [T; Q] = (&mut self.c[start..start + Q])
            .try_into()
            .expect("Q columns");
        *dst = sums;
    }
}

/// C = A B for A read through strides and B row-major (`b.len() == r·q`), each entry handed to
/// `out` once: c_pq = Σ_r a_pr b_rq in the order of r, one fused multiply-add a term.
#[inline(always)]
pub(super) fn product<T: Real>(a: Strided<'_, T>, b: &[T], dims: Dims, out: &mut impl Store<T>) {
    tiled_product(a, b, dims, widest_tile::<T>(), out);
}

/// The widest column tile for `T`: two vector registers of `T` (sixteen f64 with AVX-512, eight
/// with AVX2), at most 16 numbers. Four rows of 16 f64 columns with AVX2 are sixteen registers
/// of sums, every register the instruction set has, and spill; 32 f32 columns with AVX-512 were
/// measured slower than 16 (2026-12-03, "Benchmarks").
fn widest_tile<T>() -> usize {
    (2 * bdl_tensor::vector_bytes() / size_of::<T>()).clamp(1, 16)
}

/// [`product`] with column tiles of at most `widest` numbers.
#[inline(always)]
fn tiled_product<T: Real>(
    a: Strided<'_, T>,
    b: &[T],
    dims: Dims,
    widest: usize,
    out: &mut impl Store<T>,
) {
    assert_eq!(b.len(), dims.r * dims.q, "B is [r, q]");
    vectorized(
        #[inline(always)]
        || {
            if dims.q == 1 {
                column(a, b, dims, out);
            } else if dims.r <= 1 {
                outer(a, b, dims, widest, out);
            } else {
                let mut panel = Vec::new();
                let mut p0 = 0;
                while p0 < dims.p {
                    // The last rows together too: one at a time, a tile's few sums would each
                    // wait on the previous fused multiply-add.
                    p0 += match dims.p - p0 {
                        ROWS.. => row_block::<T, ROWS>(a, b, dims, widest, p0, &mut panel, out),
                        3 => row_block::<T, 3>(a, b, dims, widest, p0, &mut panel, out),
                        2 => row_block::<T, 2>(a, b, dims, widest, p0, &mut panel, out),
                        _ => row_block::<T, 1>(a, b, dims, widest, p0, &mut panel, out),
                    };
                }
            }
        },
    )
}

/// Rows of C computed together: each B row loaded is used this many times.
const ROWS: usize = 4;

/// Calls `tile(q0, Q)` over the columns 0 … width − 1 in tiles of 16, 8, 4, 2 and 1, none wider
/// than `widest`.
macro_rules! column_tiles {
    ($width:expr, $widest:expr, |$q0:ident, $q:ident| $tile:expr) => {{
        let (width, widest) = ($width, $widest);
        let mut $q0 = 0;
        while $q0 < width {
            $q0 += match (width - $q0).min(widest) {
                16.. => {
                    const $q: usize = 16;
                    $tile
                }
                8.. => {
                    const $q: usize = 8;
                    $tile
                }
                4.. => {
                    const $q: usize = 4;
                    $tile
                }
                2.. => {
                    const $q: usize = 2;
                    $tile
                }
                _ => {
                    const $q: usize = 1;
                    $tile
                }
            };
        }
    }};
}

/// C = A b for a one-column B: the sums of eight rows side by side, each term read from A where
/// it lies (packing A would cost as much as the products).
#[inline(always)]
fn column<T: Real>(a: Strided<'_, T>, b: &[T], dims: Dims, out: &mut impl Store<T>) {
    let mut p0 = 0;
    while p0 < dims.p {
        p0 += if dims.p - p0 >= 8 {
            column_rows::<T, 8>(a, b, p0, out)
        } else {
            column_rows::<T, 1>(a, b, p0, out)
        };
    }
}

/// Rows p0 … p0 + P − 1 of C = A b; returns P. Where A's rows are contiguous, eight terms of
/// each row are loaded at once (one bounds check, not eight); the sums are still taken one term
/// after the other.
#[inline(always)]
fn column_rows<T: Real, const P: usize>(
    a: Strided<'_, T>,
    b: &[T],
    p0: usize,
    out: &mut impl Store<T>,
) -> usize {
    const TERMS: usize = 8;
    let mut acc = [T::from_f64(0.0); P];
    let (chunks, rest) = if a.col == 1 {
        b.as_chunks::<TERMS>()
    } else {
        (&[][..], b)
    };
    for (c, b) in chunks.iter().enumerate() {
        let terms: [[T; TERMS]; P] = std::array::from_fn(|p| {
            let start = (p0 + p) * a.row + c * TERMS;
            a.data[start..start + TERMS]
                .try_into()
                .expect("TERMS numbers")
        });
        for (k, &b) in b.iter().enumerate() {
            for (s, terms) in acc.iter_mut().zip(&terms) {
                *s = terms[k].mul_add(b, *s);
            }
        }
    }
    add_terms(a, rest, chunks.len() * TERMS, p0, &mut acc);
    for (p, s) in acc.into_iter().enumerate() {
        out.store(p0 + p, 0, [s]);
    }
    P
}

/// Adds a_pr b_r to the sums `acc` of rows p0 … p0 + P − 1, for r = r0, r0 + 1, … (`b` holds
/// b_r0, …), each term read from A where it lies.
#[inline(always)]
fn add_terms<T: Real, const P: usize>(
    a: Strided<'_, T>,
    b: &[T],
    r0: usize,
    p0: usize,
    acc: &mut [T; P],
) {
    let mut base = [0; P];
    for (p, base) in base.iter_mut().enumerate() {
        *base = (p0 + p) * a.row;
    }
    for (r, &b) in (r0..).zip(b) {
        let at = r * a.col;
        for (s, &base) in acc.iter_mut().zip(&base) {
            *s = a.data[base + at].mul_add(b, *s);
        }
    }
}

/// C = A B for at most one term: c_pq = a_p b_q, one rounding, as the fused sum from zero
/// gives (and 0 without terms).
#[inline(always)]
fn outer<T: Real>(a: Strided<'_, T>, b: &[T], dims: Dims, widest: usize, out: &mut impl Store<T>) {
    for p in 0..dims.p {
        let a_p = if dims.r == 1 {
            a.data[p * a.row]
        } else {
            T::from_f64(0.0)
        };
        column_tiles!(dims.q, widest, |q0, Q| {
            let mut sums = [T::from_f64(0.0); Q];
            if dims.r == 1 {
                for (s, &b) in sums.iter_mut().zip(&b[q0..q0 + Q]) {
                    *s = a_p * b;
                }
            }
            out.store(p, q0, sums);
            Q
        });
    }
}

/// Rows p0 … p0 + P − 1 of C: A's rows packed into an r-major panel (P numbers per r), then
/// the columns in tiles; returns P.
#[inline(always)]
fn row_block<T: Real, const P: usize>(
    a: Strided<'_, T>,
    b: &[T],
    dims: Dims,
    widest: usize,
    p0: usize,
    panel_buffer: &mut Vec<T>,
    out: &mut impl Store<T>,
) -> usize {
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
    let panel: &[[T; P]] = panel;
    column_tiles!(dims.q, widest, |q0, Q| tile::<T, P, Q>(
        panel, b, dims.q, p0, q0, out
    ));
    P
}

/// The P × Q tile of C at (p0, q0), its sums held in registers; returns Q.
#[inline(always)]
fn tile<T: Real, const P: usize, const Q: usize>(
    panel: &[[T; P]],
    b: &[T],
    width: usize,
    p0: usize,
    q0: usize,
    out: &mut impl Store<T>,
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
        out.store(p0 + p, q0, sums);
    }
    Q
}

#[cfg(test)]
mod tests {
    use bdl_tensor::Seed;
    use rand::Rng;

    use super::*;

    /// c_pq = Σ_r a_pr b_rq one term after the other, each fused into the running sum.
    fn sequential<T: Real>(a: Strided<'_, T>, b: &[T], dims: Dims) -> Vec<T> {
        let mut c = vec![T::from_f64(0.0); dims.p * dims.q];
        for p in 0..dims.p {
            for q in 0..dims.q {
                c[p * dims.q + q] = (0..dims.r).fold(T::from_f64(0.0), |sum, r| {
                    a.data[p * a.row + r * a.col].mul_add(b[r * dims.q + q], sum)
                });
            }
        }
        c
    }

    /// Every tiling (row blocks of 4, 3, 2 and 1; column tiles of 16, 8, 4, 2, 1 under every
    /// cap on their width; the one-column and one-term shortcuts) and every way of reading A give
    /// exactly the sums taken in order, in both dtypes: equal values, not merely close ones (the
    /// lanes only decide which sums run side by side).
    #[test]
    fn products_are_the_sums_taken_in_order() {
        sums_in_order::<f64>();
        sums_in_order::<f32>();
    }

    fn sums_in_order<T: Real + std::fmt::Debug>() {
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
            (6, 71, 9),
            (9, 16, 3),
            (5, 2, 17),
            (4, 3, 0),
        ] {
            let mut draw = |len: usize| -> Vec<T> {
                (0..len)
                    .map(|_| T::from_f64(rng.random_range(-2.0..2.0)))
                    .collect()
            };
            let (a, b) = (draw(p * r), draw(r * q));
            let dims = Dims { p, q, r };
            // The same A in a buffer twice its size, every other number a gap: neither stride is 1.
            let mut spread = vec![T::from_f64(f64::NAN); 2 * p * r];
            for i in 0..p {
                for k in 0..r {
                    spread[2 * (i + k * p)] = a[i * r + k];
                }
            }
            let spread = Strided {
                data: &spread,
                row: 2,
                col: 2 * p,
            };
            let transposed: Vec<T> = (0..p * r).map(|j| a[(j % p) * r + j / p]).collect();
            let transposed = Strided::transposed(&transposed, p);
            for a in [Strided::rows(&a, r), transposed, spread] {
                // This processor's widest tile, and every other instruction set's.
                for widest in [widest_tile::<T>(), 16, 8, 4, 2, 1] {
                    let mut c = vec![T::from_f64(f64::NAN); p * q];
                    let mut out = Plain {
                        c: &mut c,
                        width: q,
                    };
                    tiled_product(a, &b, dims, widest, &mut out);
                    assert_eq!(
                        c,
                        sequential(a, &b, dims),
                        "{dims:?}, strides {}, {}, tiles of at most {widest}",
                        a.row,
                        a.col
                    );
                }
            }
        }
    }
}
