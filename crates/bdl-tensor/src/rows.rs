//! [`select_rows`]: rows of a tensor by index, every gather of rows in the workspace (minibatches,
//! `Dataset::select`, a cache's repeated examples).

use candle_core::{DType, Device, Storage, Tensor, WithDType};

use crate::{Error, Result};

/// The rows `index` of `t` along its first axis, in that order (repeats allowed): `[len, …]`.
///
/// A CPU tensor of f32, f64 or u32 is gathered by copying its rows as slices (a minibatch of a
/// small network: candle's `index_select` cost as much as a tenth of a training step); anything
/// else goes through `index_select`. A strided view is made contiguous first. An index past the
/// last row is an error.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let t = Tensor::new(&[[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]], &Device::Cpu).unwrap();
/// let picked = bdl_tensor::select_rows(&t, &[2, 0]).unwrap();
/// assert_eq!(picked.to_vec2::<f32>().unwrap(), [[5.0, 6.0], [1.0, 2.0]]);
/// ```
pub fn select_rows(t: &Tensor, index: &[usize]) -> Result<Tensor> {
    let Some(&rows) = t.dims().first() else {
        return Err(Error::InvalidArgument(
            "select_rows: a scalar has no rows".to_owned(),
        ));
    };
    if let Some(&i) = index.iter().find(|&&i| i >= rows) {
        return Err(Error::InvalidArgument(format!(
            "select_rows: row {i} of a tensor with {rows}"
        )));
    }
    let t = &t.contiguous()?;
    if crate::host_kernels(t.device()) {
        match t.dtype() {
            DType::F32 => return copied::<f32>(t, index),
            DType::F64 => return copied::<f64>(t, index),
            DType::U32 => return copied::<u32>(t, index),
            _ => {}
        }
    }
    let idx: Vec<u32> = index.iter().map(|&i| i as u32).collect();
    let idx = Tensor::from_vec(idx, index.len(), &Device::Cpu)?.to_device(t.device())?;
    Ok(t.index_select(&idx, 0)?)
}

/// The rows of a contiguous CPU tensor of dtype T, copied slice by slice.
fn copied<T: WithDType>(t: &Tensor, index: &[usize]) -> Result<Tensor> {
    let width = t.dims()[1..].iter().product::<usize>();
    let out = {
        let (storage, layout) = t.storage_and_layout();
        let Storage::Cpu(cpu) = &*storage else {
            unreachable!("the device was checked")
        };
        let (start, end) = layout.contiguous_offsets().expect("made contiguous above");
        let data = &cpu.as_slice::<T>()?[start..end];
        let mut out = Vec::with_capacity(index.len() * width);
        for &i in index {
            out.extend_from_slice(&data[i * width..(i + 1) * width]);
        }
        out
    };
    let mut shape = t.dims().to_vec();
    shape[0] = index.len();
    Ok(Tensor::from_vec(out, shape, t.device())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy is candle's `index_select` for every dtype it covers, a strided view and a rank-1
    /// tensor; a row past the end is an error.
    #[test]
    fn the_copied_rows_are_index_select() {
        let cpu = Device::Cpu;
        let base = Tensor::arange(0u32, 24, &cpu)
            .unwrap()
            .reshape((6, 2, 2))
            .unwrap();
        let index = [5, 0, 3, 3];
        let idx = Tensor::new(&[5u32, 0, 3, 3], &cpu).unwrap();
        for t in [
            base.clone(),
            base.to_dtype(DType::F32).unwrap(),
            base.to_dtype(DType::F64).unwrap(),
            base.to_dtype(DType::I64).unwrap(),
            base.transpose(1, 2).unwrap(),
            base.flatten_all().unwrap(),
        ] {
            let ours = select_rows(&t, &index).unwrap();
            let theirs = t.contiguous().unwrap().index_select(&idx, 0).unwrap();
            assert_eq!(ours.dims(), theirs.dims());
            assert_eq!(
                ours.to_dtype(DType::F64)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f64>()
                    .unwrap(),
                theirs
                    .to_dtype(DType::F64)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f64>()
                    .unwrap(),
            );
        }
        assert!(select_rows(&base, &[6]).is_err());
        assert!(select_rows(&Tensor::new(1.0f32, &cpu).unwrap(), &[0]).is_err());
    }
}
