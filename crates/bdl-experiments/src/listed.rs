//! Listed methods: `MethodSpec`s an experiment fits beside its own rows, each through
//! `bdl_methods::fit` from the problem its own methods start from (a seed's MAP).
//!
//! An experiment that takes them has a default list; a file [`FILE`] in the run's folder (a
//! JSON list of method specs, written there by `cargo xtask reproduce --methods FILE`)
//! replaces it, so a user adds a method to an experiment without writing Rust. Each listed
//! method's saved units carry its own spec in their settings ([`Listed::settings`]): adding a
//! method to the list computes its units alone, and the others are read back.

use anyhow::{Context as _, Result};
use bdl_methods::MethodSpec;
use serde::Serialize;

use crate::{Context, Profile};

/// The name of a run's list of methods in its folder.
pub const FILE: &str = "methods.json";

/// One listed method: its row label, the slug of its unit keys, and its spec.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Listed {
    /// The method's name ("KFAC Laplace", "SGHMC"), numbered when the list repeats one.
    pub label: String,
    /// The label in unit keys: lower case, words joined by `-`.
    pub slug: String,
    /// What is fitted.
    pub spec: MethodSpec,
}

/// The settings a listed method's units are saved under: the run's and the method's spec.
#[derive(Serialize)]
pub struct ListedSettings<'a, S> {
    settings: &'a S,
    method: &'a MethodSpec,
}

impl Listed {
    /// The settings of this method's units in a run with `settings`.
    pub fn settings<'a, S: Serialize>(&'a self, settings: &'a S) -> ListedSettings<'a, S> {
        ListedSettings {
            settings,
            method: &self.spec,
        }
    }
}

/// What `results.json` records of a run's settings: the experiment's and its listed methods.
#[derive(Serialize)]
pub struct WithListed<'a, S> {
    #[serde(flatten)]
    settings: &'a S,
    listed: &'a [Listed],
}

/// The settings `settings` with the run's `listed` methods beside them, for its results.
pub fn with_listed<'a, S: Serialize>(settings: &'a S, listed: &'a [Listed]) -> WithListed<'a, S> {
    WithListed { settings, listed }
}

/// The run's listed methods: [`FILE`] in its folder when there is one, `default` otherwise.
///
/// ```
/// use bdl_experiments::listed::labelled;
/// let specs = serde_json::from_str(r#"[
///     {"method": "laplace", "config": {"hessian": "kron"}},
///     {"method": "laplace", "config": {"hessian": "kron", "prior": {"scalar": 3.0}}}
/// ]"#).unwrap();
/// let listed = labelled(specs);
/// assert_eq!(listed[0].label, "KFAC Laplace");
/// assert_eq!((listed[1].label.as_str(), listed[1].slug.as_str()), ("KFAC Laplace 2", "kfac-laplace-2"));
/// ```
pub fn methods(ctx: &Context, default: Vec<MethodSpec>) -> Result<Vec<Listed>> {
    let path = ctx.dir.join(FILE);
    if !path.exists() {
        return Ok(labelled(default));
    }
    let specs: Vec<MethodSpec> = serde_json::from_str(&read(&path)?)?;
    ctx.log(format!(
        "{} listed methods from {}",
        specs.len(),
        path.display()
    ));
    Ok(labelled(specs))
}

/// The text of a file of listed methods, checked to be a JSON list of method specs (for
/// `--methods`, which copies it into a run's folder).
pub fn read(path: &std::path::Path) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str::<Vec<MethodSpec>>(&text)
        .with_context(|| format!("{}: not a JSON list of method specs", path.display()))?;
    Ok(text)
}

/// The report's paragraph on the listed methods of `experiment`, each fitted from `start`.
pub fn section(experiment: &str, start: &str, listed: &[Listed]) -> String {
    let names: Vec<&str> = listed.iter().map(|l| l.label.as_str()).collect();
    format!(
        "\n## Listed methods\n\nBeside the experiment's own rows, {start} is the start of the \
         listed methods ({}), fitted by `bdl_methods::fit` from their specs (in `results.json`, \
         `settings.listed`). A JSON list of method specs as `{FILE}` in this folder (`cargo \
         xtask reproduce {experiment} --methods FILE` writes it) replaces them; each listed \
         method's units carry its spec, so a new one computes its own units alone.\n",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        },
    )
}

/// Labels and slugs for `specs`: each method's name, with " 2", " 3", … on its repeats.
pub fn labelled(specs: Vec<MethodSpec>) -> Vec<Listed> {
    let mut seen: Vec<&'static str> = Vec::new();
    specs
        .into_iter()
        .map(|spec| {
            let name = spec.name();
            let count = seen.iter().filter(|&&n| n == name).count() + 1;
            seen.push(name);
            let label = if count == 1 {
                name.to_owned()
            } else {
                format!("{name} {count}")
            };
            let slug = label
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join("-");
            Listed { label, slug, spec }
        })
        .collect()
}

/// HMC as the reference sampler of a small network, the default listed method of the UCI
/// experiments: the full-batch potential at the starting MAP's σ and prior precision
/// `prior_precision`, ε adapted to an acceptance of 0.8 over the first half, up to 20 leapfrog
/// steps an iteration; 20 iterations (smoke), 200 keeping every second (quick), 1,000 keeping
/// every fifth (paper).
pub fn hmc_reference(profile: Profile, prior_precision: f64) -> Result<Vec<MethodSpec>> {
    let (iterations, keep_every) = match profile {
        Profile::Smoke => (20, 1),
        Profile::Quick => (200, 2),
        Profile::Paper => (1000, 5),
    };
    Ok(serde_json::from_value(serde_json::json!([
        {"method": "hmc", "config": {"step_size": 1e-3, "leapfrog_steps": 20,
            "iterations": iterations, "burn_in": iterations / 2, "keep_every": keep_every,
            "prior_precision": prior_precision, "target_acceptance": 0.8, "seed": 1}}
    ]))?)
}
