//! `bdl.fit`, `bdl.load`, `bdl.Posterior` and `bdl.Predictive`: one fit call for every method,
//! and what a posterior does once fitted.

use std::path::PathBuf;

use bdl::eval::metrics;
use bdl::inference::{Link, PredictOptions};
use bdl::likelihoods::Predictive;
use bdl::methods::Diagnostics;
use bdl::models::Model as _;
use bdl::prelude::{Likelihood, MethodSpec, Posterior, Problem};
use bdl::tensor::Seed;
use candle_core::{DType, Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::arrays::{array, dtype_named, float_dtype, floats, labels, targets};
use crate::errors::{OrRaise as _, invalid};
use crate::json::{parse, to_python};
use crate::network::PyNetwork;

/// The likelihood argument: its dict (`{"kind": "gaussian", "sigma": 0.5}`) or a name,
/// "gaussian" (σ = 1, which a MAP with `learn_sigma` then learns), "bernoulli" or "categorical"
/// (as many classes as the network has outputs).
fn likelihood(value: &Bound<'_, PyAny>, network: &PyNetwork) -> PyResult<Likelihood> {
    if !value.is_instance_of::<PyString>() {
        return parse(value, "likelihood");
    }
    match value.extract::<String>()?.as_str() {
        "gaussian" => Ok(Likelihood::Gaussian { sigma: 1.0 }),
        "bernoulli" => Ok(Likelihood::Bernoulli),
        "categorical" => Ok(Likelihood::Categorical {
            classes: network.inner.n_outputs(),
        }),
        other => Err(invalid(format!(
            "likelihood: {other:?} is not \"gaussian\", \"bernoulli\" or \"categorical\""
        ))),
    }
}

/// y in the form the likelihood reads: class labels `[N]` (u32) or targets `[N, K]`.
fn observed(y: &Bound<'_, PyAny>, name: &str, lik: Likelihood, dtype: DType) -> PyResult<Tensor> {
    match lik {
        Likelihood::Gaussian { .. } => targets(y, name, dtype),
        Likelihood::Bernoulli | Likelihood::Categorical { .. } => labels(y, name),
    }
}

/// Fits `method` (a `MethodSpec` as a dict or JSON string: `{"method": "laplace", "config":
/// {...}}`) to the examples (x, y) from θ (`theta`; the network's initialisation from `seed`
/// when absent), the inputs in θ's dtype; `validation=(x_val, y_val)` for the methods that
/// choose a setting on held-out examples. The GIL is released while the method fits.
#[pyfunction]
#[pyo3(signature = (method, network, x, y, *, likelihood, theta = None, seed = 0, validation = None))]
pub(crate) fn fit(
    py: Python<'_>,
    method: &Bound<'_, PyAny>,
    network: &PyNetwork,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    likelihood: &Bound<'_, PyAny>,
    theta: Option<&Bound<'_, PyAny>>,
    seed: u64,
    validation: Option<(Bound<'_, PyAny>, Bound<'_, PyAny>)>,
) -> PyResult<PyPosterior> {
    let spec: MethodSpec = parse(method, "method")?;
    let lik = self::likelihood(likelihood, network)?;
    let theta = match theta {
        Some(t) => floats(t, "theta", float_dtype(t))?,
        None => network
            .inner
            .init(Seed(seed), DType::F32, &Device::Cpu)
            .or_raise()?,
    };
    let dtype = theta.dtype();
    let x = floats(x, "x", dtype)?;
    let y = observed(y, "y", lik, dtype)?;
    let held_out = match validation {
        Some((xv, yv)) => Some((
            floats(&xv, "x_val", dtype)?,
            observed(&yv, "y_val", lik, dtype)?,
        )),
        None => None,
    };
    let mut problem = Problem::new(&network.inner, &theta, lik, &x, &y);
    if let Some((xv, yv)) = &held_out {
        problem = problem.with_validation(xv, yv);
    }
    let fitted = py.detach(|| bdl::fit(&spec, &problem)).or_raise()?;
    Ok(PyPosterior {
        inner: fitted.posterior,
        dtype,
        diagnostics: Some(fitted.diagnostics),
        seconds: Some(fitted.seconds),
    })
}

/// Loads any posterior saved by `Posterior.save` (or by Rust's `Posterior::save`, the command
/// line's `bdl fit`), its checksum checked. `dtype` is what inputs are converted to: that of
/// the parameters it was fitted with (float32, as `Network.init` and the command line make
/// them, unless θ was float64).
#[pyfunction]
#[pyo3(signature = (path, dtype = "float32"))]
pub(crate) fn load(path: PathBuf, dtype: &str) -> PyResult<PyPosterior> {
    let dtype = dtype_named(dtype)?;
    let inner = bdl::methods::load(&path).or_raise()?;
    Ok(PyPosterior {
        inner,
        dtype,
        diagnostics: None,
        seconds: None,
    })
}

/// A fitted posterior over a network's weights.
#[pyclass(name = "Posterior", module = "bdl", frozen)]
pub(crate) struct PyPosterior {
    inner: Box<dyn Posterior>,
    /// θ's dtype: inputs are converted to it.
    dtype: DType,
    diagnostics: Option<Diagnostics>,
    seconds: Option<f64>,
}

/// How a predictive is formed (`PredictOptions`), from the keyword arguments.
fn options(samples: usize, seed: u64, link: &str, batch_size: usize) -> PyResult<PredictOptions> {
    let link: Link = serde_json::from_value(serde_json::Value::String(link.to_owned()))
        .map_err(|e| invalid(format!("link: {e}")))?;
    Ok(PredictOptions {
        samples,
        seed: Seed(seed),
        batch_size,
        link,
    })
}

#[pymethods]
impl PyPosterior {
    /// The method's name ("subnetwork Laplace", "Vadam", …).
    #[getter]
    fn method(&self) -> &str {
        self.inner.method()
    }

    /// The network the posterior is over.
    #[getter]
    fn network(&self) -> PyNetwork {
        PyNetwork {
            inner: self.inner.network().clone(),
        }
    }

    /// The likelihood of the predictive (with its σ for regression), as a dict.
    #[getter]
    fn likelihood<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.inner.likelihood())
    }

    /// What the fit reported (losses, λ, the subnetwork's indices, acceptance), as a dict; None
    /// for a loaded posterior.
    #[getter]
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.diagnostics
            .as_ref()
            .map(|d| to_python(py, d))
            .transpose()
    }

    /// Wall-clock seconds of the fit; None for a loaded posterior.
    #[getter]
    fn seconds(&self) -> Option<f64> {
        self.seconds
    }

    /// The predictive p(y* | x*, D) at the rows of `x`: closed form where the method has one,
    /// else `samples` Monte Carlo draws from `seed`; `link` ("probit", "monte_carlo",
    /// "laplace_bridge") for classification.
    #[pyo3(signature = (x, *, samples = 16, seed = 0, link = "probit", batch_size = 1024))]
    fn predict(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        samples: usize,
        seed: u64,
        link: &str,
        batch_size: usize,
    ) -> PyResult<PyPredictive> {
        let options = options(samples, seed, link, batch_size)?;
        let x = floats(x, "x", self.dtype)?;
        let inner = py
            .detach(|| self.inner.predictive(&x, &options))
            .or_raise()?;
        Ok(PyPredictive { inner })
    }

    /// The mean `[N, K]` and covariance `[N, K, K]` of the network outputs f at the rows of
    /// `x` (exact for the Laplace family, ensembles and chains; from draws otherwise).
    #[pyo3(signature = (x, *, samples = 16, seed = 0, batch_size = 1024))]
    fn f_moments<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        samples: usize,
        seed: u64,
        batch_size: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let options = options(samples, seed, "probit", batch_size)?;
        let x = floats(x, "x", self.dtype)?;
        let moments = py
            .detach(|| self.inner.f_moments(&x, &options))
            .or_raise()?;
        Ok((array(py, &moments.mean)?, array(py, &moments.covariance)?))
    }

    /// `samples` draws of f at the rows of `x`, `[S, N, K]`, each joint across the rows; None
    /// where the posterior has none.
    #[pyo3(signature = (x, *, samples = 16, seed = 0, batch_size = 1024))]
    fn f_samples<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        samples: usize,
        seed: u64,
        batch_size: usize,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let options = options(samples, seed, "probit", batch_size)?;
        let x = floats(x, "x", self.dtype)?;
        let draws = py
            .detach(|| self.inner.f_samples(&x, &options))
            .or_raise()?;
        draws.map(|d| array(py, &d)).transpose()
    }

    /// `n` parameter vectors from the posterior, `[n, D]` in θ's dtype (a point mass repeats
    /// θ̂); None where the posterior draws no weights (MC dropout).
    #[pyo3(signature = (n, seed = 0))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        seed: u64,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let draws = self.inner.sample(n, Seed(seed)).or_raise()?;
        draws.map(|d| array(py, &d)).transpose()
    }

    /// Saves to `path` (safetensors, with a checksum) and its JSON sidecar beside it.
    fn save(&self, path: PathBuf) -> PyResult<()> {
        self.inner.save(&path).or_raise()
    }

    fn __repr__(&self) -> String {
        format!(
            "bdl.Posterior({}, {} parameters)",
            self.inner.method(),
            self.inner.network().layout().len()
        )
    }
}

/// A predictive distribution at N points: Gaussian per point for regression, class
/// probabilities for classification.
#[pyclass(name = "Predictive", module = "bdl", frozen)]
pub(crate) struct PyPredictive {
    inner: Predictive,
}

impl PyPredictive {
    /// y in the predictive's form: labels for classification, `[N, K]` targets otherwise.
    fn observed(&self, y: &Bound<'_, PyAny>) -> PyResult<Tensor> {
        if self.inner.is_categorical() {
            labels(y, "y")
        } else {
            targets(y, "y", DType::F64)
        }
    }
}

#[pymethods]
impl PyPredictive {
    /// Whether the predictive is over classes.
    #[getter]
    fn is_classification(&self) -> bool {
        self.inner.is_categorical()
    }

    /// The predictive mean, `[N, K]` (f64).
    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        array(py, &self.inner.mean().or_raise()?)
    }

    /// The predictive variance, `[N, K]` (f64).
    #[getter]
    fn variance<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        array(py, &self.inner.variance().or_raise()?)
    }

    /// The class probabilities, `[N, C]` (f64); a `BdlError` for regression.
    #[getter]
    fn probs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        array(py, &self.inner.probs().or_raise()?)
    }

    /// The mean log-likelihood of y per point.
    fn log_likelihood(&self, y: &Bound<'_, PyAny>) -> PyResult<f64> {
        metrics::mean_log_lik(&self.inner, &self.observed(y)?).or_raise()
    }

    /// The root mean squared error of the predictive mean (regression).
    fn rmse(&self, y: &Bound<'_, PyAny>) -> PyResult<f64> {
        metrics::rmse(&self.inner, &self.observed(y)?).or_raise()
    }

    /// The fraction of labels that are the most probable class (classification).
    fn accuracy(&self, y: &Bound<'_, PyAny>) -> PyResult<f64> {
        metrics::accuracy(&self.inner, &self.observed(y)?).or_raise()
    }

    /// The expected calibration error over `bins` equal-width confidence bins.
    #[pyo3(signature = (y, bins = 15))]
    fn ece(&self, y: &Bound<'_, PyAny>, bins: usize) -> PyResult<f64> {
        metrics::expected_calibration_error(&self.inner, &self.observed(y)?, bins).or_raise()
    }
}
