//! What several fits on one problem share: each SWAG run's diagonal variances by its
//! configuration, so that a SWAG fit and a Wasserstein rule ranking weights by SWAG variances of
//! the same configuration train SWAG once between them.

use std::sync::Mutex;

use bdl_baselines::SwagConfig;

/// The SWAG runs of the fits that were given it ([`Problem::with_shared`](crate::Problem::with_shared)),
/// each a configuration and its diagonal variances σ_d² over every parameter. A run is the same
/// computation whichever fit asks (every SWAG run is seeded by its configuration), so a later
/// fit takes the kept variances in place of training SWAG again.
///
/// ```
/// use bdl_likelihoods::Likelihood;
/// use bdl_methods::{MethodSpec, Problem, SharedFits, fit};
/// use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let x = Tensor::arange(0u32, 16, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.125, -1.0)?.unsqueeze(1)?;
/// let y = (x.clone() * 3.0)?.sin()?;
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 8, 1], Activation::Tanh))?);
/// let theta = net.init(Seed(0), DType::F32, &Device::Cpu)?;
/// let shared = SharedFits::default();
/// let problem = Problem::new(&net, &theta, Likelihood::Gaussian { sigma: 0.3 }, &x, &y)
///     .with_shared(&shared);
/// let swag = r#"{"batch_size": 8, "snapshots": 3, "rank": 2}"#;
/// let specs: Vec<MethodSpec> = serde_json::from_str(&format!(r#"[
///     {{"method": "swag", "config": {swag}}},
///     {{"method": "laplace", "config": {{"subnetwork": {{"rule": "wasserstein", "size": 5,
///         "variances": {{"swag": {swag}}}}}}}}}
/// ]"#))?;
/// for spec in &specs {
///     fit(spec, &problem)?;
/// }
/// assert_eq!(shared.swag_runs(), 1, "the subnetwork ranked the SWAG fit's variances");
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct SharedFits {
    swag: Mutex<Vec<(SwagConfig, Vec<f64>)>>,
}

impl SharedFits {
    /// How many SWAG runs it holds.
    pub fn swag_runs(&self) -> usize {
        self.lock().len()
    }

    /// The variances of the SWAG run of `config`, if one was kept.
    pub(crate) fn swag_variances(&self, config: &SwagConfig) -> Option<Vec<f64>> {
        (self.lock().iter())
            .find(|(kept, _)| kept == config)
            .map(|(_, v)| v.clone())
    }

    /// Keeps the variances of the SWAG run of `config` (over every parameter).
    pub(crate) fn keep_swag(&self, config: &SwagConfig, variances: Vec<f64>) {
        let mut runs = self.lock();
        if !runs.iter().any(|(kept, _)| kept == config) {
            runs.push((config.clone(), variances));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(SwagConfig, Vec<f64>)>> {
        // A panic in another fit leaves the kept runs as they were: still valid.
        self.swag
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
