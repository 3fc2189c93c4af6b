//! The sampler of an MLP posterior: the kernel, the incremental target and the data schedule.

use bdl_data::{Dataset, Epoch, Minibatches};
use bdl_inference::Valid;
use bdl_likelihoods::Likelihood;
use bdl_models::{Mlp, Model};
use bdl_tensor::{ChaCha8Rng, Seed};
use candle_core::{DType, Device, Tensor};

use crate::incremental::IncrementalMlp;
use crate::{
    Acceptance, BatchMode, Block, Error, GibbsConfig, Kernel, Pilot, PilotReport, ProposalVariance,
    Real, Result, State,
};

/// Which examples iteration t scores.
#[derive(Clone, Debug)]
enum Schedule {
    /// All of them, every iteration.
    Exact { loaded: bool },
    /// Batch t mod M of epoch ⌊t / M⌋, the epoch's order from `seed.index(epoch)`.
    Minibatch {
        batches: Minibatches,
        seed: Seed,
        epoch: Option<(u64, Epoch)>,
    },
}

/// The sampler in one dtype (see [`Sampler`]).
#[derive(Clone, Debug)]
pub(crate) struct Engine<T> {
    kernel: Kernel,
    target: IncrementalMlp<T>,
    /// The training inputs, row-major `[N][d₀]`, and target rows.
    x: Vec<T>,
    y: Vec<f64>,
    schedule: Schedule,
    state: State<T>,
    acceptance: Acceptance,
}

impl<T: Real> Engine<T> {
    /// A sampler at `state`; the minibatch order of epoch e comes from
    /// `seed.fork("minibatches").index(e)`.
    pub(crate) fn new(
        mlp: &Mlp,
        likelihood: Likelihood,
        train: &Dataset,
        config: &GibbsConfig,
        state: State<T>,
        seed: Seed,
    ) -> Result<Self> {
        likelihood.check()?;
        let layout = mlp.layout();
        let widths = &mlp.spec().widths;
        if state.theta.len() != layout.len() {
            return Err(bdl_tensor::Error::ShapeMismatch {
                context: "the initial state of the chain".into(),
                expected: vec![layout.len()],
                actual: vec![state.theta.len()],
            }
            .into());
        }
        let n = train.len();
        if n == 0 || train.num_features() != widths[0] {
            return Err(bdl_tensor::Error::ShapeMismatch {
                context: format!("the training inputs of an MLP with {} inputs", widths[0]),
                expected: vec![n.max(1), widths[0]],
                actual: vec![n, train.num_features()],
            }
            .into());
        }
        let kernel = config.kernel(layout)?;
        let y = likelihood.target_rows(train.y(), n, mlp.n_outputs())?;
        let x: Vec<T> = train.x().to_dtype(T::DTYPE)?.flatten_all()?.to_vec1()?;
        let target = IncrementalMlp::new(mlp, likelihood, kernel.blocks());
        let schedule = match config.batch {
            BatchMode::Exact => Schedule::Exact { loaded: false },
            BatchMode::Minibatch(size) => {
                let batches = if !matches!(likelihood, Likelihood::Gaussian { .. }) {
                    let labels: Vec<u32> = y.iter().map(|&c| c as u32).collect();
                    Minibatches::stratified(&labels, size)?
                } else {
                    Minibatches::new(n, size)?
                };
                Schedule::Minibatch {
                    batches,
                    seed: seed.fork("minibatches"),
                    epoch: None,
                }
            }
        };
        Ok(Self {
            acceptance: Acceptance::new(kernel.blocks().len()),
            kernel,
            target,
            x,
            y,
            schedule,
            state,
        })
    }

    /// Loads the data of iteration `t` into the target; returns whether it differs from the
    /// previous iteration's.
    fn load_batch(&mut self, t: u64) -> bool {
        match &mut self.schedule {
            Schedule::Exact { loaded } => {
                if !*loaded {
                    let all: Vec<usize> = (0..self.y.len() / self.target.target_width()).collect();
                    self.target.set_batch(&self.x, &self.y, &all);
                    *loaded = true;
                }
                false
            }
            Schedule::Minibatch {
                batches,
                seed,
                epoch,
            } => {
                let m = batches.num_batches() as u64;
                let e = t / m;
                if epoch.as_ref().is_none_or(|(cached, _)| *cached != e) {
                    *epoch = Some((e, batches.epoch(seed.index(e))));
                }
                let (_, order) = epoch.as_ref().expect("just set");
                let batch = order
                    .iter()
                    .nth((t % m) as usize)
                    .expect("t mod M is a batch of the epoch");
                self.target.set_batch(&self.x, &self.y, batch);
                m > 1
            }
        }
    }

    /// Iteration `t`: one sweep over all blocks on the data of iteration t.
    pub(crate) fn iterate(&mut self, t: u64, rng: &mut ChaCha8Rng) -> Result<()> {
        let new_data = self.load_batch(t);
        self.kernel.sweep(
            &mut self.target,
            &mut self.state,
            rng,
            &mut self.acceptance,
            t,
            new_data,
        )
    }

    pub(crate) fn state(&self) -> &State<T> {
        &self.state
    }

    pub(crate) fn blocks(&self) -> &[Block] {
        self.kernel.blocks()
    }

    /// Sets the proposal variance of every block to `variances[its layer]`.
    pub(crate) fn set_layer_variances(&mut self, variances: &[f64]) -> Result<()> {
        let per_block = self.blocks().iter().map(|b| variances[b.layer]).collect();
        self.kernel = self.kernel.with_variances(per_block)?;
        Ok(())
    }

    /// The acceptance counts since the last call, leaving zeros.
    pub(crate) fn take_acceptance(&mut self) -> Acceptance {
        let n_blocks = self.blocks().len();
        std::mem::replace(&mut self.acceptance, Acceptance::new(n_blocks))
    }
}

/// An [`Engine`] in the dtype of the parameters.
#[derive(Clone, Debug)]
enum AnyEngine {
    F32(Engine<f32>),
    F64(Engine<f64>),
}

macro_rules! each {
    ($engine:expr, $e:ident => $body:expr) => {
        match $engine {
            AnyEngine::F32($e) => $body,
            AnyEngine::F64($e) => $body,
        }
    };
}

/// A Metropolis-within-blocked-Gibbs sampler of the posterior
/// p(θ | D) ∝ Π_n p(y_n | f(x_n; θ)) · N(θ; 0, s² I) of an MLP, evaluated incrementally.
///
/// It computes in the dtype of the initial parameters (f32 or f64). One
/// [`iterate`](Sampler::iterate) is one sweep over all blocks on the data of that iteration
/// (see [`BatchMode`]); the proposals and acceptance tests draw from the stream passed in. For
/// long chains with files, resuming and several chains in parallel, use [`run_chains`](crate::run_chains).
///
/// ```
/// use bdl_data::toy::{self, NoisyXor};
/// use bdl_inference::Validate;
/// use bdl_likelihoods::Likelihood;
/// use bdl_mcmc::{BatchMode, Blocking, GibbsConfig, ProposalVariance, Sampler};
/// use bdl_models::{Activation, Mlp, MlpSpec};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (train, _) = toy::noisy_xor(&bdl_data::root::fixtures(), NoisyXor::Small)?;
/// let mlp = Mlp::new(MlpSpec::new(&[2, 2, 1], Activation::Sigmoid))?;
/// let config = GibbsConfig::new(Blocking::Node, ProposalVariance::Common(0.04), BatchMode::Minibatch(100)).check()?;
/// let theta0 = mlp.init(Seed(0), DType::F64, &Device::Cpu)?;
/// let mut sampler = Sampler::new(&mlp, Likelihood::Bernoulli, &train, &config, &theta0, Seed(1))?;
/// let mut rng = Seed(2).rng();
/// for t in 0..50 {
///     sampler.iterate(t, &mut rng)?;
/// }
/// let rates = sampler.acceptance().layer_rates(sampler.blocks());
/// assert!(rates.iter().all(|&r| r > 0.0));
/// assert_eq!(sampler.params()?.dims(), &[9]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Sampler {
    engine: AnyEngine,
}

impl Sampler {
    /// A sampler of `mlp`'s posterior under `likelihood` on `train`, starting at `theta0` (flat,
    /// f32 or f64). With minibatches, the order of epoch e comes from
    /// `seed.fork("minibatches").index(e)` (class-stratified for Bernoulli and Categorical).
    pub fn new(
        mlp: &Mlp,
        likelihood: Likelihood,
        train: &Dataset,
        config: &Valid<GibbsConfig>,
        theta0: &Tensor,
        seed: Seed,
    ) -> Result<Self> {
        mlp.layout().check_flat(theta0)?;
        let engine = match theta0.dtype() {
            DType::F32 => AnyEngine::F32(Engine::new(
                mlp,
                likelihood,
                train,
                config,
                State::new(theta0.to_vec1()?),
                seed,
            )?),
            DType::F64 => AnyEngine::F64(Engine::new(
                mlp,
                likelihood,
                train,
                config,
                State::new(theta0.to_vec1()?),
                seed,
            )?),
            dtype => return Err(Error::DType(dtype)),
        };
        Ok(Self { engine })
    }

    /// Iteration `t` (from 0): one sweep over all blocks on the data of iteration t, drawing
    /// proposals and acceptance tests from `rng`.
    pub fn iterate(&mut self, t: u64, rng: &mut ChaCha8Rng) -> Result<()> {
        each!(&mut self.engine, e => e.iterate(t, rng))
    }

    /// The current parameters θ, `[D]`, in the sampler's dtype.
    pub fn params(&self) -> Result<Tensor> {
        each!(&self.engine, e => {
            let theta = e.state().theta();
            Ok(Tensor::from_slice(theta, theta.len(), &Device::Cpu)?)
        })
    }

    /// ℓ̂(θ) + log p(θ) (up to the prior's constant) on the last iteration's data; `None`
    /// before the first iteration.
    pub fn log_target(&self) -> Option<f64> {
        each!(&self.engine, e => e.state().log_target())
    }

    /// Tunes the per-layer proposal variances by a pilot (see [`Pilot`]) from the current
    /// state, starting from `proposal` (common or per layer; `n_layers` layers), drawing from
    /// `rng`; the sampler keeps the tuned variances and the pilot's final state, and its
    /// acceptance counts restart from zero.
    ///
    /// ```
    /// use bdl_data::toy::{self, NoisyXor};
    /// use bdl_inference::Validate;
    /// use bdl_likelihoods::Likelihood;
    /// use bdl_mcmc::{BatchMode, Blocking, GibbsConfig, Pilot, ProposalVariance, Sampler};
    /// use bdl_models::{Activation, Mlp, MlpSpec};
    /// use bdl_tensor::Seed;
    /// use candle_core::{DType, Device};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (train, _) = toy::noisy_xor(&bdl_data::root::fixtures(), NoisyXor::Small)?;
    /// let mlp = Mlp::new(MlpSpec::new(&[2, 2, 1], Activation::Sigmoid))?;
    /// let proposal = ProposalVariance::Common(1.0);
    /// let config = GibbsConfig::new(Blocking::Node, proposal.clone(), BatchMode::Exact).check()?;
    /// let theta0 = mlp.init(Seed(0), DType::F64, &Device::Cpu)?;
    /// let mut sampler = Sampler::new(&mlp, Likelihood::Bernoulli, &train, &config, &theta0, Seed(1))?;
    /// let pilot = Pilot { sweeps: 100, ..Pilot::new([0.2, 0.5]) }.check()?;
    /// let report = sampler.tune(&pilot, &proposal, 2, &mut Seed(2).rng())?;
    /// assert_eq!(report.variances.len(), 2);
    /// assert!(!report.converged || report.rates.iter().all(|&r| (0.2..=0.5).contains(&r)));
    /// # Ok(()) }
    /// ```
    pub fn tune(
        &mut self,
        pilot: &Valid<Pilot>,
        proposal: &ProposalVariance,
        n_layers: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<PilotReport> {
        let initial = crate::pilot::initial(proposal, n_layers)?;
        each!(&mut self.engine, e => crate::pilot::tune(e, initial, pilot, rng))
    }

    /// The acceptance counts of every block so far.
    pub fn acceptance(&self) -> &Acceptance {
        each!(&self.engine, e => &e.acceptance)
    }

    /// The blocks, in sweep order.
    pub fn blocks(&self) -> &[Block] {
        each!(&self.engine, e => e.blocks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Blocking, ProposalVariance};
    use bdl_data::toy::{self, NoisyXor};
    use bdl_models::{Activation, MlpSpec};

    #[test]
    fn bad_inputs_are_typed_errors() {
        let (train, _) = toy::noisy_xor(&bdl_data::root::fixtures(), NoisyXor::Small).unwrap();
        let mlp = Mlp::new(MlpSpec::new(&[2, 2, 1], Activation::Sigmoid)).unwrap();
        let config = GibbsConfig::new(
            Blocking::Node,
            ProposalVariance::Common(0.1),
            BatchMode::Exact,
        );
        let config = bdl_inference::Validate::check(config).unwrap();
        let theta = mlp.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
        let new = |mlp: &Mlp, lik: Likelihood, theta: &Tensor| {
            Sampler::new(mlp, lik, &train, &config, theta, Seed(0))
        };
        let half = theta.to_dtype(DType::F16).unwrap();
        assert!(matches!(
            new(&mlp, Likelihood::Bernoulli, &half),
            Err(Error::DType(DType::F16))
        ));
        let short = theta.narrow(0, 0, 5).unwrap();
        assert!(matches!(
            new(&mlp, Likelihood::Bernoulli, &short),
            Err(Error::Inference(bdl_inference::Error::Tensor(_)))
        ));
        let three_inputs = Mlp::new(MlpSpec::new(&[3, 2, 1], Activation::Sigmoid)).unwrap();
        let theta3 = three_inputs
            .init(Seed(0), DType::F64, &Device::Cpu)
            .unwrap();
        // A model that does not take the data's inputs: a shape mismatch naming the inputs.
        match new(&three_inputs, Likelihood::Bernoulli, &theta3) {
            Err(Error::Inference(bdl_inference::Error::Tensor(
                bdl_tensor::Error::ShapeMismatch { context, .. },
            ))) => assert!(context.contains("training inputs"), "{context}"),
            Err(other) => panic!("expected a shape mismatch, got {other}"),
            Ok(_) => panic!("expected an error"),
        }
        let classes = Likelihood::Categorical { classes: 3 };
        assert!(matches!(
            new(&mlp, classes, &theta),
            Err(Error::Inference(bdl_inference::Error::Likelihood(_)))
        ));
        assert!(new(&mlp, Likelihood::Bernoulli, &theta).is_ok());
    }

    /// Subnetwork inference by Gibbs: a chain over S (within node and within layer blocks)
    /// never moves a parameter outside S, and does move those inside; a bad subset is typed.
    #[test]
    fn a_subnetwork_chain_never_moves_a_parameter_outside_the_subset() {
        let (train, _) = toy::noisy_xor(&bdl_data::root::fixtures(), NoisyXor::Small).unwrap();
        let mlp = Mlp::new(MlpSpec::new(&[2, 4, 4, 1], Activation::Sigmoid)).unwrap();
        let d = mlp.layout().len();
        let subset = vec![0usize, 3, 9, 13, 20, 27, 32];
        let theta0 = mlp.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
        let start: Vec<f64> = theta0.to_vec1().unwrap();
        for within in [Blocking::Node, Blocking::Layer] {
            let blocking = Blocking::Subnetwork {
                subset: subset.clone(),
                within: Box::new(within),
            };
            let config =
                GibbsConfig::new(blocking, ProposalVariance::Common(0.05), BatchMode::Exact);
            let config = bdl_inference::Validate::check(config).unwrap();
            let mut sampler = Sampler::new(
                &mlp,
                Likelihood::Bernoulli,
                &train,
                &config,
                &theta0,
                Seed(1),
            )
            .unwrap();
            let mut rng = Seed(2).rng();
            let mut moved = vec![false; d];
            for t in 0..200 {
                sampler.iterate(t, &mut rng).unwrap();
                let now: Vec<f64> = sampler.params().unwrap().to_vec1().unwrap();
                for i in 0..d {
                    if subset.contains(&i) {
                        moved[i] |= now[i] != start[i];
                    } else {
                        assert_eq!(
                            now[i].to_bits(),
                            start[i].to_bits(),
                            "parameter {i} moved at {t}"
                        );
                    }
                }
            }
            assert!(subset.iter().all(|&i| moved[i]), "{moved:?}");
        }
        for bad in [vec![0, 0], vec![d]] {
            let blocking = Blocking::Subnetwork {
                subset: bad,
                within: Box::new(Blocking::Node),
            };
            assert!(blocking.blocks(mlp.layout()).is_err());
        }
    }
}
