//! Models of bdl: networks over one flat parameter vector, with cached forward passes and the
//! per-example products that Bayesian inference needs.
//!
//! - [`Model`]: the interface every inference crate programs against: forward with a [`Cache`],
//!   backward of per-example output gradients, Σ_n g_n∘g_n and subset Jacobians built from each
//!   layer's inputs a and deltas δ ([`LayerFactors`]), never from per-example tensors.
//! - [`Mlp`]: a multilayer perceptron with identity, ReLU, tanh or sigmoid [`Activation`]s,
//!   dropout with seeded masks, PyTorch-compatible safetensors checkpoints.
//! - [`Cnn`]: a small convolutional network (convolutions, 2×2 average pooling, dense layers;
//!   [`Cnn::lenet5`]) with the same interface; a convolution is an affine layer on the unfolded
//!   (im2col) input, one row per example and output position, so its per-example products come
//!   from the same [`LayerFactors`].
//! - [`ResNet`]: a residual network with batch normalisation at fixed statistics (ResNet-18 for
//!   CIFAR-10, [`ResNet::resnet18`]), loading and saving torchvision's `state_dict` names; a
//!   batch normalisation is a channelwise affine layer ([`Affine::Channelwise`]) of the same
//!   factors.
//!
//! Parameters are addressed through the [`bdl_tensor::ParamLayout`] each model owns.

mod activation;
mod cache;
mod cnn;
mod dropout;
mod error;
mod factors;
mod mlp;
mod model;
mod network;
mod resnet;

pub use activation::Activation;
pub use cache::Cache;
pub use cnn::{Cnn, CnnSpec, ConvSpec};
pub use error::{Error, Result, check_param_indices};
pub use factors::{Affine, LayerFactors};
pub use mlp::{DenseLayer, Mlp, MlpSpec};
pub use model::{LossGradient, Model};
pub use network::{Network, NetworkSpec};
pub use resnet::{BatchStatistics, EPSILON, ResNet, ResNetSpec, Stem};
