//! The one concurrency policy of the experiments: independent units (fits, splits, chains)
//! side by side, one thread each.
//!
//! Each worker computes its units inside a pool of one thread ([`bdl_tensor::Threads`]), so
//! a unit's own parallel work (candle's products, faer, Monte Carlo groups) runs sequentially
//! on its worker: the small models of the papers lose more to threading a product than they
//! gain (measured on `vadam-uci`'s quick profile on two cores: 61 s with one thread per fit,
//! 326 s with candle's products threaded inside parallel fits). Results are returned in the
//! units' order and do not depend on the number of workers.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::{Result, anyhow};
use bdl_tensor::Threads;

/// `work(unit)` for every unit, on one worker per core (at most one per unit), each unit on a
/// single thread; the results in the units' order, or the first error (later units are then
/// skipped).
pub fn side_by_side<T: Sync, R: Send>(
    units: &[T],
    work: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.min(units.len()).max(1);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<R>>>> = units.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let one = Threads::new(1)?;
                    while !failed.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(unit) = units.get(i) else { break };
                        let result = one.install(|| work(unit));
                        failed.fetch_or(result.is_err(), Ordering::Relaxed);
                        *slots[i].lock().map_err(|_| anyhow!("a worker panicked"))? = Some(result);
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow!("a worker thread panicked"))??;
        }
        Ok(())
    })?;
    let mut out = Vec::with_capacity(units.len());
    for slot in slots {
        match slot
            .into_inner()
            .map_err(|_| anyhow!("a worker panicked"))?
        {
            Some(result) => out.push(result?),
            None => return Err(anyhow!("a unit was skipped after another failed")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_units_order_and_errors_surface() {
        let units: Vec<u64> = (0..50).collect();
        let squares = side_by_side(&units, |&u| {
            assert_eq!(bdl_tensor::current_threads(), 1, "one thread per unit");
            Ok(u * u)
        })
        .unwrap();
        assert_eq!(squares, units.iter().map(|u| u * u).collect::<Vec<_>>());
        let err = side_by_side(&units, |&u| {
            if u == 7 {
                Err(anyhow!("unit 7 failed"))
            } else {
                Ok(u)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("failed"), "{err}");
        assert!(side_by_side(&[] as &[u8], |_| Ok(())).unwrap().is_empty());
    }
}
