//! Validation of arguments: dtype, shape, finiteness, labels, variances.
//!
//! Every public entry point of the crate runs its arguments through these checks first, so that
//! bad input becomes a typed [`Error`] naming the argument, never a panic or a silent NaN.

use candle_core::{DType, Tensor};

use crate::{Error, Result};

/// The dtype of `t`, or an error unless it is f32 or f64.
pub(crate) fn float_dtype(t: &Tensor, arg: &str) -> Result<DType> {
    match t.dtype() {
        dtype @ (DType::F32 | DType::F64) => Ok(dtype),
        dtype => Err(Error::DType {
            arg: arg.to_owned(),
            dtype,
            expected: "f32 or f64",
        }),
    }
}

/// A shape error for `t`.
pub(crate) fn shape_error(t: &Tensor, arg: &str, expected: String) -> Error {
    Error::Shape {
        arg: arg.to_owned(),
        expected,
        actual: t.dims().to_vec(),
    }
}

/// The elements of `t`, row-major, in f64; an error names the first NaN or infinity.
pub(crate) fn values(t: &Tensor, arg: &str) -> Result<Vec<f64>> {
    let values: Vec<f64> = t.flatten_all()?.to_dtype(DType::F64)?.to_vec1()?;
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(values),
        Some(index) => Err(Error::NonFinite {
            arg: arg.to_owned(),
            index,
            value: values[index],
        }),
    }
}

/// An error naming `arg` and the first NaN or infinity of `t` (row-major), if it holds one:
/// [`values`]' check without the copy, scanning the elements where they lie.
pub(crate) fn finite(t: &Tensor, arg: &str) -> Result<()> {
    bdl_tensor::check_finite(t, arg).map_err(|e| match e {
        bdl_tensor::Error::NonFinite { index, value, .. } => Error::NonFinite {
            arg: arg.to_owned(),
            index,
            value,
        },
        e => e.into(),
    })
}

/// Network outputs: a finite f32/f64 matrix `[N, K]` with K ≥ 1, and `K = classes` where
/// given. Returns `(N, K)`.
pub(crate) fn outputs(f: &Tensor, arg: &str, classes: Option<usize>) -> Result<(usize, usize)> {
    float_dtype(f, arg)?;
    let expected = || match classes {
        Some(k) => format!("[N, {k}]"),
        None => "[N, K] with K >= 1".to_owned(),
    };
    let (n, k) = f.dims2().map_err(|_| shape_error(f, arg, expected()))?;
    if k == 0 || classes.is_some_and(|c| c != k) {
        return Err(shape_error(f, arg, expected()));
    }
    finite(f, arg)?;
    Ok((n, k))
}

/// Real-valued targets for `N` examples with `K` outputs: `[N, K]`, or `[N]` when `K = 1`;
/// finite, f32 or f64. Returned as `[N, K]` in `dtype`.
pub(crate) fn real_targets(
    y: &Tensor,
    n: usize,
    k: usize,
    dtype: DType,
    arg: &str,
) -> Result<Tensor> {
    float_dtype(y, arg)?;
    let fits = y.dims() == [n, k] || (k == 1 && y.dims() == [n]);
    if !fits {
        let expected = if k == 1 {
            format!("[{n}, 1] or [{n}]")
        } else {
            format!("[{n}, {k}]")
        };
        return Err(shape_error(y, arg, expected));
    }
    finite(y, arg)?;
    Ok(y.reshape((n, k))?.to_dtype(dtype)?)
}

/// Class labels of `N` examples: shape `[N]` or `[N, 1]`, dtype u8, u32 or i64, or f32/f64
/// holding integers; every label in `0..classes`.
pub(crate) fn labels(y: &Tensor, n: usize, classes: usize, arg: &str) -> Result<Vec<u32>> {
    if !(y.dims() == [n] || y.dims() == [n, 1]) {
        return Err(shape_error(y, arg, format!("[{n}] or [{n}, 1]")));
    }
    if !matches!(
        y.dtype(),
        DType::U8 | DType::U32 | DType::I64 | DType::F32 | DType::F64
    ) {
        return Err(Error::DType {
            arg: arg.to_owned(),
            dtype: y.dtype(),
            expected: "u8, u32, i64, or f32/f64 holding integers",
        });
    }
    values(y, arg)?
        .into_iter()
        .enumerate()
        .map(|(row, value)| {
            if value >= 0.0 && value < classes as f64 && value.fract() == 0.0 {
                Ok(value as u32)
            } else {
                Err(Error::InvalidLabel {
                    arg: arg.to_owned(),
                    row,
                    value,
                    classes,
                })
            }
        })
        .collect()
}

/// Checks finite variances: each `>= 0`, or `> 0` when `strict`.
pub(crate) fn variances(values: &[f64], arg: &str, strict: bool) -> Result<()> {
    let bad = |v: f64| if strict { v <= 0.0 } else { v < 0.0 };
    match values.iter().position(|&v| bad(v)) {
        None => Ok(()),
        Some(index) => Err(Error::InvalidVariance {
            arg: arg.to_owned(),
            index,
            value: values[index],
            requirement: if strict { "> 0" } else { ">= 0" },
        }),
    }
}
