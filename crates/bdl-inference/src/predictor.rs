//! [`Predictor`]: a network with the likelihood that turns its outputs into a predictive — what
//! every posterior predicts with.

use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::Network;
use candle_core::Tensor;

use crate::{Result, forward_batched, mixture};

/// A network and the likelihood of its outputs (with σ for regression).
///
/// ```
/// use bdl_inference::Predictor;
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), bdl_inference::Error> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[2, 4, 1], Activation::Tanh))?);
/// let predictor = Predictor::new(net, Likelihood::Bernoulli)?;
/// let x = Tensor::ones((3, 2), DType::F64, &Device::Cpu)?;
/// // The Monte Carlo predictive of five seeded weight draws.
/// let d = predictor.network().layout().len();
/// let pred = predictor.weight_mixture(&x, 2, 5, |s| {
///     Ok(bdl_tensor::normal(&mut Seed(s as u64).rng(), d, 0.0, 1.0, DType::F64, &Device::Cpu)?)
/// })?;
/// assert_eq!(pred.probs()?.dims(), &[3, 2]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Predictor {
    network: Network,
    likelihood: Likelihood,
}

impl Predictor {
    /// `network` under `likelihood` (whose parameters are checked).
    pub fn new(network: Network, likelihood: Likelihood) -> Result<Self> {
        likelihood.check()?;
        Ok(Self {
            network,
            likelihood,
        })
    }

    /// The network.
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// The likelihood.
    pub fn likelihood(&self) -> Likelihood {
        self.likelihood
    }

    /// The same network under another likelihood (a σ tuned after training).
    pub fn with_likelihood(&self, likelihood: Likelihood) -> Result<Self> {
        Self::new(self.network.clone(), likelihood)
    }

    /// The plug-in predictive p(y | f(x; θ)) of the parameters `theta`, `batch_size` rows of
    /// `x` per forward pass.
    pub fn point(&self, theta: &Tensor, x: &Tensor, batch_size: usize) -> Result<Predictive> {
        let f = forward_batched(&self.network, theta, x, batch_size, None)?;
        Ok(self.likelihood.point_predictive(&f)?)
    }

    /// The Monte Carlo predictive (1/S) Σ_s p(y | f(x; θ_s)) of the S parameter vectors
    /// θ_s = `draw(s)`, through [`mixture()`] (parallel, thread-count independent). `x` is cast
    /// to the draws' dtype.
    pub fn weight_mixture(
        &self,
        x: &Tensor,
        batch_size: usize,
        samples: usize,
        draw: impl Fn(usize) -> Result<Tensor> + Sync,
    ) -> Result<Predictive> {
        mixture(samples, |s| {
            let theta = draw(s)?;
            self.point(&theta, &x.to_dtype(theta.dtype())?, batch_size)
        })
    }
}
