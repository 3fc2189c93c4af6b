//! JSON configurations, read into their validated form (`Valid<C>` validates as it
//! deserialises), as an experiment file would give them.
use bdl_inference::{MapConfig, PredictOptions, Valid};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = serde_json::from_slice::<Valid<MapConfig>>(data);
        let _ = serde_json::from_slice::<Valid<PredictOptions>>(data);
        let _ = serde_json::from_slice::<Valid<bdl_mcmc::ChainConfig>>(data);
        let _ = serde_json::from_slice::<bdl_mcmc::Keep>(data);
        let _ = serde_json::from_slice::<Valid<bdl_laplace::LaplaceConfig>>(data);
        let _ = serde_json::from_slice::<Valid<bdl_variational::VariationalConfig>>(data);
        let _ = serde_json::from_slice::<Valid<bdl_baselines::SwagConfig>>(data);
        let _ = serde_json::from_slice::<Valid<bdl_baselines::EnsembleConfig>>(data);
    });
}
