//! Every experiment end to end in its smoke profile (seconds, tiny data): an experiment that
//! breaks fails `cargo test`. The numbers of a smoke run mean nothing; what is checked is that
//! each run writes its results with claims, its table and its figures, and that the claims
//! index lists every run.

use bdl_experiments::report::Results;
use bdl_experiments::{Profile, experiments};

#[test]
fn every_experiment_runs_in_the_smoke_profile() {
    let out = std::env::temp_dir().join(format!("bdl-smoke-{}", std::process::id()));
    let names: Vec<&str> = experiments().iter().map(|e| e.name()).collect();
    for experiment in experiments() {
        let (outcome, _) = bdl_experiments::run(experiment, Profile::Smoke, &out, true)
            .unwrap_or_else(|e| panic!("{}: {e:#}", experiment.name()));
        let dir = out.join(experiment.name()).join("smoke");
        let results: Results =
            serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
        assert_eq!(results.experiment, experiment.name());
        assert_eq!(results.profile, Profile::Smoke);
        assert!(
            !results.claims.is_empty(),
            "{}: no claims",
            experiment.name()
        );
        assert_eq!(results.claims, outcome.claims);
        assert!(
            results.settings.is_object(),
            "{}: settings",
            experiment.name()
        );
        let table = std::fs::read_to_string(dir.join("table.md")).unwrap();
        assert!(
            table.contains("## The paper's claims"),
            "{}",
            experiment.name()
        );
        for (figure, _) in &outcome.figures {
            assert!(dir.join(figure).exists(), "{}: {figure}", experiment.name());
        }
    }
    let index = bdl_experiments::report::write_index(&out, &names).unwrap();
    let index = std::fs::read_to_string(index).unwrap();
    for name in &names {
        assert!(
            index.contains(&format!("`{name}` (smoke profile)")),
            "{name} not indexed"
        );
    }
    std::fs::remove_dir_all(&out).ok();
}
