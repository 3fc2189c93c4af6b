//! Safetensors checkpoints with a JSON sidecar.
//!
//! A checkpoint is `NAME.safetensors` (named tensors) beside `NAME.json` (layout, configuration,
//! seed, versions). Files are written to a temporary name in the same folder and renamed into
//! place, so an interrupted save never leaves a half-written checkpoint behind.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, Result};

/// The sidecar path of a checkpoint: the same stem with the extension `json`.
pub fn sidecar_path(path: &Path) -> PathBuf {
    path.with_extension("json")
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` durably: through a temporary file in the same folder (named after
/// the process and a counter, so that two writers never share one), flushed to disk, renamed
/// into place, and the folder flushed so that the rename itself survives a crash.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        std::fs::create_dir_all(parent).map_err(io_error(parent))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(
        ".{}-{}.partial",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = PathBuf::from(tmp);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(&tmp)(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error(path)(e)
    })?;
    // A folder opens read-only for fsync on Unix; elsewhere this is best effort.
    if let Some(dir) = parent.and_then(|p| std::fs::File::open(p).ok()) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Saves named tensors to `path` (safetensors) and, when given, `sidecar` to
/// [`sidecar_path`]`(path)` (pretty JSON).
///
/// ```
/// # use candle_core::{Device, Tensor};
/// let dir = std::env::temp_dir().join(format!("bdl-doc-{}", std::process::id()));
/// let path = dir.join("w.safetensors");
/// let w = Tensor::new(&[1.0f32, 2.0, 3.0], &Device::Cpu).unwrap();
/// bdl_tensor::save_safetensors(&path, &[("w".to_owned(), w)], Some(&serde_json::json!({"seed": 1}))).unwrap();
/// let back = bdl_tensor::load_safetensors(&path, &Device::Cpu).unwrap();
/// assert_eq!(back["w"].to_vec1::<f32>().unwrap(), [1.0, 2.0, 3.0]);
/// let meta: serde_json::Value = bdl_tensor::read_sidecar(&path).unwrap();
/// assert_eq!(meta["seed"], 1);
/// # std::fs::remove_dir_all(dir).unwrap();
/// ```
pub fn save_safetensors(
    path: &Path,
    tensors: &[(String, Tensor)],
    sidecar: Option<&impl Serialize>,
) -> Result<()> {
    let bytes = safetensors::serialize(tensors.iter().map(|(n, t)| (n.as_str(), t)), None)
        .map_err(|e| Error::Safetensors {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if let Some(meta) = sidecar {
        let side = sidecar_path(path);
        let json = serde_json::to_vec_pretty(meta).map_err(|source| Error::Json {
            path: side.clone(),
            source,
        })?;
        write_atomically(&side, &json)?;
    }
    write_atomically(path, &bytes)
}

/// Loads every tensor of a safetensors file, keyed by name.
pub fn load_safetensors(path: &Path, device: &Device) -> Result<HashMap<String, Tensor>> {
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    candle_core::safetensors::load_buffer(&bytes, device).map_err(|e| Error::Safetensors {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Reads and parses the JSON sidecar of the checkpoint at `path`.
pub fn read_sidecar<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let side = sidecar_path(path);
    let bytes = std::fs::read(&side).map_err(io_error(&side))?;
    serde_json::from_slice(&bytes).map_err(|source| Error::Json { path: side, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Seed, normal};
    use candle_core::DType;
    use proptest::prelude::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bdl-tensor-io-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn round_trip_is_bit_exact(seed in any::<u64>(), n in 1usize..50) {
            let dir = scratch(&format!("rt{seed}"));
            let path = dir.join("t.safetensors");
            let mut rng = Seed(seed).rng();
            let a = normal(&mut rng, (n, 3), 0.0, 1.0, DType::F32, &Device::Cpu).unwrap();
            let b = normal(&mut rng, n, 0.0, 1.0, DType::F64, &Device::Cpu).unwrap();
            save_safetensors(&path, &[("a".into(), a.clone()), ("b".into(), b.clone())], None::<&()>).unwrap();
            let back = load_safetensors(&path, &Device::Cpu).unwrap();
            prop_assert_eq!(back["a"].to_vec2::<f32>().unwrap(), a.to_vec2::<f32>().unwrap());
            prop_assert_eq!(back["b"].to_vec1::<f64>().unwrap(), b.to_vec1::<f64>().unwrap());
            prop_assert_eq!(back["b"].dtype(), DType::F64);
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn truncated_file_is_a_named_error() {
        let dir = scratch("trunc");
        let path = dir.join("t.safetensors");
        let a = Tensor::ones((4, 4), DType::F32, &Device::Cpu).unwrap();
        save_safetensors(&path, &[("a".into(), a)], None::<&()>).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        let err = load_safetensors(&path, &Device::Cpu).unwrap_err();
        assert!(matches!(err, Error::Safetensors { .. }), "{err}");
        assert!(err.to_string().contains("t.safetensors"));
        let missing = load_safetensors(&dir.join("none.safetensors"), &Device::Cpu).unwrap_err();
        assert!(matches!(missing, Error::Io { .. }), "{missing}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
