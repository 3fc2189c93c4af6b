//! The one writer of an experiment's outputs (`results.json`, `table.md`, figures) and of the
//! claims index `index.md`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::Panel;
use serde::{Deserialize, Serialize};

use crate::units::UnitCounts;
use crate::{Claim, Profile, claim};

/// What an experiment produced: its settings, result rows, tables, claims and figures.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The title of `table.md`.
    pub title: String,
    /// Every setting that produced the results.
    pub settings: serde_json::Value,
    /// The result rows.
    pub rows: serde_json::Value,
    /// The Markdown body of `table.md` before the claims (tables, notes).
    pub body: String,
    /// The paper's claims against ours.
    pub claims: Vec<Claim>,
    /// SVG figures: (file name, contents).
    pub figures: Vec<(String, String)>,
    /// For one shard of a sharded run: what it computed (and then there are no results).
    pub shard: Option<ShardReport>,
}

/// What one shard of a run spread over machines computed (`shard-K-of-N.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    /// The shard, from 1.
    pub shard: usize,
    /// The number of shards.
    pub of: usize,
    /// The keys of the units this shard holds in `units/`.
    pub units: Vec<String>,
    /// The number of units of the whole run.
    pub total: usize,
}

impl Outcome {
    /// An outcome titled `title` with the given settings and rows.
    pub fn new(
        title: impl Into<String>,
        settings: &impl Serialize,
        rows: &impl Serialize,
    ) -> Result<Self> {
        Ok(Self {
            title: title.into(),
            settings: serde_json::to_value(settings)?,
            rows: serde_json::to_value(rows)?,
            body: String::new(),
            claims: Vec::new(),
            figures: Vec::new(),
            shard: None,
        })
    }

    /// The outcome of one shard: no results, only what it computed.
    pub fn of_shard(report: ShardReport) -> Self {
        Self {
            title: format!("shard {} of {}", report.shard, report.of),
            settings: serde_json::Value::Null,
            rows: serde_json::Value::Null,
            body: String::new(),
            claims: Vec::new(),
            figures: Vec::new(),
            shard: Some(report),
        }
    }

    /// With this Markdown body.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }

    /// With these claims.
    pub fn claims(mut self, claims: Vec<Claim>) -> Self {
        self.claims = claims;
        self
    }

    /// With the figure `name` (an SVG document).
    pub fn figure(mut self, name: impl Into<String>, svg: String) -> Self {
        self.figures.push((name.into(), svg));
        self
    }
}

/// `results.json`: everything needed to read a run back.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    /// The experiment's name.
    pub experiment: String,
    /// The profile.
    pub profile: Profile,
    /// The source revision (`git describe --always --dirty`), or `unknown`.
    pub revision: String,
    /// The wall time of the run in seconds.
    pub wall_time_s: f64,
    /// The saved units (paper profile, merges) the run computed and read back; absent when
    /// it saved none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<UnitCounts>,
    /// The settings.
    pub settings: serde_json::Value,
    /// The claims.
    pub claims: Vec<Claim>,
    /// The result rows.
    pub rows: serde_json::Value,
}

/// What a run measured of itself.
#[derive(Clone, Copy, Debug)]
pub struct RunStats {
    /// The wall time in seconds.
    pub wall_time_s: f64,
    /// Its saved units, computed and read back ([`Tally::counts`](crate::units::Tally::counts)).
    pub units: Option<UnitCounts>,
}

/// Writes the outcome of `experiment` under `dir`: `results.json`, `table.md` and the figures;
/// for a shard, only `shard-K-of-N.json`.
pub fn write(
    dir: &Path,
    experiment: &str,
    profile: Profile,
    run: RunStats,
    outcome: &Outcome,
) -> Result<()> {
    if let Some(shard) = &outcome.shard {
        let name = format!("shard-{}-of-{}.json", shard.shard, shard.of);
        return write_file(&dir.join(name), &serde_json::to_vec_pretty(shard)?);
    }
    let results = Results {
        experiment: experiment.to_owned(),
        profile,
        revision: revision(),
        wall_time_s: run.wall_time_s,
        units: run.units,
        settings: outcome.settings.clone(),
        claims: outcome.claims.clone(),
        rows: outcome.rows.clone(),
    };
    write_file(
        &dir.join("results.json"),
        &serde_json::to_vec_pretty(&results)?,
    )?;
    let mut md = format!("# {}\n\n{}", outcome.title, outcome.body);
    if !outcome.claims.is_empty() {
        md.push_str(&format!(
            "\n## The paper's claims\n\n{}",
            claim::table(&outcome.claims)
        ));
    }
    write_file(&dir.join("table.md"), md.as_bytes())?;
    for (name, svg) in &outcome.figures {
        write_file(&dir.join(name), svg.as_bytes())?;
    }
    Ok(())
}

/// Writes a file atomically (a temporary name, then a rename).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    bdl_tensor::write_atomically(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// The source revision of the working tree, or `unknown` outside a git checkout.
fn revision() -> String {
    std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(bdl_data::root::workspace())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The run's wall time, and, when it read saved units back, how many: their time is the
/// earlier runs'.
fn run_time(results: &Results) -> String {
    let wall = format!("{:.0} s", results.wall_time_s);
    match results.units {
        Some(UnitCounts {
            computed,
            read_back,
        }) if read_back > 0 => format!(
            "{wall}; {read_back} of its {} units were read back from earlier runs, whose time \
             these seconds do not include",
            computed + read_back
        ),
        _ => wall,
    }
}

/// Writes `out/index.md`: every experiment's claims for every profile that has results under
/// `out/<experiment>/<profile>/results.json`; returns the path.
pub fn write_index(out: &Path, experiments: &[&str]) -> Result<PathBuf> {
    let mut md = String::from(
        "# Claims index\n\nEvery claim of the reproduced papers, the paper's statement beside our \
         result, the paper's own words and the verdict (holds, fails or undecided), by experiment \
         and profile. Each experiment's \
         `table.md` has the details.\n",
    );
    let mut all = Vec::new();
    for name in experiments {
        for profile in Profile::ALL {
            let path = out.join(name).join(profile.name()).join("results.json");
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let results: Results = serde_json::from_slice(&bytes)
                .with_context(|| format!("reading {}", path.display()))?;
            md.push_str(&format!(
                "\n## `{name}` ({} profile): {}\n\nRevision {}, {}.\n\n{}",
                profile.name(),
                claim::summary(&results.claims),
                results.revision,
                run_time(&results),
                claim::table(&results.claims)
            ));
            all.extend(results.claims);
        }
    }
    md.push_str(&format!(
        "\nOver the runs listed: {}. A claim is undecided when the difference that decides it \
         is within one standard error of zero, or the run has fewer replicates than its \
         criterion needs.\n",
        claim::summary(&all)
    ));
    let path = out.join("index.md");
    write_file(&path, md.as_bytes())?;
    Ok(path)
}

/// The line of the means at `xs`, over a band of ± one standard error where every point has one.
pub(crate) fn mean_with_band(panel: &mut Panel, xs: &[f64], stats: &[MeanSe], color: &str) {
    if stats.iter().all(|s| s.se.is_finite()) {
        let lo: Vec<f64> = stats.iter().map(|s| s.mean - s.se).collect();
        let hi: Vec<f64> = stats.iter().map(|s| s.mean + s.se).collect();
        panel.band(xs, &lo, &hi, color);
    }
    let mean: Vec<f64> = stats.iter().map(|s| s.mean).collect();
    panel.line(xs, &mean, color);
}
