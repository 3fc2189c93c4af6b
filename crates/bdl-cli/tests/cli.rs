//! The command line end to end on CSV files: fit, predict and evaluate round trip for a
//! regression and a classification, and bad input reported with the file, line and column.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch folder for one test, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("bdl-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bdl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bdl"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn failure(out: &Output) -> String {
    assert!(!out.status.success(), "expected a failure");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// y = sin(2a) + b/2 on a grid, the target in the middle column.
fn regression_csv(n: usize) -> String {
    let mut text = String::from("a,y,b\n");
    for i in 0..n {
        let a = -1.0 + 2.0 * i as f64 / n as f64;
        let b = (i % 7) as f64 / 7.0;
        text.push_str(&format!("{a},{},{b}\n", (2.0 * a).sin() + b / 2.0));
    }
    text
}

#[test]
fn regression_round_trip() {
    let dir = Scratch::new("regression");
    let train = dir.write("train.csv", &regression_csv(80));
    let test = dir.write("test.csv", &regression_csv(23));
    let method = dir.write(
        "laplace.json",
        r#"{"method": "laplace", "config": {"prior_grid": [0.1, 1, 10],
            "subnetwork": {"rule": "last-layer", "candidates": "all"}}}"#,
    );
    let model = dir.path("model.safetensors");
    ok(&bdl(&[
        "fit",
        "--method",
        s(&method),
        "--data",
        s(&train),
        "--target",
        "y",
        "--hidden",
        "16",
        "--epochs",
        "100",
        "--out",
        s(&model),
    ]));
    assert!(model.exists() && dir.path("model.model.json").exists());

    let predictions = dir.path("predictions.csv");
    ok(&bdl(&[
        "predict",
        "--posterior",
        s(&model),
        "--data",
        s(&test),
        "--out",
        s(&predictions),
    ]));
    let text = std::fs::read_to_string(&predictions).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("y_mean,y_variance"));
    let rows: Vec<(f64, f64)> = lines
        .map(|l| {
            let (m, v) = l.split_once(',').unwrap();
            (m.parse().unwrap(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 23);
    assert!(rows.iter().all(|(m, v)| m.is_finite() && *v > 0.0));

    let report = ok(&bdl(&[
        "evaluate",
        "--posterior",
        s(&model),
        "--data",
        s(&test),
    ]));
    assert!(report.contains("method: last-layer Laplace"), "{report}");
    let rmse: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("RMSE: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(rmse < 0.5, "{report}");
}

#[test]
fn classification_round_trip() {
    let dir = Scratch::new("classes");
    let mut text = String::from("u,v,label\n");
    for i in 0..90 {
        let (u, v) = ((i % 9) as f64 / 9.0, (i / 9) as f64 / 10.0);
        text.push_str(&format!("{u},{v},{}\n", u32::from(u + v > 0.9)));
    }
    let data = dir.write("data.csv", &text);
    let method = dir.write("map.json", r#"{"method": "map", "config": {}}"#);
    let model = dir.path("m.safetensors");
    ok(&bdl(&[
        "fit",
        "--method",
        s(&method),
        "--data",
        s(&data),
        "--target",
        "label",
        "--task",
        "classification",
        "--hidden",
        "8",
        "--epochs",
        "150",
        "--out",
        s(&model),
    ]));
    let out = ok(&bdl(&[
        "predict",
        "--posterior",
        s(&model),
        "--data",
        s(&data),
    ]));
    assert!(out.starts_with("p_0,p_1\n"), "{out}");
    let report = ok(&bdl(&[
        "evaluate",
        "--posterior",
        s(&model),
        "--data",
        s(&data),
    ]));
    let accuracy: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("accuracy: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(accuracy > 0.85, "{report}");
}

#[test]
fn bad_input_names_the_file_line_and_column() {
    let dir = Scratch::new("bad");
    let method = dir.write("map.json", r#"{"method": "map", "config": {"epochs": 5}}"#);
    let model = dir.path("m.safetensors");
    let fit = |data: &Path, target: &str| {
        bdl(&[
            "fit",
            "--method",
            s(&method),
            "--data",
            s(data),
            "--target",
            target,
            "--out",
            s(&model),
        ])
    };
    let nan = dir.write("nan.csv", "a,y\n1,2\n3,NaN\n");
    let err = failure(&fit(&nan, "y"));
    assert!(err.contains("nan.csv:3: column 2"), "{err}");
    let ragged = dir.write("ragged.csv", "a,y\n1,2\n3\n");
    assert!(failure(&fit(&ragged, "y")).contains("ragged.csv:3"));
    let good = dir.write("good.csv", &regression_csv(20));
    assert!(failure(&fit(&good, "z")).contains("no column named \"z\""));
    let bad_spec = dir.write(
        "bad.json",
        r#"{"method": "laplace", "config": {"hessian": 3}}"#,
    );
    let err = failure(&bdl(&[
        "fit",
        "--method",
        s(&bad_spec),
        "--data",
        s(&good),
        "--target",
        "y",
        "--out",
        s(&model),
    ]));
    assert!(err.contains("bad.json: not a method spec"), "{err}");

    // A fitted model meets rows without its feature columns, and a damaged posterior file.
    ok(&fit(&good, "y"));
    let other = dir.write("other.csv", "c,y\n1,2\n");
    let err = failure(&bdl(&[
        "predict",
        "--posterior",
        s(&model),
        "--data",
        s(&other),
    ]));
    assert!(err.contains("no column named \"a\""), "{err}");
    let bytes = std::fs::read(&model).unwrap();
    std::fs::write(&model, &bytes[..bytes.len() / 3]).unwrap();
    let err = failure(&bdl(&[
        "predict",
        "--posterior",
        s(&model),
        "--data",
        s(&good),
    ]));
    assert!(err.contains("m.safetensors"), "{err}");
}
