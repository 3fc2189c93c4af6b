//! 2×2 average pooling of channel-last feature maps.
//!
//! v_{y,x,c} = ¼ Σ_{dy,dx ∈ {0,1}} u_{2y+dy, 2x+dx, c}
//!
//! on ⌊H/2⌋ × ⌊W/2⌋ outputs: an odd last row or column is dropped, as by PyTorch's
//! `AvgPool2d(2)`. The adjoint spreads each output gradient, times ¼, over its 2 × 2 window
//! (and gives the dropped row or column zero).

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor, WithDType};

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

    /// The pooled rows of `u` (`[N, H·W·C]` → `[N, H'·W'·C]`): one pass of the custom op on the
    /// CPU, [`Self::by_window_sums`] on any other device.
    pub(super) fn apply(&self, u: &Tensor) -> Result<Tensor> {
        if bdl_tensor::host_kernels(u.device()) {
            Ok(u.contiguous()?.apply_op1(Pooling(self.clone()))?)
        } else {
            self.by_window_sums(u)
        }
    }

    /// The pooling by candle's operations, which every backend has: the maps cut to
    /// 2⌊H/2⌋ × 2⌊W/2⌋, read as `[N, H', 2, W', 2, C]`, summed over dx, then dy, times ¼
    /// (the same bits as the CPU pass).
    pub(super) fn by_window_sums(&self, u: &Tensor) -> Result<Tensor> {
        let n = u.dims()[0];
        let FeatureMaps {
            height,
            width,
            channels,
            ..
        } = self.input;
        let (h, w) = (height / 2, width / 2);
        Ok(u.reshape((n, height, width, channels))?
            .narrow(1, 0, 2 * h)?
            .narrow(2, 0, 2 * w)?
            .reshape((n, h, 2, w, 2, channels))?
            .sum(4)?
            .sum(2)?
            .affine(0.25, 0.0)?
            .reshape((n, h * w * channels))?)
    }

    /// The pooled maps of contiguous examples `src`, each v = ((u₀₀ + u₀₁) + (u₁₀ + u₁₁)) · ¼ in
    /// that order.
    fn run<T: WithDType>(&self, src: &[T]) -> Vec<T> {
        let FeatureMaps {
            height,
            width,
            channels: c,
            ..
        } = self.input;
        let (h, w) = (height / 2, width / 2);
        let quarter = T::from_f64(0.25);
        let row = width * c;
        let mut dst = Vec::with_capacity(src.len() / (height * row) * h * w * c);
        for example in src.chunks_exact(height * row) {
            for y in 0..h {
                let (top, bottom) = (
                    &example[2 * y * row..(2 * y + 1) * row],
                    &example[(2 * y + 1) * row..(2 * y + 2) * row],
                );
                for x in 0..w {
                    let at = 2 * x * c;
                    for ch in at..at + c {
                        let sum = (top[ch] + top[ch + c]) + (bottom[ch] + bottom[ch + c]);
                        dst.push(sum * quarter);
                    }
                }
            }
        }
        dst
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

/// [`AvgPool2::apply`] as one pass over the maps (candle's sums over the window's two axes
/// are strided reductions, several times slower), its gradient the adjoint.
struct Pooling(AvgPool2);

impl CustomOp1 for Pooling {
    fn name(&self) -> &'static str {
        "avg_pool_2x2"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (out, len) = bdl_tensor::run_on_reals(
            self.name(),
            storage,
            layout,
            |data| self.0.run(data),
            |data| self.0.run(data),
        )?;
        let examples = len / self.0.input.len();
        Ok((out, Shape::from((examples, self.0.output().len()))))
    }

    fn bwd(
        &self,
        _arg: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        self.0
            .adjoint(grad_res)
            .map(Some)
            .map_err(candle_core::Error::wrap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// The pooling pass gives the bits of candle's window sums (over dx, then dy, then ¼, the
    /// route off the CPU), for both dtypes, odd and even maps, several channels, several
    /// examples.
    #[test]
    fn the_pass_equals_candles_window_sums() {
        let mut rng = bdl_tensor::Seed(8).rng();
        for dtype in [candle_core::DType::F32, candle_core::DType::F64] {
            for (height, width, channels) in [(5, 7, 3), (8, 8, 6), (2, 3, 1)] {
                let input = FeatureMaps {
                    channels,
                    height,
                    width,
                    order: Order::ChannelsLast,
                };
                let pool = AvgPool2::new(input).unwrap();
                let n = 4;
                let u =
                    bdl_tensor::normal(&mut rng, (n, input.len()), 0.0, 1.0, dtype, &Device::Cpu)
                        .unwrap();
                let reference = pool.by_window_sums(&u).unwrap();
                let bits = |t: &Tensor| -> Vec<u64> {
                    let v = bdl_tensor::to_f64_vec(&t.flatten_all().unwrap()).unwrap();
                    v.iter().map(|x| x.to_bits()).collect()
                };
                let pooled = pool.apply(&u).unwrap();
                assert_eq!(pooled.dims(), reference.dims());
                assert_eq!(
                    bits(&pooled),
                    bits(&reference),
                    "{dtype:?} {height}×{width}×{channels}"
                );
            }
        }
    }

    /// Autograd through the route off the CPU gives the adjoint the custom op's backward uses.
    #[test]
    fn the_window_sums_gradient_is_the_adjoint() {
        let input = FeatureMaps {
            channels: 2,
            height: 5,
            width: 4,
            order: Order::ChannelsLast,
        };
        let pool = AvgPool2::new(input).unwrap();
        let mut rng = bdl_tensor::Seed(9).rng();
        let mut randn = |shape: (usize, usize)| {
            bdl_tensor::normal(
                &mut rng,
                shape,
                0.0,
                1.0,
                candle_core::DType::F64,
                &Device::Cpu,
            )
            .unwrap()
        };
        let u = candle_core::Var::from_tensor(&randn((3, input.len()))).unwrap();
        let g = randn((3, pool.output().len()));
        let loss = (pool.by_window_sums(&u).unwrap() * &g)
            .unwrap()
            .sum_all()
            .unwrap();
        let grads = loss.backward().unwrap();
        let grad: Vec<Vec<f64>> = grads.get(&u).unwrap().to_vec2().unwrap();
        let adjoint: Vec<Vec<f64>> = pool.adjoint(&g).unwrap().to_vec2().unwrap();
        assert_eq!(grad, adjoint);
    }

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
