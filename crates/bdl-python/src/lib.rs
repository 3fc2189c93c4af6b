//! The Python module `bdl`: every bdl method on numpy arrays.
//!
//! A thin layer over the facade crate: `bdl.Network` wraps `bdl::models::Network`, `bdl.fit`
//! is `bdl::fit` with the method given as a dict in the `MethodSpec` JSON form,
//! `bdl.Posterior` and `bdl.Predictive` wrap the Rust posterior and predictive, and every
//! error is a `bdl.BdlError` (a `ValueError`) whose message is the Rust error with its causes.
//! Arrays come in as one copy into candle's storage and go out as arrays that own the numbers,
//! without a further copy. Long fits release the GIL.
//!
//! ```python
//! import numpy as np, bdl
//! x = np.linspace(-1, 1, 64, dtype=np.float32)[:, None]
//! y = np.sin(3 * x)
//! net = bdl.Network.mlp([1, 32, 1], activation="tanh")
//! lik = {"kind": "gaussian", "sigma": 0.1}
//! map_ = bdl.fit({"method": "map", "config": {"epochs": 300}}, net, x, y, likelihood=lik)
//! la = bdl.fit({"method": "laplace", "config": {}}, net, x, y,
//!              likelihood=map_.likelihood, theta=map_.sample(1)[0])
//! pred = la.predict(np.array([[0.0], [3.0]], dtype=np.float32))
//! assert pred.variance[1, 0] > pred.variance[0, 0]
//! ```
//!
//! Built into a wheel by maturin from `python/pyproject.toml`; tested by `python/tests`.

mod arrays;
mod data;
mod errors;
mod json;
mod network;
mod posterior;

use pyo3::prelude::*;

/// The module: its classes, functions and exception.
#[pymodule]
#[pyo3(name = "bdl")]
fn bdl_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("BdlError", m.py().get_type::<errors::BdlError>())?;
    m.add_class::<network::PyNetwork>()?;
    m.add_class::<posterior::PyPosterior>()?;
    m.add_class::<posterior::PyPredictive>()?;
    m.add_class::<data::PyStandardizer>()?;
    m.add_function(wrap_pyfunction!(posterior::fit, m)?)?;
    m.add_function(wrap_pyfunction!(posterior::load, m)?)?;
    m.add_function(wrap_pyfunction!(data::read_csv, m)?)?;
    m.add_function(wrap_pyfunction!(data::read_safetensors, m)?)?;
    Ok(())
}
