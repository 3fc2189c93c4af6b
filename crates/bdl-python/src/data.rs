//! Files and features: the CSV reader and the standardisation of the command line, and
//! safetensors files as dicts of arrays.

use std::path::PathBuf;

use bdl::data::Standardizer;
use candle_core::{DType, Device};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{array, floats};
use crate::errors::{OrRaise as _, invalid};

/// A CSV file with a header as (x `[N, d]` f32, y, feature names): y is `[N, 1]` f32 for
/// `task="regression"`, class indices `[N]` u32 for `"classification"` (classes numbered in
/// order of first appearance when the column is not numeric). Bad cells are a `BdlError`
/// naming the file, row and column.
#[pyfunction]
#[pyo3(signature = (path, target, task = "regression"))]
pub(crate) fn read_csv<'py>(
    py: Python<'py>,
    path: PathBuf,
    target: &str,
    task: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Vec<String>)> {
    let data = match task {
        "regression" => bdl::data::csv::read_regression(&path, target),
        "classification" => bdl::data::csv::read_classification(&path, target),
        other => {
            return Err(invalid(format!(
                "task: {other:?} is not \"regression\" or \"classification\""
            )));
        }
    }
    .or_raise()?;
    Ok((
        array(py, data.x())?,
        array(py, data.y())?,
        data.feature_names().to_vec(),
    ))
}

/// Every tensor of a safetensors file (a PyTorch `state_dict`, a fixture), by name.
#[pyfunction]
pub(crate) fn read_safetensors<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let tensors = bdl::tensor::load_safetensors(&path, &Device::Cpu).or_raise()?;
    let out = PyDict::new(py);
    let mut names: Vec<&String> = tensors.keys().collect();
    names.sort();
    for name in names {
        out.set_item(name, array(py, &tensors[name])?)?;
    }
    Ok(out)
}

/// Per-feature standardisation (x − mean) / std, fitted on training rows (a constant feature
/// keeps std 1), as the command line applies it.
#[pyclass(name = "Standardizer", module = "bdl", frozen)]
pub(crate) struct PyStandardizer {
    inner: Standardizer,
}

#[pymethods]
impl PyStandardizer {
    /// The statistics of the rows of `x`.
    #[new]
    fn new(x: &Bound<'_, PyAny>) -> PyResult<Self> {
        let x = floats(x, "x", DType::F32)?;
        Ok(Self {
            inner: Standardizer::fit(&x).or_raise()?,
        })
    }

    /// (x − mean) / std, f32.
    fn transform<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let x = floats(x, "x", DType::F32)?;
        array(py, &self.inner.transform(&x).or_raise()?)
    }

    /// The feature means.
    #[getter]
    fn mean(&self) -> Vec<f64> {
        self.inner.mean().to_vec()
    }

    /// The feature standard deviations.
    #[getter]
    fn std(&self) -> Vec<f64> {
        self.inner.std().to_vec()
    }
}
