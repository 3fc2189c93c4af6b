//! The gather and scatter-add as one candle custom op in two directions, each the other's
//! backward, on the CPU; on any other device, candle's `index_select` and `index_add`.

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::{EMPTY, GatherIndex};

/// Below this many output elements the examples run on one thread (a parallel loop's start-up
/// costs more than it saves).
const PARALLEL_MIN_LEN: usize = 1 << 15;

/// Which of the two adjoint maps of a [`GatherIndex`].
#[derive(Clone, Copy)]
pub(super) enum Direction {
    /// G: `[N, M]` → `[N·R, C]`.
    Gather,
    /// Gᵀ: `[N·R, C]` → `[N, M]`.
    ScatterAdd,
}

impl Direction {
    /// The direction of the adjoint map.
    fn adjoint(self) -> Self {
        match self {
            Self::Gather => Self::ScatterAdd,
            Self::ScatterAdd => Self::Gather,
        }
    }
}

/// G or Gᵀ over one table, applied to each example's block independently.
pub(super) struct ColumnOp {
    pub(super) index: GatherIndex,
    pub(super) direction: Direction,
}

impl ColumnOp {
    /// Applies the op to a matrix of the right shape (checked by the caller): the custom op on
    /// the CPU (copying the input first if it is not contiguous), [`Self::by_index_ops`] on any
    /// other device.
    pub(super) fn apply(self, t: &Tensor) -> candle_core::Result<Tensor> {
        if crate::host_kernels(t.device()) {
            t.contiguous()?.apply_op1(self)
        } else {
            self.by_index_ops(t)
        }
    }

    /// The op by candle's own operations, which every backend has and autograd differentiates
    /// (`index_select`'s backward is `index_add`, and the reverse): the table, with each empty
    /// entry pointing at a zero column appended to the source, copied to `t`'s device, then
    ///
    /// - G x = \[x | 0\] selected at the table's columns, `[N, R·C]` read as `[N·R, C]`;
    /// - Gᵀ g = 0 `[N, M + 1]` plus each example's `[R·C]` entries added at the table's
    ///   columns, the zero column dropped.
    ///
    /// The same numbers as the CPU kernel, but a pass through device memory per call and the
    /// table uploaded each time.
    pub(super) fn by_index_ops(&self, t: &Tensor) -> candle_core::Result<Tensor> {
        let GatherIndex {
            rows,
            cols,
            source_len,
            ..
        } = self.index;
        let padding = u32::try_from(source_len).map_err(candle_core::Error::wrap)?;
        let table: Vec<u32> = (self.index.table.iter())
            .map(|&m| if m == EMPTY { padding } else { m })
            .collect();
        let table = Tensor::from_vec(table, rows * cols, t.device())?;
        match self.direction {
            Direction::Gather => {
                let n = t.dim(0)?;
                let zero = Tensor::zeros((n, 1), t.dtype(), t.device())?;
                Tensor::cat(&[t, &zero], 1)?
                    .index_select(&table, 1)?
                    .reshape((n * rows, cols))
            }
            Direction::ScatterAdd => {
                let n = t.dim(0)? / rows;
                let entries = t.reshape((n, rows * cols))?;
                Tensor::zeros((n, source_len + 1), t.dtype(), t.device())?
                    .index_add(&table, &entries, 1)?
                    .narrow(1, 0, source_len)
            }
        }
    }

    /// The lengths of one example's input and output blocks (both positive: the table and the
    /// source are not empty).
    fn block_lens(&self) -> (usize, usize) {
        let (table, source) = (self.index.table.len(), self.index.source_len);
        match self.direction {
            Direction::Gather => (source, table),
            Direction::ScatterAdd => (table, source),
        }
    }

    /// The output for the contiguous input `src` of whole examples: one block per example.
    fn run<T: WithDType>(&self, src: &[T]) -> Vec<T> {
        let (in_len, out_len) = self.block_lens();
        let mut dst = vec![T::zero(); src.len() / in_len * out_len];
        let table = &self.index.table[..];
        let block = |(dst, src): (&mut [T], &[T])| match self.direction {
            Direction::Gather => gather_block(table, src, dst),
            Direction::ScatterAdd => scatter_add_block(table, src, dst),
        };
        if dst.len() >= PARALLEL_MIN_LEN && crate::current_threads() > 1 {
            dst.par_chunks_mut(out_len)
                .zip(src.par_chunks(in_len))
                .for_each(block);
        } else {
            dst.chunks_mut(out_len)
                .zip(src.chunks(in_len))
                .for_each(block);
        }
        dst
    }
}

/// One example of G: `dst[k] = src[table[k]]`, 0 for an empty entry (the only entries past the
/// end of `src`).
fn gather_block<T: WithDType>(table: &[u32], src: &[T], dst: &mut [T]) {
    for (d, &m) in dst.iter_mut().zip(table) {
        *d = src.get(m as usize).copied().unwrap_or(T::zero());
    }
}

/// One example of Gᵀ: `dst[table[k]] += src[k]`, empty entries dropped.
fn scatter_add_block<T: WithDType>(table: &[u32], src: &[T], dst: &mut [T]) {
    for (&s, &m) in src.iter().zip(table) {
        if let Some(d) = dst.get_mut(m as usize) {
            *d += s;
        }
    }
}

impl CustomOp1 for ColumnOp {
    fn name(&self) -> &'static str {
        match self.direction {
            Direction::Gather => "gather_columns",
            Direction::ScatterAdd => "scatter_add_columns",
        }
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (out, len) = crate::run_on_reals(
            self.name(),
            storage,
            layout,
            |data| self.run(data),
            |data| self.run(data),
        )?;
        let examples = len / self.block_lens().0;
        let (rows, cols, source) = (self.index.rows, self.index.cols, self.index.source_len);
        let shape = match self.direction {
            Direction::Gather => Shape::from((examples * rows, cols)),
            Direction::ScatterAdd => Shape::from((examples, source)),
        };
        Ok((out, shape))
    }

    /// Both directions are linear, so the gradient of the argument is the adjoint applied to
    /// the gradient of the result.
    fn bwd(
        &self,
        _arg: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        let adjoint = self.index.op(self.direction.adjoint());
        adjoint.apply(grad_res).map(Some)
    }
}
