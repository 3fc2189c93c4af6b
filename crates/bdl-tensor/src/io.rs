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

/// The key of the sidecar inside a safetensors header's `__metadata__`.
const EMBEDDED: &str = "bdl";

/// The key of the tensors' SHA-256 inside a safetensors header's `__metadata__`.
const DIGEST: &str = "bdl.sha256";

/// SHA-256 over `tensors` in name order: each name, dtype, rank, dims (u64 little-endian) and
/// data bytes, in hexadecimal.
fn digest<'a>(tensors: impl Iterator<Item = (&'a str, &'a Tensor)>) -> String {
    use safetensors::View as _;
    use sha2::Digest as _;
    let mut sorted: Vec<(&str, &Tensor)> = tensors.collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut hash = sha2::Sha256::new();
    for (name, t) in sorted {
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        hash.update(format!("{:?}", t.dtype()).as_bytes());
        hash.update((t.dims().len() as u64).to_le_bytes());
        for d in t.dims() {
            hash.update((*d as u64).to_le_bytes());
        }
        hash.update(t.data());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Saves named tensors to `path` (safetensors) and, when given, `sidecar` to
/// [`sidecar_path`]`(path)` (pretty JSON).
///
/// The sidecar is also embedded in the safetensors header, and the tensor file is written
/// last: its rename is the checkpoint's one commit point. [`read_sidecar`] reads the embedded
/// copy, so a process stopped between the two renames never pairs a new sidecar with old
/// tensors; the `.json` file is the copy people read.
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
    let json = match sidecar {
        None => None,
        Some(meta) => Some(
            serde_json::to_string_pretty(meta).map_err(|source| Error::Json {
                path: sidecar_path(path),
                source,
            })?,
        ),
    };
    let mut header = HashMap::from([(
        DIGEST.to_owned(),
        digest(tensors.iter().map(|(n, t)| (n.as_str(), t))),
    )]);
    if let Some(j) = &json {
        header.insert(EMBEDDED.to_owned(), j.clone());
    }
    let header = Some(header);
    let bytes = safetensors::serialize(tensors.iter().map(|(n, t)| (n.as_str(), t)), header)
        .map_err(|e| Error::Safetensors {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if let Some(json) = &json {
        write_atomically(&sidecar_path(path), json.as_bytes())?;
    }
    write_atomically(path, &bytes)
}

/// Loads every tensor of a safetensors file, keyed by name. A file written by
/// [`save_safetensors`] carries the SHA-256 of its tensors, checked here: a file altered after
/// it was written is an error, not other numbers.
pub fn load_safetensors(path: &Path, device: &Device) -> Result<HashMap<String, Tensor>> {
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    let damaged = |message: String| Error::Safetensors {
        path: path.to_path_buf(),
        message,
    };
    let tensors = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
        .map_err(|e| damaged(e.to_string()))?;
    let (_, metadata) =
        safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| damaged(e.to_string()))?;
    if let Some(stored) = metadata.metadata().as_ref().and_then(|m| m.get(DIGEST)) {
        let actual = digest(tensors.iter().map(|(n, t)| (n.as_str(), t)));
        if &actual != stored {
            return Err(damaged(format!(
                "the tensors' SHA-256 is {actual}, not the {stored} it was written with: the \
                 file was altered"
            )));
        }
    }
    tensors
        .into_iter()
        .map(|(name, t)| Ok((name, t.to_device(device)?)))
        .collect()
}

/// Reads and parses the sidecar of the checkpoint at `path`: the copy embedded in the
/// safetensors header when there is one (the checkpoint's commit point), else the `.json` file.
pub fn read_sidecar<T: DeserializeOwned>(path: &Path) -> Result<T> {
    if let Some(json) = embedded_sidecar(path)? {
        return serde_json::from_str(&json).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        });
    }
    if !path.exists() {
        // Name the file the caller asked for, not the sidecar beside it.
        return Err(io_error(path)(std::io::ErrorKind::NotFound.into()));
    }
    let side = sidecar_path(path);
    let bytes = std::fs::read(&side).map_err(io_error(&side))?;
    serde_json::from_slice(&bytes).map_err(|source| Error::Json { path: side, source })
}

/// The sidecar embedded in the header of the safetensors file at `path`, reading only the
/// header; `None` when the file does not exist or has none.
fn embedded_sidecar(path: &Path) -> Result<Option<String>> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(None);
    };
    let damaged = |message: &str| Error::Safetensors {
        path: path.to_path_buf(),
        message: message.to_owned(),
    };
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| damaged("shorter than a safetensors header"))?;
    let n = u64::from_le_bytes(len);
    let file_len = file.metadata().map_err(io_error(path))?.len();
    if n > file_len.saturating_sub(8) {
        return Err(damaged("the header is longer than the file"));
    }
    let mut header = vec![0u8; n as usize];
    file.read_exact(&mut header)
        .map_err(|_| damaged("the header is cut short"))?;
    let header: serde_json::Value =
        serde_json::from_slice(&header).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(header["__metadata__"][EMBEDDED].as_str().map(str::to_owned))
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

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]
        /// Whatever the bytes (a checkpoint with bytes overwritten, cut, or appended, header
        /// included), loading its tensors or its embedded sidecar returns, typed.
        #[test]
        fn mutated_checkpoints_load_or_fail_cleanly(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in any::<usize>(),
            header_only in any::<bool>(),
        ) {
            let dir = scratch(&format!("fuzz{cut}"));
            let path = dir.join("c.safetensors");
            let t = normal(&mut Seed(3).rng(), (4, 3), 0.0, 1.0, DType::F32, &Device::Cpu).unwrap();
            save_safetensors(&path, &[("t".into(), t)], Some(&serde_json::json!({"seed": 1, "kind": "x"}))).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            let span = if header_only { 160.min(bytes.len()) } else { bytes.len() };
            for (at, b) in edits {
                bytes[at % span] = b;
            }
            bytes.truncate(cut % (bytes.len() + 1) + if cut % 3 == 0 { 0 } else { bytes.len() });
            std::fs::write(&path, &bytes).unwrap();
            let _ = load_safetensors(&path, &Device::Cpu);
            let _ = read_sidecar::<serde_json::Value>(&path);
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// One byte of tensor data changed after the save is refused by the stored SHA-256; a file
    /// written without one (another writer) still loads.
    #[test]
    fn an_altered_tensor_is_refused() {
        let dir = scratch("altered");
        let path = dir.join("a.safetensors");
        let t = normal(
            &mut Seed(4).rng(),
            (4, 3),
            0.0,
            1.0,
            DType::F32,
            &Device::Cpu,
        )
        .unwrap();
        save_safetensors(&path, &[("t".into(), t.clone())], None::<&()>).unwrap();
        assert!(load_safetensors(&path, &Device::Cpu).is_ok());
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let err = load_safetensors(&path, &Device::Cpu)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a.safetensors") && err.contains("altered"),
            "{err}"
        );
        let plain = safetensors::serialize([("t", &t)], None).unwrap();
        std::fs::write(&path, plain).unwrap();
        assert!(load_safetensors(&path, &Device::Cpu).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
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

    /// A process stopped between the sidecar's rename and the tensors' (here: a newer `.json`
    /// beside the old tensor file) still reads the sidecar that belongs to the tensors.
    #[test]
    fn the_tensor_file_is_the_commit_point() {
        let dir = std::env::temp_dir().join(format!("bdl-io-commit-{}", std::process::id()));
        let path = dir.join("c.safetensors");
        let t = normal(&mut Seed(1).rng(), 3, 0.0, 1.0, DType::F64, &Device::Cpu).unwrap();
        let meta = serde_json::json!({"v": 1});
        save_safetensors(&path, &[("t".to_owned(), t)], Some(&meta)).unwrap();
        write_atomically(&sidecar_path(&path), br#"{"v": 2}"#).unwrap();
        let v: serde_json::Value = read_sidecar(&path).unwrap();
        assert_eq!(v["v"], 1);
        // A cut-off header is a named error.
        std::fs::write(&path, [200, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap();
        let err = read_sidecar::<serde_json::Value>(&path).unwrap_err();
        assert!(err.to_string().contains("c.safetensors"), "{err}");
        std::fs::remove_dir_all(dir).ok();
    }
}
