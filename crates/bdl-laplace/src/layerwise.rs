//! One prior precision per layer, chosen by the Laplace marginal likelihood.
//!
//! With λ_l on the parameters θ_l of layer l (its weights and bias) the Laplace log evidence of a
//! posterior over S is log Z = log p(D | θ̂) − ½ [log det(H_S + Λ) − Σ_l D_l log λ_l +
//! Σ_l λ_l ‖θ̂_l‖²], whose derivative in λ_l vanishes where
//! D_l/λ_l = tr Σ_ll + ‖θ̂_l‖², Σ = (H_S + Λ)⁻¹. MacKay's fixed point iterates
//! λ_l ← γ_l / ‖θ̂_l‖² with γ_l = D_l − λ_l tr Σ_ll (the layer's well-determined parameters), one
//! Cholesky factor of H_S + Λ a step, until no λ_l moves by more than a relative 10⁻⁸.

use bdl_inference::{InvalidParam, MapEstimate, Posterior as _, Validate};
use bdl_models::Model as _;
use candle_core::Tensor;

use crate::{LaplaceConfig, PriorPrecision, Result, SubnetLaplace};

/// What [`layerwise_prior`] found.
#[derive(Debug)]
pub struct LayerwisePrior {
    /// λ_l of every layer (weights and bias together), in flat order.
    pub lambdas: Vec<f64>,
    /// The posterior at those precisions.
    pub posterior: SubnetLaplace,
    /// log Z − log p(D | θ̂) after every step (non-decreasing in practice).
    pub log_evidence: Vec<f64>,
    /// Whether the fixed point was reached within the steps allowed.
    pub converged: bool,
}

/// Per-layer prior precisions for the Laplace over `subset` at `map` by the marginal
/// likelihood on the training inputs `x`, starting from λ = `initial` everywhere, at most
/// `max_steps` steps. Layers without a parameter in `subset` have no λ of their own (they keep
/// `initial`, unused).
///
/// ```
/// use bdl_inference::{MapConfig, Validate, train_map};
/// use bdl_laplace::layerwise_prior;
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh))?);
/// let x = Tensor::arange(0u32, 40, &Device::Cpu)?.to_dtype(DType::F64)?.affine(0.05, -1.0)?.unsqueeze(1)?;
/// let y = (x.clone() * 3.0)?.sin()?;
/// let theta0 = net.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let config = MapConfig { learning_rate: 1e-2, epochs: 300, batch_size: 40, ..MapConfig::default() }.check()?;
/// let map = train_map(&net, &theta0, Likelihood::Gaussian { sigma: 0.1 }, &x, &y, &config)?.estimate;
/// let all: Vec<usize> = (0..net.layout().len()).collect();
/// let tuned = layerwise_prior(&map, &x, all, 1.0, 200)?;
/// assert_eq!(tuned.lambdas.len(), 2);
/// assert!(tuned.converged);
/// # Ok(()) }
/// ```
pub fn layerwise_prior(
    map: &MapEstimate,
    x: &Tensor,
    subset: Vec<usize>,
    initial: f64,
    max_steps: usize,
) -> Result<LayerwisePrior> {
    bdl_inference::positive("initial", initial)?;
    bdl_inference::at_least_one("max_steps", max_steps)?;
    let layout = map.network().layout();
    let d = layout.len();
    // The layer of every flat parameter.
    let mut layer_of = vec![usize::MAX; d];
    let segments = layout.segments();
    let layers = layout.layers();
    for (l, layer) in layers.iter().enumerate() {
        for seg in std::iter::once(layer.weight).chain(layer.bias) {
            layer_of[segments[seg].range()].fill(l);
        }
    }
    if let Some(&i) = subset
        .iter()
        .find(|&&i| i >= d || layer_of[i] == usize::MAX)
    {
        return Err(InvalidParam::new(
            "subset",
            i,
            "indices of parameters in a weight layer or its bias",
        )
        .into());
    }
    let theta = bdl_tensor::to_f64_vec(map.theta())?;
    let n_layers = layers.len();
    let (mut count, mut norm) = (vec![0.0; n_layers], vec![0.0; n_layers]);
    for &i in &subset {
        count[layer_of[i]] += 1.0;
        norm[layer_of[i]] += theta[i] * theta[i];
    }
    let ggn = crate::ggn(
        map.network(),
        map.theta(),
        &map.likelihood(),
        x,
        &subset,
        LaplaceConfig::default().batch_size,
    )?;
    let at = |lambdas: &[f64]| -> Result<SubnetLaplace> {
        let mut per_parameter = vec![initial; d];
        for (i, l) in per_parameter.iter_mut().enumerate() {
            if layer_of[i] != usize::MAX {
                *l = lambdas[layer_of[i]];
            }
        }
        let config = LaplaceConfig {
            prior: PriorPrecision::PerParameter(per_parameter),
            ..LaplaceConfig::default()
        }
        .check()?;
        SubnetLaplace::from_ggn(map.clone(), subset.clone(), ggn.clone(), &config)
    };
    let mut lambdas = vec![initial; n_layers];
    let mut post = at(&lambdas)?;
    let mut log_evidence = vec![post.log_marginal_likelihood(0.0)];
    let mut converged = false;
    for _ in 0..max_steps {
        let variances = post.marginal_variances();
        let mut trace = vec![0.0; n_layers];
        for (k, &i) in subset.iter().enumerate() {
            trace[layer_of[i]] += variances[k];
        }
        let next: Vec<f64> = (0..n_layers)
            .map(|l| {
                if count[l] == 0.0 || norm[l] == 0.0 {
                    return lambdas[l];
                }
                let gamma = count[l] - lambdas[l] * trace[l];
                (gamma / norm[l]).max(f64::MIN_POSITIVE)
            })
            .collect();
        let moved = next
            .iter()
            .zip(&lambdas)
            .map(|(a, b)| ((a - b) / b).abs())
            .fold(0.0, f64::max);
        lambdas = next;
        post = at(&lambdas)?;
        log_evidence.push(post.log_marginal_likelihood(0.0));
        if moved < 1e-8 {
            converged = true;
            break;
        }
    }
    Ok(LayerwisePrior {
        lambdas,
        posterior: post,
        log_evidence,
        converged,
    })
}
