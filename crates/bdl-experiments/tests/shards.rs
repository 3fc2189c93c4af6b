//! A run spread over machines gives the unsharded run's results: three shards of `laplace-uci`
//! (smoke profile, four splits), their units gathered in one folder and merged, equal the run
//! on one machine, row for row, and the merge's results and the claims index say that it read
//! its units back; a shard writes no results; a merge with a unit missing fails and
//! names it; an experiment without units refuses to shard; and the other experiments made of
//! units (`vadam-rl`, `vadam-uci`, `gibbs-mnist`, `gibbs-augment`, `shift-mnist`, `gibbs-xor`)
//! merge from two shards to their unsharded rows, each shard listing only its own units.

use bdl_experiments::report::{Results, write_index};
use bdl_experiments::units::UnitCounts;
use bdl_experiments::{Profile, Sharding, find, run_sharded};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bdl-shards-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn three_shards_merged_equal_the_unsharded_run() {
    let experiment = find("laplace-uci").unwrap();
    let (one, many) = (scratch("one"), scratch("many"));
    let (whole, _) = run_sharded(experiment, Profile::Smoke, &one, true, Sharding::All).unwrap();

    let units = many.join("laplace-uci").join("smoke").join("units");
    let mut computed = Vec::new();
    for index in 0..3 {
        // Each shard on its own "machine" (folder); its units are then copied to the merge's.
        let machine = scratch(&format!("machine-{index}"));
        let sharding = Sharding::Shard { index, count: 3 };
        let (outcome, _) =
            run_sharded(experiment, Profile::Smoke, &machine, true, sharding).unwrap();
        let shard = outcome.shard.expect("a shard's outcome");
        let dir = machine.join("laplace-uci").join("smoke");
        assert!(dir.join(format!("shard-{}-of-3.json", index + 1)).exists());
        assert!(
            !dir.join("results.json").exists(),
            "a shard writes no results"
        );
        std::fs::create_dir_all(&units).unwrap();
        for key in &shard.units {
            let file = format!("{key}.json");
            std::fs::copy(dir.join("units").join(&file), units.join(&file)).unwrap();
        }
        computed.extend(shard.units);
        assert_eq!(
            shard.total, 12,
            "four splits, each its posteriors, its controls and its one listed method (HMC)"
        );
        std::fs::remove_dir_all(&machine).unwrap();
    }
    computed.sort();
    computed.dedup();
    assert_eq!(computed.len(), 12, "every unit in exactly one shard");

    let (merged, _) =
        run_sharded(experiment, Profile::Smoke, &many, true, Sharding::Merge).unwrap();
    assert_eq!(merged.rows, whole.rows);
    assert_eq!(merged.claims, whole.claims);
    // The merge computed no unit and says so: its seconds are not the run's.
    let results = |out: &std::path::Path| -> Results {
        let path = out.join("laplace-uci").join("smoke").join("results.json");
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    };
    let counts = UnitCounts {
        computed: 0,
        read_back: 12,
    };
    assert_eq!(results(&many).units, Some(counts));
    assert_eq!(
        results(&one).units,
        None,
        "an unsharded smoke run saves no units"
    );
    let index = write_index(&many, &["laplace-uci"]).unwrap();
    let index = std::fs::read_to_string(index).unwrap();
    assert!(
        index.contains("12 of its 12 units were read back from earlier runs"),
        "{index}"
    );

    // One unit gone: the merge names it.
    let gone = units.join(format!("{}.json", computed[0]));
    std::fs::remove_file(&gone).unwrap();
    let err = run_sharded(experiment, Profile::Smoke, &many, true, Sharding::Merge).unwrap_err();
    assert!(format!("{err:#}").contains(&computed[0]), "{err:#}");

    let toy = find("laplace-toy").unwrap();
    let err = run_sharded(toy, Profile::Smoke, &many, true, Sharding::Merge).unwrap_err();
    assert!(format!("{err:#}").contains("cannot be sharded"), "{err:#}");
    for dir in [one, many] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// The rows without their wall times (`seconds`, `wall_s`, `ms_per_iteration`, `fit_s`,
/// `eval_s`, at any depth: measured anew by every run).
fn without_timings(mut rows: serde_json::Value) -> serde_json::Value {
    strip(&mut rows);
    rows
}

fn strip(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
        serde_json::Value::Object(fields) => {
            for timing in ["seconds", "wall_s", "ms_per_iteration", "fit_s", "eval_s"] {
                fields.remove(timing);
            }
            fields.values_mut().for_each(strip);
        }
        _ => {}
    }
}

/// The other experiments made of units, two shards each on one folder (as on a shared file
/// system), merged: the unsharded rows and claims, wall times aside.
#[test]
fn two_shards_of_every_other_unit_experiment_merge_to_the_unsharded_run() {
    for name in [
        "vadam-rl",
        "vadam-uci",
        "gibbs-mnist",
        "gibbs-augment",
        "shift-mnist",
        "gibbs-xor",
    ] {
        let experiment = find(name).unwrap();
        let (one, many) = (
            scratch(&format!("{name}-one")),
            scratch(&format!("{name}-many")),
        );
        let (whole, _) =
            run_sharded(experiment, Profile::Smoke, &one, true, Sharding::All).unwrap();
        let mut listed = Vec::new();
        let mut total = 0;
        for index in 0..2 {
            let sharding = Sharding::Shard { index, count: 2 };
            let (outcome, _) =
                run_sharded(experiment, Profile::Smoke, &many, true, sharding).unwrap();
            let shard = outcome.shard.expect("a shard's outcome");
            listed.extend(shard.units);
            total = shard.total;
        }
        // Each shard lists only its own units, and together they list every unit once.
        let count = listed.len();
        listed.sort();
        listed.dedup();
        assert_eq!((listed.len(), count), (total, total), "{name}: {listed:?}");
        let (merged, _) =
            run_sharded(experiment, Profile::Smoke, &many, true, Sharding::Merge).unwrap();
        assert_eq!(
            without_timings(merged.rows),
            without_timings(whole.rows),
            "{name}"
        );
        if name == "gibbs-xor" {
            // Its speed claim quotes (and is decided on) the wall times of the run.
            let statements = |c: &[bdl_experiments::claim::Claim]| -> Vec<String> {
                c.iter().map(|c| c.statement.clone()).collect()
            };
            assert_eq!(statements(&merged.claims), statements(&whole.claims));
        } else {
            assert_eq!(merged.claims, whole.claims, "{name}");
        }
        for dir in [one, many] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
