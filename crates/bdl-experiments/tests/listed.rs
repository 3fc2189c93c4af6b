//! Listed methods: a `methods.json` in a run's folder adds methods to `shift-mnist` (smoke
//! profile) as rows of their own, each fitted from the seeds' MAPs; a second method added to
//! the list computes its own units alone (the first one's saved unit is read back, not
//! rewritten); a file that is not a list of method specs is an error naming it.

use bdl_experiments::{Profile, Sharding, find, listed, run_sharded};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bdl-listed-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

const KFAC: &str = r#"{"method": "laplace", "config": {"hessian": "kron", "prior": {"scalar": 30},
    "subnetwork": {"rule": "last-layer", "candidates": "all"}}}"#;
const DIAGONAL: &str =
    r#"{"method": "laplace", "config": {"hessian": "diagonal", "prior": {"scalar": 30}}}"#;

#[test]
fn a_listed_method_is_a_row_and_a_new_one_computes_alone() {
    let experiment = find("shift-mnist").unwrap();
    let out = scratch("run");
    let dir = out.join("shift-mnist").join("smoke");
    std::fs::create_dir_all(&dir).unwrap();
    // One shard of one: every unit is saved, so the second run can read them back.
    let sharding = Sharding::Shard { index: 0, count: 1 };
    std::fs::write(dir.join(listed::FILE), format!("[{KFAC}]")).unwrap();
    let (first, _) = run_sharded(experiment, Profile::Smoke, &out, true, sharding).unwrap();
    let kfac_unit = dir
        .join("units")
        .join("seed-0-listed-last-layer-kfac-laplace.json");
    let shard = first.shard.expect("a shard");
    assert!(
        shard
            .units
            .contains(&"seed-0-listed-last-layer-kfac-laplace".to_owned())
    );
    let written = std::fs::metadata(&kfac_unit).unwrap().modified().unwrap();

    std::fs::write(dir.join(listed::FILE), format!("[{KFAC}, {DIAGONAL}]")).unwrap();
    let (second, _) = run_sharded(experiment, Profile::Smoke, &out, true, sharding).unwrap();
    assert!(
        second
            .shard
            .expect("a shard")
            .units
            .contains(&"seed-0-listed-diagonal-laplace".to_owned())
    );
    assert_eq!(
        std::fs::metadata(&kfac_unit).unwrap().modified().unwrap(),
        written,
        "the first listed method's unit is read back, not computed again"
    );

    // The merge's rows: the listed methods by their labels beside the experiment's own.
    let (merged, _) = run_sharded(experiment, Profile::Smoke, &out, true, Sharding::Merge).unwrap();
    let methods: Vec<String> = merged
        .rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["method"].to_string())
        .collect();
    for label in ["last-layer KFAC Laplace", "diagonal Laplace"] {
        assert!(
            methods
                .iter()
                .any(|m| m.contains(label) && m.contains("listed")),
            "{label} in {methods:?}"
        );
    }

    std::fs::write(
        dir.join(listed::FILE),
        "[{\"method\": \"laplace\", \"config\": 3}]",
    )
    .unwrap();
    let err = run_sharded(experiment, Profile::Smoke, &out, true, Sharding::All).unwrap_err();
    assert!(format!("{err:#}").contains("methods.json"), "{err:#}");
    std::fs::remove_dir_all(&out).unwrap();
}
