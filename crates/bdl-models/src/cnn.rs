//! A small convolutional network: convolutions with 2×2 average pooling, then dense layers.
//!
//! Every parametrised layer l, convolution or dense, is one affine map on rows,
//!
//! a_l = T_l(h̃_{l−1}),   z_l = a_l W_lᵀ + b_l,   h_l = φ(z_l),   h̃_l = h_l ∘ m_l,
//!
//! where T_l is a fixed linear map (pooling of the previous layer's maps, then im2col for a
//! convolution or flattening for the first dense layer; identity between dense layers) and m_l an
//! optional dropout mask. A convolution has one row per example and output position, so its
//! [`LayerFactors`] are (a_l, δ_l) with P > 1 positions, and the per-example products of
//! [`Model`] need nothing else. Backward, δ_l = (∂ℓ/∂h̃_l ∘ m_l) ∘ φ'(z_l) and
//! ∂ℓ/∂h̃_{l−1} = T_lᵀ(δ_l W_l), where T_lᵀ runs col2im and the pooling's adjoint.

pub(crate) mod im2col;
mod pool;
pub(crate) mod step;

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use bdl_tensor::{ChaCha8Rng, ParamLayout, Seed};

use crate::{Activation, Affine, Cache, Error, LayerFactors, Model, Result, dropout};
use im2col::Unfold;
use pool::AvgPool2;
use step::{FeatureMaps, Flatten, Order, Step};

/// One convolution stage: a k × k convolution (stride 1, zero padding p on every side), the
/// network's activation, then optionally 2×2 average pooling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvSpec {
    /// O, the number of output channels.
    pub channels: usize,
    /// k, the side of the square kernel.
    pub kernel: usize,
    /// p, the zero padding on every side.
    #[serde(default)]
    pub padding: usize,
    /// Whether 2×2 average pooling (stride 2, an odd last row or column dropped) follows.
    #[serde(default)]
    pub pool: bool,
}

impl ConvSpec {
    /// A k × k convolution to `channels` maps, without padding or pooling.
    pub fn new(channels: usize, kernel: usize) -> Self {
        Self {
            channels,
            kernel,
            padding: 0,
            pool: false,
        }
    }

    /// The same stage with zero padding `p`.
    pub fn with_padding(mut self, p: usize) -> Self {
        self.padding = p;
        self
    }

    /// The same stage followed by 2×2 average pooling.
    pub fn pooled(mut self) -> Self {
        self.pool = true;
        self
    }
}

/// The architecture of a CNN: input shape, convolution stages, dense widths, one activation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CnnSpec {
    /// The shape of one input, `[C, H, W]`.
    pub input: [usize; 3],
    /// The convolution stages, first first (at least one).
    pub convs: Vec<ConvSpec>,
    /// The widths of the dense layers after flattening; the last is the number of outputs K.
    pub dense: Vec<usize>,
    /// The activation after every convolution and hidden dense layer (the output is identity).
    pub activation: Activation,
    /// Dropout probability on the hidden dense units (0 for none); used only when a dropout
    /// stream is passed to the forward pass.
    #[serde(default)]
    pub dropout: f64,
}

impl CnnSpec {
    /// LeNet-5 for 28×28 grey images and `classes` outputs: two 5×5 convolutions to 6 and 16
    /// maps (the first padded by 2), each followed by ReLU and 2×2 average pooling, then dense
    /// layers 400 → 120 → 84 → `classes`. (The 1998 original squashes with a scaled tanh: set
    /// `activation` to [`Activation::Tanh`] for that.)
    pub fn lenet5(classes: usize) -> Self {
        Self {
            input: [1, 28, 28],
            convs: vec![
                ConvSpec::new(6, 5).with_padding(2).pooled(),
                ConvSpec::new(16, 5).pooled(),
            ],
            dense: vec![120, 84, classes],
            activation: Activation::Relu,
            dropout: 0.0,
        }
    }

    /// The same spec with dropout probability `p` on the hidden dense units.
    pub fn with_dropout(mut self, p: f64) -> Self {
        self.dropout = p;
        self
    }

    /// The checks that need no geometry (whether kernels and pooling fit their maps is checked
    /// by [`Cnn::new`] as it lays the network out).
    fn check(&self) -> Result<()> {
        let invalid = |what: String| Err(Error::InvalidConfig(what));
        if self.input.contains(&0) {
            return invalid(format!(
                "the input shape must be positive, got {:?}",
                self.input
            ));
        }
        if self.convs.is_empty() || self.convs.iter().any(|c| c.channels == 0) {
            return invalid(format!(
                "a CNN needs at least one convolution, each with channels > 0, got {:?}",
                self.convs
            ));
        }
        if self.dense.is_empty() || self.dense.contains(&0) {
            return invalid(format!(
                "a CNN needs at least one dense layer (the output), of positive widths, got {:?}",
                self.dense
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

/// The numbers of the largest intermediate of one forward pass of a convolutional network over
/// many inputs (4 Mi: 16 MiB in f32), see [`Model::rows_per_pass`].
const PASS_NUMBERS: usize = 1 << 22;

/// A parametrised layer: rows a = T(h̃ of the layer before) through fixed maps T, then
/// z = a Wᵀ + b and h = φ(z), with W viewed as `[width, fan_in]`.
#[derive(Clone, Debug)]
struct Layer {
    /// T, applied in order to the previous layer's output (or the input), one example per row.
    steps: Vec<Step>,
    /// P, the rows per example (output positions of a convolution, 1 for a dense layer).
    positions: usize,
    /// J, the length of a row of a (C·k·k for a convolution).
    fan_in: usize,
    /// O, the output channels or units.
    width: usize,
    activation: Activation,
    /// Whether dropout may follow (hidden dense layers).
    dropout: bool,
}

/// A convolutional network over a flat parameter vector, laid out as the `state_dict` of the
/// equivalent PyTorch `nn.Sequential`.
///
/// Each convolution stage contributes the modules `Conv2d(C, O, k, padding=p)`, the activation
/// (`nn.ReLU()`, `nn.Tanh()`, `nn.Sigmoid()` or `nn.Identity()`) and, when pooled,
/// `AvgPool2d(2)`; then come `nn.Flatten()`, `Linear`, activation, …, `Linear`. A parametrised
/// module at index i owns the segments `{i}.weight` (`[O, C, k, k]` for a convolution,
/// `[out, in]` for a dense layer) and `{i}.bias`. Dropout is not a module here (as in the MLP):
/// a PyTorch model with `nn.Dropout` modules numbers its layers differently. For
/// [`CnnSpec::lenet5`] the module list is
///
/// ```text
/// 0 Conv2d(1, 6, 5, padding=2)   1 ReLU   2 AvgPool2d(2)
/// 3 Conv2d(6, 16, 5)             4 ReLU   5 AvgPool2d(2)
/// 6 Flatten()
/// 7 Linear(400, 120)   8 ReLU   9 Linear(120, 84)   10 ReLU   11 Linear(84, classes)
/// ```
///
/// Inputs are `[N, C, H, W]` or rows `[N, C·H·W]` in the same (c, y, x) order (MNIST rows of
/// 784). Inside, a convolution's output has one row per example and position (y, x), channels as
/// columns: its pre-activations in the [`Cache`] are `[N·P, O]` and its inputs the unfolded
/// patches `[N·P, C·k·k]`.
///
/// ```
/// use bdl_models::{Cnn, Model};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// let cnn = Cnn::lenet5(10).unwrap();
/// assert_eq!(cnn.layout().len(), 61_706);
/// let theta = cnn.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
/// let x = Tensor::zeros((2, 1, 28, 28), DType::F32, &Device::Cpu).unwrap();
/// let cache = cnn.forward_cached(&theta, &x).unwrap();
/// assert_eq!(cache.output.dims(), &[2, 10]);
/// assert_eq!(cache.inputs[0].dims(), &[2 * 28 * 28, 25]); // the unfolded 5×5 patches
/// let grad_f = Tensor::ones((2, 10), DType::F32, &Device::Cpu).unwrap();
/// assert_eq!(cnn.sum_sq_grads(&theta, &cache, &grad_f).unwrap().dims(), &[61_706]);
/// ```
#[derive(Clone, Debug)]
pub struct Cnn {
    spec: CnnSpec,
    layout: ParamLayout,
    layers: Vec<Layer>,
}

impl Cnn {
    /// Builds a CNN, checking that the spec describes a network whose kernels and pooling fit
    /// the maps they act on.
    pub fn new(spec: CnnSpec) -> Result<Self> {
        spec.check()?;
        let [channels, height, width] = spec.input;
        let mut maps = FeatureMaps {
            channels,
            height,
            width,
            order: Order::ChannelsFirst,
        };
        // (module index in the equivalent `nn.Sequential`, weight shape, layer), first first.
        let mut layers: Vec<(usize, Vec<usize>, Layer)> = Vec::new();
        let mut module = 0;
        // The fixed maps between the last layer added and the next.
        let mut pending = Vec::new();
        for (i, conv) in spec.convs.iter().enumerate() {
            let in_stage = |e| match e {
                Error::InvalidConfig(what) => {
                    Error::InvalidConfig(format!("convolution {i}: {what}"))
                }
                e => e,
            };
            let unfold = Unfold::new(maps, conv.kernel, conv.padding, 1).map_err(in_stage)?;
            let (out_height, out_width) = unfold.output_size();
            let (positions, fan_in) = (unfold.positions(), unfold.patch_len());
            let mut steps = std::mem::take(&mut pending);
            steps.push(Step::Unfold(unfold));
            let weight = vec![conv.channels, maps.channels, conv.kernel, conv.kernel];
            let layer = Layer {
                steps,
                positions,
                fan_in,
                width: conv.channels,
                activation: spec.activation,
                dropout: false,
            };
            layers.push((module, weight, layer));
            module += 2; // Conv2d, activation
            maps = FeatureMaps {
                channels: conv.channels,
                height: out_height,
                width: out_width,
                order: Order::ChannelsLast,
            };
            if conv.pool {
                let pool = AvgPool2::new(maps).map_err(in_stage)?;
                maps = pool.output();
                pending.push(Step::Pool(pool));
                module += 1;
            }
        }

        pending.push(Step::Flatten(Flatten::new(maps)));
        module += 1;
        let mut fan_in = maps.len();
        for (i, &width) in spec.dense.iter().enumerate() {
            let hidden = i + 1 < spec.dense.len();
            let layer = Layer {
                steps: std::mem::take(&mut pending),
                positions: 1,
                fan_in,
                width,
                activation: if hidden {
                    spec.activation
                } else {
                    Activation::Identity
                },
                dropout: hidden,
            };
            layers.push((module, vec![width, fan_in], layer));
            module += 2; // Linear, activation
            fan_in = width;
        }

        let layout = ParamLayout::new(layers.iter().flat_map(|(module, weight, layer)| {
            [
                (format!("{module}.weight"), weight.clone()),
                (format!("{module}.bias"), vec![layer.width]),
            ]
        }));
        Ok(Self {
            spec,
            layout,
            layers: layers.into_iter().map(|(_, _, layer)| layer).collect(),
        })
    }

    /// LeNet-5 for 28×28 inputs and `classes` outputs ([`CnnSpec::lenet5`]).
    pub fn lenet5(classes: usize) -> Result<Self> {
        Self::new(CnnSpec::lenet5(classes))
    }

    /// The architecture.
    pub fn spec(&self) -> &CnnSpec {
        &self.spec
    }

    /// The number of parametrised layers (convolutions and dense layers).
    pub fn n_layers(&self) -> usize {
        self.layers.len()
    }

    /// Initial parameters from a seeded stream, as PyTorch's `Conv2d` and `Linear` defaults:
    /// every weight and bias of a layer with fan-in J (C·k·k for a convolution) is drawn from
    /// U(−1/√J, 1/√J).
    pub fn init(&self, seed: Seed, dtype: DType, device: &Device) -> Result<Tensor> {
        let mut rng = seed.fork("cnn-init").rng();
        let parts = self
            .layout
            .segments()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let bound = (self.layers[i / 2].fan_in as f64).sqrt().recip();
                Ok(bdl_tensor::uniform(
                    &mut rng,
                    s.numel(),
                    -bound,
                    bound,
                    dtype,
                    device,
                )?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&parts, 0)?)
    }

    /// Loads parameters saved under `state_dict` names (for example by PyTorch's
    /// `safetensors.torch.save_file(model.state_dict(), path)` for the equivalent
    /// `nn.Sequential`), checking every name and shape. The parameters keep the file's dtype.
    pub fn load_params(&self, path: &Path, device: &Device) -> Result<Tensor> {
        let named = bdl_tensor::load_safetensors(path, device)?;
        Ok(self.layout.flatten(&named, path)?)
    }

    /// Saves parameters under `state_dict` names, with the spec in the JSON sidecar.
    pub fn save(&self, path: &Path, params: &Tensor) -> Result<()> {
        let named = self.layout.named(params)?;
        bdl_tensor::save_safetensors(path, &named, Some(&self.spec))?;
        Ok(())
    }

    /// Loads a model saved by [`Cnn::save`]: the spec from the sidecar, the parameters from the
    /// safetensors file.
    pub fn load(path: &Path, device: &Device) -> Result<(Self, Tensor)> {
        let cnn = Self::new(bdl_tensor::read_sidecar(path)?)?;
        let params = cnn.load_params(path, device)?;
        Ok((cnn, params))
    }

    /// Checks the parameters and the input, and returns the input as rows `[N, C·H·W]` in the
    /// parameters' dtype.
    fn check_input(&self, params: &Tensor, x: &Tensor) -> Result<Tensor> {
        self.layout.check_flat(params)?;
        image_rows(x, self.spec.input, params.dtype(), "CNN input x")
    }
}

/// Images `x` of shape `[C, H, W]` = `input` as rows `[N, C·H·W]` in `dtype`: `x` either
/// `[N, C, H, W]` or already rows; shape and finiteness checked, errors naming `what`.
pub(crate) fn image_rows(
    x: &Tensor,
    input: [usize; 3],
    dtype: DType,
    what: &str,
) -> Result<Tensor> {
    let [c, h, w] = input;
    let n = x.dims().first().copied().unwrap_or(0);
    let rows = match x.dims() {
        [_, dims @ ..] if dims == input => x.reshape((n, c * h * w))?,
        [_, len] if *len == c * h * w => x.clone(),
        _ => {
            return Err(bdl_tensor::Error::ShapeMismatch {
                context: format!("{what} ([N, C, H, W], or rows [N, C·H·W])"),
                expected: vec![n, c, h, w],
                actual: x.dims().to_vec(),
            }
            .into());
        }
    };
    bdl_tensor::check_finite(&rows, what)?;
    Ok(rows.to_dtype(dtype)?)
}

impl Model for Cnn {
    fn layout(&self) -> &ParamLayout {
        &self.layout
    }

    fn n_outputs(&self) -> usize {
        *self.spec.dense.last().expect("checked in Cnn::new")
    }

    /// As many examples as keep the largest unfolded patch matrix (P · J numbers per example)
    /// within 2²² numbers: 213 for LeNet-5, whose first convolution unfolds 784 × 25
    /// numbers per image. Larger passes gain nothing and cost page faults: freshly mapped
    /// buffers of hundreds of megabytes per pass.
    fn rows_per_pass(&self) -> usize {
        let widest = self
            .layers
            .iter()
            .map(|l| l.positions * l.fan_in)
            .max()
            .unwrap_or(1);
        (PASS_NUMBERS / widest).max(1)
    }

    fn forward_cached_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        mut dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Cache> {
        let mut out = self.check_input(params, x)?;
        let n = out.dims()[0];
        let segments = self.layout.split(params)?;
        let (mut inputs, mut pre, mut post, mut masks) = (vec![], vec![], vec![], vec![]);
        for (l, layer) in self.layers.iter().enumerate() {
            let a = layer
                .steps
                .iter()
                .try_fold(out, |u, step| step.apply(&u))?
                .reshape((n * layer.positions, layer.fan_in))?;
            let w = segments[2 * l].reshape((layer.width, layer.fan_in))?;
            let z = a.matmul(&w.t()?)?.broadcast_add(&segments[2 * l + 1])?;
            let h = layer.activation.apply(&z)?;
            let mask = match dropout.as_deref_mut() {
                Some(rng) if layer.dropout && self.spec.dropout > 0.0 => {
                    Some(dropout::inverted_mask(
                        rng,
                        h.shape(),
                        self.spec.dropout,
                        (h.dtype(), h.device()),
                    )?)
                }
                _ => None,
            };
            let masked = match &mask {
                Some(m) => (&h * m)?,
                None => h.clone(),
            };
            out = masked.reshape((n, layer.positions * layer.width))?;
            inputs.push(a);
            pre.push(z);
            post.push(h);
            masks.push(mask);
        }
        Ok(Cache {
            inputs,
            pre,
            post,
            masks,
            indices: Vec::new(),
            output: out,
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
        let segments = self.layout.split(params)?;
        let mut factors = Vec::with_capacity(self.layers.len());
        // ∂ℓ/∂h̃_l, one row per example and position: [N·P, O].
        let mut grad = grad_f.to_dtype(params.dtype())?;
        for (l, layer) in self.layers.iter().enumerate().rev() {
            let mut delta = match &cache.masks[l] {
                Some(m) => (&grad * m)?,
                None => grad.clone(),
            };
            if let Some(d) = layer.activation.derivative(&cache.pre[l], &cache.post[l])? {
                delta = (delta * d)?;
            }
            if l > 0 {
                let w = segments[2 * l].reshape((layer.width, layer.fan_in))?;
                let grad_a = delta
                    .matmul(&w)?
                    .reshape((n, layer.positions * layer.fan_in))?;
                let before = &self.layers[l - 1];
                grad = layer
                    .steps
                    .iter()
                    .rev()
                    .try_fold(grad_a, |g, step| step.adjoint(&g))?
                    .reshape((n * before.positions, before.width))?;
            }
            factors.push(LayerFactors {
                map: Affine::Dense,
                input: cache.inputs[l].clone(),
                delta,
                positions: layer.positions,
                weight_segment: 2 * l,
                bias_segment: Some(2 * l + 1),
            });
        }
        factors.reverse();
        Ok(factors)
    }
}
