//! A residual network with batch normalisation: ResNet-18 as the subnetwork paper's CIFAR-10
//! experiments use it, and any stage widths and depths.
//!
//! Every parametrised layer is one of the affine maps of [`LayerFactors`]: a convolution
//! z = a Wᵀ on unfolded patches (no bias), a batch normalisation u = x̂∘γ + β on its normalised
//! input (a [`Channelwise`](Affine::Channelwise) layer with statistics fixed, as in PyTorch's
//! `eval()` mode), or the classifier f = p Wᵀ + b on the globally averaged maps p. A basic block
//! computes
//!
//! h₁ = relu(bn₁(conv₁(x))),   y = relu(bn₂(conv₂(h₁)) + s(x)),
//!
//! with s the identity, or bn(conv₁ₓ₁(x)) at stride 2 where the shape changes. The backward pass
//! runs the same maps' adjoints and adds the two paths' gradients at each block input, so
//! GGN diagonals, subset Jacobians and Σ g∘g come from each layer's inputs and deltas exactly as
//! for the MLP.
//!
//! **Batch statistics are fixed.** Training-mode batch normalisation (normalising by each batch's
//! own statistics) makes an example's output depend on the rest of its batch, so per-example
//! gradients and the linearised predictive are defined at fixed statistics: the running ones
//! read with the `state_dict` of a network trained in PyTorch (as the papers' code does: the
//! statistics are fixed at the MAP), or μ = 0, v = 1 for a network built here, whose batch
//! normalisations then act as channelwise affine maps throughout training.

mod build;
mod norm;
mod pool;

use std::path::Path;

use bdl_tensor::{ChaCha8Rng, ParamLayout, Seed};
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::cnn::im2col::Unfold;
use crate::cnn::step::FeatureMaps;
use crate::{Affine, Cache, Error, LayerFactors, Model, Result};
use norm::Normalisation;
use pool::MaxPool;

/// The first layers of a ResNet, before its stages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stem {
    /// For 32 × 32 images (CIFAR): a 3 × 3 convolution at stride 1, no pooling
    /// (torchvision's `resnet18` with `conv1` replaced and `maxpool` the identity).
    #[default]
    Cifar,
    /// torchvision's own: a 7 × 7 convolution at stride 2, then 3 × 3 max pooling at stride 2
    /// (ImageNet-sized inputs).
    Imagenet,
}
pub use norm::{BatchStatistics, EPSILON};

/// The architecture of a [`ResNet`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResNetSpec {
    /// The shape of one input, `[C, H, W]`.
    pub input: [usize; 3],
    /// The channels of each stage (the stem has the first stage's); ResNet-18: 64, 128, 256,
    /// 512.
    pub widths: Vec<usize>,
    /// The basic blocks of each stage; ResNet-18: 2, 2, 2, 2. Every stage after the first
    /// halves the maps' size in its first block.
    pub blocks: Vec<usize>,
    /// K, the number of classes.
    pub classes: usize,
    /// The stem (absent: [`Stem::Cifar`]).
    #[serde(default)]
    pub stem: Stem,
    /// The fixed statistics of every batch normalisation in layout order (the stem's, then each
    /// block's `bn1`, `bn2` and shortcut's); absent: μ = 0, v = 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<Vec<BatchStatistics>>,
    /// Dropout probability on the pooled features the classifier reads (0, the default, for
    /// none; MC dropout's network): used only when a dropout stream is given.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropout: f64,
}

fn is_zero(p: &f64) -> bool {
    *p == 0.0
}

impl ResNetSpec {
    /// ResNet-18 for 32 × 32 colour images (CIFAR-10) and `classes` outputs: 11,173,962
    /// parameters for ten classes.
    pub fn resnet18(classes: usize) -> Self {
        Self {
            input: [3, 32, 32],
            widths: vec![64, 128, 256, 512],
            blocks: vec![2, 2, 2, 2],
            classes,
            stem: Stem::Cifar,
            statistics: None,
            dropout: 0.0,
        }
    }

    /// The same spec with dropout probability `p` on the pooled features (before the
    /// classifier).
    pub fn with_dropout(mut self, p: f64) -> Self {
        self.dropout = p;
        self
    }

    /// torchvision's `resnet18(num_classes=classes)` as it is, for 224 × 224 colour images (the
    /// ImageNet stem): 11,181,642 parameters for ten classes. Any input of at least 32 × 32
    /// works; set `input`.
    pub fn resnet18_imagenet(classes: usize) -> Self {
        Self {
            input: [3, 224, 224],
            stem: Stem::Imagenet,
            ..Self::resnet18(classes)
        }
    }

    fn check(&self) -> Result<()> {
        let invalid = |what: String| Err(Error::InvalidConfig(what));
        if self.input.contains(&0) || self.classes == 0 {
            return invalid(format!(
                "a ResNet needs a positive input shape and class count, got {:?} and {}",
                self.input, self.classes
            ));
        }
        if self.widths.is_empty()
            || self.widths.len() != self.blocks.len()
            || self.widths.contains(&0)
            || self.blocks.contains(&0)
        {
            return invalid(format!(
                "a ResNet needs one positive width and block count per stage, got widths {:?} \
                 and blocks {:?}",
                self.widths, self.blocks
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return invalid(format!(
                "dropout probability must lie in [0, 1), got {}",
                self.dropout
            ));
        }
        Ok(())
    }
}

/// The bound on the numbers one forward pass keeps for the backward pass (2²⁴: 64 MiB in f32),
/// see [`Model::rows_per_pass`].
const PASS_NUMBERS: usize = 1 << 24;

/// What a parametrised layer computes from its rows.
#[derive(Clone, Debug)]
enum Op {
    /// A convolution without bias on the unfolded patches of the layer input.
    Conv(Unfold),
    /// Batch normalisation number `index` (in layout order).
    Norm { index: usize },
    /// The classifier on the pooled features.
    Linear,
}

/// A parametrised layer: P rows per example of J inputs to O outputs.
#[derive(Clone, Debug)]
struct Layer {
    op: Op,
    /// P, the rows per example (output positions; 1 for the classifier).
    positions: usize,
    /// J, the inputs of one row (C·k·k for a convolution, 1 for a normalisation).
    fan_in: usize,
    /// O, the output channels or classes.
    width: usize,
    /// The weight segment (γ for a normalisation).
    weight: usize,
    /// The bias segment (β for a normalisation), if any.
    bias: Option<usize>,
}

/// One basic block's layers, and its shortcut's convolution and normalisation where it has
/// one.
#[derive(Clone, Debug)]
struct Block {
    conv1: usize,
    bn1: usize,
    conv2: usize,
    bn2: usize,
    shortcut: Option<(usize, usize)>,
}

/// A ResNet over a flat parameter vector laid out as torchvision's `state_dict` (parameters
/// only; the running statistics are part of the architecture, see [`ResNetSpec::statistics`]).
///
/// Inputs are `[N, C, H, W]` or rows `[N, C·H·W]` in (c, y, x) order. The [`Cache`] keeps every
/// layer's input as [`LayerFactors`] reads it (`inputs`, in layer order), the output of every
/// ReLU in forward order (`post`: the stem's, then each block's two) and, for the ImageNet
/// stem, the max pool's argmax sources (`indices`); it keeps no pre-activations.
///
/// ```
/// use bdl_models::{Model, ResNet, ResNetSpec};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), bdl_models::Error> {
/// // Two stages of one block each on 8 × 8 images.
/// let spec = ResNetSpec { input: [3, 8, 8], widths: vec![4, 8], blocks: vec![1, 1], classes: 3, ..ResNetSpec::resnet18(3) };
/// let net = ResNet::new(spec)?;
/// assert_eq!(net.layout().segments()[0].name, "conv1.weight");
/// assert!(net.layout().segment("layer2.0.downsample.0.weight").is_some());
/// let theta = net.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let x = Tensor::ones((2, 3, 8, 8), DType::F64, &Device::Cpu)?;
/// let cache = net.forward_cached(&theta, &x)?;
/// assert_eq!(cache.output.dims(), &[2, 3]);
/// let g = net.backward(&theta, &cache, &Tensor::ones((2, 3), DType::F64, &Device::Cpu)?)?;
/// assert_eq!(g.dims(), &[net.layout().len()]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ResNet {
    spec: ResNetSpec,
    layout: ParamLayout,
    layers: Vec<Layer>,
    stem: (usize, usize),
    /// The ImageNet stem's max pooling.
    pool: Option<MaxPool>,
    blocks: Vec<Block>,
    fc: usize,
    last: FeatureMaps,
    norm_names: Vec<String>,
    statistics: Vec<BatchStatistics>,
}

impl ResNet {
    /// Builds the network, checking that every stage's maps are large enough for its stride.
    pub fn new(spec: ResNetSpec) -> Result<Self> {
        spec.check()?;
        let built = build::build(&spec)?;
        let statistics = build::statistics(&spec, &built)?;
        Ok(Self {
            spec,
            layout: built.layout,
            layers: built.layers,
            stem: built.stem,
            pool: built.pool,
            blocks: built.blocks,
            fc: built.fc,
            last: built.last,
            norm_names: built.norm_names,
            statistics,
        })
    }

    /// ResNet-18 for 32 × 32 colour images ([`ResNetSpec::resnet18`]).
    pub fn resnet18(classes: usize) -> Result<Self> {
        Self::new(ResNetSpec::resnet18(classes))
    }

    /// The architecture, with the statistics the network normalises by.
    pub fn spec(&self) -> ResNetSpec {
        ResNetSpec {
            statistics: Some(self.statistics.clone()),
            ..self.spec.clone()
        }
    }

    /// Initial parameters from a seeded stream, as torchvision initialises a ResNet: every
    /// convolution kernel from N(0, 2/(O·k·k)) (He initialisation on fan-out), γ = 1 and β = 0,
    /// and the classifier's weights and bias from U(−1/√J, 1/√J).
    pub fn init(&self, seed: Seed, dtype: DType, device: &Device) -> Result<Tensor> {
        let mut rng = seed.fork("resnet-init").rng();
        let segments = self.layout.segments();
        let mut parts = vec![None; segments.len()];
        for layer in &self.layers {
            let numel = segments[layer.weight].numel();
            let (weight, bias) = match layer.op {
                Op::Conv(_) => {
                    let fan_out = (numel / segments[layer.weight].shape[1]) as f64;
                    let std = (2.0 / fan_out).sqrt();
                    let w = bdl_tensor::normal(&mut rng, numel, 0.0, std, dtype, device)?;
                    (w, None)
                }
                Op::Norm { .. } => (
                    Tensor::ones(numel, dtype, device)?,
                    Some(Tensor::zeros(numel, dtype, device)?),
                ),
                Op::Linear => {
                    let bound = (layer.fan_in as f64).sqrt().recip();
                    let w = bdl_tensor::uniform(&mut rng, numel, -bound, bound, dtype, device)?;
                    let b =
                        bdl_tensor::uniform(&mut rng, layer.width, -bound, bound, dtype, device)?;
                    (w, Some(b))
                }
            };
            parts[layer.weight] = Some(weight);
            if let (Some(segment), Some(b)) = (layer.bias, bias) {
                parts[segment] = Some(b);
            }
        }
        let parts: Vec<Tensor> = parts.into_iter().flatten().collect();
        Ok(Tensor::cat(&parts, 0)?)
    }

    /// Loads a PyTorch `state_dict` saved as safetensors (for example by
    /// `safetensors.torch.save_file(model.state_dict(), path)` for a torchvision `resnet18`
    /// with the CIFAR stem): the parameters as θ, in the file's dtype, and the running
    /// statistics into the returned network (`num_batches_tracked` is ignored). Every name and
    /// shape is checked; `spec`'s own statistics are replaced.
    pub fn load_state_dict(
        spec: ResNetSpec,
        path: &Path,
        device: &Device,
    ) -> Result<(Self, Tensor)> {
        let plain = Self::new(ResNetSpec {
            statistics: None,
            ..spec
        })?;
        let mut named = bdl_tensor::load_safetensors(path, device)?;
        named.retain(|name, _| !name.ends_with(".num_batches_tracked"));
        let mut statistics = Vec::with_capacity(plain.norm_names.len());
        for name in &plain.norm_names {
            let mut buffer = |what: &str| -> Result<Vec<f64>> {
                let key = format!("{name}.{what}");
                let t = named
                    .remove(&key)
                    .ok_or_else(|| bdl_tensor::Error::MissingTensor {
                        path: path.to_path_buf(),
                        name: key.clone(),
                    })?;
                Ok(bdl_tensor::to_f64_vec(&t.flatten_all()?)?)
            };
            statistics.push(BatchStatistics {
                mean: buffer("running_mean")?,
                var: buffer("running_var")?,
            });
        }
        let params = plain.layout.flatten(&named, path)?;
        let net = Self::new(ResNetSpec {
            statistics: Some(statistics),
            ..plain.spec
        })
        .map_err(|e| Error::InvalidConfig(format!("{}: {e}", path.display())))?;
        Ok((net, params))
    }

    /// Saves θ and the running statistics as a PyTorch `state_dict` (what
    /// [`load_state_dict`](Self::load_state_dict) and torchvision's `load_state_dict` read,
    /// `num_batches_tracked` written as 0), with the spec in the JSON sidecar.
    pub fn save(&self, path: &Path, params: &Tensor) -> Result<()> {
        let (dtype, device) = (params.dtype(), params.device());
        let mut named = self.layout.named(params)?;
        for (name, stats) in self.norm_names.iter().zip(&self.statistics) {
            let c = stats.channels();
            let buffer = |v: &[f64]| -> Result<Tensor> {
                Ok(Tensor::from_slice(v, c, device)?.to_dtype(dtype)?)
            };
            named.push((format!("{name}.running_mean"), buffer(&stats.mean)?));
            named.push((format!("{name}.running_var"), buffer(&stats.var)?));
            let tracked = Tensor::new(0i64, device)?;
            named.push((format!("{name}.num_batches_tracked"), tracked));
        }
        bdl_tensor::save_safetensors(path, &named, Some(&self.spec()))?;
        Ok(())
    }

    /// Loads a network saved by [`ResNet::save`]: the spec from the sidecar, the parameters and
    /// statistics from the safetensors file.
    pub fn load(path: &Path, device: &Device) -> Result<(Self, Tensor)> {
        Self::load_state_dict(bdl_tensor::read_sidecar(path)?, path, device)
    }

    /// Each normalisation's fixed shift and scale in the parameters' dtype.
    fn normalisations(&self, params: &Tensor) -> Result<Vec<Normalisation>> {
        self.statistics
            .iter()
            .map(|s| Normalisation::new(s, params.dtype(), params.device()))
            .collect()
    }
}

/// One pass's parameters, as the forward and backward passes read them.
struct Weights<'a> {
    net: &'a ResNet,
    segments: Vec<Tensor>,
    norms: Vec<Normalisation>,
    n: usize,
}

impl<'a> Weights<'a> {
    fn new(net: &'a ResNet, params: &Tensor, n: usize) -> Result<Self> {
        Ok(Self {
            net,
            segments: net.layout.split(params)?,
            norms: net.normalisations(params)?,
            n,
        })
    }

    /// Layer `l`'s weight as the `[O, J]` matrix of its rows (γ for a normalisation).
    fn matrix(&self, l: usize) -> Result<Tensor> {
        let layer = &self.net.layers[l];
        Ok(self.segments[layer.weight].reshape((layer.width, layer.fan_in))?)
    }

    fn unfold(&self, l: usize) -> &Unfold {
        match &self.net.layers[l].op {
            Op::Conv(unfold) => unfold,
            _ => unreachable!("layer {l} is a convolution by construction"),
        }
    }

    fn norm(&self, l: usize) -> &Normalisation {
        match self.net.layers[l].op {
            Op::Norm { index } => &self.norms[index],
            _ => unreachable!("layer {l} is a normalisation by construction"),
        }
    }

    /// bn(conv(u)) for inputs `u` (`[N, L]`), rows `[N·P, O]`; records both layers' inputs.
    fn conv_norm(
        &self,
        (conv, bn): (usize, usize),
        u: &Tensor,
        inputs: &mut [Option<Tensor>],
    ) -> Result<Tensor> {
        let layer = &self.net.layers[conv];
        let a = self
            .unfold(conv)
            .apply(u)?
            .reshape((self.n * layer.positions, layer.fan_in))?;
        let z = a.matmul(&self.matrix(conv)?.t()?)?;
        let x_hat = self.norm(bn).normalise(&z)?;
        let gamma = &self.segments[self.net.layers[bn].weight];
        let beta = &self.segments[self.net.layers[bn].bias.expect("β")];
        let out = x_hat.broadcast_mul(gamma)?.broadcast_add(beta)?;
        inputs[conv] = Some(a);
        inputs[bn] = Some(x_hat);
        Ok(out)
    }

    /// The adjoint of [`conv_norm`](Self::conv_norm): records both layers' deltas from the
    /// output gradient `grad` (`[N·P, O]`) and returns the input gradient (`[N, L]`).
    fn conv_norm_adjoint(
        &self,
        layers: (usize, usize),
        grad: &Tensor,
        deltas: &mut [Option<Tensor>],
    ) -> Result<Tensor> {
        let conv = layers.0;
        let grad_z = self.conv_norm_deltas(layers, grad, deltas)?;
        let layer = &self.net.layers[conv];
        let grad_a = grad_z
            .matmul(&self.matrix(conv)?)?
            .reshape((self.n, layer.positions * layer.fan_in))?;
        self.unfold(conv).adjoint(&grad_a)
    }

    /// Records the normalisation's delta (`grad`) and the convolution's (∂ℓ/∂z, returned),
    /// without the input gradient (which the stem does not need).
    fn conv_norm_deltas(
        &self,
        (conv, bn): (usize, usize),
        grad: &Tensor,
        deltas: &mut [Option<Tensor>],
    ) -> Result<Tensor> {
        let gamma = &self.segments[self.net.layers[bn].weight];
        let grad_z = self.norm(bn).adjoint(grad, gamma)?;
        deltas[bn] = Some(grad.clone());
        deltas[conv] = Some(grad_z.clone());
        Ok(grad_z)
    }
}

/// 𝟙\[h > 0\] in h's dtype: ReLU's derivative read from its output.
fn relu_mask(h: &Tensor) -> Result<Tensor> {
    Ok(h.gt(0.0)?.to_dtype(h.dtype())?)
}

impl Model for ResNet {
    fn layout(&self) -> &ParamLayout {
        &self.layout
    }

    fn n_outputs(&self) -> usize {
        self.spec.classes
    }

    /// As many examples as keep the cached layer inputs (Σ_l P_l·J_l numbers per example: 4.3
    /// million for ResNet-18 on 32 × 32 images) within 2²⁴ numbers, at least one.
    fn rows_per_pass(&self) -> usize {
        let per_example: usize = self.layers.iter().map(|l| l.positions * l.fan_in).sum();
        (PASS_NUMBERS / per_example.max(1)).max(1)
    }

    /// The forward pass; with a `dropout` stream and a positive [`ResNetSpec::dropout`], a
    /// fresh mask on the pooled features (kept as the classifier's entry of `masks`).
    fn forward_cached_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Cache> {
        self.layout.check_flat(params)?;
        let mut u = crate::cnn::image_rows(x, self.spec.input, params.dtype(), "ResNet input x")?;
        let n = u.dims()[0];
        let w = Weights::new(self, params, n)?;
        let mut inputs = vec![None; self.layers.len()];
        let mut relus = Vec::with_capacity(1 + 2 * self.blocks.len());
        let rows = |t: &Tensor| -> Result<Tensor> { Ok(t.reshape((n, ()))?) };

        relus.push(w.conv_norm(self.stem, &u, &mut inputs)?.relu()?);
        u = rows(&relus[0])?;
        let mut indices = Vec::new();
        if let Some(pool) = &self.pool {
            let (pooled, sources) = pool.apply(&u)?;
            u = pooled;
            indices.push(sources);
        }
        for block in &self.blocks {
            let h1 = w
                .conv_norm((block.conv1, block.bn1), &u, &mut inputs)?
                .relu()?;
            let main = w.conv_norm((block.conv2, block.bn2), &rows(&h1)?, &mut inputs)?;
            let shortcut = match block.shortcut {
                Some(layers) => w.conv_norm(layers, &u, &mut inputs)?,
                None => u.reshape(main.shape())?,
            };
            let y = (main + shortcut)?.relu()?;
            u = rows(&y)?;
            relus.push(h1);
            relus.push(y);
        }
        let positions = self.last.height * self.last.width;
        let mut pooled =
            (u.reshape((n, positions, self.last.channels))?.sum(1)? / positions as f64)?;
        let mut masks = vec![None; self.layers.len()];
        if let Some(rng) = dropout
            && self.spec.dropout > 0.0
        {
            let on = (pooled.dtype(), pooled.device());
            let mask = crate::dropout::inverted_mask(rng, pooled.shape(), self.spec.dropout, on)?;
            pooled = (pooled * &mask)?;
            masks[self.fc] = Some(mask);
        }
        let fc = &self.layers[self.fc];
        let output = pooled
            .matmul(&w.matrix(self.fc)?.t()?)?
            .broadcast_add(&w.segments[fc.bias.expect("the classifier has a bias")])?;
        inputs[self.fc] = Some(pooled);
        Ok(Cache {
            inputs: inputs
                .into_iter()
                .map(|a| a.expect("every layer ran"))
                .collect(),
            pre: Vec::new(),
            post: relus,
            masks,
            indices,
            output,
            n_examples: n,
        })
    }

    fn factors(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
    ) -> Result<Vec<LayerFactors>> {
        let n = cache.n_examples;
        bdl_tensor::check_shape(grad_f, &[n, self.n_outputs()], "output gradient ∂ℓ/∂f")?;
        let w = Weights::new(self, params, n)?;
        let mut deltas = vec![None; self.layers.len()];
        let grad_f = grad_f.to_dtype(params.dtype())?;

        // The classifier, the dropout mask on its input, then the pooling's adjoint: each
        // position gets 1/P of ∂ℓ/∂p.
        let positions = self.last.height * self.last.width;
        let mut grad_pooled = (grad_f.matmul(&w.matrix(self.fc)?)? / positions as f64)?;
        if let Some(mask) = &cache.masks[self.fc] {
            grad_pooled = (grad_pooled * mask)?;
        }
        deltas[self.fc] = Some(grad_f);
        let mut grad = grad_pooled
            .unsqueeze(1)?
            .broadcast_as((n, positions, self.last.channels))?
            .reshape((n * positions, self.last.channels))?;
        // ReLU outputs last first; ∂ℓ/∂(its input) = ∂ℓ/∂(its output) ∘ 𝟙[h > 0], the gradient
        // taken to the output's rows.
        let mut relus = cache.post.iter().rev();
        let mut through_relu = |g: Tensor| -> Result<Tensor> {
            let h = relus.next().expect("one ReLU output per activation");
            Ok((g.reshape(h.shape())? * relu_mask(h)?)?)
        };
        for block in self.blocks.iter().rev() {
            let grad_y = through_relu(grad)?;
            let grad_h1 = w.conv_norm_adjoint((block.conv2, block.bn2), &grad_y, &mut deltas)?;
            let main = w.conv_norm_adjoint(
                (block.conv1, block.bn1),
                &through_relu(grad_h1)?,
                &mut deltas,
            )?;
            let shortcut = match block.shortcut {
                Some(layers) => w.conv_norm_adjoint(layers, &grad_y, &mut deltas)?,
                None => grad_y.reshape((n, ()))?,
            };
            grad = (main + shortcut)?;
        }
        if let Some(pool) = &self.pool {
            grad = pool.adjoint(&grad.reshape((n, ()))?, &cache.indices[0])?;
        }
        w.conv_norm_deltas(self.stem, &through_relu(grad)?, &mut deltas)?;

        Ok(self
            .layers
            .iter()
            .zip(cache.inputs.iter().zip(deltas))
            .map(|(layer, (input, delta))| LayerFactors {
                map: match layer.op {
                    Op::Norm { .. } => Affine::Channelwise,
                    Op::Conv(_) | Op::Linear => Affine::Dense,
                },
                input: input.clone(),
                delta: delta.expect("every layer has a delta"),
                positions: layer.positions,
                weight_segment: layer.weight,
                bias_segment: layer.bias,
            })
            .collect())
    }
}
