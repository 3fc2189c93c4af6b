//! Sampler and chain configuration, serialisable so that an experiment is one JSON file.

use bdl_inference::{InvalidParam, Validate, at_least_one, positive};
use bdl_tensor::{ParamLayout, Seed};
use serde::{Deserialize, Serialize};

use crate::{Blocking, Kernel, OnReject, Pilot, Result};

/// The proposal variances v_b of θ'_b ~ N(θ_b, v_b I).
///
/// Serialised externally tagged: `{"common":0.04}`, `{"per_layer":[0.05,5e-4,5e-4,5e-5]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalVariance {
    /// One variance for every block.
    Common(f64),
    /// One variance per layer (the paper's setting: decreasing with depth).
    PerLayer(Vec<f64>),
    /// One variance per block, in sweep order.
    PerBlock(Vec<f64>),
}

/// Which data each iteration's log-likelihood ℓ̂ is summed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchMode {
    /// The whole training set every iteration ("exact" sampling).
    Exact,
    /// One minibatch of this size per iteration: iteration t uses batch t mod M of epoch
    /// ⌊t / M⌋ (M batches per epoch; the last batch of an epoch may be shorter), class-stratified
    /// for classification likelihoods.
    Minibatch(usize),
}

/// The compute dtype of the network (draws are stored in it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// f32.
    #[default]
    F32,
    /// f64.
    F64,
}

impl Precision {
    /// The candle dtype.
    pub fn dtype(self) -> candle_core::DType {
        match self {
            Precision::F32 => candle_core::DType::F32,
            Precision::F64 => candle_core::DType::F64,
        }
    }
}

/// One Metropolis-within-blocked-Gibbs sampler: blocks, proposals, prior, data per iteration.
///
/// ```
/// use bdl_mcmc::{BatchMode, Blocking, GibbsConfig, ProposalVariance};
/// let config = GibbsConfig::new(Blocking::Node, ProposalVariance::Common(0.04), BatchMode::Minibatch(100));
/// assert_eq!(config.prior_variance, 10.0);
/// let json = serde_json::to_string(&config).unwrap();
/// assert_eq!(serde_json::from_str::<GibbsConfig>(&json).unwrap(), config);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GibbsConfig {
    /// How parameters are grouped into blocks.
    pub blocking: Blocking,
    /// The proposal variances.
    pub proposal: ProposalVariance,
    /// The prior variance s² of N(0, s² I) (the paper: 10).
    pub prior_variance: f64,
    /// The data of each iteration.
    pub batch: BatchMode,
    /// The rejection rule (the correct [`OnReject::Restore`] unless comparing with the
    /// published sampler).
    #[serde(default)]
    pub on_reject: OnReject,
}

impl GibbsConfig {
    /// A configuration with the paper's prior N(0, 10 I) and the restoring kernel.
    pub fn new(blocking: Blocking, proposal: ProposalVariance, batch: BatchMode) -> Self {
        Self {
            blocking,
            proposal,
            prior_variance: 10.0,
            batch,
            on_reject: OnReject::Restore,
        }
    }

    /// Validates the configuration against `layout` and builds the kernel: the blocks and one
    /// proposal variance per block.
    pub fn kernel(&self, layout: &ParamLayout) -> Result<Kernel> {
        let blocks = self.blocking.blocks(layout)?;
        let n_layers = layout.layers().len();
        let variances = match &self.proposal {
            ProposalVariance::Common(v) => vec![*v; blocks.len()],
            ProposalVariance::PerLayer(v) if v.len() == n_layers => {
                blocks.iter().map(|b| v[b.layer]).collect()
            }
            ProposalVariance::PerBlock(v) if v.len() == blocks.len() => v.clone(),
            ProposalVariance::PerLayer(v) | ProposalVariance::PerBlock(v) => {
                return Err(InvalidParam::new(
                    "proposal",
                    format!("{} variances", v.len()),
                    format!("one per layer ({n_layers}) or per block ({})", blocks.len()),
                )
                .into());
            }
        };
        Kernel::new(blocks, variances, self.prior_variance, self.on_reject)
    }
}

impl Validate for GibbsConfig {
    /// A minibatch of at least one example; the prior variance and every proposal variance
    /// finite and positive (whether there is one per layer or block is checked against the
    /// model by [`GibbsConfig::kernel`]).
    fn validate(&self) -> Result<(), InvalidParam> {
        if let BatchMode::Minibatch(b) = self.batch {
            at_least_one("batch", b)?;
        }
        positive("prior_variance", self.prior_variance)?;
        let variances = match &self.proposal {
            ProposalVariance::Common(v) => std::slice::from_ref(v),
            ProposalVariance::PerLayer(v) | ProposalVariance::PerBlock(v) => v.as_slice(),
        };
        variances.iter().try_for_each(|&v| positive("proposal", v))
    }
}

/// A chain (or several): the sampler, its length, how draws are stored, the seed.
///
/// Chain c draws from the streams of `seed.fork("chain").index(c)`: its initial state θ₀ from the
/// prior (`fork("init")`), the minibatch order of epoch e (`fork("minibatches").index(e)`), and
/// the proposals and acceptance tests of chunk k (`fork("proposals").index(k)`). A chunk
/// therefore depends only on the state at its start, which is what makes resuming exact.
///
/// ```
/// use bdl_mcmc::{BatchMode, Blocking, ChainConfig, GibbsConfig, ProposalVariance};
/// let gibbs = GibbsConfig::new(Blocking::Node, ProposalVariance::Common(0.04), BatchMode::Minibatch(100));
/// let config = ChainConfig { iterations: 110_000, chunk_len: 1000, ..ChainConfig::new(gibbs) };
/// use bdl_inference::Validate;
/// config.check().unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainConfig {
    /// The sampler.
    pub gibbs: GibbsConfig,
    /// Iterations (sweeps) per chain.
    pub iterations: u64,
    /// Iterations per chunk file (a multiple of `record_every`).
    pub chunk_len: u64,
    /// Store the draw after iteration t when (t + 1) is a multiple of this (1: every draw).
    pub record_every: u64,
    /// The compute and storage dtype.
    pub precision: Precision,
    /// The root seed of all chains.
    pub seed: Seed,
    /// A pilot run before the first chunk that tunes the per-layer proposal variances, starting
    /// from `gibbs.proposal` (common or per layer); the chain samples with the tuned ones,
    /// recorded in its manifest. `None`: sample with `gibbs.proposal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<Pilot>,
}

impl ChainConfig {
    /// 1000 iterations in chunks of 100, every draw stored, f32, seed 0.
    pub fn new(gibbs: GibbsConfig) -> Self {
        Self {
            gibbs,
            iterations: 1000,
            chunk_len: 100,
            record_every: 1,
            precision: Precision::F32,
            seed: Seed(0),
            pilot: None,
        }
    }

    /// The configuration with the iteration count cleared: what must match to resume a chain
    /// (a chain may be extended to more iterations).
    pub(crate) fn identity(&self) -> Self {
        Self {
            iterations: 0,
            ..self.clone()
        }
    }
}

impl Validate for ChainConfig {
    /// A valid sampler, `chunk_len` ≥ 1 and `record_every` ≥ 1 dividing it.
    fn validate(&self) -> Result<(), InvalidParam> {
        self.gibbs.validate().map_err(|e| e.within("gibbs"))?;
        if let Some(pilot) = &self.pilot {
            pilot.validate().map_err(|e| e.within("pilot"))?;
        }
        at_least_one("chunk_len", self.chunk_len as usize)?;
        at_least_one("record_every", self.record_every as usize)?;
        bdl_inference::require(
            self.chunk_len.is_multiple_of(self.record_every),
            "record_every",
            self.record_every,
            &format!("a divisor of chunk_len ({})", self.chunk_len),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use bdl_models::{Activation, Mlp, MlpSpec, Model};

    fn param(e: Error) -> String {
        match e {
            Error::Inference(bdl_inference::Error::InvalidParam(p)) => p.param,
            other => panic!("expected an invalid parameter, got {other}"),
        }
    }

    #[test]
    fn per_layer_variances_follow_the_blocks() {
        let mlp = Mlp::new(MlpSpec::new(&[3, 2, 1], Activation::Sigmoid)).unwrap();
        let config = GibbsConfig::new(
            Blocking::Node,
            ProposalVariance::PerLayer(vec![0.5, 0.02]),
            BatchMode::Exact,
        );
        let kernel = config.kernel(mlp.layout()).unwrap();
        assert_eq!(kernel.blocks().len(), 3);
        let bad = GibbsConfig {
            proposal: ProposalVariance::PerLayer(vec![0.5]),
            ..config.clone()
        };
        assert_eq!(param(bad.kernel(mlp.layout()).unwrap_err()), "proposal");
        for (bad, name) in [
            (
                GibbsConfig {
                    proposal: ProposalVariance::Common(0.0),
                    ..config.clone()
                },
                "proposal",
            ),
            (
                GibbsConfig {
                    proposal: ProposalVariance::PerBlock(vec![0.1, f64::NAN, 0.1]),
                    ..config.clone()
                },
                "proposal",
            ),
            (
                GibbsConfig {
                    prior_variance: -1.0,
                    ..config.clone()
                },
                "prior_variance",
            ),
            (
                GibbsConfig {
                    batch: BatchMode::Minibatch(0),
                    ..config.clone()
                },
                "batch",
            ),
        ] {
            assert_eq!(bad.check().unwrap_err().param, name);
        }
    }

    #[test]
    fn chain_settings_are_checked_and_serialise() {
        let gibbs = GibbsConfig::new(
            Blocking::Layer,
            ProposalVariance::Common(0.1),
            BatchMode::Minibatch(10),
        );
        let config = ChainConfig {
            chunk_len: 10,
            record_every: 5,
            ..ChainConfig::new(gibbs)
        };
        config.clone().check().unwrap();
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<ChainConfig>(&json).unwrap(), config);
        let bad = ChainConfig {
            record_every: 3,
            ..config
        };
        assert_eq!(bad.check().unwrap_err().param, "record_every");
    }
}
