//! Resumable units: the independent pieces of a long run (splits, seeds), each saved the moment
//! it finishes, so that a stopped paper profile continues where it stopped.
//!
//! A unit's result goes to `<ctx.dir>/units/<key>.json` together with the settings that
//! produced it, written durably ([`bdl_tensor::write_atomically`]: a kill leaves the old file or
//! the new one, never half of one). A later run of the same profile reads back every unit whose
//! file holds the same settings and recomputes the others; a file that cannot be read (or was
//! written under other settings) is recomputed and replaced, with a log line. Only the paper
//! profile resumes: smoke and quick runs are short and always recompute, unless sharded.
//!
//! **Runs spread over machines.** With [`Sharding::Shard`] K of N a run computes only the units
//! at positions K, K + N, K + 2N, … of the experiment's list ([`Units::mine`]) and saves them
//! (in every profile), then reports what it holds instead of results ([`Units::shard_outcome`]).
//! Copying every shard's `units/` folder into one and running with [`Sharding::Merge`] gives the
//! results of the unsharded run: the merge reads every unit back and computes none (a missing
//! one is an error naming it and the shard that computes it).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result};
use bdl_inference::{MapEstimate, Posterior};
use candle_core::Device;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::report::ShardReport;
use crate::{Context, Outcome, Profile, Sharding};

/// The saved units of one run.
pub struct Units {
    /// `None` when the profile does not resume and the run is not sharded.
    dir: Option<PathBuf>,
    settings: serde_json::Value,
    quiet: bool,
    sharding: Sharding,
    tally: Arc<Tally>,
}

/// How many saved units a run computed and how many it read back from earlier runs (a
/// resumed run, a merge), over every [`Units`] of its [`Context`]: the run's wall time covers
/// only the first.
#[derive(Debug, Default)]
pub struct Tally {
    computed: AtomicUsize,
    read_back: AtomicUsize,
}

impl Tally {
    /// The counts so far; `None` when the run saved no units (a quick or smoke run).
    pub fn counts(&self) -> Option<UnitCounts> {
        let counts = UnitCounts {
            computed: self.computed.load(Ordering::Relaxed),
            read_back: self.read_back.load(Ordering::Relaxed),
        };
        (counts.computed + counts.read_back > 0).then_some(counts)
    }
}

/// A run's saved units: computed by it, or read back from an earlier run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitCounts {
    /// Units this run computed (and saved).
    pub computed: usize,
    /// Units read back, computed by earlier runs whose time is not in this run's.
    pub read_back: usize,
}

/// What a unit's file holds.
#[derive(serde::Deserialize, Serialize)]
struct Saved<R> {
    settings: serde_json::Value,
    result: R,
}

impl Units {
    /// The units of the run `ctx` with these `settings` (saved under `ctx.dir/units` for the
    /// paper profile and for sharded runs).
    pub fn new(ctx: &Context, settings: &impl Serialize) -> Result<Self> {
        let saved = ctx.profile == Profile::Paper || ctx.sharding != Sharding::All;
        let dir = saved.then(|| ctx.dir.join("units"));
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the units folder {}", dir.display()))?;
        }
        Ok(Self {
            dir,
            settings: serde_json::to_value(settings)?,
            quiet: ctx.quiet,
            sharding: ctx.sharding,
            tally: ctx.tally.clone(),
        })
    }

    /// Whether the unit at `position` of the experiment's list is this run's to compute: every
    /// unit, except in a shard, which takes the positions equal to its index modulo the count.
    pub fn mine(&self, position: usize) -> bool {
        match self.sharding {
            Sharding::Shard { index, count } => position % count == index,
            Sharding::All | Sharding::Merge => true,
        }
    }

    /// This run's share of the experiment's units `all` (every unit at a position [`mine`](
    /// Self::mine)), in list order.
    pub fn share<T>(&self, all: Vec<T>) -> Vec<T> {
        all.into_iter()
            .enumerate()
            .filter(|(i, _)| self.mine(*i))
            .map(|(_, unit)| unit)
            .collect()
    }

    /// For a shard, the outcome that reports its units (`keys`, in list order, of `total`);
    /// `None` otherwise, when the experiment goes on to its results.
    pub fn shard_outcome(&self, keys: Vec<String>, total: usize) -> Option<Outcome> {
        match self.sharding {
            Sharding::Shard { index, count } => Some(Outcome::of_shard(ShardReport {
                shard: index + 1,
                of: count,
                units: keys,
                total,
            })),
            Sharding::All | Sharding::Merge => None,
        }
    }

    /// Whether unit `key` is saved (under any settings): what a merge has of a unit that only
    /// some machines compute.
    pub fn saved(&self, key: &str) -> bool {
        (self.dir.as_ref()).is_some_and(|dir| dir.join(format!("{key}.json")).is_file())
    }

    /// The result of unit `key` (a file name: letters, digits, `-`, `_`, `.`): read back when
    /// saved under the same settings, otherwise `run()` and saved.
    pub fn get_or_run<R: Serialize + DeserializeOwned>(
        &self,
        key: &str,
        run: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let Some(dir) = &self.dir else {
            return run();
        };
        assert!(
            !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "unit keys are plain file names, got {key:?}"
        );
        let path = dir.join(format!("{key}.json"));
        let problem = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Saved<R>>(&bytes) {
                Ok(saved) if saved.settings == self.settings => {
                    self.tally.read_back.fetch_add(1, Ordering::Relaxed);
                    return Ok(saved.result);
                }
                Ok(_) => "saved under other settings".to_owned(),
                Err(e) => format!("unreadable ({e})"),
            },
            Err(_) => "missing".to_owned(),
        };
        if self.sharding == Sharding::Merge {
            anyhow::bail!(
                "merging: unit {key} is {problem} in {}; copy the units/ folder of every shard \
                 there (a shard's shard-K-of-N.json lists its units)",
                dir.display()
            );
        }
        if problem != "missing" {
            self.log(format!("{key}: {problem}, recomputed"));
        }
        let result = run()?;
        let saved = Saved {
            settings: self.settings.clone(),
            result,
        };
        bdl_tensor::write_atomically(&path, &serde_json::to_vec(&saved)?)
            .with_context(|| format!("saving unit {key}"))?;
        self.tally.computed.fetch_add(1, Ordering::Relaxed);
        Ok(saved.result)
    }

    /// A posterior that several units start from (for example a MAP that each of them would
    /// otherwise train again), saved beside the units as `shared/<key>.safetensors` with its
    /// sidecar and the run's settings: read back when saved under the same settings, otherwise
    /// `fit()` and saved, so that the shards of a run, and later runs, fit it once. Two shards
    /// running at the same time may both fit it, to the same numbers (every fit is seeded);
    /// a reader never takes half of one, since the settings file that marks it complete is
    /// written last, atomically. Without saved units (an unsharded quick or smoke run) it is
    /// fitted every time.
    pub fn shared<P: Posterior>(&self, key: &str, fit: impl FnOnce() -> Result<P>) -> Result<P> {
        let Some(units) = &self.dir else {
            return fit();
        };
        let dir = units.with_file_name("shared");
        let path = dir.join(format!("{key}.safetensors"));
        let marker = dir.join(format!("{key}.settings.json"));
        let problem = match std::fs::read(&marker) {
            Ok(bytes) => match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(settings) if settings == self.settings => match P::load(&path) {
                    Ok(posterior) => return Ok(posterior),
                    Err(e) => format!("unreadable ({e})"),
                },
                Ok(_) => "saved under other settings".to_owned(),
                Err(e) => format!("unreadable ({e})"),
            },
            Err(_) => "missing".to_owned(),
        };
        if problem != "missing" {
            self.log(format!("shared {key}: {problem}, fitted again"));
        }
        let posterior = fit()?;
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the shared folder {}", dir.display()))?;
        posterior
            .save(&path)
            .with_context(|| format!("saving shared {key}"))?;
        bdl_tensor::write_atomically(&marker, &serde_json::to_vec(&self.settings)?)
            .with_context(|| format!("saving shared {key}"))?;
        Ok(posterior)
    }

    fn log(&self, line: String) {
        if !self.quiet {
            eprintln!("  {line}");
        }
    }
}

/// Each seed's MAP, trained by the first unit that needs it and shared by the others: in this
/// process through its slot, and with the shards of other processes and later runs through
/// [`Units::shared`] under `<name>-seed-<seed>`; on the run's device whichever way it came (a
/// saved one loads onto the CPU).
pub(crate) struct SeedMaps<'a> {
    name: &'static str,
    slots: Vec<Mutex<Option<MapEstimate>>>,
    units: &'a Units,
    device: Device,
}

impl<'a> SeedMaps<'a> {
    /// Empty slots for `seeds` seeds, saved (where `units` saves) as `<name>-seed-<seed>`, the
    /// MAPs handed out on `device`.
    pub(crate) fn new(name: &'static str, seeds: usize, units: &'a Units, device: &Device) -> Self {
        Self {
            name,
            slots: (0..seeds).map(|_| Mutex::new(None)).collect(),
            units,
            device: device.clone(),
        }
    }

    /// Seed `seed`'s MAP: from its slot, else read back or `fit()` by [`Units::shared`]. A
    /// second caller for the same seed waits for the first one's fit.
    pub(crate) fn get(
        &self,
        seed: usize,
        fit: impl FnOnce() -> Result<MapEstimate>,
    ) -> Result<MapEstimate> {
        let mut slot = self.slots[seed]
            .lock()
            .map_err(|_| anyhow::anyhow!("a worker panicked"))?;
        if slot.is_none() {
            let key = format!("{}-seed-{seed}", self.name);
            *slot = Some(self.units.shared(&key, fit)?.to_device(&self.device)?);
        }
        Ok(slot.clone().expect("just set"))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn ctx(dir: &std::path::Path, profile: Profile) -> Context {
        Context {
            profile,
            dir: dir.to_path_buf(),
            out: dir.to_path_buf(),
            data: dir.to_path_buf(),
            quiet: true,
            sharding: Sharding::All,
            tally: Default::default(),
            device: Device::Cpu,
        }
    }

    #[test]
    fn paper_units_resume_and_others_recompute() {
        let dir = std::env::temp_dir().join(format!("bdl-units-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let calls = Cell::new(0);
        let unit = |units: &Units, value: u32| {
            units
                .get_or_run("wine-standard-3", || {
                    calls.set(calls.get() + 1);
                    Ok(vec![value])
                })
                .unwrap()
        };
        let paper_ctx = ctx(&dir, Profile::Paper);
        let paper = Units::new(&paper_ctx, &("settings", 1)).unwrap();
        assert_eq!(paper_ctx.tally.counts(), None);
        assert!(!paper.saved("wine-standard-3"));
        assert_eq!(unit(&paper, 7), [7]);
        assert!(paper.saved("wine-standard-3") && !paper.saved("wine-standard-4"));
        assert_eq!(unit(&paper, 8), [7], "read back, not recomputed");
        assert_eq!(calls.get(), 1);
        let counts = UnitCounts {
            computed: 1,
            read_back: 1,
        };
        assert_eq!(paper_ctx.tally.counts(), Some(counts));
        // Other settings, or a damaged file: recomputed and replaced.
        let other = Units::new(&ctx(&dir, Profile::Paper), &("settings", 2)).unwrap();
        assert_eq!(unit(&other, 9), [9]);
        let path = dir.join("units/wine-standard-3.json");
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(unit(&other, 10), [10]);
        assert_eq!(unit(&other, 11), [10]);
        assert_eq!(calls.get(), 3);
        // The quick profile never saves or reads, and counts no units.
        let quick_ctx = ctx(&dir, Profile::Quick);
        let quick = Units::new(&quick_ctx, &("settings", 2)).unwrap();
        assert_eq!(unit(&quick, 12), [12]);
        assert_eq!(calls.get(), 4);
        assert!(
            !quick.saved("wine-standard-3"),
            "nothing is saved in the quick profile"
        );
        assert_eq!(quick_ctx.tally.counts(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A shared posterior is fitted once per settings and read back bit for bit after; a damaged
    /// one, or one saved under other settings, is fitted again; an unsharded quick run fits
    /// every time.
    #[test]
    fn shared_posteriors_are_fitted_once() {
        use bdl_inference::MapEstimate;
        use bdl_likelihoods::Likelihood;
        use bdl_models::{Activation, Mlp, MlpSpec, Network};
        use candle_core::{DType, Device};

        let dir = std::env::temp_dir().join(format!("bdl-shared-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let fits = Cell::new(0);
        let map = |units: &Units, seed: u64| {
            units
                .shared("map-seed-0", || {
                    fits.set(fits.get() + 1);
                    let mlp = Mlp::new(MlpSpec::new(&[3, 4, 2], Activation::Tanh))?;
                    let theta = mlp.init(bdl_tensor::Seed(seed), DType::F32, &Device::Cpu)?;
                    Ok(MapEstimate::new(
                        Network::from(mlp),
                        theta,
                        Likelihood::Categorical { classes: 2 },
                    )?)
                })
                .unwrap()
        };
        let theta = |m: &MapEstimate| m.theta().to_vec1::<f32>().unwrap();
        let paper = Units::new(&ctx(&dir, Profile::Paper), &("settings", 1)).unwrap();
        let first = map(&paper, 1);
        assert_eq!(
            theta(&map(&paper, 2)),
            theta(&first),
            "read back, not fitted"
        );
        assert_eq!(fits.get(), 1);
        let other = Units::new(&ctx(&dir, Profile::Paper), &("settings", 2)).unwrap();
        assert_ne!(theta(&map(&other, 3)), theta(&first));
        std::fs::write(dir.join("shared/map-seed-0.safetensors"), b"damaged").unwrap();
        map(&other, 4);
        assert_eq!(fits.get(), 3);
        let quick = Units::new(&ctx(&dir, Profile::Quick), &("settings", 2)).unwrap();
        map(&quick, 5);
        assert_eq!(fits.get(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
