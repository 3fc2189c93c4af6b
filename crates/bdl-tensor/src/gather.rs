//! Gathering columns through a fixed index table, and its adjoint, the scatter-add.
//!
//! A [`GatherIndex`] is an R × C table whose entries name a column of an M-column source, or
//! nothing (a zero). For an `[N, M]` input x, [`gather_columns`] builds one R × C block per
//! example, stacked to `[N·R, C]`:
//!
//! (G x)_{n·R+r, c} = x_{n, t(r,c)}   (0 where t(r, c) is empty).
//!
//! Its adjoint Gᵀ, [`scatter_add_columns`], adds every entry of an `[N·R, C]` input back to the
//! source column it came from, giving `[N, M]`:
//!
//! (Gᵀ g)_{n, m} = Σ_{(r,c): t(r,c) = m} g_{n·R+r, c},
//!
//! so that ⟨G x, g⟩ = ⟨x, Gᵀ g⟩. With t the patch table of a convolution, G is im2col and Gᵀ
//! col2im; empty entries are its zero padding, which receives no gradient.
//!
//! On the CPU both are candle custom ops on f32 and f64 tensors, one pass over each example's
//! block with the table contiguous in the inner loop (in parallel over examples when candle is
//! allowed more than one thread). Each is the other's backward, so candle's autograd runs
//! through them. On any other device (a GPU under the `cuda` feature) they are candle's
//! `index_select` and `index_add` over the table, which give the same numbers and the same
//! gradients, with no copy to the host.

mod op;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use candle_core::{DType, Tensor};

use crate::{Error, Result};
use op::{ColumnOp, Direction};

/// The table entry of an empty (zero) position: above every valid column, since a source has at
/// most `u32::MAX` columns.
const EMPTY: u32 = u32::MAX;

/// An R × C table of source columns in 0..M, some entries empty: the fixed index of
/// [`gather_columns`] and [`scatter_add_columns`]. Cloning shares the table.
#[derive(Clone)]
pub struct GatherIndex {
    /// Row-major R × C entries, [`EMPTY`] for a zero.
    table: Arc<[u32]>,
    rows: usize,
    cols: usize,
    source_len: usize,
}

impl GatherIndex {
    /// The table whose entry (r, c) is `entry(r, c)`: `Some(m)` for source column m < `source_len`,
    /// `None` for a zero. Errors when an entry is out of range, or when the table or the source
    /// is empty or too large for u32 indices.
    ///
    /// ```
    /// // Windows of width 2 over 3 columns, the last one running into a zero.
    /// let index = bdl_tensor::GatherIndex::from_fn(3, 2, 3, |r, c| Some(r + c).filter(|&m| m < 3))
    ///     .unwrap();
    /// assert_eq!((index.rows(), index.cols(), index.source_len()), (3, 2, 3));
    /// assert!(bdl_tensor::GatherIndex::from_fn(1, 1, 3, |_, _| Some(3)).is_err());
    /// ```
    pub fn from_fn(
        rows: usize,
        cols: usize,
        source_len: usize,
        mut entry: impl FnMut(usize, usize) -> Option<usize>,
    ) -> Result<Self> {
        let invalid = |what: String| Err(Error::InvalidArgument(format!("gather index: {what}")));
        let len = rows.checked_mul(cols).unwrap_or(0);
        if len == 0 || source_len == 0 {
            return invalid(format!(
                "need a non-empty table and source, got {rows} × {cols} entries into {source_len} columns"
            ));
        }
        if u32::try_from(source_len).is_err() {
            return invalid(format!("{source_len} source columns exceed u32 indices"));
        }
        let mut table = Vec::with_capacity(len);
        for r in 0..rows {
            for c in 0..cols {
                table.push(match entry(r, c) {
                    // Below `source_len`, which fits a u32.
                    Some(m) if m < source_len => m as u32,
                    Some(m) => {
                        return invalid(format!(
                            "entry ({r}, {c}) = {m} is outside the source columns 0..{source_len}"
                        ));
                    }
                    None => EMPTY,
                });
            }
        }
        Ok(Self {
            table: table.into(),
            rows,
            cols,
            source_len,
        })
    }

    /// R, the rows of the table (of each example's block in the gathered output).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// C, the columns of the table and of the gathered output.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// M, the number of source columns.
    pub fn source_len(&self) -> usize {
        self.source_len
    }

    /// The op in `direction` over this table.
    fn op(&self, direction: Direction) -> ColumnOp {
        ColumnOp {
            index: self.clone(),
            direction,
        }
    }
}

impl fmt::Debug for GatherIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatherIndex")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("source_len", &self.source_len)
            .field("empty", &self.table.iter().filter(|&&m| m == EMPTY).count())
            .finish()
    }
}

/// G x: the R × C block of every row of x `[N, M]` read through `index`, stacked to `[N·R, C]`;
/// entry (n·R + r, c) is x_{n, t(r,c)}, or 0 where t(r, c) is empty. Differentiable: the
/// backward pass is [`scatter_add_columns`].
///
/// Errors for a shape other than `[N, M]` and dtypes other than f32 and f64. Runs on x's device
/// (see the module doc for the route off the CPU).
///
/// ```
/// use bdl_tensor::{GatherIndex, gather_columns};
/// use candle_core::{Device, Tensor};
/// // Sliding windows of width 2 over each row, zero past the end.
/// let index = GatherIndex::from_fn(3, 2, 3, |r, c| Some(r + c).filter(|&m| m < 3)).unwrap();
/// let x = Tensor::new(&[[1f32, 2., 3.], [4., 5., 6.]], &Device::Cpu).unwrap();
/// let windows = gather_columns(&x, &index).unwrap();
/// assert_eq!(
///     windows.to_vec2::<f32>().unwrap(),
///     [[1., 2.], [2., 3.], [3., 0.], [4., 5.], [5., 6.], [6., 0.]]
/// );
/// ```
pub fn gather_columns(x: &Tensor, index: &GatherIndex) -> Result<Tensor> {
    check_input(x, index.source_len, 1, "gather_columns input")?;
    Ok(index.op(Direction::Gather).apply(x)?)
}

/// Gᵀ g: every entry (n·R + r, c) of g `[N·R, C]` added to column t(r, c) of row n of the
/// `[N, M]` output (entries whose t(r, c) is empty are dropped). The adjoint of
/// [`gather_columns`]: ⟨G x, g⟩ = ⟨x, Gᵀ g⟩. Differentiable: the backward pass is
/// [`gather_columns`].
///
/// Errors for a shape other than `[N·R, C]` and dtypes other than f32 and f64. Runs on g's
/// device (see the module doc for the route off the CPU).
///
/// ```
/// use bdl_tensor::{GatherIndex, scatter_add_columns};
/// use candle_core::{Device, Tensor};
/// let index = GatherIndex::from_fn(3, 2, 3, |r, c| Some(r + c).filter(|&m| m < 3)).unwrap();
/// // All-ones windows: each column counts the windows that cover it.
/// let g = Tensor::ones((3, 2), candle_core::DType::F64, &Device::Cpu).unwrap();
/// let counts = scatter_add_columns(&g, &index).unwrap();
/// assert_eq!(counts.to_vec2::<f64>().unwrap(), [[1., 2., 2.]]);
/// ```
pub fn scatter_add_columns(g: &Tensor, index: &GatherIndex) -> Result<Tensor> {
    check_input(g, index.cols, index.rows, "scatter_add_columns input")?;
    Ok(index.op(Direction::ScatterAdd).apply(g)?)
}

/// Checks that `t` is an f32 or f64 matrix with `cols` columns and a multiple of `block_rows`
/// rows.
fn check_input(t: &Tensor, cols: usize, block_rows: usize, context: &str) -> Result<()> {
    if !matches!(t.dtype(), DType::F32 | DType::F64) {
        return Err(Error::UnsupportedDType {
            context: context.to_owned(),
            dtype: t.dtype(),
        });
    }
    match *t.dims() {
        [rows, c] if c == cols => {
            if rows % block_rows == 0 {
                Ok(())
            } else {
                Err(Error::InvalidArgument(format!(
                    "{context}: {rows} rows are not a multiple of the table's {block_rows}"
                )))
            }
        }
        ref dims => Err(Error::ShapeMismatch {
            context: context.to_owned(),
            expected: vec![dims.first().copied().unwrap_or(0), cols],
            actual: dims.to_vec(),
        }),
    }
}
