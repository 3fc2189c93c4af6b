//! The fixed linear maps between a CNN's parametrised layers, and the feature maps they act on.
//!
//! Between two affine layers a CNN applies maps without parameters: 2×2 average pooling, the
//! unfolding of a convolution's patches (im2col), and the flattening of feature maps for a dense
//! layer. Each is a linear map T on the per-example vector, so the backward pass applies its
//! adjoint: ∂ℓ/∂u = Tᵀ ∂ℓ/∂(Tu).

use candle_core::Tensor;

use super::im2col::Unfold;
use super::pool::AvgPool2;
use crate::Result;

/// The order in which one example's feature maps are stored in its flat vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// (c, y, x): PyTorch's NCHW, the network input.
    ChannelsFirst,
    /// (y, x, c): a convolution's output, one row of channels per position.
    ChannelsLast,
}

/// C feature maps of H × W, stored per example as one flat vector in the given order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FeatureMaps {
    pub(crate) channels: usize,
    pub(crate) height: usize,
    pub(crate) width: usize,
    pub(crate) order: Order,
}

impl FeatureMaps {
    /// C·H·W, the length of one example's vector.
    pub(crate) fn len(self) -> usize {
        self.channels * self.height * self.width
    }

    /// The position of channel `c` at row `y`, column `x` in one example's vector.
    pub(crate) fn index(self, c: usize, y: usize, x: usize) -> usize {
        match self.order {
            Order::ChannelsFirst => (c * self.height + y) * self.width + x,
            Order::ChannelsLast => (y * self.width + x) * self.channels + c,
        }
    }
}

/// One fixed linear map T, applied to every row (example) of a `[N, in]` matrix.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// 2×2 average pooling of channel-last maps.
    Pool(AvgPool2),
    /// The patches of a convolution (im2col).
    Unfold(Unfold),
    /// Channel-last maps to PyTorch's `nn.Flatten` order.
    Flatten(Flatten),
}

impl Step {
    /// Tu for every row u: `[N, in]` → `[N, out]`.
    pub(crate) fn apply(&self, u: &Tensor) -> Result<Tensor> {
        match self {
            Self::Pool(p) => p.apply(u),
            Self::Unfold(f) => f.apply(u),
            Self::Flatten(f) => f.apply(u),
        }
    }

    /// Tᵀg for every row g: `[N, out]` → `[N, in]`.
    pub(crate) fn adjoint(&self, g: &Tensor) -> Result<Tensor> {
        match self {
            Self::Pool(p) => p.adjoint(g),
            Self::Unfold(f) => f.adjoint(g),
            Self::Flatten(f) => f.adjoint(g),
        }
    }
}

/// Reorders channel-last maps (y, x, c) channel-first (c, y, x), the order in which PyTorch's
/// `nn.Flatten` lays out NCHW maps for the dense layer that follows.
#[derive(Clone, Debug)]
pub(crate) struct Flatten {
    positions: usize,
    channels: usize,
}

impl Flatten {
    /// The flattening of channel-last `maps`.
    pub(crate) fn new(maps: FeatureMaps) -> Self {
        debug_assert_eq!(maps.order, Order::ChannelsLast);
        Self {
            positions: maps.height * maps.width,
            channels: maps.channels,
        }
    }

    fn apply(&self, u: &Tensor) -> Result<Tensor> {
        let n = u.dims()[0];
        let maps = u
            .reshape((n, self.positions, self.channels))?
            .transpose(1, 2)?;
        Ok(maps.reshape((n, self.channels * self.positions))?)
    }

    fn adjoint(&self, g: &Tensor) -> Result<Tensor> {
        let n = g.dims()[0];
        let rows = g
            .reshape((n, self.channels, self.positions))?
            .transpose(1, 2)?;
        Ok(rows.reshape((n, self.positions * self.channels))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_tensor::Seed;
    use candle_core::{DType, Device};
    use proptest::prelude::*;

    fn randn(seed: Seed, shape: (usize, usize)) -> Tensor {
        bdl_tensor::normal(&mut seed.rng(), shape, 0.0, 1.0, DType::F64, &Device::Cpu).unwrap()
    }

    fn dot(a: &Tensor, b: &Tensor) -> f64 {
        (a * b).unwrap().sum_all().unwrap().to_scalar().unwrap()
    }

    fn maps(channels: usize, height: usize, width: usize, order: Order) -> FeatureMaps {
        FeatureMaps {
            channels,
            height,
            width,
            order,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// ⟨Tu, g⟩ = ⟨u, Tᵀg⟩ for every step: the backward pass is the transpose of the forward.
        #[test]
        fn adjoint_is_the_transpose(
            channels in 1usize..4, height in 2usize..8, width in 2usize..8,
            kernel in 1usize..4, padding in 0usize..3, stride in 1usize..3, channels_last: bool,
            seed in any::<u64>(),
        ) {
            let seed = Seed(seed);
            let order = if channels_last { Order::ChannelsLast } else { Order::ChannelsFirst };
            let input = maps(channels, height, width, order);
            let last = maps(channels, height, width, Order::ChannelsLast);
            let mut steps = vec![
                (input.len(), Step::Pool(AvgPool2::new(last).unwrap())),
                (input.len(), Step::Flatten(Flatten::new(last))),
            ];
            if let Ok(unfold) = Unfold::new(input, kernel, padding, stride) {
                steps.push((input.len(), Step::Unfold(unfold)));
            }
            for (i, (len, step)) in steps.iter().enumerate() {
                let u = randn(seed.fork("u").index(i as u64), (3, *len));
                let tu = step.apply(&u).unwrap();
                let g = randn(seed.fork("g").index(i as u64), (3, tu.dims()[1]));
                let t_g = step.adjoint(&g).unwrap();
                prop_assert_eq!(t_g.dims(), u.dims());
                let (lhs, rhs) = (dot(&tu, &g), dot(&u, &t_g));
                // Two sums of at most a few hundred products of O(1) terms: rounding ~1e-14.
                prop_assert!((lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()), "{:?}: {} vs {}", step, lhs, rhs);
            }
        }
    }

    #[test]
    fn flatten_reorders_channels_first() {
        // Two positions × three channels, rows (p, c) = 10p + c, read back as (c, p).
        let u = Tensor::new(&[[0f64, 1., 2., 10., 11., 12.]], &Device::Cpu).unwrap();
        let f = Flatten::new(maps(3, 1, 2, Order::ChannelsLast));
        let v: Vec<Vec<f64>> = f.apply(&u).unwrap().to_vec2().unwrap();
        assert_eq!(v, [[0., 10., 1., 11., 2., 12.]]);
    }
}
