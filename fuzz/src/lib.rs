//! What every fuzz target shares: a scratch data root of its own process, where the input is
//! written under the name a reader expects.

use std::path::{Path, PathBuf};

/// This process's scratch root (created once), under the system temporary folder.
pub fn root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("bdl-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        dir
    })
}

/// Writes `bytes` to `relative` under the scratch root and returns the path.
pub fn put(relative: &str, bytes: &[u8]) -> PathBuf {
    let path = root().join(relative);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
    std::fs::write(&path, bytes).expect("a scratch file");
    path
}
