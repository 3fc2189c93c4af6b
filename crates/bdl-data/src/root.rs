//! Where data folders live.
//!
//! Every loader takes a *data root*: a folder laid out like the published data
//!
//! ```text
//! mnist/  fashion-mnist/  cifar10/  cifar10-c/
//! uci/gal/<name>/data/  uci/gap/<name>/data/  blr/  toy/
//! ```
//!
//! Three roots are known by name:
//!
//! - [`fixtures`]: the small subsets shipped in the repository (`fixtures/data/`), always there;
//! - [`fetched`]: where `cargo xtask fetch` puts the full data (`target/data/`, or the folder in
//!   the environment variable `BDL_DATA_DIR`);
//! - [`shared`]: a read-only copy of the full data beside the workspace (`../shared/data`, or
//!   the folder in `BDL_SHARED_DATA`), present on some machines only; tests that need the full
//!   data look here and skip with a message when it is absent. It holds every file but the
//!   CIFAR archives (`cifar10/`, `cifar10-c/`), which `cargo xtask fetch` downloads from
//!   upstream.

use std::path::{Path, PathBuf};

/// Environment variable naming the folder that `cargo xtask fetch` fills and experiments read.
pub const DATA_DIR_VAR: &str = "BDL_DATA_DIR";

/// Environment variable naming a read-only copy of the full data.
pub const SHARED_DATA_VAR: &str = "BDL_SHARED_DATA";

/// The workspace root (the folder of the top-level `Cargo.toml`).
pub fn workspace() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // This crate lives at `<workspace>/crates/bdl-data`.
    crate_dir
        .ancestors()
        .nth(2)
        .unwrap_or(crate_dir)
        .to_path_buf()
}

/// The data shipped with the repository: `fixtures/data/`.
pub fn fixtures() -> PathBuf {
    workspace().join("fixtures").join("data")
}

/// The data folder of `cargo xtask fetch`: `$BDL_DATA_DIR`, or `target/data/` in the workspace.
pub fn fetched() -> PathBuf {
    match std::env::var_os(DATA_DIR_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace().join("target").join("data"),
    }
}

/// A full copy of the data, when this machine has one: `$BDL_SHARED_DATA`, or `../shared/data`
/// beside the workspace. `None` when neither is a folder.
pub fn shared() -> Option<PathBuf> {
    let candidate = match std::env::var_os(SHARED_DATA_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => workspace().join("..").join("shared").join("data"),
    };
    candidate.is_dir().then_some(candidate)
}
