//! Checks that tensors hold finite numbers.

use candle_core::{DType, Tensor};

use crate::{Error, Result};

/// Returns an error naming `context` and the first offending element when `t` holds a NaN or an
/// infinity.
///
/// ```
/// # use candle_core::{Device, Tensor};
/// let t = Tensor::new(&[1.0f32, f32::NAN], &Device::Cpu).unwrap();
/// let err = bdl_tensor::check_finite(&t, "input").unwrap_err();
/// assert!(err.to_string().contains("input"));
/// ```
pub fn check_finite(t: &Tensor, context: &str) -> Result<()> {
    // Fast path: NaN and infinities propagate into the sum. Only when the sum is not finite
    // (which a huge but finite tensor can also cause) are the elements searched one by one.
    if !t.dtype().is_float()
        || t.sum_all()?
            .to_dtype(DType::F64)?
            .to_scalar::<f64>()?
            .is_finite()
    {
        return Ok(());
    }
    let values: Vec<f64> = match t.dtype() {
        DType::F64 => t.flatten_all()?.to_vec1::<f64>()?,
        DType::F32 | DType::F16 | DType::BF16 => {
            t.flatten_all()?.to_dtype(DType::F64)?.to_vec1()?
        }
        _ => return Ok(()),
    };
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(Error::NonFinite {
            context: context.to_owned(),
            index,
            value: values[index],
        }),
    }
}

/// Returns an error unless `t` has exactly the shape `expected`.
pub fn check_shape(t: &Tensor, expected: &[usize], context: &str) -> Result<()> {
    if t.dims() == expected {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            context: context.to_owned(),
            expected: expected.to_vec(),
            actual: t.dims().to_vec(),
        })
    }
}
