//! Checks that tensors hold finite numbers.

use candle_core::{DType, Tensor};

use crate::{Error, Real, Result, vectorized};

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
    // f32 and f64 on the CPU: one vectorised pass over the elements where they lie.
    let first_non_finite = match (crate::host_kernels(t.device()), t.dtype()) {
        (true, DType::F32) => Some(first_non_finite::<f32>(&crate::elements(t)?)),
        (true, DType::F64) => Some(first_non_finite::<f64>(&crate::elements(t)?)),
        _ => None,
    };
    if let Some(found) = first_non_finite {
        return match found {
            None => Ok(()),
            Some((index, value)) => Err(Error::NonFinite {
                context: context.to_owned(),
                index,
                value,
            }),
        };
    }
    // Elsewhere: NaN and infinities propagate into the sum. Only when the sum is not finite
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

/// Whether every value is finite, in one vectorised pass without an early exit: for hot loops
/// over parameters, where the values are finite but for a divergence and the caller only needs
/// to know whether to stop ([`check_finite`] names the offending element).
///
/// ```
/// assert!(bdl_tensor::all_finite(&[1.0, -2.0, 0.0]));
/// assert!(!bdl_tensor::all_finite(&[1.0, f64::INFINITY]));
/// ```
pub fn all_finite(values: &[f64]) -> bool {
    vectorized(
        #[inline(always)]
        || values.iter().fold(true, |all, v| all & v.is_finite()),
    )
}

/// The index and value of the first element that is NaN or infinite: the whole slice is scanned
/// in blocks of 64, eight lanes abreast, without branching (0·x is ±0 for a finite x and NaN otherwise, and NaN
/// propagates through the sum), and only a block whose sum is not 0 is searched.
fn first_non_finite<T: Real>(values: &[T]) -> Option<(usize, f64)> {
    let zero = T::from_f64(0.0);
    let suspect = vectorized(
        #[inline(always)]
        || {
            values.chunks(64).position(|block| {
                let (lanes, rest) = block.as_chunks::<8>();
                let mut acc = [zero; 8];
                for lane in lanes {
                    for (acc, &x) in acc.iter_mut().zip(lane) {
                        *acc += x * zero;
                    }
                }
                let tail = rest.iter().fold(zero, |acc, &x| acc + x * zero);
                acc.iter().fold(tail, |sum, &x| sum + x) != zero
            })
        },
    )?;
    let start = suspect * 64;
    values[start..]
        .iter()
        .position(|x| !x.to_f64().is_finite())
        .map(|i| (start + i, values[start + i].to_f64()))
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
