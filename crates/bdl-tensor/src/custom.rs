//! The CPU side shared by the workspace's candle custom ops: a slice kernel run on contiguous f32
//! or f64 storage.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, Layout};

/// Runs the kernel of the input's dtype on the contiguous input (`storage` under `layout`) and
/// returns the output storage with the input's length. Errors (named by the op's `name`) for a
/// non-contiguous input or a dtype other than f32 and f64.
pub fn run_on_reals(
    name: &'static str,
    storage: &CpuStorage,
    layout: &Layout,
    f32s: impl FnOnce(&[f32]) -> Vec<f32>,
    f64s: impl FnOnce(&[f64]) -> Vec<f64>,
) -> candle_core::Result<(CpuStorage, usize)> {
    let Some((start, end)) = layout.contiguous_offsets() else {
        candle_core::bail!("{name}: the input is not contiguous");
    };
    let out = match storage {
        CpuStorage::F32(data) => CpuStorage::F32(f32s(&data[start..end])),
        CpuStorage::F64(data) => CpuStorage::F64(f64s(&data[start..end])),
        other => {
            return Err(candle_core::Error::UnsupportedDTypeForOp(
                other.dtype(),
                name,
            ));
        }
    };
    Ok((out, end - start))
}
