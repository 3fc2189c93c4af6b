//! Chains on disk: the same seed gives the same chain, and an interrupted or extended chain
//! resumes with exactly the draws of an uninterrupted run.

use std::path::{Path, PathBuf};

use bdl_data::Dataset;
use bdl_data::toy::{self, NoisyXor};
use bdl_inference::{Valid, Validate};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    BatchMode, Blocking, Chain, ChainConfig, Error, GibbsConfig, Keep, OnReject, Precision,
    ProposalVariance, chain_dir, run_chain, run_chains,
};
use bdl_models::{Activation, Mlp, MlpSpec, Model};
use bdl_tensor::{Seed, SubBlocks};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bdl-mcmc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn setup() -> (Mlp, Dataset) {
    let (train, _) = toy::noisy_xor(&bdl_data::root::fixtures(), NoisyXor::Small).unwrap();
    let mlp = Mlp::new(MlpSpec::new(&[2, 3, 2, 1], Activation::Sigmoid)).unwrap();
    (mlp, train)
}

/// Minibatch node blocks with a split first layer, f32, every second draw recorded, chunks of
/// 10 iterations.
fn minibatch_config() -> ChainConfig {
    let gibbs = GibbsConfig::new(
        Blocking::FinerNode {
            split: vec![Some(SubBlocks::Size(2)), None, None],
        },
        ProposalVariance::PerLayer(vec![0.1, 0.05, 0.02]),
        BatchMode::Minibatch(64),
    );
    ChainConfig {
        iterations: 30,
        chunk_len: 10,
        record_every: 2,
        seed: Seed(5),
        ..ChainConfig::new(gibbs)
    }
}

fn valid(config: &ChainConfig) -> Valid<ChainConfig> {
    config.clone().check().unwrap()
}

/// Runs (or resumes) chain 0 of [`minibatch_config`] on [`setup`]'s network and data in `dir`.
fn run_minibatch_chain(dir: &Path) -> bdl_mcmc::Result<bdl_mcmc::ChainReport> {
    let (mlp, train) = setup();
    run_chain(
        &mlp,
        Likelihood::Bernoulli,
        &train,
        &valid(&minibatch_config()),
        dir,
        0,
        &|_| {},
    )
}

/// Everything a chain folder says, as bits: draws, their iterations, log-targets, acceptance.
fn contents(dir: &Path) -> (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>) {
    let chain = Chain::open(dir).unwrap();
    let draws = chain.draws(&Keep::default()).unwrap();
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    let params = bits(bdl_tensor::to_f64_vec(&draws.params).unwrap());
    let (_, trace) = chain.log_target_trace().unwrap();
    let (acceptance, _) = chain.acceptance(0).unwrap();
    let mut counts = acceptance.accepted;
    counts.extend(acceptance.proposed);
    let mut iterations = draws.iterations;
    iterations.extend(bits(trace));
    (params, iterations, counts, vec![chain.iterations()])
}

/// Same seed, same chains (run in parallel, compared bit for bit); chains differ from each
/// other.
#[test]
fn same_seed_same_chains() {
    let (mlp, train) = setup();
    let config = minibatch_config();
    let (a, b) = (scratch("same-a"), scratch("same-b"));
    for dir in [&a, &b] {
        let reports = run_chains(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &valid(&config),
            dir,
            2,
            &|_| {},
        )
        .unwrap();
        assert_eq!(reports.len(), 2);
        assert!(
            reports
                .iter()
                .all(|r| r.iterations == 30 && r.resumed_at == 0)
        );
    }
    for c in 0..2 {
        assert_eq!(contents(&chain_dir(&a, c)), contents(&chain_dir(&b, c)));
    }
    assert_ne!(contents(&chain_dir(&a, 0)).0, contents(&chain_dir(&a, 1)).0);
    let draws = Chain::open(&chain_dir(&a, 0))
        .unwrap()
        .draws(&Keep::default())
        .unwrap();
    assert_eq!(draws.iterations, (1..30).step_by(2).collect::<Vec<u64>>());
    assert_eq!(draws.params.dims(), &[15, mlp.layout().len()]);
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// An uninterrupted chain of 30 iterations against (1) a run stopped after 15 iterations (a
/// short last chunk) and extended to 30, with (2) a crash while writing the third chunk
/// simulated on top (its sidecar and a half-written file left behind, the manifest not yet
/// updated). Both resume to exactly the same draws, log-targets and acceptance counts, for the
/// restoring kernel on stratified minibatches in f32 and for the published kernel on the full
/// data in f64 (whose carried-over log-target must survive the resume too).
#[test]
fn resuming_gives_the_uninterrupted_draws() {
    let (mlp, train) = setup();
    let exact_published = {
        let mut config = minibatch_config();
        config.gibbs.batch = BatchMode::Exact;
        config.gibbs.on_reject = OnReject::KeepRejectedPublishedBug;
        config.precision = Precision::F64;
        config
    };
    for (name, config) in [("mb", minibatch_config()), ("exact", exact_published)] {
        let whole = scratch(&format!("whole-{name}"));
        run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &valid(&config),
            &whole,
            0,
            &|_| {},
        )
        .unwrap();
        let reference = contents(&chain_dir(&whole, 0));

        let resumed = scratch(&format!("resumed-{name}"));
        let short = ChainConfig {
            iterations: 15,
            ..config.clone()
        };
        let report = run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &valid(&short),
            &resumed,
            0,
            &|_| {},
        )
        .unwrap();
        assert_eq!(report.iterations, 15);
        // The run is extended to 30, but "crashes" during chunk 2: recreate that state by
        // running to 20 and leaving debris of chunk 2 behind.
        let twenty = ChainConfig {
            iterations: 20,
            ..config.clone()
        };
        let report = run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &valid(&twenty),
            &resumed,
            0,
            &|_| {},
        )
        .unwrap();
        assert_eq!((report.resumed_at, report.iterations), (10, 20));
        let cdir = chain_dir(&resumed, 0);
        std::fs::copy(
            cdir.join("chunk-000000.json"),
            cdir.join("chunk-000002.json"),
        )
        .unwrap();
        std::fs::write(cdir.join("chunk-000002.safetensors.partial"), b"half").unwrap();
        let progress = std::sync::Mutex::new(Vec::new());
        let report = run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &valid(&config),
            &resumed,
            0,
            &|p| progress.lock().unwrap().push(p.done),
        )
        .unwrap();
        assert_eq!((report.resumed_at, report.iterations), (20, 30));
        assert_eq!(*progress.lock().unwrap(), [30]);
        assert_eq!(contents(&cdir), reference, "{name}");
        // A finished chain is not run again.
        let again = run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &valid(&config),
            &resumed,
            0,
            &|_| panic!("nothing to run"),
        )
        .unwrap();
        assert_eq!(again.resumed_at, 30);
        for dir in [whole, resumed] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}

/// A folder written under one configuration is not resumed under another.
#[test]
fn resuming_under_another_configuration_is_an_error() {
    let (mlp, train) = setup();
    let config = minibatch_config();
    let dir = scratch("mismatch");
    run_chain(
        &mlp,
        Likelihood::Bernoulli,
        &train,
        &valid(&config),
        &dir,
        0,
        &|_| {},
    )
    .unwrap();
    let mut other = config.clone();
    other.gibbs.proposal = ProposalVariance::Common(0.1);
    let err = run_chain(
        &mlp,
        Likelihood::Bernoulli,
        &train,
        &valid(&other),
        &dir,
        0,
        &|_| {},
    )
    .unwrap_err();
    assert!(matches!(err, Error::Chain { .. }), "{err}");
    assert!(err.to_string().contains("another configuration"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Burn-in, thinning and the last-K window select the iterations they say.
#[test]
fn keep_selects_iterations() {
    let (mlp, train) = setup();
    let config = ChainConfig {
        record_every: 1,
        ..minibatch_config()
    };
    let dir = scratch("keep");
    let report = run_chain(
        &mlp,
        Likelihood::Bernoulli,
        &train,
        &valid(&config),
        &dir,
        0,
        &|_| {},
    )
    .unwrap();
    let chain = Chain::open(&report.dir).unwrap();
    let select = |keep: Keep| chain.draws(&keep).unwrap().iterations;
    assert_eq!(
        select(Keep {
            burn_in: 20,
            ..Keep::default()
        }),
        (20..30).collect::<Vec<u64>>()
    );
    assert_eq!(
        select(Keep {
            thin: 5,
            ..Keep::default()
        }),
        [4, 9, 14, 19, 24, 29]
    );
    assert_eq!(
        select(Keep {
            burn_in: 5,
            thin: 2,
            last: Some(8)
        }),
        [23, 25, 27, 29]
    );
    assert!(
        chain
            .draws(&Keep {
                thin: 0,
                ..Keep::default()
            })
            .is_err()
    );
    let (acceptance, from) = chain.acceptance(15).unwrap();
    assert_eq!(from, 20);
    assert!(acceptance.proposed.iter().all(|&p| p == 10));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Damaged chain folders are typed errors naming the file, not panics: a manifest whose chunks
/// do not tile the iterations, and a chunk sidecar counting another number of blocks. A
/// `Keep` with `last: u64::MAX` (from a config file) keeps everything instead of overflowing.
#[test]
fn damaged_chain_folders_are_named_errors() {
    let dir = scratch("damaged");
    let report = run_minibatch_chain(&dir).unwrap();
    let chain = Chain::open(&report.dir).unwrap();
    let all = chain.draws(&Keep::default()).unwrap();
    let everything = Keep {
        last: Some(u64::MAX),
        ..Keep::default()
    };
    assert_eq!(chain.draws(&everything).unwrap().iterations, all.iterations);

    let manifest = report.dir.join("chain.json");
    let original = std::fs::read_to_string(&manifest).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&original).unwrap();
    json["chunks"][1]["start"] = serde_json::json!(25); // start > end = 20
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = Chain::open(&report.dir).unwrap_err();
    assert!(
        matches!(err, Error::Chain { .. }) && err.to_string().contains("chunk 1"),
        "{err}"
    );
    std::fs::write(&manifest, &original).unwrap();

    // Rewrite chunk 1 with a sidecar counting one block too many (the sidecar is read from
    // the chunk file's header, the checkpoint's commit point).
    let chunk = report.dir.join("chunk-000001.safetensors");
    let mut json: serde_json::Value = bdl_tensor::read_sidecar(&chunk).unwrap();
    for field in ["accepted", "proposed"] {
        json["acceptance"][field]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!(0));
    }
    let tensors = bdl_tensor::load_safetensors(&chunk, &bdl_tensor::Device::Cpu).unwrap();
    let tensors: Vec<(String, bdl_tensor::Tensor)> = tensors.into_iter().collect();
    bdl_tensor::save_safetensors(&chunk, &tensors, Some(&json)).unwrap();
    let err = Chain::open(&report.dir).unwrap().acceptance(0).unwrap_err();
    assert!(err.to_string().contains("chunk-000001"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}

/// A damaged last chunk (its file cut short, as after a crash before the system wrote it out)
/// is computed again on resume, giving the uninterrupted draws; a damaged earlier chunk is an
/// error naming it.
#[test]
fn damaged_chunks_are_recomputed_or_named() {
    let (mlp, train) = setup();
    let config = valid(&minibatch_config());
    let run = |dir: &Path| {
        run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &config,
            dir,
            0,
            &|_| {},
        )
    };
    let whole = scratch("damage-whole");
    run(&whole).unwrap();
    let reference = contents(&chain_dir(&whole, 0));

    let dir = scratch("damage-last");
    run(&dir).unwrap();
    let cdir = chain_dir(&dir, 0);
    let last = cdir.join("chunk-000002.safetensors");
    let bytes = std::fs::read(&last).unwrap();
    std::fs::write(&last, &bytes[..bytes.len() / 2]).unwrap();
    let report = run(&dir).unwrap();
    assert_eq!((report.resumed_at, report.iterations), (20, 30));
    assert_eq!(contents(&cdir), reference);

    let middle = cdir.join("chunk-000001.safetensors");
    let bytes = std::fs::read(&middle).unwrap();
    std::fs::write(&middle, &bytes[..bytes.len() - 1]).unwrap();
    let err = run(&dir).unwrap_err();
    assert!(
        err.to_string().contains("chunk 1") && err.to_string().contains("damaged"),
        "{err}"
    );
    for d in [whole, dir] {
        std::fs::remove_dir_all(d).ok();
    }
}

/// While one writer holds a chain folder, a second gets a clear error instead of colliding.
#[test]
fn a_second_writer_is_refused() {
    let dir = scratch("second-writer");
    let cdir = chain_dir(&dir, 0);
    std::fs::create_dir_all(&cdir).unwrap();
    let held = std::fs::File::create(cdir.join("chain.lock")).unwrap();
    held.lock().unwrap(); // another writer, as far as the sampler can tell
    let err = run_minibatch_chain(&dir).unwrap_err();
    assert!(err.to_string().contains("another process"), "{err}");
    held.unlock().unwrap();
    run_minibatch_chain(&dir).unwrap();
    std::fs::remove_dir_all(dir).ok();
}

/// The child of [`killed_chains_resume_bit_for_bit`]: runs the long chain into the folder in
/// `BDL_CHAIN_CHILD`, when that is set.
fn long_config() -> ChainConfig {
    ChainConfig {
        iterations: 3000,
        chunk_len: 10,
        ..minibatch_config()
    }
}

#[test]
fn killed_chains_resume_bit_for_bit() {
    let (mlp, train) = setup();
    let run = |dir: &Path| {
        run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &valid(&long_config()),
            dir,
            0,
            &|_| {},
        )
    };
    if let Some(dir) = std::env::var_os("BDL_CHAIN_CHILD") {
        run(Path::new(&dir)).unwrap();
        return;
    }
    let whole = scratch("killed-whole");
    run(&whole).unwrap();
    let reference = contents(&chain_dir(&whole, 0));
    let dir = scratch("killed");
    let exe = std::env::current_exe().unwrap();
    // Kill a child running the chain (SIGKILL: no cleanup of any kind) at seeded random
    // moments, resuming each time; then finish in this process.
    let mut rng = Seed(13).rng();
    let mut resumed = Vec::new();
    for _ in 0..6 {
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "killed_chains_resume_bit_for_bit",
                "--test-threads",
                "1",
            ])
            .env("BDL_CHAIN_CHILD", &dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let wait_ms: u64 = rand::Rng::random_range(&mut rng, 20..200);
        std::thread::sleep(std::time::Duration::from_millis(wait_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        resumed.push(Chain::open(&chain_dir(&dir, 0)).map_or(0, |c| c.iterations()));
    }
    // The kills must have interrupted the chain, or the test would prove nothing.
    assert!(
        resumed.iter().any(|&t| t < 3000),
        "never interrupted: {resumed:?}"
    );
    let report = run(&dir).unwrap();
    assert_eq!(report.iterations, 3000);
    assert_eq!(
        contents(&chain_dir(&dir, 0)),
        reference,
        "killed at {resumed:?}"
    );
    for d in [whole, dir] {
        std::fs::remove_dir_all(d).ok();
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// One finished chain folder's files, made once.
    fn seed_files() -> &'static Vec<(String, Vec<u8>)> {
        static FILES: std::sync::OnceLock<Vec<(String, Vec<u8>)>> = std::sync::OnceLock::new();
        FILES.get_or_init(|| {
            let dir = scratch("fuzz-seed");
            let report = run_minibatch_chain(&dir).unwrap();
            let files = std::fs::read_dir(&report.dir)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    (
                        e.file_name().into_string().unwrap(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect();
            std::fs::remove_dir_all(dir).ok();
            files
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]
        /// A chain folder whose manifest or a chunk sidecar has bytes overwritten or cut is
        /// read, resumed or refused with a typed error, never a panic.
        #[test]
        fn mutated_chain_folders_fail_cleanly(
            target in prop_oneof![Just("chain.json"), Just("chunk-000001.json"), Just("chunk-000002.safetensors")],
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            cut in any::<usize>(),
        ) {
            let dir = scratch(&format!("fuzz-{cut}"));
            let cdir = chain_dir(&dir, 0);
            std::fs::create_dir_all(&cdir).unwrap();
            for (name, bytes) in seed_files() {
                let mut bytes = bytes.clone();
                if name == target {
                    for &(at, b) in &edits {
                        let n = bytes.len();
                        bytes[at % n] = b;
                    }
                    if cut % 2 == 0 {
                        bytes.truncate(cut % (bytes.len() + 1));
                    }
                }
                std::fs::write(cdir.join(name), bytes).unwrap();
            }
            if let Ok(chain) = Chain::open(&cdir) {
                let _ = chain.draws(&Keep::default());
                let _ = chain.acceptance(0);
                let _ = chain.log_target_trace();
            }
            let _ = run_minibatch_chain(&dir);
            std::fs::remove_dir_all(dir).ok();
        }
    }
}
