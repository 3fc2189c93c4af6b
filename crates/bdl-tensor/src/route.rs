//! Which implementation an op of the workspace takes: its host kernel (a pass over the elements
//! where they lie) for a tensor on the CPU, or candle's own operations, which every backend has,
//! for a tensor anywhere else (a CUDA device under the `cuda` feature).
//!
//! Every op with a host kernel asks [`host_kernels`] which to take. [`with_candle_ops`] runs a
//! closure with the host kernels switched off on its thread, so that the route a GPU takes can be
//! checked against the host kernels on a machine without one: the same numbers (to rounding
//! where a kernel sums in another order) are the evidence that a GPU run computes the same
//! thing, short of running on one.

use std::cell::Cell;

use candle_core::Device;

thread_local! {
    /// Whether [`with_candle_ops`] is running on this thread.
    static CANDLE_OPS_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Whether an op on tensors of `device` takes its host kernel: on the CPU, unless inside
/// [`with_candle_ops`] on this thread.
///
/// ```
/// use candle_core::Device;
/// assert!(bdl_tensor::host_kernels(&Device::Cpu));
/// assert!(!bdl_tensor::with_candle_ops(|| bdl_tensor::host_kernels(&Device::Cpu)));
/// ```
pub fn host_kernels(device: &Device) -> bool {
    device.is_cpu() && !CANDLE_OPS_ONLY.get()
}

/// Runs `f` with every op on this thread taking candle's operations, as on a GPU, and restores
/// the previous choice afterwards (also when `f` panics). Work that `f` sends to other threads
/// keeps the host kernels.
pub fn with_candle_ops<R>(f: impl FnOnce() -> R) -> R {
    /// Puts the previous choice back when dropped.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            CANDLE_OPS_ONLY.set(self.0);
        }
    }
    let _restore = Restore(CANDLE_OPS_ONLY.replace(true));
    f()
}

/// The device a command line names: `cpu`, or `cuda` / `cuda:N` for CUDA device N (0 when
/// omitted). A CUDA device needs a build with the `cuda` feature; without it, or without the
/// device, the error says so.
///
/// ```
/// assert!(bdl_tensor::device("cpu").unwrap().is_cpu());
/// assert!(bdl_tensor::device("tpu").is_err());
/// # #[cfg(not(feature = "cuda"))]
/// assert!(bdl_tensor::device("cuda:0").unwrap_err().to_string().contains("--features cuda"));
/// ```
pub fn device(name: &str) -> crate::Result<Device> {
    let invalid = |why: String| crate::Error::InvalidArgument(format!("device `{name}`: {why}"));
    let ordinal = match name.trim() {
        "cpu" => return Ok(Device::Cpu),
        "cuda" => 0,
        other => match other.strip_prefix("cuda:") {
            Some(n) => n
                .parse::<usize>()
                .map_err(|_| invalid(format!("`{n}` is not a device number")))?,
            None => return Err(invalid("expected cpu, cuda or cuda:N".into())),
        },
    };
    Device::new_cuda(ordinal).map_err(|e| {
        let hint = if cfg!(feature = "cuda") {
            ""
        } else {
            " (build with `--features cuda`, which needs the CUDA toolkit)"
        };
        invalid(format!("{e}{hint}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_nests_and_is_restored_after_a_panic() {
        let cpu = Device::Cpu;
        with_candle_ops(|| {
            with_candle_ops(|| assert!(!host_kernels(&cpu)));
            assert!(!host_kernels(&cpu));
        });
        assert!(host_kernels(&cpu));
        let caught = std::panic::catch_unwind(|| with_candle_ops(|| panic!("inside")));
        assert!(caught.is_err());
        assert!(host_kernels(&cpu));
        // Another thread keeps the host kernels.
        with_candle_ops(|| {
            let other = std::thread::spawn(|| host_kernels(&Device::Cpu));
            assert!(other.join().unwrap());
        });
    }

    #[test]
    fn device_names_parse_or_say_why_not() {
        assert!(device("cpu").unwrap().is_cpu());
        assert!(device(" cpu ").unwrap().is_cpu());
        for bad in ["gpu", "cuda:x", "cuda:-1", "cuda0", ""] {
            let err = device(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
        if !cfg!(feature = "cuda") {
            for name in ["cuda", "cuda:1"] {
                let err = device(name).unwrap_err().to_string();
                assert!(err.contains("--features cuda"), "{err}");
            }
        }
    }
}
