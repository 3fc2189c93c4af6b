//! [`Network`]: one of the workspace's architectures, chosen at run time and rebuilt from its
//! serialisable [`NetworkSpec`].
//!
//! Posteriors own the network they predict with and save its spec beside their tensors, so
//! they need one type for "an MLP or a CNN"; the inference code keeps programming against
//! [`Model`], which `Network` implements by delegation.

use bdl_tensor::{ChaCha8Rng, ParamLayout, Seed};
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::{
    Cache, Cnn, CnnSpec, Error, LayerFactors, LossGradient, Mlp, MlpSpec, Model, ResNet,
    ResNetSpec, Result,
};

/// The architecture of a [`Network`], serialised with an internal tag:
/// `{"kind": "mlp", "widths": [...], ...}` or `{"kind": "cnn", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NetworkSpec {
    /// A multilayer perceptron.
    Mlp(MlpSpec),
    /// A convolutional network.
    Cnn(CnnSpec),
    /// A residual network with batch normalisation (`"kind": "resnet"`).
    #[serde(rename = "resnet")]
    ResNet(ResNetSpec),
}

impl NetworkSpec {
    /// The dropout probability of the network's hidden units (0 for none; a ResNet's on its
    /// pooled features).
    pub fn dropout(&self) -> f64 {
        match self {
            Self::Mlp(spec) => spec.dropout,
            Self::Cnn(spec) => spec.dropout,
            Self::ResNet(spec) => spec.dropout,
        }
    }
}

/// An MLP, a CNN or a ResNet behind one type.
///
/// ```
/// use bdl_models::{Activation, MlpSpec, Model, Network, NetworkSpec};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), bdl_models::Error> {
/// let net = Network::new(NetworkSpec::Mlp(MlpSpec::new(&[3, 8, 2], Activation::Relu)))?;
/// let theta = net.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let f = net.forward(&theta, &Tensor::ones((4, 3), DType::F64, &Device::Cpu)?)?;
/// assert_eq!(f.dims(), &[4, 2]);
/// // The spec round-trips through JSON and rebuilds the same network.
/// let json = serde_json::to_string(&net.spec()).unwrap();
/// let again = Network::new(serde_json::from_str(&json).unwrap())?;
/// assert_eq!(again.layout(), net.layout());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub enum Network {
    /// A multilayer perceptron.
    Mlp(Mlp),
    /// A convolutional network.
    Cnn(Cnn),
    /// A residual network (boxed: it is several times larger than the others).
    ResNet(Box<ResNet>),
}

impl Network {
    /// Builds the network a spec describes.
    pub fn new(spec: NetworkSpec) -> Result<Self> {
        Ok(match spec {
            NetworkSpec::Mlp(spec) => Self::Mlp(Mlp::new(spec)?),
            NetworkSpec::Cnn(spec) => Self::Cnn(Cnn::new(spec)?),
            NetworkSpec::ResNet(spec) => Self::ResNet(Box::new(ResNet::new(spec)?)),
        })
    }

    /// The architecture.
    pub fn spec(&self) -> NetworkSpec {
        match self {
            Self::Mlp(m) => NetworkSpec::Mlp(m.spec().clone()),
            Self::Cnn(c) => NetworkSpec::Cnn(c.spec().clone()),
            Self::ResNet(r) => NetworkSpec::ResNet(r.spec()),
        }
    }

    /// Initial parameters from a seeded stream (each architecture's own initialisation).
    pub fn init(&self, seed: Seed, dtype: DType, device: &Device) -> Result<Tensor> {
        match self {
            Self::Mlp(m) => m.init(seed, dtype, device),
            Self::Cnn(c) => c.init(seed, dtype, device),
            Self::ResNet(r) => r.init(seed, dtype, device),
        }
    }

    /// The dropout probability of the network's hidden units (0 for none; a ResNet's on its
    /// pooled features).
    pub fn dropout(&self) -> f64 {
        match self {
            Self::Mlp(m) => m.spec().dropout,
            Self::Cnn(c) => c.spec().dropout,
            Self::ResNet(r) => r.spec().dropout,
        }
    }

    /// The network of `spec` and its θ from a PyTorch `state_dict` saved as safetensors,
    /// every name and shape checked, θ in the file's dtype. A ResNet's running statistics come
    /// from the file ([`ResNet::load_state_dict`]); an MLP's or CNN's file holds parameters
    /// only.
    pub fn load_state_dict(
        spec: NetworkSpec,
        path: &std::path::Path,
        device: &Device,
    ) -> Result<(Self, Tensor)> {
        if let NetworkSpec::ResNet(spec) = spec {
            let (resnet, theta) = ResNet::load_state_dict(spec, path, device)?;
            return Ok((Self::ResNet(Box::new(resnet)), theta));
        }
        let net = Self::new(spec)?;
        let named = bdl_tensor::load_safetensors(path, device)?;
        let theta = net.layout().flatten(&named, path)?;
        Ok((net, theta))
    }

    /// The MLP, if this is one (the blocked-Gibbs sampler is MLP-only).
    pub fn as_mlp(&self) -> Option<&Mlp> {
        match self {
            Self::Mlp(m) => Some(m),
            Self::Cnn(_) | Self::ResNet(_) => None,
        }
    }
}

impl From<Mlp> for Network {
    fn from(mlp: Mlp) -> Self {
        Self::Mlp(mlp)
    }
}

impl From<Cnn> for Network {
    fn from(cnn: Cnn) -> Self {
        Self::Cnn(cnn)
    }
}

impl From<ResNet> for Network {
    fn from(resnet: ResNet) -> Self {
        Self::ResNet(Box::new(resnet))
    }
}

/// Each call goes to the architecture inside.
impl Network {
    /// The network behind the enum.
    fn inner(&self) -> &dyn Model {
        match self {
            Self::Mlp(m) => m,
            Self::Cnn(c) => c,
            Self::ResNet(r) => r.as_ref(),
        }
    }
}

/// Every method delegates, those with a default included: a network may override them with
/// faster passes (the MLP's slice passes for `backward`, `sum_sq_grads` and `forward_with`, its `forward`
/// in passes of bounded size).
impl Model for Network {
    fn layout(&self) -> &ParamLayout {
        self.inner().layout()
    }

    fn n_outputs(&self) -> usize {
        self.inner().n_outputs()
    }

    fn rows_per_pass(&self) -> usize {
        self.inner().rows_per_pass()
    }

    fn forward_cached_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Cache> {
        self.inner().forward_cached_with(params, x, dropout)
    }

    fn factors(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
    ) -> Result<Vec<LayerFactors>> {
        self.inner().factors(params, cache, grad_f)
    }

    fn forward_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Tensor> {
        self.inner().forward_with(params, x, dropout)
    }

    fn forward(&self, params: &Tensor, x: &Tensor) -> Result<Tensor> {
        self.inner().forward(params, x)
    }

    fn backward(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor) -> Result<Tensor> {
        self.inner().backward(params, cache, grad_f)
    }

    fn loss_gradient<E: From<Error>>(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
        output_gradient: impl FnOnce(&Tensor) -> std::result::Result<Tensor, E>,
        squares: bool,
    ) -> std::result::Result<LossGradient, E> {
        match self {
            Self::Mlp(m) => m.loss_gradient(params, x, dropout, output_gradient, squares),
            Self::Cnn(c) => c.loss_gradient(params, x, dropout, output_gradient, squares),
            Self::ResNet(r) => r.loss_gradient(params, x, dropout, output_gradient, squares),
        }
    }

    fn sum_sq_grads(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor) -> Result<Tensor> {
        self.inner().sum_sq_grads(params, cache, grad_f)
    }
}
