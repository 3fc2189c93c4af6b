//! Conversion between candle tensors and faer matrices.
//!
//! Network compute runs in candle (f32 by default); curvature, covariances, Cholesky factors and
//! log-determinants run in faer (f64). A contiguous f64 CPU tensor is handed to faer as a
//! zero-copy row-major [`MatRef`] view; anything else is converted once.

use std::ops::{Deref, Range};

use candle_core::{DType, Device, Storage, Tensor};
use faer::{Mat, MatRef};

use crate::{Error, Real, Result};

/// Calls `f` with a faer view of the matrix `t` (rank 2; a rank-1 tensor is a column).
///
/// The view borrows candle's storage without a copy when `t` is a contiguous f64 CPU tensor;
/// otherwise `t` is first converted to one.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// let t = Tensor::new(&[[1.0f64, 2.0], [3.0, 4.0]], &Device::Cpu).unwrap();
/// let trace = bdl_tensor::with_mat_ref(&t, |m| m[(0, 0)] + m[(1, 1)]).unwrap();
/// assert_eq!(trace, 5.0);
/// ```
pub fn with_mat_ref<R>(t: &Tensor, f: impl FnOnce(MatRef<'_, f64>) -> R) -> Result<R> {
    let (rows, cols) = match *t.dims() {
        [r, c] => (r, c),
        [r] => (r, 1),
        _ => {
            return Err(Error::InvalidArgument(format!(
                "with_mat_ref: need a matrix or a vector, got shape {:?}",
                t.dims()
            )));
        }
    };
    let owned;
    let t = if t.dtype() == DType::F64 && t.is_contiguous() {
        t
    } else {
        owned = t.to_dtype(DType::F64)?.contiguous()?;
        &owned
    };
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return Err(Error::InvalidArgument(
            "with_mat_ref: the tensor is not on the CPU".to_owned(),
        ));
    };
    let data = cpu.as_slice::<f64>()?;
    let (start, end) = layout
        .contiguous_offsets()
        .expect("contiguity was established above");
    Ok(f(MatRef::from_row_major_slice(
        &data[start..end],
        rows,
        cols,
    )))
}

/// The elements of a CPU tensor, row-major, as a slice of `T` ([`elements`]): borrowed from
/// candle's storage, or an owned converted copy.
pub struct Elements<'a, T> {
    inner: ElementsInner<'a, T>,
}

enum ElementsInner<'a, T> {
    /// A read guard on the storage and the tensor's range in it.
    Borrowed(Box<dyn Deref<Target = Storage> + 'a>, Range<usize>),
    Owned(Vec<T>),
}

impl<T: Real> Deref for Elements<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.inner {
            ElementsInner::Borrowed(storage, range) => match &***storage {
                Storage::Cpu(cpu) => {
                    &cpu.as_slice::<T>().expect("dtype checked in `elements`")[range.clone()]
                }
                _ => unreachable!("device checked in `elements`"),
            },
            ElementsInner::Owned(v) => v,
        }
    }
}

/// The elements of the CPU tensor `t`, row-major, as a slice of `T`: borrowed from candle's
/// storage without a copy when `t` is contiguous and of dtype `T`, otherwise converted once.
/// A tensor on another device is an error.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// let t = Tensor::new(&[[1.0f32, 2.0], [3.0, 4.0]], &Device::Cpu).unwrap();
/// let same = bdl_tensor::elements::<f32>(&t).unwrap(); // no copy
/// let t_t = t.t().unwrap();
/// let transposed = bdl_tensor::elements::<f64>(&t_t).unwrap(); // converted
/// assert_eq!((&same[..], &transposed[..]), (&[1.0f32, 2.0, 3.0, 4.0][..], &[1.0, 3.0, 2.0, 4.0][..]));
/// ```
pub fn elements<T: Real>(t: &Tensor) -> Result<Elements<'_, T>> {
    if !t.device().is_cpu() {
        return Err(Error::InvalidArgument(
            "elements: the tensor is not on the CPU".to_owned(),
        ));
    }
    if t.dtype() != T::DTYPE || !t.is_contiguous() {
        let owned = t.flatten_all()?.to_dtype(T::DTYPE)?.to_vec1::<T>()?;
        return Ok(Elements {
            inner: ElementsInner::Owned(owned),
        });
    }
    let (storage, layout) = t.storage_and_layout();
    let range = layout
        .contiguous_offsets()
        .map(|(start, end)| start..end)
        .expect("contiguity was checked above");
    Ok(Elements {
        inner: ElementsInner::Borrowed(Box::new(storage), range),
    })
}

/// Copies the matrix `t` into an owned f64 faer matrix.
pub fn to_mat(t: &Tensor) -> Result<Mat<f64>> {
    with_mat_ref(t, |m| m.to_owned())
}

/// All elements of `t` in row-major order, as f64 (any float or integer dtype).
///
/// ```
/// # use candle_core::{Device, Tensor};
/// let t = Tensor::new(&[[1.0f32, 2.0], [3.0, 4.0]], &Device::Cpu).unwrap();
/// assert_eq!(bdl_tensor::to_f64_vec(&t).unwrap(), [1.0, 2.0, 3.0, 4.0]);
/// ```
pub fn to_f64_vec(t: &Tensor) -> Result<Vec<f64>> {
    Ok(t.flatten_all()?.to_dtype(DType::F64)?.to_vec1()?)
}

/// Copies a faer matrix into a candle tensor of shape `[rows, cols]` and dtype `dtype`.
///
/// ```
/// # use candle_core::{DType, Device};
/// let m = faer::Mat::<f64>::from_fn(2, 3, |i, j| (10 * i + j) as f64);
/// let t = bdl_tensor::from_mat(m.as_ref(), DType::F32, &Device::Cpu).unwrap();
/// assert_eq!(t.to_vec2::<f32>().unwrap(), [[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]]);
/// ```
pub fn from_mat(m: MatRef<'_, f64>, dtype: DType, device: &Device) -> Result<Tensor> {
    let (rows, cols) = (m.nrows(), m.ncols());
    let data: Vec<f64> = (0..rows)
        .flat_map(|i| (0..cols).map(move |j| m[(i, j)]))
        .collect();
    Ok(Tensor::from_vec(data, (rows, cols), device)?.to_dtype(dtype)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Seed, normal};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip_is_exact(seed in any::<u64>(), rows in 1usize..20, cols in 1usize..20) {
            let t = normal(&mut Seed(seed).rng(), (rows, cols), 0.0, 1.0, DType::F64, &Device::Cpu).unwrap();
            let m = to_mat(&t).unwrap();
            let back = from_mat(m.as_ref(), DType::F64, &Device::Cpu).unwrap();
            prop_assert_eq!(t.to_vec2::<f64>().unwrap(), back.to_vec2::<f64>().unwrap());
            // A transposed (strided) tensor goes through the copying path and still agrees.
            let mt = to_mat(&t.t().unwrap()).unwrap();
            prop_assert_eq!(mt, m.transpose().to_owned());
        }
    }

    #[test]
    fn contiguous_f64_is_viewed_in_place() {
        let t = Tensor::arange(0.0f64, 12.0, &Device::Cpu)
            .unwrap()
            .reshape((3, 4))
            .unwrap();
        let (ptr, first) = with_mat_ref(&t, |m| (m.as_ptr(), m[(2, 3)])).unwrap();
        let storage_ptr = {
            let (s, _) = t.storage_and_layout();
            match &*s {
                Storage::Cpu(c) => c.as_slice::<f64>().unwrap().as_ptr(),
                _ => unreachable!(),
            }
        };
        assert_eq!(ptr, storage_ptr);
        assert_eq!(first, 11.0);
    }
}
