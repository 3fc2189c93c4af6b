//! The rules of `docs/ARCHITECTURE.md` that a reading of the sources can check, run by
//! `cargo test`: every crate's (and xtask's) direct bdl dependencies within `.ci/layers`; every
//! library source file opens with its module documentation; no `.unwrap()` in library code
//! outside tests (errors are typed; a broken invariant is an `expect` that says which); no
//! function of the libraries or of xtask over 100 lines; every experiment a folder of its run,
//! settings, claims and report.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// `.ci/layers`: crate → the bdl crates it may depend on.
fn layers() -> BTreeMap<String, BTreeSet<String>> {
    let text = fs::read_to_string(root().join(".ci/layers")).expect(".ci/layers");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, allowed) = l.split_once(':').expect("crate: allowed …");
            let allowed = allowed.split_whitespace().map(str::to_owned).collect();
            (name.trim().to_owned(), allowed)
        })
        .collect()
}

/// The bdl crates a manifest names under `[dependencies]` or `[build-dependencies]`.
fn bdl_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut section = "";
    let mut deps = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if (section == "[dependencies]" || section == "[build-dependencies]")
            && line.starts_with("bdl-")
        {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            deps.insert(name);
        }
    }
    deps
}

/// Every workspace member's manifest directory: `crates/*`, `examples/*` and `xtask`.
fn members() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["crates", "examples"]
        .into_iter()
        .flat_map(|folder| fs::read_dir(root().join(folder)).expect("a members folder"))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.join("Cargo.toml").exists())
        .collect();
    dirs.push(root().join("xtask"));
    dirs.sort();
    dirs
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let layers = layers();
    let mut violations = Vec::new();
    for dir in members() {
        let name = dir
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let Some(allowed) = layers.get(&name) else {
            violations.push(format!("{name} has no line in .ci/layers"));
            continue;
        };
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("a manifest");
        for dep in bdl_dependencies(&manifest) {
            if !allowed.contains(&dep) {
                violations.push(format!("{name} must not depend on {dep}"));
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The `.rs` files under `dir`, recursively.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The files of modules declared only for tests or fuzzing (`#[cfg(test)] mod name;`).
fn test_only_modules(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = fs::read_to_string(file).expect("a source file");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let stem = file.file_stem().expect("a name").to_string_lossy();
        let dir = file.parent().expect("a directory");
        let base = if ["lib", "main", "mod"].contains(&stem.as_ref()) {
            dir.to_path_buf()
        } else {
            dir.join(stem.as_ref())
        };
        for (i, line) in lines.iter().enumerate() {
            let Some(name) = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("mod "))
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            let gated = lines[i.saturating_sub(3)..i]
                .iter()
                .any(|l| l.starts_with("#[cfg(") && (l.contains("test") || l.contains("fuzzing")));
            if gated {
                out.insert(base.join(format!("{name}.rs")));
                out.insert(base.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// The library source files: every crate's `src/`, less the modules compiled only for tests.
fn library_sources() -> Vec<PathBuf> {
    let files: Vec<PathBuf> = members()
        .into_iter()
        .filter(|d| d.parent().is_some_and(|p| p.ends_with("crates")))
        .flat_map(|d| sources(&d.join("src")))
        .collect();
    let tests = test_only_modules(&files);
    files.into_iter().filter(|f| !tests.contains(f)).collect()
}

#[test]
fn every_library_file_opens_with_its_module_documentation() {
    let undocumented: Vec<String> = library_sources()
        .into_iter()
        .filter(|f| {
            let text = fs::read_to_string(f).expect("a source file");
            !text.trim_start().starts_with("//!")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        undocumented.is_empty(),
        "no `//!` module documentation:\n{}",
        undocumented.join("\n")
    );
}

#[test]
fn library_code_does_not_unwrap() {
    let mut found = Vec::new();
    for file in library_sources() {
        let text = fs::read_to_string(&file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("#[cfg(test)]") {
                break; // the file's tests, at its end
            }
            if !code.starts_with("//") && code.contains(".unwrap()") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, code));
            }
        }
    }
    assert!(
        found.is_empty(),
        "`.unwrap()` in library code:\n{}",
        found.join("\n")
    );
}

/// Every function of `text` as (name, first line from 1, length in lines): from its `fn` line
/// to the closing brace at the same indentation, as rustfmt lays a function out (a declaration
/// ending in `;` has no body).
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = line.len() - code.len();
        let after = [
            "pub fn ",
            "pub(crate) fn ",
            "pub(super) fn ",
            "fn ",
            "const fn ",
            "pub const fn ",
        ]
        .iter()
        .find_map(|p| code.strip_prefix(p));
        let Some(rest) = after else { continue };
        if code.ends_with(';') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = (i + 1..lines.len()).find(|&j| lines[j] == close) {
            out.push((name, i + 1, end - i + 1));
        }
    }
    out
}

/// The longest a function may be.
const MOST_LINES: usize = 100;

#[test]
fn no_function_is_over_a_hundred_lines() {
    let mut found = Vec::new();
    let xtask = sources(&root().join("xtask/src"));
    for file in library_sources().into_iter().chain(xtask) {
        let text = fs::read_to_string(&file).expect("a source file");
        for (name, line, len) in function_lengths(&text) {
            if len > MOST_LINES {
                found.push(format!(
                    "{}:{line}: `{name}` is {len} lines",
                    file.display()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "functions over {MOST_LINES} lines (split them):\n{}",
        found.join("\n")
    );
}

/// Every experiment (a module of `bdl-experiments` declaring its `EXPERIMENT`) is a folder of
/// the four parts `docs/ARCHITECTURE.md` names: the run in `mod.rs`, `settings.rs`, `claims.rs`
/// and `report.rs`.
#[test]
fn every_experiment_is_a_folder_of_run_settings_claims_and_report() {
    let src = root().join("crates/bdl-experiments/src");
    let mut experiments = 0;
    let mut missing = Vec::new();
    for file in sources(&src) {
        let text = fs::read_to_string(&file).expect("a source file");
        if !text.contains("pub(crate) const EXPERIMENT: Entry") {
            continue;
        }
        experiments += 1;
        if file.file_name().is_none_or(|n| n != "mod.rs") {
            missing.push(format!("{} is not a folder's mod.rs", file.display()));
            continue;
        }
        let dir = file.parent().expect("a folder");
        for part in ["settings.rs", "claims.rs", "report.rs"] {
            if !dir.join(part).exists() {
                missing.push(format!("{} has no {part}", dir.display()));
            }
        }
    }
    assert!(experiments >= 11, "found {experiments} experiments");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The parser above on a manifest and on module declarations, so that the rules cannot pass by
/// reading nothing.
#[test]
fn the_readers_see_what_they_check() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nbdl-tensor.workspace = true\n\
                    serde.workspace = true\n[dev-dependencies]\nbdl-data.workspace = true\n";
    assert_eq!(
        bdl_dependencies(manifest),
        BTreeSet::from(["bdl-tensor".to_owned()])
    );
    assert!(layers().len() >= 13);
    let code = "fn a() {\n    1\n}\n\nimpl X {\n    pub(crate) fn b(\n        x: u8,\n    ) -> u8 {\n        x\n    }\n    fn c();\n}\n";
    assert_eq!(
        function_lengths(code),
        [("a".to_owned(), 1, 3), ("b".to_owned(), 6, 5)]
    );
    assert!(library_sources().len() > 100);
    let data = root().join("crates/bdl-data/src");
    let gated = test_only_modules(&[data.join("lib.rs")]);
    assert!(gated.contains(&data.join("test_util.rs")), "{gated:?}");
}
