//! Long chains on disk: chunked draws, exact resumption, several chains in parallel.
//!
//! Chain c lives in `DIR/chain-CCC/`:
//!
//! - `chunk-KKKKKK.safetensors`: the draws of iterations \[k·L, (k + 1)·L) (L = `chunk_len`) that
//!   are recorded (`draws` `[S_k, D]`, with their log-targets `log_target` `[S_k]`, f64), and the
//!   state θ after the chunk's last iteration (`state` `[D]`);
//! - `chunk-KKKKKK.json`: the chunk's sidecar: its iterations, the seed of its proposal stream,
//!   its per-block acceptance counts, the state's log-target;
//! - `chain.json`: the manifest: the configuration (without the iteration count), the blocks,
//!   the pilot's report when the configuration has a pilot (the tuned variances the chain
//!   samples with), and the list of complete chunks. It is rewritten (atomically) only after a chunk's files are
//!   in place, so a chunk listed there is complete.
//!
//! Every chunk draws its proposals and acceptance tests from its own stream
//! (`seed.fork("chain").index(c).fork("proposals").index(k)`) and the minibatch order is a
//! function of the iteration, so a chunk depends only on the state at its start. Resuming after
//! an interruption (or extending a finished chain to more iterations) reloads the last listed
//! chunk's state and continues with the next chunk: the draws are exactly those of an
//! uninterrupted run, none lost, none repeated. A chunk that was being written when the process
//! stopped is not listed and is computed again.
//!
//! Every file is written to a temporary name, flushed to disk and renamed (the folder flushed
//! too). The manifest records each chunk file's length: at resume a damaged last chunk is
//! computed again and a damaged earlier one is an error naming it. One process at a time
//! writes a chain: `chain.lock` is held (an advisory lock the system drops when the process
//! ends, however it ends) and a second writer gets an error.

use std::path::{Path, PathBuf};

use bdl_data::Dataset;
use bdl_inference::{InvalidParam, Valid};
use bdl_likelihoods::Likelihood;
use bdl_models::{Mlp, MlpSpec, Model};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::sampler::Engine;
use crate::{
    Acceptance, Block, ChainConfig, ChainWindow, Error, GibbsConfig, PilotReport, Precision,
    ProposalVariance, Real, Result, State,
};

const FORMAT: &str = "bdl-mcmc chain v1";

/// The folder of chain `chain` under `dir`.
pub fn chain_dir(dir: &Path, chain: usize) -> PathBuf {
    dir.join(format!("chain-{chain:03}"))
}

fn chunk_path(chain_dir: &Path, chunk: u64) -> PathBuf {
    chain_dir.join(format!("chunk-{chunk:06}.safetensors"))
}

/// The manifest `chain.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Manifest {
    format: String,
    chain: usize,
    /// The configuration with `iterations` cleared.
    config: ChainConfig,
    /// The network sampled.
    mlp: MlpSpec,
    /// The likelihood of the target.
    likelihood: Likelihood,
    n_params: usize,
    n_examples: usize,
    blocks: Vec<Block>,
    /// What the configuration's pilot found (the variances the chain samples with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pilot: Option<PilotReport>,
    chunks: Vec<ChunkEntry>,
}

impl Manifest {
    /// Reads a manifest, checking its format and that its chunks tile the iterations
    /// 0..T in order, each non-empty.
    fn read(path: &Path) -> Result<Self> {
        let manifest: Manifest = read_json(path)?;
        let bad = |reason: String| Error::Chain {
            path: path.to_path_buf(),
            reason,
        };
        if manifest.format != FORMAT {
            return Err(bad(format!("unknown format `{}`", manifest.format)));
        }
        let mut next = 0;
        for (k, c) in manifest.chunks.iter().enumerate() {
            if c.start != next || c.end <= c.start {
                return Err(bad(format!(
                    "chunk {k} covers iterations {}..{}, expected a non-empty range from {next}",
                    c.start, c.end
                )));
            }
            next = c.end;
        }
        Ok(manifest)
    }
}

/// One complete chunk: iterations \[start, end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ChunkEntry {
    start: u64,
    end: u64,
    /// The length of the chunk's tensor file, to tell a damaged file at resume time.
    bytes: u64,
}

/// The JSON sidecar of a chunk file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ChunkSidecar {
    format: String,
    chain: usize,
    chunk: u64,
    start: u64,
    end: u64,
    /// The seed of the chunk's proposal stream.
    seed: Seed,
    /// The chunk's own acceptance counts.
    acceptance: Acceptance,
    /// ℓ̂ + log p of the state after the chunk (what the next sweep compares against).
    log_target: Option<f64>,
}

/// Progress of a running chain, reported after every chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkReport {
    /// The chain.
    pub chain: usize,
    /// Iterations completed (and on disk).
    pub done: u64,
    /// Iterations requested.
    pub iterations: u64,
}

/// The outcome of [`run_chain`].
#[derive(Clone, Debug, PartialEq)]
pub struct ChainReport {
    /// The chain.
    pub chain: usize,
    /// Its folder.
    pub dir: PathBuf,
    /// The iteration it was resumed at (0 for a fresh chain).
    pub resumed_at: u64,
    /// Iterations on disk.
    pub iterations: u64,
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|source| bdl_tensor::Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(
        serde_json::from_slice(&bytes).map_err(|source| bdl_tensor::Error::Json {
            path: path.to_path_buf(),
            source,
        })?,
    )
}

/// Runs chains 0..`chains` in parallel (rayon, one chain per task) under `dir`, resuming any
/// that were interrupted; `progress` is called after every chunk of every chain.
///
/// The sampler's own evaluation is single-threaded; the chains run on the current rayon pool
/// (bound it with [`bdl_tensor::Threads`]). The draws do not depend on the number of threads.
pub fn run_chains(
    mlp: &Mlp,
    likelihood: Likelihood,
    train: &Dataset,
    config: &Valid<ChainConfig>,
    dir: &Path,
    chains: usize,
    progress: &(dyn Fn(ChunkReport) + Sync),
) -> Result<Vec<ChainReport>> {
    (0..chains)
        .into_par_iter()
        .map(|c| run_chain(mlp, likelihood, train, config, dir, c, progress))
        .collect()
}

/// Runs (or resumes, or extends) chain `chain` under `dir` to `config.iterations` iterations.
///
/// ```
/// use bdl_data::toy::{self, NoisyXor};
/// use bdl_inference::{Posterior, PredictOptions, Validate};
/// use bdl_likelihoods::Likelihood;
/// use bdl_mcmc::{BatchMode, Blocking, Chain, ChainConfig, GibbsConfig, Keep, ProposalVariance};
/// use bdl_models::{Activation, Mlp, MlpSpec};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (train, test) = toy::noisy_xor(&bdl_data::root::fixtures(), NoisyXor::Small)?;
/// let mlp = Mlp::new(MlpSpec::new(&[2, 2, 1], Activation::Sigmoid))?;
/// let gibbs = GibbsConfig::new(Blocking::Node, ProposalVariance::Common(0.04), BatchMode::Minibatch(100));
/// let config = ChainConfig { iterations: 40, chunk_len: 20, ..ChainConfig::new(gibbs) }.check()?;
/// let dir = std::env::temp_dir().join(format!("bdl-mcmc-doc-{}", std::process::id()));
/// let report = bdl_mcmc::run_chain(&mlp, Likelihood::Bernoulli, &train, &config, &dir, 0, &|_| {})?;
/// assert_eq!(report.iterations, 40);
/// let chain = Chain::open(&report.dir)?;
/// let window = chain.window(&Keep { burn_in: 20, ..Keep::default() })?;
/// assert_eq!(window.draws().dims(), &[20, 9]);
/// let predictive = window.predictive(test.x(), &PredictOptions::default())?;
/// assert_eq!(predictive.probs()?.dims(), &[test.len(), 2]);
/// # std::fs::remove_dir_all(dir)?;
/// # Ok(()) }
/// ```
pub fn run_chain(
    mlp: &Mlp,
    likelihood: Likelihood,
    train: &Dataset,
    config: &Valid<ChainConfig>,
    dir: &Path,
    chain: usize,
    progress: &(dyn Fn(ChunkReport) + Sync),
) -> Result<ChainReport> {
    match config.precision {
        Precision::F32 => run_typed::<f32>(mlp, likelihood, train, config, dir, chain, progress),
        Precision::F64 => run_typed::<f64>(mlp, likelihood, train, config, dir, chain, progress),
    }
}

fn run_typed<T: Real>(
    mlp: &Mlp,
    likelihood: Likelihood,
    train: &Dataset,
    config: &Valid<ChainConfig>,
    dir: &Path,
    chain: usize,
    progress: &(dyn Fn(ChunkReport) + Sync),
) -> Result<ChainReport> {
    let seed = config.seed.fork("chain").index(chain as u64);
    let cdir = chain_dir(dir, chain);
    let manifest_path = cdir.join("chain.json");
    let n_params = mlp.layout().len();
    let fresh = Manifest {
        format: FORMAT.to_owned(),
        chain,
        config: config.identity(),
        mlp: mlp.spec().clone(),
        likelihood,
        n_params,
        n_examples: train.len(),
        blocks: config.gibbs.kernel(mlp.layout())?.blocks().to_vec(),
        pilot: None,
        chunks: Vec::new(),
    };
    std::fs::create_dir_all(&cdir).map_err(|source| bdl_tensor::Error::Io {
        path: cdir.clone(),
        source,
    })?;
    let _lock = lock(&cdir)?;
    let mut manifest = open_manifest(&cdir, fresh)?;
    check_chunks(&cdir, &mut manifest)?;
    // A short last chunk (the end of a shorter run) is computed again when the chain is extended.
    if manifest
        .chunks
        .last()
        .is_some_and(|c| c.end - c.start < config.chunk_len && c.end < config.iterations)
    {
        manifest.chunks.pop();
    }
    let state = match manifest.chunks.len() {
        0 => first_state::<T>(config.gibbs.prior_variance, n_params, seed)?,
        k => last_state(&chunk_path(&cdir, k as u64 - 1))?,
    };
    let resumed_at = manifest.chunks.last().map_or(0, |c| c.end);
    // The pilot, before the first chunk, from θ₀ on its own stream; recorded at once.
    if let (Some(pilot), None) = (&config.pilot, &manifest.pilot) {
        let mut engine = Engine::new(mlp, likelihood, train, &config.gibbs, state.clone(), seed)?;
        let initial = crate::pilot::initial(&config.gibbs.proposal, mlp.n_layers())?;
        let mut rng = seed.fork("pilot").rng();
        manifest.pilot = Some(crate::pilot::tune(&mut engine, initial, pilot, &mut rng)?);
        write_manifest(&manifest_path, &manifest)?;
    }
    let gibbs = tuned(&config.gibbs, manifest.pilot.as_ref());
    let mut engine = Engine::new(mlp, likelihood, train, &gibbs, state, seed)?;
    let mut start = resumed_at;
    while start < config.iterations {
        let k = manifest.chunks.len() as u64;
        let end = (k + 1)
            .saturating_mul(config.chunk_len)
            .min(config.iterations);
        let chunk_seed = seed.fork("proposals").index(k);
        let recorded = iterate(&mut engine, start..end, config.record_every, chunk_seed)?;
        let sidecar = ChunkSidecar {
            format: FORMAT.to_owned(),
            chain,
            chunk: k,
            start,
            end,
            seed: chunk_seed,
            acceptance: engine.take_acceptance(),
            log_target: engine.state().log_target(),
        };
        let path = chunk_path(&cdir, k);
        write_chunk(&path, &sidecar, engine.state().theta(), recorded)?;
        manifest.chunks.push(ChunkEntry {
            start,
            end,
            bytes: file_len(&path)?,
        });
        write_manifest(&manifest_path, &manifest)?;
        progress(ChunkReport {
            chain,
            done: end,
            iterations: config.iterations,
        });
        start = end;
    }
    Ok(ChainReport {
        chain,
        dir: cdir,
        resumed_at,
        iterations: manifest.chunks.last().map_or(0, |c| c.end),
    })
}

/// Iterations `range` of the chain from the stream `seed`, recording every `record_every`-th
/// state: its θ (concatenated) and its log-target (NaN where the evaluator has none).
fn iterate<T: Real>(
    engine: &mut Engine<T>,
    range: std::ops::Range<u64>,
    record_every: u64,
    seed: Seed,
) -> Result<(Vec<T>, Vec<f64>)> {
    let mut rng = seed.rng();
    let (mut draws, mut log_targets) = (Vec::new(), Vec::new());
    for t in range {
        engine.iterate(t, &mut rng)?;
        if (t + 1).is_multiple_of(record_every) {
            draws.extend_from_slice(engine.state().theta());
            log_targets.push(engine.state().log_target().unwrap_or(f64::NAN));
        }
    }
    Ok((draws, log_targets))
}

/// The sampler's configuration after the pilot: its per-layer variances in place of the
/// configured proposal, when it ran.
fn tuned(gibbs: &GibbsConfig, pilot: Option<&PilotReport>) -> GibbsConfig {
    match pilot {
        Some(report) => GibbsConfig {
            proposal: ProposalVariance::PerLayer(report.variances.clone()),
            ..gibbs.clone()
        },
        None => gibbs.clone(),
    }
}

/// The chain's manifest: the one in `cdir` when it was written by the same configuration,
/// model and data (`fresh` without its pilot and chunks), `fresh` when there is none.
fn open_manifest(cdir: &Path, fresh: Manifest) -> Result<Manifest> {
    let path = cdir.join("chain.json");
    if !path.exists() {
        return Ok(fresh);
    }
    let found = Manifest::read(&path)?;
    let settings = Manifest {
        pilot: None,
        chunks: Vec::new(),
        ..found.clone()
    };
    if settings != fresh {
        return Err(Error::Chain {
            path: cdir.to_path_buf(),
            reason: "written by another configuration, model or data set; use another folder"
                .into(),
        });
    }
    Ok(found)
}

/// A chain's first state: θ₀ ~ N(0, σ_p² I) from the stream `seed.fork("init")`.
fn first_state<T: Real>(prior_variance: f64, d: usize, seed: Seed) -> Result<State<T>> {
    let mut rng = seed.fork("init").rng();
    let sd = prior_variance.sqrt();
    let theta = bdl_tensor::normal(&mut rng, d, 0.0, sd, T::DTYPE, &Device::Cpu)?;
    Ok(State::new(theta.to_vec1::<T>()?))
}

/// The state a chunk ended in: its `state` tensor and its sidecar's log-target.
fn last_state<T: Real>(path: &Path) -> Result<State<T>> {
    let sidecar: ChunkSidecar = bdl_tensor::read_sidecar(path)?;
    let tensors = bdl_tensor::load_safetensors(path, &Device::Cpu)?;
    let theta = tensors.get("state").ok_or_else(|| Error::Chain {
        path: path.to_path_buf(),
        reason: "no `state` tensor".into(),
    })?;
    Ok(State {
        theta: theta.to_dtype(T::DTYPE)?.to_vec1()?,
        log_target: sidecar.log_target,
    })
}

/// Saves one chunk: the state θ it ended in and, when it recorded any, its `draws` `[S, D]`
/// and their `log_target`s `[S]`, with the sidecar.
fn write_chunk<T: Real>(
    path: &Path,
    sidecar: &ChunkSidecar,
    theta: &[T],
    (draws, log_targets): (Vec<T>, Vec<f64>),
) -> Result<()> {
    let d = theta.len();
    let mut tensors = vec![(
        "state".to_owned(),
        Tensor::from_slice(theta, d, &Device::Cpu)?,
    )];
    if !log_targets.is_empty() {
        let s = log_targets.len();
        tensors.push((
            "draws".to_owned(),
            Tensor::from_vec(draws, (s, d), &Device::Cpu)?,
        ));
        tensors.push((
            "log_target".to_owned(),
            Tensor::from_vec(log_targets, s, &Device::Cpu)?,
        ));
    }
    bdl_tensor::save_safetensors(path, &tensors, Some(sidecar))?;
    Ok(())
}

/// Writes the manifest (atomically).
fn write_manifest(path: &Path, manifest: &Manifest) -> Result<()> {
    let json = serde_json::to_vec_pretty(manifest).map_err(|source| bdl_tensor::Error::Json {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(bdl_tensor::write_atomically(path, &json)?)
}

/// Takes the chain folder's lock (`chain.lock`, an advisory lock the system releases when the
/// process ends, however it ends), or fails naming the folder when another process holds it.
fn lock(cdir: &Path) -> Result<std::fs::File> {
    let path = cdir.join("chain.lock");
    let io = |source| bdl_tensor::Error::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Chain {
            path: cdir.to_path_buf(),
            reason: "another process is writing this chain (it holds chain.lock); wait for it \
                     or use another folder"
                .into(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e).into()),
    }
}

fn file_len(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .map_err(|source| bdl_tensor::Error::Io {
            path: path.to_path_buf(),
            source,
        })?
        .len())
}

/// Checks the listed chunks' files before a resume. A damaged last chunk (cut short or
/// unreadable: the process stopped while the system had not yet written it out) is dropped
/// from the manifest and computed again, which is exact because a chunk depends only on the
/// state at its start; a damaged earlier chunk is an error naming it.
fn check_chunks(cdir: &Path, manifest: &mut Manifest) -> Result<()> {
    let intact = |k: usize, entry: &ChunkEntry| -> bool {
        let path = chunk_path(cdir, k as u64);
        file_len(&path).is_ok_and(|n| n == entry.bytes)
            && bdl_tensor::read_sidecar::<ChunkSidecar>(&path).is_ok()
    };
    if let Some(k) = manifest.chunks.len().checked_sub(1)
        && !intact(k, &manifest.chunks[k])
    {
        manifest.chunks.pop();
    }
    for (k, entry) in manifest.chunks.iter().enumerate() {
        if !intact(k, entry) {
            return Err(Error::Chain {
                path: chunk_path(cdir, k as u64),
                reason: format!(
                    "chunk {k} (iterations {}..{}) is damaged: its file is not the {} bytes \
                     written; the chain cannot resume past it",
                    entry.start, entry.end, entry.bytes
                ),
            });
        }
    }
    Ok(())
}

/// Which stored draws to use: iteration t (from 0; the draw after sweep t) is kept when
/// t ≥ `burn_in`, t ≥ T − `last` (T the chain's length), and (t + 1) is a multiple of `thin`,
/// among the draws the chain recorded.
///
/// The paper's protocol: 110,000 iterations, the last 10,000 for prediction:
/// `Keep { last: Some(10_000), ..Keep::default() }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keep {
    /// Iterations discarded at the start.
    pub burn_in: u64,
    /// Keep every `thin`-th iteration (≥ 1).
    pub thin: u64,
    /// Only the last this many iterations.
    pub last: Option<u64>,
}

impl Default for Keep {
    fn default() -> Self {
        Self {
            burn_in: 0,
            thin: 1,
            last: None,
        }
    }
}

impl Keep {
    /// Whether iteration `t` of a chain of `total` iterations is kept.
    pub fn keeps(&self, t: u64, total: u64) -> bool {
        t >= self.burn_in
            && self.last.is_none_or(|k| t.saturating_add(k) >= total)
            && (t + 1).is_multiple_of(self.thin.max(1))
    }
}

/// Draws selected from a chain.
#[derive(Clone, Debug)]
pub struct Draws {
    /// The iteration of each draw.
    pub iterations: Vec<u64>,
    /// The draws, `[S, D]`, in the chain's dtype.
    pub params: Tensor,
}

/// A chain on disk, for reading.
#[derive(Clone, Debug)]
pub struct Chain {
    dir: PathBuf,
    manifest: Manifest,
}

impl Chain {
    /// Opens the chain in `dir` (a folder `chain-CCC` written by [`run_chain`]).
    pub fn open(dir: &Path) -> Result<Self> {
        let manifest = Manifest::read(&dir.join("chain.json"))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            manifest,
        })
    }

    /// The iterations on disk.
    pub fn iterations(&self) -> u64 {
        self.manifest.chunks.last().map_or(0, |c| c.end)
    }

    /// The configuration (with the iteration count cleared).
    pub fn config(&self) -> &ChainConfig {
        &self.manifest.config
    }

    /// The blocks, in sweep order.
    pub fn blocks(&self) -> &[Block] {
        &self.manifest.blocks
    }

    /// What the chain's pilot found (`None` when it had none).
    pub fn pilot(&self) -> Option<&PilotReport> {
        self.manifest.pilot.as_ref()
    }

    /// The kept draws (see [`Keep`]), from every chunk that holds one.
    pub fn draws(&self, keep: &Keep) -> Result<Draws> {
        if keep.thin == 0 {
            return Err(InvalidParam::new("thin", 0, ">= 1").into());
        }
        let (total, every) = (self.iterations(), self.manifest.config.record_every);
        let dtype = self.manifest.config.precision.dtype();
        let (mut iterations, mut parts) = (Vec::new(), Vec::new());
        for (k, chunk) in self.manifest.chunks.iter().enumerate() {
            let recorded: Vec<u64> = (chunk.start..chunk.end)
                .filter(|t| (t + 1).is_multiple_of(every))
                .collect();
            let rows: Vec<u32> = (0..recorded.len() as u32)
                .filter(|&r| keep.keeps(recorded[r as usize], total))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let path = chunk_path(&self.dir, k as u64);
            let draws = self.tensor(&path, "draws", &[recorded.len(), self.manifest.n_params])?;
            iterations.extend(rows.iter().map(|&r| recorded[r as usize]));
            let index = Tensor::new(rows, &Device::Cpu)?;
            parts.push(draws.index_select(&index, 0)?);
        }
        let params = if parts.is_empty() {
            Tensor::zeros((0, self.manifest.n_params), dtype, &Device::Cpu)?
        } else {
            Tensor::cat(&parts, 0)?
        };
        Ok(Draws { iterations, params })
    }

    /// The kept draws (see [`Keep`]) as a posterior: the Bayesian marginalisation over them,
    /// with the chain's network and likelihood.
    pub fn window(&self, keep: &Keep) -> Result<ChainWindow> {
        let draws = self.draws(keep)?;
        if draws.iterations.is_empty() {
            return Err(InvalidParam::new(
                "keep",
                format!("{keep:?}"),
                format!(
                    "to keep at least one of the chain's {} iterations",
                    self.iterations()
                ),
            )
            .into());
        }
        Ok(ChainWindow::new(
            Mlp::new(self.manifest.mlp.clone())?.into(),
            self.manifest.likelihood,
            draws.params,
            draws.iterations,
        )?
        .with_seed(self.manifest.config.seed))
    }

    /// The acceptance counts of the chunks that start at or after iteration `from` (the paper
    /// reports rates after a burn-in), with the first iteration they cover.
    pub fn acceptance(&self, from: u64) -> Result<(Acceptance, u64)> {
        let mut total = Acceptance::new(self.manifest.blocks.len());
        let mut first = None;
        for (k, chunk) in self.manifest.chunks.iter().enumerate() {
            if chunk.start >= from {
                let path = chunk_path(&self.dir, k as u64);
                let sidecar: ChunkSidecar = bdl_tensor::read_sidecar(&path)?;
                if sidecar.acceptance.n_blocks() != total.n_blocks() {
                    return Err(Error::Chain {
                        path,
                        reason: format!(
                            "acceptance counts for {} blocks, the chain has {}",
                            sidecar.acceptance.n_blocks(),
                            total.n_blocks()
                        ),
                    });
                }
                total.add(&sidecar.acceptance);
                first.get_or_insert(chunk.start);
            }
        }
        Ok((total, first.unwrap_or(self.iterations())))
    }

    /// The log-target ℓ̂(θ_t) + log p(θ_t) of every recorded draw (on its iteration's batch;
    /// the trace plot), with the iterations.
    pub fn log_target_trace(&self) -> Result<(Vec<u64>, Vec<f64>)> {
        let every = self.manifest.config.record_every;
        let (mut iterations, mut values) = (Vec::new(), Vec::new());
        for (k, chunk) in self.manifest.chunks.iter().enumerate() {
            let recorded: Vec<u64> = (chunk.start..chunk.end)
                .filter(|t| (t + 1).is_multiple_of(every))
                .collect();
            if recorded.is_empty() {
                continue;
            }
            let path = chunk_path(&self.dir, k as u64);
            values.extend(
                self.tensor(&path, "log_target", &[recorded.len()])?
                    .to_dtype(DType::F64)?
                    .to_vec1::<f64>()?,
            );
            iterations.extend(recorded);
        }
        Ok((iterations, values))
    }

    /// Tensor `name` of the chunk file `path`, checked to have `shape`.
    fn tensor(&self, path: &Path, name: &str, shape: &[usize]) -> Result<Tensor> {
        let mut tensors = bdl_tensor::load_safetensors(path, &Device::Cpu)?;
        let t = tensors.remove(name).ok_or_else(|| Error::Chain {
            path: path.to_path_buf(),
            reason: format!("no `{name}` tensor"),
        })?;
        bdl_tensor::check_shape(&t, shape, &format!("{}: `{name}`", path.display()))?;
        Ok(t)
    }
}
