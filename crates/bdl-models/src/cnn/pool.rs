//! 2×2 average pooling of channel-last feature maps.
//!
//! v_{y,x,c} = ¼ Σ_{dy,dx ∈ {0,1}} u_{2y+dy, 2x+dx, c}
//!
//! on ⌊H/2⌋ × ⌊W/2⌋ outputs: an odd last row or column is dropped, as by PyTorch's
//! `AvgPool2d(2)`. The adjoint spreads each output gradient, times ¼, over its 2 × 2 window
//! (and gives the dropped row or column zero).

use candle_core::Tensor;

use super::step::{FeatureMaps, Order};
use crate::{Error, Result};

/// 2×2 average pooling with stride 2: `[N, H·W·C]` → `[N, ⌊H/2⌋·⌊W/2⌋·C]`, channel-last.
#[derive(Clone, Debug)]
pub(crate) struct AvgPool2 {
    input: FeatureMaps,
}

impl AvgPool2 {
    /// Pooling of channel-last `input` maps of at least 2 × 2.
    pub(crate) fn new(input: FeatureMaps) -> Result<Self> {
        debug_assert_eq!(input.order, Order::ChannelsLast);
        if input.height < 2 || input.width < 2 {
            return Err(Error::InvalidConfig(format!(
                "2×2 pooling needs maps of at least 2×2, got {}×{}",
                input.height, input.width
            )));
        }
        Ok(Self { input })
    }

    /// The pooled maps.
    pub(crate) fn output(&self) -> FeatureMaps {
        FeatureMaps {
            height: self.input.height / 2,
            width: self.input.width / 2,
            ..self.input
        }
    }

    pub(super) fn apply(&self, u: &Tensor) -> Result<Tensor> {
        let n = u.dims()[0];
        let (h, w, c) = (
            self.input.height / 2,
            self.input.width / 2,
            self.input.channels,
        );
        let maps = u
            .reshape((n, self.input.height, self.input.width, c))?
            .narrow(1, 0, 2 * h)?
            .narrow(2, 0, 2 * w)?
            .reshape((n, h, 2, w, 2, c))?;
        Ok(maps
            .sum(4)?
            .sum(2)?
            .affine(0.25, 0.0)?
            .reshape((n, h * w * c))?)
    }

    pub(super) fn adjoint(&self, g: &Tensor) -> Result<Tensor> {
        let n = g.dims()[0];
        let (h, w, c) = (
            self.input.height / 2,
            self.input.width / 2,
            self.input.channels,
        );
        let spread = g
            .reshape((n, h, 1, w, 1, c))?
            .broadcast_as((n, h, 2, w, 2, c))?
            .affine(0.25, 0.0)?
            .reshape((n, 2 * h, 2 * w, c))?
            .pad_with_zeros(1, 0, self.input.height % 2)?
            .pad_with_zeros(2, 0, self.input.width % 2)?;
        Ok(spread.reshape((n, self.input.len()))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn averages_each_window_and_drops_an_odd_edge() {
        // One channel of 3×3 with u_{y,x} = 3y + x: one 2×2 window {0, 1, 3, 4}, mean 2.
        let pool = AvgPool2::new(FeatureMaps {
            channels: 1,
            height: 3,
            width: 3,
            order: Order::ChannelsLast,
        })
        .unwrap();
        let u = Tensor::arange(0f64, 9., &Device::Cpu)
            .unwrap()
            .reshape((1, 9))
            .unwrap();
        assert_eq!(pool.apply(&u).unwrap().to_vec2::<f64>().unwrap(), [[2.0]]);
        let g = Tensor::new(&[[4f64]], &Device::Cpu).unwrap();
        let back: Vec<Vec<f64>> = pool.adjoint(&g).unwrap().to_vec2().unwrap();
        assert_eq!(back, [[1., 1., 0., 1., 1., 0., 0., 0., 0.]]);
    }
}
