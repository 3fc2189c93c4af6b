//! The one minibatch loop of the workspace: paired examples (x, y) cut into seeded minibatches
//! by [`bdl_data::Minibatches`].

use std::ops::ControlFlow;

use bdl_data::Minibatches;
use bdl_tensor::Seed;
use candle_core::Tensor;

use crate::{Error, Result};

/// Training examples and their minibatches: epoch e is the permutation drawn from
/// `seed.fork("minibatches").index(e)`, cut into batches of `batch_size` (the last one
/// shorter; the whole set when `batch_size` ≥ N).
///
/// ```
/// use std::ops::ControlFlow;
/// use bdl_inference::MinibatchLoop;
/// use bdl_tensor::Seed;
/// use candle_core::{Device, Tensor};
/// # fn main() -> Result<(), bdl_inference::Error> {
/// let x = Tensor::arange(0f32, 10.0, &Device::Cpu)?.unsqueeze(1)?;
/// let data = MinibatchLoop::new(&x, &x, 4, Seed(0))?;
/// let mut sizes = Vec::new();
/// data.epoch(0, |xb, _yb| {
///     sizes.push(xb.dims()[0]);
///     Ok(ControlFlow::Continue(()))
/// })?;
/// assert_eq!(sizes, [4, 4, 2]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct MinibatchLoop {
    x: Tensor,
    y: Tensor,
    batches: Minibatches,
    seed: Seed,
}

impl MinibatchLoop {
    /// The examples (x, y), which must pair up row by row and not be empty.
    pub fn new(x: &Tensor, y: &Tensor, batch_size: usize, seed: Seed) -> Result<Self> {
        let n = paired_rows(x, y)?;
        if n == 0 {
            return Err(Error::NoData);
        }
        Ok(Self {
            x: x.clone(),
            y: y.clone(),
            batches: Minibatches::new(n, batch_size.min(n))?,
            seed: seed.fork("minibatches"),
        })
    }

    /// N, the number of examples.
    pub fn len(&self) -> usize {
        self.x.dims()[0]
    }

    /// Whether there are no examples (never: [`new`](Self::new) refuses them).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The minibatches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.batches.num_batches()
    }

    /// All the inputs.
    pub fn x(&self) -> &Tensor {
        &self.x
    }

    /// All the targets.
    pub fn y(&self) -> &Tensor {
        &self.y
    }

    /// Calls `step(x_b, y_b)` on each minibatch of epoch `epoch` in order, until it breaks.
    pub fn epoch(
        &self,
        epoch: usize,
        mut step: impl FnMut(&Tensor, &Tensor) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        for batch in self.batches.epoch(self.seed.index(epoch as u64)).iter() {
            let (xb, yb) = (rows(&self.x, batch)?, rows(&self.y, batch)?);
            if step(&xb, &yb)?.is_break() {
                break;
            }
        }
        Ok(())
    }
}

/// The number of examples shared by `x` and `y` (each of rank ≥ 1).
pub fn paired_rows(x: &Tensor, y: &Tensor) -> Result<usize> {
    let x_rows = x.dims().first().copied().unwrap_or(0);
    let y_rows = y.dims().first().copied().unwrap_or(0);
    if x_rows != y_rows || x.rank() == 0 || y.rank() == 0 {
        return Err(Error::RowMismatch { x_rows, y_rows });
    }
    Ok(x_rows)
}

/// The number of rows of `t` (its first dimension), or a typed error for a scalar.
pub fn n_rows(t: &Tensor, what: &str) -> Result<usize> {
    t.dims().first().copied().ok_or_else(|| {
        bdl_tensor::Error::ShapeMismatch {
            context: format!("{what}: need one row per example"),
            expected: vec![1],
            actual: vec![],
        }
        .into()
    })
}

/// The rows `index` of `t` (along the first axis).
pub fn rows(t: &Tensor, index: &[usize]) -> Result<Tensor> {
    Ok(bdl_tensor::select_rows(t, index)?)
}
