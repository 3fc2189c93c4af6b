//! im2col: the patches of a convolution as the rows of a matrix.
//!
//! A convolution of C input maps with O kernels of k × k (stride 1, zero padding p) is an affine
//! map on patches. With the patch at output position (y, x) unfolded in (c, ky, kx) order,
//!
//! a_{(y,x), (c,ky,kx)} = u_{c, y+ky−p, x+kx−p}   (0 where that falls in the padding),
//!
//! the convolution is z = a Wᵀ + b, one row per output position, with W the `[O, C, k, k]`
//! kernel flattened row-major to `[O, C·k·k]` (PyTorch's `Conv2d`, a cross-correlation).
//!
//! The unfolding is a gather through an index table fixed by the geometry: one `index_select`
//! of the input with a zero appended (where the padding points), so it is differentiable by
//! candle's autograd. Its adjoint, col2im, scatter-adds every patch entry back to the input
//! element it came from with the same table (`index_add`).

use candle_core::{Device, Tensor};

use super::step::FeatureMaps;
use crate::{Error, Result};

/// The im2col map of one convolution's geometry: `[N, L]` inputs (L = C·H·W, in the maps'
/// order) to `[N, P·J]` patches, P = H_out·W_out output positions (row-major) of J = C·k·k.
#[derive(Clone, Debug)]
pub(crate) struct Unfold {
    /// At p·J + j, the index of the input element in column j of the patch at position p; L
    /// (one past the input) for the zero padding.
    index: Tensor,
    input_len: usize,
    /// Whether some patch entry lies in the padding (so the input needs its zero appended).
    padded: bool,
    out_height: usize,
    out_width: usize,
    patch_len: usize,
}

impl Unfold {
    /// The unfolding of `input` into k × k patches with zero padding `padding` on every side.
    pub(crate) fn new(input: FeatureMaps, kernel: usize, padding: usize) -> Result<Self> {
        let out_size = |size: usize| {
            (size + 2 * padding)
                .checked_sub(kernel)
                .map(|d| d + 1)
                .filter(|_| kernel > 0)
        };
        let (Some(out_height), Some(out_width)) = (out_size(input.height), out_size(input.width))
        else {
            return Err(Error::InvalidConfig(format!(
                "a {kernel}×{kernel} kernel with padding {padding} does not fit {}×{} maps",
                input.height, input.width
            )));
        };
        let zero = u32::try_from(input.len()).map_err(|_| {
            Error::InvalidConfig(format!(
                "{} input values per example exceed u32 indices",
                input.len()
            ))
        })?;
        // The input coordinate of kernel offset `k` at output coordinate `o`, if inside `size`.
        let source =
            |o: usize, k: usize, size: usize| (o + k).checked_sub(padding).filter(|&i| i < size);
        let patch_len = input.channels * kernel * kernel;
        let mut index = Vec::with_capacity(out_height * out_width * patch_len);
        for y in 0..out_height {
            for x in 0..out_width {
                for c in 0..input.channels {
                    for ky in 0..kernel {
                        for kx in 0..kernel {
                            index.push(
                                match (source(y, ky, input.height), source(x, kx, input.width)) {
                                    // Below `zero`, which fits a u32.
                                    (Some(iy), Some(ix)) => input.index(c, iy, ix) as u32,
                                    _ => zero,
                                },
                            );
                        }
                    }
                }
            }
        }
        let padded = index.contains(&zero);
        let len = index.len();
        Ok(Self {
            index: Tensor::from_vec(index, len, &Device::Cpu)?,
            input_len: input.len(),
            padded,
            out_height,
            out_width,
            patch_len,
        })
    }

    /// The output size (H_out, W_out).
    pub(crate) fn output_size(&self) -> (usize, usize) {
        (self.out_height, self.out_width)
    }

    /// P = H_out·W_out, the number of patches per example.
    pub(crate) fn positions(&self) -> usize {
        self.out_height * self.out_width
    }

    /// J = C·k·k, the length of a patch.
    pub(crate) fn patch_len(&self) -> usize {
        self.patch_len
    }

    /// The patches of every row: `[N, L]` → `[N, P·J]`.
    pub(crate) fn apply(&self, u: &Tensor) -> Result<Tensor> {
        let u = if self.padded {
            let zeros = Tensor::zeros((u.dims()[0], 1), u.dtype(), u.device())?;
            Tensor::cat(&[u, &zeros], 1)?
        } else {
            u.contiguous()?
        };
        Ok(u.index_select(&self.index.to_device(u.device())?, 1)?)
    }

    /// col2im, the adjoint: every patch entry of g added to the input element it came from,
    /// `[N, P·J]` → `[N, L]`.
    pub(crate) fn adjoint(&self, g: &Tensor) -> Result<Tensor> {
        let width = self.input_len + usize::from(self.padded);
        let u = Tensor::zeros((g.dims()[0], width), g.dtype(), g.device())?;
        let u = u.index_add(&self.index.to_device(g.device())?, &g.contiguous()?, 1)?;
        Ok(u.narrow(1, 0, self.input_len)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cnn::step::Order;

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
        let unfold = Unfold::new(maps, 2, 1).unwrap();
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
        let ones = Tensor::ones((1, 36), candle_core::DType::F64, &Device::Cpu).unwrap();
        let counts: Vec<Vec<f64>> = unfold.adjoint(&ones).unwrap().to_vec2().unwrap();
        assert_eq!(counts, [[4., 4., 4., 4.]]);
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
            Unfold::new(maps, 4, 0),
            Err(Error::InvalidConfig(_))
        ));
        assert!(matches!(
            Unfold::new(maps, 0, 0),
            Err(Error::InvalidConfig(_))
        ));
        assert!(Unfold::new(maps, 4, 1).is_ok());
    }
}
