//! numpy ⇄ candle. An array comes in as a tensor with one copy into candle's storage (numpy
//! converts first only when the dtype differs); a tensor goes out as an array that owns its
//! numbers, moved from the Rust vector without a copy.

use candle_core::{DType, Device, Tensor, WithDType};
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{AllowTypeChange, Element, IntoPyArray, PyArrayLikeDyn, PyReadonlyArrayDyn};
use pyo3::prelude::*;

use crate::errors::{OrRaise as _, invalid};

fn from_view<T: Element + WithDType>(a: &PyReadonlyArrayDyn<'_, T>) -> PyResult<Tensor> {
    let view = a.as_array();
    let shape = view.shape().to_vec();
    match view.as_slice() {
        Some(values) => Tensor::from_slice(values, shape, &Device::Cpu),
        None => Tensor::from_vec(
            view.iter().copied().collect::<Vec<T>>(),
            shape,
            &Device::Cpu,
        ),
    }
    .or_raise()
}

fn not_numbers(name: &str) -> PyErr {
    invalid(format!("{name}: expected an array of numbers"))
}

/// `x` (any array-like of numbers) as a tensor of `dtype` (f32 or f64), the error naming it.
pub(crate) fn floats(x: &Bound<'_, PyAny>, name: &str, dtype: DType) -> PyResult<Tensor> {
    match dtype {
        DType::F32 => {
            let a: PyArrayLikeDyn<'_, f32, AllowTypeChange> =
                x.extract().map_err(|_| not_numbers(name))?;
            from_view(&a)
        }
        DType::F64 => {
            let a: PyArrayLikeDyn<'_, f64, AllowTypeChange> =
                x.extract().map_err(|_| not_numbers(name))?;
            from_view(&a)
        }
        other => Err(invalid(format!(
            "{name}: dtype {other:?} is not float32 or float64"
        ))),
    }
}

/// The dtype an array of parameters keeps: f64 for a float64 array, f32 otherwise.
pub(crate) fn float_dtype(x: &Bound<'_, PyAny>) -> DType {
    if x.extract::<PyReadonlyArrayDyn<'_, f64>>().is_ok() {
        DType::F64
    } else {
        DType::F32
    }
}

/// Class labels: whole numbers in 0 ..= u32::MAX, flattened to `[N]` u32 (a float 1.5 or a
/// negative label is refused, not rounded).
pub(crate) fn labels(y: &Bound<'_, PyAny>, name: &str) -> PyResult<Tensor> {
    let a: PyArrayLikeDyn<'_, f64, AllowTypeChange> = y.extract().map_err(|_| not_numbers(name))?;
    let values: Vec<u32> = a
        .as_array()
        .iter()
        .map(|&v| {
            if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                Ok(v as u32)
            } else {
                Err(invalid(format!(
                    "{name}: label {v} is not a class index 0, 1, …"
                )))
            }
        })
        .collect::<PyResult<_>>()?;
    let n = values.len();
    Tensor::from_vec(values, n, &Device::Cpu).or_raise()
}

/// Regression targets in `dtype`: `[N]` becomes `[N, 1]`.
pub(crate) fn targets(y: &Bound<'_, PyAny>, name: &str, dtype: DType) -> PyResult<Tensor> {
    let t = floats(y, name, dtype)?;
    if t.rank() == 1 {
        t.unsqueeze(1).or_raise()
    } else {
        Ok(t)
    }
}

fn owned<'py, T: Element + WithDType>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let dims = t.dims().to_vec();
    let values: Vec<T> = t.flatten_all().or_raise()?.to_vec1().or_raise()?;
    let array = ArrayD::from_shape_vec(IxDyn(&dims), values)
        .map_err(|e| invalid(format!("an array of shape {dims:?}: {e}")))?;
    Ok(array.into_pyarray(py).into_any())
}

/// `t` as a numpy array of its own dtype (f32, f64, u32; others as f64).
pub(crate) fn array<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    match t.dtype() {
        DType::F32 => owned::<f32>(py, t),
        DType::U32 => owned::<u32>(py, t),
        DType::F64 => owned::<f64>(py, t),
        _ => owned::<f64>(py, &t.to_dtype(DType::F64).or_raise()?),
    }
}

/// A dtype by its numpy name.
pub(crate) fn dtype_named(name: &str) -> PyResult<DType> {
    match name {
        "float32" => Ok(DType::F32),
        "float64" => Ok(DType::F64),
        other => Err(invalid(format!(
            "dtype: {other:?} is not \"float32\" or \"float64\""
        ))),
    }
}
