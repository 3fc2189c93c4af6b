//! [`load()`]: any saved posterior back, whichever method wrote it.

use std::path::Path;

use bdl_inference::{MapEstimate, Posterior};

use crate::error::{Error, Lift, Result};

/// The posterior saved at `path` by [`Posterior::save`], of whatever method: the sidecar names
/// the kind, and a point estimate of a network with dropout comes back as MC dropout (which
/// saves its trained parameters as a point estimate). A truncated or altered file, or one from
/// another network shape, is an error naming the file.
///
/// ```
/// use bdl_inference::{MapEstimate, Posterior};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[2, 3, 1], Activation::Tanh))?);
/// let theta = net.init(Seed(0), DType::F32, &Device::Cpu)?;
/// let map = MapEstimate::new(net, theta, Likelihood::Gaussian { sigma: 0.5 })?;
/// let path = std::env::temp_dir().join(format!("bdl-load-doc-{}.safetensors", std::process::id()));
/// map.save(&path)?;
/// let back = bdl_methods::load(&path)?;
/// assert_eq!(back.method(), "MAP");
/// # std::fs::remove_file(&path).ok();
/// # std::fs::remove_file(path.with_extension("json")).ok();
/// # Ok(()) }
/// ```
pub fn load(path: &Path) -> Result<Box<dyn Posterior>> {
    const METHOD: &str = "load";
    let (kind, network) = bdl_inference::checkpoint::kind(path).lift(METHOD)?;
    Ok(match kind.as_str() {
        "map" if network.dropout() > 0.0 => {
            Box::new(bdl_baselines::McDropout::load(path).lift(METHOD)?)
        }
        "map" => Box::new(MapEstimate::load(path).lift(METHOD)?),
        "subnet-laplace" => Box::new(bdl_laplace::SubnetLaplace::load(path).lift(METHOD)?),
        "diag-laplace" => Box::new(bdl_laplace::DiagLaplace::load(path).lift(METHOD)?),
        "kron-laplace" => Box::new(bdl_laplace::KronLaplace::load(path).lift(METHOD)?),
        "mean-field" => Box::new(bdl_variational::MeanField::load(path).lift(METHOD)?),
        "swag" => Box::new(bdl_baselines::SwagPosterior::load(path).lift(METHOD)?),
        "ensemble" => Box::new(bdl_baselines::Ensemble::load(path).lift(METHOD)?),
        "chain-window" => Box::new(bdl_mcmc::ChainWindow::load(path).lift(METHOD)?),
        other => {
            return Err(Error::Unsupported {
                method: METHOD,
                what: format!("read a `{other}` posterior ({})", path.display()),
            });
        }
    })
}
