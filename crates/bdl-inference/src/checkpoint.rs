//! Saved posteriors: safetensors beside a JSON sidecar that records the network, its layout,
//! the likelihood, the method's configuration, the seed and the version that wrote it.
//!
//! Every posterior saves through [`save`] and loads through [`load`], which checks the format,
//! the kind of posterior, and that the saved layout is the layout of the saved network; the
//! method then takes its tensors by name with [`Saved::tensor`], each checked for its shape.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network, NetworkSpec};
use bdl_tensor::{ParamLayout, Seed};
use candle_core::{DType, Device, Tensor};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{Error, Predictor, Result};

const FORMAT: &str = "bdl posterior v1";

/// The sidecar of a saved posterior.
#[derive(Debug, Serialize, Deserialize)]
struct Sidecar<C> {
    format: String,
    /// Which posterior type wrote it (`"subnet-laplace"`, `"swag"`, …).
    kind: String,
    /// The workspace version that wrote it.
    version: String,
    network: NetworkSpec,
    layout: ParamLayout,
    likelihood: Likelihood,
    /// The seed the posterior was fitted with, where it has one.
    seed: Option<Seed>,
    /// The method's own configuration and scalar state.
    config: C,
}

/// What a posterior writes: its kind, network, likelihood, seed and configuration.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a, C> {
    /// Which posterior type this is.
    pub kind: &'static str,
    /// The network and the likelihood of the predictive.
    pub predictor: &'a Predictor,
    /// The fit's seed, if any.
    pub seed: Option<Seed>,
    /// The method's configuration (and any scalar state it needs back).
    pub config: &'a C,
}

/// Writes `tensors` to `path` and the header to its sidecar.
pub fn save<C: Serialize>(
    path: &Path,
    header: &Header<'_, C>,
    tensors: Vec<(&str, Tensor)>,
) -> Result<()> {
    let sidecar = Sidecar {
        format: FORMAT.to_owned(),
        kind: header.kind.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        network: header.predictor.network().spec(),
        layout: header.predictor.network().layout().clone(),
        likelihood: header.predictor.likelihood(),
        seed: header.seed,
        config: header.config,
    };
    let tensors: Vec<(String, Tensor)> = tensors
        .into_iter()
        .map(|(n, t)| (n.to_owned(), t))
        .collect();
    Ok(bdl_tensor::save_safetensors(
        path,
        &tensors,
        Some(&sidecar),
    )?)
}

/// A posterior read back by [`load`]: its network, likelihood, seed and configuration, and its
/// tensors by name.
#[derive(Debug)]
pub struct Saved<C> {
    /// The network, rebuilt from its spec, and the likelihood.
    pub predictor: Predictor,
    /// The fit's seed, if any.
    pub seed: Option<Seed>,
    /// The method's configuration.
    pub config: C,
    path: PathBuf,
    tensors: HashMap<String, Tensor>,
}

/// The kind of posterior saved at `path` (`"map"`, `"subnet-laplace"`, …), read from its
/// sidecar without its tensors, and its network: what a loader of any posterior dispatches on.
pub fn kind(path: &Path) -> Result<(String, NetworkSpec)> {
    let header: Sidecar<serde_json::Value> = bdl_tensor::read_sidecar(path)?;
    if header.format != FORMAT {
        return Err(Error::Checkpoint {
            path: path.to_path_buf(),
            reason: format!("format `{}`, expected `{FORMAT}`", header.format),
        });
    }
    Ok((header.kind, header.network))
}

/// Reads the posterior of kind `kind` saved at `path`.
pub fn load<C: DeserializeOwned>(path: &Path, kind: &str) -> Result<Saved<C>> {
    let bad = |reason: String| Error::Checkpoint {
        path: path.to_path_buf(),
        reason,
    };
    let header: Sidecar<serde_json::Value> = bdl_tensor::read_sidecar(path)?;
    if header.format != FORMAT {
        return Err(bad(format!(
            "format `{}`, expected `{FORMAT}`",
            header.format
        )));
    }
    if header.kind != kind {
        return Err(bad(format!(
            "holds a `{}` posterior, not a `{kind}` one",
            header.kind
        )));
    }
    let config = serde_json::from_value(header.config).map_err(|e| {
        bad(format!(
            "the sidecar's `config` is not a `{kind}` configuration: {e}"
        ))
    })?;
    let network = Network::new(header.network)?;
    if network.layout() != &header.layout {
        return Err(bad(
            "the saved parameter layout is not the layout of the saved network".into(),
        ));
    }
    Ok(Saved {
        predictor: Predictor::new(network, header.likelihood)?,
        seed: header.seed,
        config,
        path: path.to_path_buf(),
        tensors: bdl_tensor::load_safetensors(path, &Device::Cpu)?,
    })
}

impl<C> Saved<C> {
    /// D, the number of parameters of the saved network.
    pub fn n_params(&self) -> usize {
        self.predictor.network().layout().len()
    }

    /// The length of the first axis of the tensor `name`, when the file holds it (for a
    /// matrix whose row count the reader does not know in advance).
    pub fn rows(&self, name: &str) -> Option<usize> {
        self.tensors
            .get(name)
            .and_then(|t| t.dims().first().copied())
    }

    /// The tensor `name`, checked to have `shape` and finite values.
    pub fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let t = self
            .tensors
            .remove(name)
            .ok_or_else(|| bdl_tensor::Error::MissingTensor {
                path: self.path.clone(),
                name: name.to_owned(),
            })?;
        let context = format!("{}: tensor `{name}`", self.path.display());
        bdl_tensor::check_shape(&t, shape, &context)?;
        bdl_tensor::check_finite(&t, &context)?;
        Ok(t)
    }

    /// The vector `name` of length `len`, in f64.
    pub fn vector(&mut self, name: &str, len: usize) -> Result<Vec<f64>> {
        bdl_tensor::to_f64_vec(&self.tensor(name, &[len])?).map_err(Into::into)
    }

    /// The parameter vector `name`, of the network's length D.
    pub fn params(&mut self, name: &str) -> Result<Tensor> {
        let d = self.n_params();
        self.tensor(name, &[d])
    }

    /// The index vector `name` (stored as i64), each index below `bound`.
    pub fn indices(&mut self, name: &str, bound: usize) -> Result<Vec<usize>> {
        let t = self.tensors.get(name).map(|t| t.dims().to_vec());
        let len = t.and_then(|d| d.first().copied()).unwrap_or(0);
        let raw = self
            .tensor(name, &[len])?
            .to_dtype(DType::I64)?
            .to_vec1::<i64>()?;
        raw.into_iter()
            .map(|i| {
                usize::try_from(i)
                    .ok()
                    .filter(|&i| i < bound)
                    .ok_or_else(|| Error::Checkpoint {
                        path: self.path.clone(),
                        reason: format!("index {i} in `{name}` is outside 0..{bound}"),
                    })
            })
            .collect()
    }
}

/// A vector of indices as the i64 tensor a checkpoint stores.
pub fn index_tensor(indices: &[usize]) -> Result<Tensor> {
    let v: Vec<i64> = indices.iter().map(|&i| i as i64).collect();
    Ok(Tensor::from_vec(v, indices.len(), &Device::Cpu)?)
}

/// An f64 vector as a tensor.
pub fn vector_tensor(values: &[f64]) -> Result<Tensor> {
    Ok(Tensor::from_slice(values, values.len(), &Device::Cpu)?)
}
