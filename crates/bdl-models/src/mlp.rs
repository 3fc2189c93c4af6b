//! The multilayer perceptron.

mod pass;
mod product;
mod slices;
mod tensors;

use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use bdl_tensor::{ChaCha8Rng, Layer, ParamLayout, Seed};

use crate::{Activation, Cache, Error, LayerFactors, LossGradient, Model, Result};

/// The architecture of an MLP: layer widths, one activation per parametrised layer, dropout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MlpSpec {
    /// Widths d₀ (inputs), d₁, …, d_L (outputs).
    pub widths: Vec<usize>,
    /// The activation after each of the L layers (the last is usually identity).
    pub activations: Vec<Activation>,
    /// Dropout probability on the hidden units (0 for none); used only when a dropout stream is
    /// passed to the forward pass.
    #[serde(default)]
    pub dropout: f64,
    /// Whether the layers have biases (true unless a model description says otherwise; a
    /// logistic regression without intercept has none).
    #[serde(default = "with_bias")]
    pub bias: bool,
}

fn with_bias() -> bool {
    true
}

/// a b for a `[N, K]` and b `[K, M]`. With K = 1 (a one-output layer's δ, a one-feature
/// input) the outer product is a broadcast multiplication: the same N·M products, the same
/// bits, at a fifth of the cost of a matrix-multiply call (N = 128, M = 50 here).
fn product(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(if a.dims()[1] == 1 {
        a.broadcast_mul(b)?
    } else {
        a.matmul(b)?
    })
}

/// One dense layer by its widths and activation, as a model description lists it
/// (`{"in": 8, "out": 50, "activation": "relu"}` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenseLayer {
    /// Input width.
    #[serde(rename = "in")]
    pub inputs: usize,
    /// Output width.
    #[serde(rename = "out")]
    pub outputs: usize,
    /// The activation after the layer.
    pub activation: Activation,
}

impl MlpSpec {
    /// The spec of consecutive dense layers, checking that each layer's input width is the
    /// previous layer's output width.
    ///
    /// ```
    /// use bdl_models::{Activation, DenseLayer, MlpSpec};
    /// let layers: Vec<DenseLayer> = serde_json::from_str(
    ///     r#"[{"in": 8, "out": 50, "activation": "relu"}, {"in": 50, "out": 1, "activation": "identity"}]"#,
    /// ).unwrap();
    /// assert_eq!(MlpSpec::from_layers(&layers).unwrap(), MlpSpec::new(&[8, 50, 1], Activation::Relu));
    /// ```
    pub fn from_layers(layers: &[DenseLayer]) -> Result<Self> {
        let first = layers
            .first()
            .ok_or_else(|| Error::InvalidConfig("an MLP needs at least one layer".into()))?;
        let mut widths = vec![first.inputs];
        for (l, layer) in layers.iter().enumerate() {
            if layer.inputs != widths[l] {
                return Err(Error::InvalidConfig(format!(
                    "layer {l} takes {} inputs but the previous layer gives {}",
                    layer.inputs, widths[l]
                )));
            }
            widths.push(layer.outputs);
        }
        Ok(Self {
            widths,
            activations: layers.iter().map(|l| l.activation).collect(),
            dropout: 0.0,
            bias: true,
        })
    }

    /// A spec with the same hidden activation everywhere and an identity output.
    pub fn new(widths: &[usize], hidden: Activation) -> Self {
        let n_layers = widths.len().saturating_sub(1);
        let activations = (0..n_layers)
            .map(|l| {
                if l + 1 == n_layers {
                    Activation::Identity
                } else {
                    hidden
                }
            })
            .collect();
        Self {
            widths: widths.to_vec(),
            activations,
            dropout: 0.0,
            bias: true,
        }
    }

    /// The same spec without biases: z_l = a_l W_lᵀ.
    pub fn without_bias(mut self) -> Self {
        self.bias = false;
        self
    }

    /// The same spec with dropout probability `p` on the hidden units.
    pub fn with_dropout(mut self, p: f64) -> Self {
        self.dropout = p;
        self
    }
}

/// A multilayer perceptron z_l = a_l W_lᵀ + b_l, a_{l+1} = φ_l(z_l), f = a_{L+1}, over a flat
/// parameter vector in PyTorch `nn.Sequential(Linear, act, Linear, …)` order: layer l's weight is
/// the segment `{2l}.weight` of shape `[d_{l+1}, d_l]`, its bias `{2l}.bias`.
///
/// ```
/// use bdl_models::{Activation, Mlp, MlpSpec, Model};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// let mlp = Mlp::new(MlpSpec::new(&[3, 16, 2], Activation::Tanh)).unwrap();
/// let theta = mlp.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
/// let x = Tensor::ones((5, 3), DType::F32, &Device::Cpu).unwrap();
/// let cache = mlp.forward_cached(&theta, &x).unwrap();
/// assert_eq!(cache.output.dims(), &[5, 2]);
/// // The Jacobian of both outputs w.r.t. three chosen parameters: 5·2 rows, 3 columns.
/// let j = mlp.jacobian(&theta, &cache, &[0, 50, 97]).unwrap();
/// assert_eq!(j.dims(), &[10, 3]);
/// ```
#[derive(Clone, Debug)]
pub struct Mlp {
    spec: MlpSpec,
    layout: ParamLayout,
    /// The layout's layers, first first (looked up once: every pass needs them).
    layers: Vec<Layer>,
}

impl Mlp {
    /// Builds an MLP, checking that the spec describes a network.
    pub fn new(spec: MlpSpec) -> Result<Self> {
        if spec.widths.len() < 2 || spec.widths.contains(&0) {
            return Err(Error::InvalidConfig(format!(
                "an MLP needs at least two positive widths, got {:?}",
                spec.widths
            )));
        }
        if spec.activations.len() != spec.widths.len() - 1 {
            return Err(Error::InvalidConfig(format!(
                "{} layers need {} activations, got {}",
                spec.widths.len() - 1,
                spec.widths.len() - 1,
                spec.activations.len()
            )));
        }
        if !(0.0..1.0).contains(&spec.dropout) {
            return Err(Error::InvalidConfig(format!(
                "dropout probability must lie in [0, 1), got {}",
                spec.dropout
            )));
        }
        let bias = spec.bias;
        let layout = ParamLayout::new(spec.widths.windows(2).enumerate().flat_map(|(l, w)| {
            let weight = (format!("{}.weight", 2 * l), vec![w[1], w[0]]);
            let bias = bias.then(|| (format!("{}.bias", 2 * l), vec![w[1]]));
            std::iter::once(weight).chain(bias)
        }));
        let layers = layout.layers();
        Ok(Self {
            spec,
            layout,
            layers,
        })
    }

    /// The architecture.
    pub fn spec(&self) -> &MlpSpec {
        &self.spec
    }

    /// The number of parametrised layers L.
    pub fn n_layers(&self) -> usize {
        self.spec.activations.len()
    }

    /// Initial parameters from a seeded stream, as PyTorch's `nn.Linear` default: every weight
    /// and bias of a layer with fan-in d is drawn from U(−1/√d, 1/√d).
    pub fn init(&self, seed: Seed, dtype: DType, device: &Device) -> Result<Tensor> {
        let mut rng = seed.fork("mlp-init").rng();
        let segments = self.layout.segments();
        let parts = self
            .layout
            .layers()
            .iter()
            .enumerate()
            .flat_map(|(l, layer)| {
                let bound = (self.spec.widths[l] as f64).sqrt().recip();
                std::iter::once(layer.weight)
                    .chain(layer.bias)
                    .map(move |seg| (seg, bound))
            })
            .map(|(seg, bound)| {
                let n = segments[seg].numel();
                Ok(bdl_tensor::uniform(
                    &mut rng, n, -bound, bound, dtype, device,
                )?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&parts, 0)?)
    }

    /// [`init`](Self::init) conditioned on a live network: every hidden unit active (φ(z) ≠ 0)
    /// at one row of `x` at least. Layer by layer, the incoming weights and bias of each unit
    /// dead on `x` are drawn again from the same U(−1/√d, 1/√d), from the stream
    /// `seed.fork("mlp-init-live")`, until it is alive; a unit still dead after
    /// [`LIVE_INIT_DRAWS`](Self::LIVE_INIT_DRAWS) draws is an [`Error::DeadUnit`].
    ///
    /// Why: with ReLU and few input dimensions the default initialisation leaves a sizeable
    /// share of units inactive on every training input (for the 1-50-50-1 toy regression, 4–11
    /// of the first layer's 50 and 10–15 of the second's), and such a unit never receives a
    /// gradient from the data, so it is still dead at the MAP.
    ///
    /// ```
    /// use bdl_models::{Activation, Mlp, MlpSpec, Model};
    /// use bdl_tensor::Seed;
    /// use candle_core::{DType, Device, Tensor};
    /// let mlp = Mlp::new(MlpSpec::new(&[1, 50, 50, 1], Activation::Relu)).unwrap();
    /// let x = Tensor::from_vec((0..40).map(|i| i as f64 / 20.0 - 1.0).collect::<Vec<_>>(), (40, 1), &Device::Cpu).unwrap();
    /// let theta = mlp.init_live(Seed(0), &x).unwrap();
    /// let dead = mlp.forward_cached(&theta, &x).unwrap().dead_units().unwrap();
    /// assert!(dead.iter().all(|layer| layer.is_empty()));
    /// ```
    pub fn init_live(&self, seed: Seed, x: &Tensor) -> Result<Tensor> {
        let (dtype, device) = (x.dtype(), x.device());
        let mut theta = bdl_tensor::to_f64_vec(&self.init(seed, dtype, device)?)?;
        let mut rng = seed.fork("mlp-init-live").rng();
        for layer in 0..self.n_layers() - 1 {
            let bound = (self.spec.widths[layer] as f64).sqrt().recip();
            for draw in 0.. {
                let params =
                    Tensor::from_vec(theta.clone(), theta.len(), device)?.to_dtype(dtype)?;
                let dead = self
                    .forward_cached(&params, x)?
                    .dead_units()?
                    .swap_remove(layer);
                let Some(&unit) = dead.first() else { break };
                if draw == Self::LIVE_INIT_DRAWS {
                    return Err(Error::DeadUnit {
                        layer,
                        unit,
                        examples: x.dims()[0],
                        draws: draw,
                    });
                }
                for unit in dead {
                    let node = self.layout.node(layer, unit);
                    let fresh = bdl_tensor::uniform(
                        &mut rng,
                        node.len(),
                        -bound,
                        bound,
                        DType::F64,
                        &Device::Cpu,
                    )?;
                    for (i, v) in node.into_iter().zip(bdl_tensor::to_f64_vec(&fresh)?) {
                        theta[i] = v;
                    }
                }
            }
        }
        let n = theta.len();
        Ok(Tensor::from_vec(theta, n, device)?.to_dtype(dtype)?)
    }

    /// The most redraws of a dead unit in [`init_live`](Self::init_live).
    pub const LIVE_INIT_DRAWS: usize = 1000;

    /// Loads parameters saved under `state_dict` names (for example by PyTorch's
    /// `safetensors.torch.save_file(model.state_dict(), path)`), checking every name and shape.
    /// The parameters keep the file's dtype.
    pub fn load_params(&self, path: &std::path::Path, device: &Device) -> Result<Tensor> {
        let named = bdl_tensor::load_safetensors(path, device)?;
        Ok(self.layout.flatten(&named, path)?)
    }

    /// Saves parameters under `state_dict` names, with the spec in the JSON sidecar.
    pub fn save(&self, path: &std::path::Path, params: &Tensor) -> Result<()> {
        let named = self.layout.named(params)?;
        bdl_tensor::save_safetensors(path, &named, Some(&self.spec))?;
        Ok(())
    }

    /// Loads a model saved by [`Mlp::save`]: the spec from the sidecar, the parameters from the
    /// safetensors file.
    pub fn load(path: &std::path::Path, device: &Device) -> Result<(Self, Tensor)> {
        let mlp = Self::new(bdl_tensor::read_sidecar(path)?)?;
        let params = mlp.load_params(path, device)?;
        Ok((mlp, params))
    }

    fn check_input(&self, params: &Tensor, x: &Tensor) -> Result<Tensor> {
        self.layout.check_flat(params)?;
        let d_in = self.spec.widths[0];
        if x.rank() != 2 || x.dims()[1] != d_in {
            return Err(bdl_tensor::Error::ShapeMismatch {
                context: "MLP input x".to_owned(),
                expected: vec![x.dims().first().copied().unwrap_or(0), d_in],
                actual: x.dims().to_vec(),
            }
            .into());
        }
        bdl_tensor::check_finite(x, "MLP input x")?;
        Ok(x.to_dtype(params.dtype())?)
    }
}

impl Mlp {
    /// ∂ℓ_n/∂x_n for every example, shape `[N, inputs]`, when `grad_f` holds the output
    /// gradients r_n = ∂ℓ_n/∂f_n: the backward pass carried one step past the first layer,
    /// δ_1 W_1 (a critic's ∂Q/∂a in DDPG, with the action among the inputs). Dropout masks of
    /// the cache are followed, as in [`Model::backward`].
    ///
    /// ```
    /// use bdl_models::{Activation, Mlp, MlpSpec, Model};
    /// use candle_core::{Device, Tensor};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // f(x) = 2x₁ − x₂ + 0.5: the input gradient of ℓ = f is (2, −1) at every x.
    /// let mlp = Mlp::new(MlpSpec::new(&[2, 1], Activation::Identity))?;
    /// let theta = Tensor::new(&[2.0f64, -1.0, 0.5], &Device::Cpu)?;
    /// let x = Tensor::new(&[[0.3f64, 4.0], [-1.0, 2.0]], &Device::Cpu)?;
    /// let cache = mlp.forward_cached(&theta, &x)?;
    /// let r = Tensor::ones((2, 1), candle_core::DType::F64, &Device::Cpu)?;
    /// let dx = mlp.input_gradient(&theta, &cache, &r)?.to_vec2::<f64>()?;
    /// assert_eq!(dx, [[2.0, -1.0], [2.0, -1.0]]);
    /// # Ok(()) }
    /// ```
    pub fn input_gradient(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
    ) -> Result<Tensor> {
        let factors = self.factors(params, cache, grad_f)?;
        let first = &self.layout.split(params)?[self.layers[0].weight];
        product(&factors[0].delta, first)
    }
}

/// How a pass runs: by the slice passes ([`pass`]) for f32 and f64 on the CPU, by candle's tensor
/// operations for other dtypes and devices, and whenever a tensor records candle's autograd graph
/// (a `Var` among the parameters or inputs), so that gradients flow through the network as
/// through any candle expression.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compute {
    F32,
    F64,
    Tensors,
}

impl Compute {
    fn of(params: &Tensor, other: &Tensor) -> Self {
        if params.track_op() || other.track_op() {
            return Self::Tensors;
        }
        match (bdl_tensor::host_kernels(params.device()), params.dtype()) {
            (true, DType::F32) => Self::F32,
            (true, DType::F64) => Self::F64,
            _ => Self::Tensors,
        }
    }
}

impl Mlp {
    /// An error unless `grad_f` is `[n, K]`.
    fn check_output_shape(&self, n: usize, grad_f: &Tensor) -> Result<()> {
        Ok(bdl_tensor::check_shape(
            grad_f,
            &[n, self.n_outputs()],
            "output gradient ∂ℓ/∂f",
        )?)
    }

    /// Σ_n g_n, or with `squared` Σ_n g_n∘g_n, from a cache.
    fn gradient_from_cache(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
        squared: bool,
    ) -> Result<Tensor> {
        self.check_output_shape(cache.n_examples, grad_f)?;
        match Compute::of(params, grad_f) {
            Compute::F32 => self.slice_gradient::<f32>(params, cache, grad_f, squared),
            Compute::F64 => self.slice_gradient::<f64>(params, cache, grad_f, squared),
            Compute::Tensors => {
                type Product = fn(&LayerFactors) -> Result<Tensor>;
                let (weight, bias): (Product, Product) = if squared {
                    (LayerFactors::weight_sum_sq, LayerFactors::bias_sum_sq)
                } else {
                    (LayerFactors::weight_grad, LayerFactors::bias_grad)
                };
                let factors = self.tensor_factors(params, cache, grad_f)?;
                crate::model::assemble(&self.layout, &factors, weight, bias)
            }
        }
    }
}

impl Model for Mlp {
    fn layout(&self) -> &ParamLayout {
        &self.layout
    }

    fn n_outputs(&self) -> usize {
        *self.spec.widths.last().expect("checked in Mlp::new")
    }

    /// Rows whose widest layer output holds at most 2¹³ numbers (163 rows of a width-50 layer):
    /// such a pass stays in the processor's second-level cache, where one over thousands of
    /// rows allocates megabytes afresh each time and spends a tenth of a training run in page
    /// faults.
    fn rows_per_pass(&self) -> usize {
        const PASS_NUMBERS: usize = 1 << 13;
        let widest = self.spec.widths[1..].iter().max().copied().unwrap_or(1);
        (PASS_NUMBERS / widest).max(1)
    }

    /// f(x; θ) in passes of at most [`rows_per_pass`](Model::rows_per_pass) rows. The slice
    /// passes compute every row alone, so the output is the same as from one pass.
    fn forward(&self, params: &Tensor, x: &Tensor) -> Result<Tensor> {
        let n = x.dims().first().copied().unwrap_or(0);
        let rows = self.rows_per_pass();
        if n <= rows {
            return self.forward_with(params, x, None);
        }
        let parts = (0..n)
            .step_by(rows)
            .map(|start| self.forward_with(params, &x.narrow(0, start, rows.min(n - start))?, None))
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&parts, 0)?)
    }

    fn forward_cached_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Cache> {
        let x = self.check_input(params, x)?;
        match Compute::of(params, &x) {
            Compute::F32 => self.slice_forward_cache::<f32>(params, x, dropout),
            Compute::F64 => self.slice_forward_cache::<f64>(params, x, dropout),
            Compute::Tensors => self.tensor_forward(params, x, dropout),
        }
    }

    /// By the slice passes without a cache when they apply (the layers' buffers go back to the
    /// thread's pool), the output of [`forward_cached_with`](Model::forward_cached_with) to the
    /// bit.
    fn forward_with(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
    ) -> Result<Tensor> {
        let x = self.check_input(params, x)?;
        match Compute::of(params, &x) {
            Compute::F32 => self.slice_output::<f32>(params, &x, dropout),
            Compute::F64 => self.slice_output::<f64>(params, &x, dropout),
            Compute::Tensors => Ok(self.tensor_forward(params, x, dropout)?.output),
        }
    }

    fn factors(
        &self,
        params: &Tensor,
        cache: &Cache,
        grad_f: &Tensor,
    ) -> Result<Vec<LayerFactors>> {
        self.check_output_shape(cache.n_examples, grad_f)?;
        match Compute::of(params, grad_f) {
            Compute::F32 => self.slice_factors::<f32>(params, cache, grad_f),
            Compute::F64 => self.slice_factors::<f64>(params, cache, grad_f),
            Compute::Tensors => self.tensor_factors(params, cache, grad_f),
        }
    }

    fn backward(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor) -> Result<Tensor> {
        self.gradient_from_cache(params, cache, grad_f, false)
    }

    fn sum_sq_grads(&self, params: &Tensor, cache: &Cache, grad_f: &Tensor) -> Result<Tensor> {
        self.gradient_from_cache(params, cache, grad_f, true)
    }

    /// By the slice passes without a cache when they apply (the sums agree with
    /// [`backward`](Model::backward) and [`sum_sq_grads`](Model::sum_sq_grads) after
    /// [`forward_cached_with`](Model::forward_cached_with) exactly); otherwise as those three.
    fn loss_gradient<E: From<Error>>(
        &self,
        params: &Tensor,
        x: &Tensor,
        dropout: Option<&mut ChaCha8Rng>,
        output_gradient: impl FnOnce(&Tensor) -> std::result::Result<Tensor, E>,
        squares: bool,
    ) -> std::result::Result<LossGradient, E> {
        let x = self.check_input(params, x)?;
        match Compute::of(params, &x) {
            Compute::F32 => {
                self.slice_loss_gradient::<f32, E>(params, &x, dropout, output_gradient, squares)
            }
            Compute::F64 => {
                self.slice_loss_gradient::<f64, E>(params, &x, dropout, output_gradient, squares)
            }
            Compute::Tensors => crate::model::loss_gradient_by_cache(
                self,
                params,
                &x,
                dropout,
                output_gradient,
                squares,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For K = 1 the broadcast product gives the matrix product's bits (one rounded product
    /// per entry either way), in both dtypes; for K > 1 it is the matrix product.
    #[test]
    fn the_outer_product_is_the_matrix_product() {
        let mut rng = Seed(4).rng();
        for dtype in [DType::F32, DType::F64] {
            for k in [1, 3] {
                let a =
                    bdl_tensor::normal(&mut rng, (37, k), 0.0, 1.0, dtype, &Device::Cpu).unwrap();
                let b =
                    bdl_tensor::normal(&mut rng, (k, 11), 0.0, 1.0, dtype, &Device::Cpu).unwrap();
                let bits = |t: Tensor| -> Vec<u64> {
                    let v = bdl_tensor::to_f64_vec(&t.flatten_all().unwrap()).unwrap();
                    v.iter().map(|x| x.to_bits()).collect()
                };
                assert_eq!(bits(product(&a, &b).unwrap()), bits(a.matmul(&b).unwrap()));
            }
        }
    }

    /// The forward pass without a cache gives the cache's output to the bit, in both dtypes,
    /// with dropout (the same masks from the same stream, which both leave at the same place)
    /// and without; `forward` in bounded passes (more rows than one pass takes) gives the same.
    #[test]
    fn the_forward_pass_without_a_cache_is_the_caches_output() {
        let spec = MlpSpec {
            widths: vec![5, 17, 9, 3],
            activations: vec![Activation::Relu, Activation::Tanh, Activation::Identity],
            dropout: 0.3,
            bias: true,
        };
        let mlp = Mlp::new(spec).unwrap();
        let bits = |t: &Tensor| -> Vec<u64> {
            let v = bdl_tensor::to_f64_vec(&t.flatten_all().unwrap()).unwrap();
            v.iter().map(|x| x.to_bits()).collect()
        };
        for dtype in [DType::F32, DType::F64] {
            let theta = mlp.init(Seed(1), dtype, &Device::Cpu).unwrap();
            let n = 2 * mlp.rows_per_pass() + 7;
            let x = bdl_tensor::normal(&mut Seed(2).rng(), (n, 5), 0.0, 1.0, dtype, &Device::Cpu)
                .unwrap();
            let (mut a, mut b) = (Seed(3).rng(), Seed(3).rng());
            let with_cache = mlp.forward_cached_with(&theta, &x, Some(&mut a)).unwrap();
            let without = mlp.forward_with(&theta, &x, Some(&mut b)).unwrap();
            assert_eq!(bits(&without), bits(&with_cache.output), "{dtype:?}");
            assert_eq!(a.get_word_pos(), b.get_word_pos());
            let plain = mlp.forward_cached(&theta, &x).unwrap().output;
            assert_eq!(
                bits(&mlp.forward_with(&theta, &x, None).unwrap()),
                bits(&plain)
            );
            assert_eq!(bits(&mlp.forward(&theta, &x).unwrap()), bits(&plain));
        }
    }

    /// The slice passes against candle's operations, on a network with every activation, a
    /// one-output and a many-output layer, and dropout: the cache, the deltas, Σ g and Σ g∘g.
    /// Both take the same sums in different orders, so they agree to rounding: 1e-12 relative
    /// (plus 1e-13 absolute for entries near zero) in f64, 1e-4 in f32 (two orders above the
    /// f32 differences seen, about 1e-6).
    #[test]
    fn the_slice_passes_are_candles_operations() {
        let spec = MlpSpec {
            widths: vec![5, 17, 9, 8, 3],
            activations: vec![
                Activation::Relu,
                Activation::Tanh,
                Activation::Sigmoid,
                Activation::Identity,
            ],
            dropout: 0.3,
            bias: true,
        };
        let mlp = Mlp::new(spec).unwrap();
        for (dtype, rtol) in [(DType::F64, 1e-12), (DType::F32, 1e-4)] {
            let theta = mlp.init(Seed(1), dtype, &Device::Cpu).unwrap();
            let mut rng = Seed(2).rng();
            let x = bdl_tensor::normal(&mut rng, (37, 5), 0.0, 1.0, dtype, &Device::Cpu).unwrap();
            let r = bdl_tensor::normal(&mut rng, (37, 3), 0.0, 1.0, dtype, &Device::Cpu).unwrap();
            let close = |a: &Tensor, b: &Tensor, what: &str| {
                let (a, b) = (
                    bdl_tensor::to_f64_vec(a).unwrap(),
                    bdl_tensor::to_f64_vec(b).unwrap(),
                );
                assert_eq!(a.len(), b.len(), "{what}");
                for (i, (a, b)) in a.iter().zip(&b).enumerate() {
                    let tol = rtol * b.abs().max(1e-1);
                    assert!((a - b).abs() <= tol, "{what} {dtype:?} [{i}]: {a} vs {b}");
                }
            };
            let slices = mlp
                .forward_cached_with(&theta, &x, Some(&mut Seed(3).rng()))
                .unwrap();
            let tensors = mlp
                .tensor_forward(&theta, x.clone(), Some(&mut Seed(3).rng()))
                .unwrap();
            assert!(slices.masks.iter().take(3).all(Option::is_some));
            for l in 0..4 {
                close(&slices.pre[l], &tensors.pre[l], "z");
                close(&slices.post[l], &tensors.post[l], "h");
            }
            close(&slices.output, &tensors.output, "f");
            let ours = mlp.factors(&theta, &slices, &r).unwrap();
            let reference = mlp.tensor_factors(&theta, &slices, &r).unwrap();
            for (a, b) in ours.iter().zip(&reference) {
                close(&a.delta, &b.delta, "δ");
            }
            type Product = fn(&LayerFactors) -> Result<Tensor>;
            let assembled = |w: Product, b: Product| {
                crate::model::assemble(&mlp.layout, &reference, w, b).unwrap()
            };
            close(
                &mlp.backward(&theta, &slices, &r).unwrap(),
                &assembled(LayerFactors::weight_grad, LayerFactors::bias_grad),
                "Σ g",
            );
            close(
                &mlp.sum_sq_grads(&theta, &slices, &r).unwrap(),
                &assembled(LayerFactors::weight_sum_sq, LayerFactors::bias_sum_sq),
                "Σ g∘g",
            );
        }
    }

    /// The loss gradient without a cache is the cache's backward pass to the bit, with and
    /// without dropout (the same masks from the same stream), in both dtypes; and the default
    /// implementation (a `Var`'s tensor passes) agrees to rounding.
    #[test]
    fn the_loss_gradient_is_the_backward_pass_of_the_cache() {
        let spec = MlpSpec::new(&[4, 11, 6, 2], Activation::Tanh).with_dropout(0.25);
        let mlp = Mlp::new(spec).unwrap();
        for dtype in [DType::F64, DType::F32] {
            let theta = mlp.init(Seed(5), dtype, &Device::Cpu).unwrap();
            let mut rng = Seed(6).rng();
            let x = bdl_tensor::normal(&mut rng, (23, 4), 0.0, 1.0, dtype, &Device::Cpu).unwrap();
            let y = bdl_tensor::normal(&mut rng, (23, 2), 0.0, 1.0, dtype, &Device::Cpu).unwrap();
            let residual = |f: &Tensor| -> Result<Tensor> { Ok((f - &y)?) };
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for seed in [None, Some(Seed(7))] {
                let mut stream = seed.map(Seed::rng);
                let ours = mlp
                    .loss_gradient(&theta, &x, stream.as_mut(), residual, true)
                    .unwrap();
                let mut stream = seed.map(Seed::rng);
                let cache = mlp
                    .forward_cached_with(&theta, &x, stream.as_mut())
                    .unwrap();
                let r = residual(&cache.output).unwrap();
                let sum =
                    bdl_tensor::to_f64_vec(&mlp.backward(&theta, &cache, &r).unwrap()).unwrap();
                let sq =
                    bdl_tensor::to_f64_vec(&mlp.sum_sq_grads(&theta, &cache, &r).unwrap()).unwrap();
                assert_eq!(bits(&ours.sum), bits(&sum), "{dtype:?} {seed:?}");
                assert_eq!(
                    bits(ours.sum_sq.as_deref().unwrap()),
                    bits(&sq),
                    "{dtype:?} {seed:?}"
                );
            }
            let var = candle_core::Var::from_tensor(&theta).unwrap();
            let by_tensors = mlp
                .loss_gradient(var.as_tensor(), &x, None, residual, false)
                .unwrap();
            let by_slices = mlp
                .loss_gradient(&theta, &x, None, residual, false)
                .unwrap();
            assert!(by_tensors.sum_sq.is_none());
            let tol = if dtype == DType::F64 { 1e-12 } else { 1e-4 };
            for (a, b) in by_slices.sum.iter().zip(&by_tensors.sum) {
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1e-1),
                    "{dtype:?}: {a} vs {b}"
                );
            }
        }
    }
}
