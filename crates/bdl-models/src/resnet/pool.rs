//! The ImageNet stem's 3 × 3 max pooling at stride 2 with padding 1, on channel-last maps.
//!
//! v_{q,c} = max_{k ∈ window(q)} u_{k,c}, one output per position q and channel c. Given the
//! argmax sources s(q, c) of a forward pass it is the linear map v = u\[s\], so the backward
//! pass scatter-adds each output gradient onto its source: ∂ℓ/∂u_i = Σ_{s(q,c) = i} ∂ℓ/∂v_{q,c}.
//! The pool follows a ReLU, so its inputs are ≥ 0 and padding with zeros gives PyTorch's
//! `MaxPool2d(3, 2, 1)` (which pads with −∞): every window holds at least one real input.

use candle_core::{DType, Tensor};

use crate::cnn::step::{FeatureMaps, Order};
use crate::{Error, Result};

/// The side of the pooling window.
const KERNEL: usize = 3;
/// Its stride.
const STRIDE: usize = 2;
/// The padding on every side.
const PADDING: usize = 1;

/// Max pooling of channel-last maps: `[N, H·W·C]` → `[N, H'·W'·C]`.
#[derive(Clone, Debug)]
pub(super) struct MaxPool {
    /// For output (q, c) and window offset k, the input column at `(q·C + c)·9 + k`, or the
    /// input length L for the padding (a zero column appended to the input).
    windows: Vec<u32>,
    input_len: usize,
    output: FeatureMaps,
}

impl MaxPool {
    /// The pooling of channel-last `input` maps.
    pub(super) fn new(input: FeatureMaps) -> Result<Self> {
        debug_assert_eq!(input.order, Order::ChannelsLast);
        let out = |size: usize| {
            (size + 2 * PADDING)
                .checked_sub(KERNEL)
                .map(|d| d / STRIDE + 1)
        };
        let (Some(height), Some(width)) = (out(input.height), out(input.width)) else {
            return Err(Error::InvalidConfig(format!(
                "3×3 max pooling needs maps of at least 1×1, got {}×{}",
                input.height, input.width
            )));
        };
        let output = FeatureMaps {
            height,
            width,
            ..input
        };
        let padding = input.len() as u32;
        let source = |o: usize, k: usize, size: usize| {
            (o * STRIDE + k).checked_sub(PADDING).filter(|&i| i < size)
        };
        let mut windows = Vec::with_capacity(output.len() * KERNEL * KERNEL);
        for q in 0..height * width {
            let (y, x) = (q / width, q % width);
            for c in 0..input.channels {
                for k in 0..KERNEL * KERNEL {
                    let at =
                        source(y, k / KERNEL, input.height).zip(source(x, k % KERNEL, input.width));
                    windows.push(at.map_or(padding, |(iy, ix)| input.index(c, iy, ix) as u32));
                }
            }
        }
        Ok(Self {
            windows,
            input_len: input.len(),
            output,
        })
    }

    /// The pooled maps.
    pub(super) fn output(&self) -> FeatureMaps {
        self.output
    }

    /// The pooled rows of `u` (`[N, L]`) and, per output, the input column of its maximum
    /// (u32, `[N, Q]`), by candle's operations (so that autograd differentiates through it).
    pub(super) fn apply(&self, u: &Tensor) -> Result<(Tensor, Tensor)> {
        let n = u.dims()[0];
        let q = self.output.len();
        let device = u.device();
        let zero = Tensor::zeros((n, 1), u.dtype(), device)?;
        let padded = Tensor::cat(&[u, &zero], 1)?;
        let windows = Tensor::from_slice(&self.windows, self.windows.len(), device)?;
        let patches = padded
            .index_select(&windows, 1)?
            .reshape((n, q, KERNEL * KERNEL))?;
        let pooled = patches.max(2)?;
        let offset = patches.argmax_keepdim(2)?;
        let table = windows
            .reshape((1, q, KERNEL * KERNEL))?
            .broadcast_as((n, q, KERNEL * KERNEL))?
            .contiguous()?;
        let sources = table.gather(&offset, 2)?.squeeze(2)?;
        Ok((pooled, sources))
    }

    /// ∂ℓ/∂u from ∂ℓ/∂v (`g`, `[N, Q]`) and the sources of the forward pass: each gradient
    /// added to the column it was taken from (`[N, L]`).
    pub(super) fn adjoint(&self, g: &Tensor, sources: &Tensor) -> Result<Tensor> {
        let n = g.dims()[0];
        let zeros = Tensor::zeros((n, self.input_len + 1), g.dtype(), g.device())?;
        let sources = sources.to_dtype(DType::U32)?;
        let spread = zeros.scatter_add(&sources, &g.contiguous()?, 1)?;
        Ok(spread.narrow(1, 0, self.input_len)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn takes_each_windows_maximum_and_sends_the_gradient_back_to_it() {
        // One channel of 4 × 4 (channel-last is plain row-major here): outputs 2 × 2, windows
        // over rows and columns {0, 1} and {1, 2, 3} (the strided centres 0 and 2, padding 1).
        let maps = FeatureMaps {
            channels: 1,
            height: 4,
            width: 4,
            order: Order::ChannelsLast,
        };
        let pool = MaxPool::new(maps).unwrap();
        assert_eq!((pool.output().height, pool.output().width), (2, 2));
        let u: Vec<f64> = vec![
            1., 0., 2., 0., //
            0., 0.5, 0., 0., //
            3., 0., 0., 4., //
            0., 0., 7., 0.,
        ];
        let u = Tensor::from_vec(u, (1, 16), &Device::Cpu).unwrap();
        let (v, sources) = pool.apply(&u).unwrap();
        assert_eq!(v.to_vec2::<f64>().unwrap(), [[1., 2., 3., 7.]]);
        assert_eq!(sources.to_vec2::<u32>().unwrap(), [[0, 2, 8, 14]]);
        let g = Tensor::new(&[[1.0f64, 10., 100., 1000.]], &Device::Cpu).unwrap();
        let back: Vec<f64> = pool
            .adjoint(&g, &sources)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let mut expected = vec![0.0; 16];
        expected[0] = 1.0;
        expected[2] = 10.0;
        expected[8] = 100.0;
        expected[14] = 1000.0;
        assert_eq!(back, expected);
    }
}
