//! `bdl.Network`: a network by its spec, its parameter layout, initialisation, forward pass and
//! PyTorch `state_dict` import.

use std::path::PathBuf;

use bdl::models::{Activation, Mlp, MlpSpec, Model as _, Network, NetworkSpec};
use bdl::tensor::Seed;
use candle_core::Device;
use pyo3::prelude::*;

use crate::arrays::{array, dtype_named, float_dtype, floats};
use crate::errors::{OrRaise as _, invalid};
use crate::json::{parse, to_python};

/// A network over one flat parameter vector θ: an MLP, a LeNet-style CNN or a ResNet.
///
/// `Network(spec)` takes the Rust `NetworkSpec` as a dict (`{"kind": "mlp", "widths": [...],
/// "activations": [...]}`, `{"kind": "cnn", ...}` or `{"kind": "resnet", "input": [3, 32, 32],
/// "widths": [64, 128, 256, 512], "blocks": [2, 2, 2, 2], "classes": 10}`);
/// `Network.mlp(widths, activation)` is the common case.
#[pyclass(name = "Network", module = "bdl", frozen)]
pub(crate) struct PyNetwork {
    pub(crate) inner: Network,
}

#[pymethods]
impl PyNetwork {
    /// The network a spec (a dict or its JSON string) describes.
    #[new]
    fn new(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        let spec: NetworkSpec = parse(spec, "spec")?;
        Ok(Self {
            inner: Network::new(spec).or_raise()?,
        })
    }

    /// An MLP of these widths (inputs, hidden…, outputs), `activation` after every hidden
    /// layer ("relu", "tanh", "sigmoid", …; the output is linear), dropout on the hidden units.
    #[staticmethod]
    #[pyo3(signature = (widths, activation = "relu", dropout = 0.0))]
    fn mlp(widths: Vec<usize>, activation: &str, dropout: f64) -> PyResult<Self> {
        let activation: Activation =
            serde_json::from_value(serde_json::Value::String(activation.to_owned()))
                .map_err(|e| invalid(format!("activation: {e}")))?;
        let spec = MlpSpec {
            dropout,
            ..MlpSpec::new(&widths, activation)
        };
        Ok(Self {
            inner: Network::from(Mlp::new(spec).or_raise()?),
        })
    }

    /// The spec, as a dict.
    #[getter]
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.inner.spec())
    }

    /// D, the length of θ.
    #[getter]
    fn num_params(&self) -> usize {
        self.inner.layout().len()
    }

    /// The parameters in θ's order: (`state_dict` name, shape) pairs.
    #[getter]
    fn parameters(&self) -> Vec<(String, Vec<usize>)> {
        let segments = self.inner.layout().segments();
        segments
            .iter()
            .map(|s| (s.name.clone(), s.shape.clone()))
            .collect()
    }

    /// Initial parameters θ `[D]` from the seeded stream (the architecture's initialisation).
    #[pyo3(signature = (seed = 0, dtype = "float32"))]
    fn init<'py>(&self, py: Python<'py>, seed: u64, dtype: &str) -> PyResult<Bound<'py, PyAny>> {
        let theta = self
            .inner
            .init(Seed(seed), dtype_named(dtype)?, &Device::Cpu)
            .or_raise()?;
        array(py, &theta)
    }

    /// The outputs f(x; θ), `[N, K]`, in θ's dtype.
    fn forward<'py>(
        &self,
        py: Python<'py>,
        theta: &Bound<'py, PyAny>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dtype = float_dtype(theta);
        let theta = floats(theta, "theta", dtype)?;
        let x = floats(x, "x", dtype)?;
        array(py, &self.inner.forward(&theta, &x).or_raise()?)
    }

    /// θ from a safetensors file of `state_dict` names (PyTorch's
    /// `safetensors.torch.save_file(model.state_dict(), path)`), every name and shape checked;
    /// θ keeps the file's dtype.
    fn load_state_dict<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let named = bdl::tensor::load_safetensors(&path, &Device::Cpu).or_raise()?;
        array(py, &self.inner.layout().flatten(&named, &path).or_raise()?)
    }

    /// The network of `spec` (a dict or JSON string) and θ from a PyTorch `state_dict` saved as
    /// safetensors: `(network, theta)`. A ResNet (`{"kind": "resnet", ...}`) takes its
    /// batch normalisations' running statistics from the file (a torchvision `resnet18` with
    /// the CIFAR stem: `safetensors.torch.save_file(model.state_dict(), path)`).
    #[staticmethod]
    fn from_state_dict<'py>(
        py: Python<'py>,
        spec: &Bound<'py, PyAny>,
        path: PathBuf,
    ) -> PyResult<(Self, Bound<'py, PyAny>)> {
        let spec: NetworkSpec = parse(spec, "spec")?;
        let (inner, theta) = Network::load_state_dict(spec, &path, &Device::Cpu).or_raise()?;
        Ok((Self { inner }, array(py, &theta)?))
    }

    fn __repr__(&self) -> String {
        let spec = serde_json::to_string(&self.inner.spec()).unwrap_or_default();
        format!("bdl.Network({spec})")
    }
}
