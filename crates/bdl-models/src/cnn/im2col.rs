//! im2col: the patches of a convolution as the rows of a matrix.
//!
//! A convolution of C input maps with O kernels of k × k (stride s, zero padding p) is an affine
//! map on patches. With the patch at output position (y, x) unfolded in (c, ky, kx) order,
//!
//! a_{(y,x), (c,ky,kx)} = u_{c, s·y+ky−p, s·x+kx−p}   (0 where that falls in the padding),
//!
//! the convolution is z = a Wᵀ + b, one row per output position, with W the `[O, C, k, k]`
//! kernel flattened row-major to `[O, C·k·k]` (PyTorch's `Conv2d`, a cross-correlation).
//!
//! The unfolding is a gather through a table fixed by the geometry ([`GatherIndex`], padding as
//! empty entries), a differentiable op of bdl-tensor ([`gather_columns`]); its adjoint, col2im,
//! scatter-adds every patch entry back to the input element it came from
//! ([`scatter_add_columns`]).

use bdl_tensor::{GatherIndex, gather_columns, scatter_add_columns};
use candle_core::Tensor;

use super::step::FeatureMaps;
use crate::{Error, Result};

/// The im2col map of one convolution's geometry: `[N, L]` inputs (L = C·H·W, in the maps'
/// order) to `[N, P·J]` patches, P = H_out·W_out output positions (row-major) of J = C·k·k.
#[derive(Clone, Debug)]
pub(crate) struct Unfold {
    /// At (p, j), the input element in column j of the patch at position p; empty in the
    /// padding.
    index: GatherIndex,
    out_width: usize,
}

impl Unfold {
    /// The unfolding of `input` into k × k patches with zero padding `padding` on every side,
    /// one patch every `stride` rows and columns: H_out = ⌊(H + 2p − k)/s⌋ + 1.
    pub(crate) fn new(
        input: FeatureMaps,
        kernel: usize,
        padding: usize,
        stride: usize,
    ) -> Result<Self> {
        let out_size = |size: usize| {
            (size + 2 * padding)
                .checked_sub(kernel)
                .map(|d| d / stride.max(1) + 1)
                .filter(|_| kernel > 0 && stride > 0)
        };
        let (Some(out_height), Some(out_width)) = (out_size(input.height), out_size(input.width))
        else {
            return Err(Error::InvalidConfig(format!(
                "a {kernel}×{kernel} kernel with padding {padding} and stride {stride} does not \
                 fit {}×{} maps",
                input.height, input.width
            )));
        };
        // The input coordinate of kernel offset `k` at output coordinate `o`, if inside `size`.
        let source = |o: usize, k: usize, size: usize| {
            (o * stride + k).checked_sub(padding).filter(|&i| i < size)
        };
        let positions = out_height * out_width;
        let index = GatherIndex::from_fn(
            positions,
            input.channels * kernel * kernel,
            input.len(),
            |p, j| {
                let (y, x) = (p / out_width, p % out_width);
                let (c, ky, kx) = (j / (kernel * kernel), j / kernel % kernel, j % kernel);
                let iy = source(y, ky, input.height)?;
                let ix = source(x, kx, input.width)?;
                Some(input.index(c, iy, ix))
            },
        )
        .map_err(|e| Error::InvalidConfig(format!("the patch table: {e}")))?;
        Ok(Self { index, out_width })
    }

    /// The output size (H_out, W_out).
    pub(crate) fn output_size(&self) -> (usize, usize) {
        (self.positions() / self.out_width, self.out_width)
    }

    /// P = H_out·W_out, the number of patches per example.
    pub(crate) fn positions(&self) -> usize {
        self.index.rows()
    }

    /// J = C·k·k, the length of a patch.
    pub(crate) fn patch_len(&self) -> usize {
        self.index.cols()
    }

    /// The patches of every row: `[N, L]` → `[N, P·J]`.
    pub(crate) fn apply(&self, u: &Tensor) -> Result<Tensor> {
        let n = u.dims()[0];
        let patches = gather_columns(u, &self.index)?;
        Ok(patches.reshape((n, self.positions() * self.patch_len()))?)
    }

    /// col2im, the adjoint: every patch entry of g added to the input element it came from,
    /// `[N, P·J]` → `[N, L]`.
    pub(crate) fn adjoint(&self, g: &Tensor) -> Result<Tensor> {
        let n = g.dims()[0];
        let rows = g.reshape((n * self.positions(), self.patch_len()))?;
        Ok(scatter_add_columns(&rows, &self.index)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cnn::step::Order;
    use candle_core::{DType, Device};

    #[test]
    fn patches_are_in_channel_row_column_order_with_zero_padding() {
        // One 2×2 map [[1, 2], [3, 4]], 2×2 kernel, padding 1: a 3×3 output whose first patch
        // covers the corner (0, 0, 0, 1) and whose centre patch is the whole map.
        let maps = FeatureMaps {
            channels: 1,
            height: 2,
            width: 2,
            order: Order::ChannelsFirst,
        };
        let unfold = Unfold::new(maps, 2, 1, 1).unwrap();
        assert_eq!(
            (unfold.output_size(), unfold.positions(), unfold.patch_len()),
            ((3, 3), 9, 4)
        );
        let u = Tensor::new(&[[1f64, 2., 3., 4.]], &Device::Cpu).unwrap();
        let patches = unfold.apply(&u).unwrap().reshape((9, 4)).unwrap();
        let patches: Vec<Vec<f64>> = patches.to_vec2().unwrap();
        assert_eq!(patches[0], [0., 0., 0., 1.]);
        assert_eq!(patches[4], [1., 2., 3., 4.]);
        assert_eq!(patches[8], [4., 0., 0., 0.]);
        // col2im of all-ones patches counts how many patches cover each input: all four.
        let ones = Tensor::ones((1, 36), DType::F64, &Device::Cpu).unwrap();
        let counts: Vec<Vec<f64>> = unfold.adjoint(&ones).unwrap().to_vec2().unwrap();
        assert_eq!(counts, [[4., 4., 4., 4.]]);
    }

    #[test]
    fn a_stride_of_two_takes_every_other_patch() {
        // A 4×4 map numbered 0..16 row-major, 3×3 kernel, padding 1, stride 2: a 2×2 output
        // (⌊(4 + 2 − 3)/2⌋ + 1) whose patches are centred on (0, 0), (0, 2), (2, 0), (2, 2).
        let maps = FeatureMaps {
            channels: 1,
            height: 4,
            width: 4,
            order: Order::ChannelsFirst,
        };
        let unfold = Unfold::new(maps, 3, 1, 2).unwrap();
        assert_eq!((unfold.output_size(), unfold.patch_len()), ((2, 2), 9));
        let u = Tensor::arange(0f64, 16., &Device::Cpu)
            .unwrap()
            .reshape((1, 16))
            .unwrap();
        let patches: Vec<Vec<f64>> = unfold
            .apply(&u)
            .unwrap()
            .reshape((4, 9))
            .unwrap()
            .to_vec2()
            .unwrap();
        assert_eq!(patches[0], [0., 0., 0., 0., 0., 1., 0., 4., 5.]);
        assert_eq!(patches[3], [5., 6., 7., 9., 10., 11., 13., 14., 15.]);
        // A 1×1 kernel at stride 2 without padding (a ResNet shortcut) picks the even corners.
        let picks: Vec<f64> = Unfold::new(maps, 1, 0, 2)
            .unwrap()
            .apply(&u)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        assert_eq!(picks, [0., 2., 8., 10.]);
    }

    #[test]
    fn a_kernel_larger_than_the_map_is_a_config_error() {
        let maps = FeatureMaps {
            channels: 1,
            height: 3,
            width: 5,
            order: Order::ChannelsLast,
        };
        assert!(matches!(
            Unfold::new(maps, 4, 0, 1),
            Err(Error::InvalidConfig(_))
        ));
        assert!(matches!(
            Unfold::new(maps, 0, 0, 1),
            Err(Error::InvalidConfig(_))
        ));
        assert!(matches!(
            Unfold::new(maps, 1, 0, 0),
            Err(Error::InvalidConfig(_))
        ));
        assert!(Unfold::new(maps, 4, 1, 1).is_ok());
    }
}
