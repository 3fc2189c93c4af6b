//! The number of threads bdl computes with: a scoped rayon pool.
//!
//! Everything parallel in bdl runs on the rayon pool of the calling thread: our own parallel
//! loops (chains, ensemble members, Monte Carlo groups, experiment fits), candle's CPU matrix
//! products (gemm hands its blocks to the current pool) and faer's factorisations (its default
//! parallelism is the current pool's size). [`Threads::install`] runs a closure on a pool of a
//! chosen size, so it bounds all of them at once, and it is safe to call at any time, from any
//! thread, nested or side by side.
//!
//! Results do not depend on the thread count: our loops reduce in a fixed order, gemm splits a
//! product by output blocks (each entry's sum runs in the same order whatever the split), and
//! the `thread_counts` tests of the inference crates compare fits at 1 and 2 threads bit for
//! bit. Small models run fastest on one thread per model (a threaded product of a tiny matrix
//! costs more than it gains); take the parallelism from independent runs instead.
//!
//! **Set `RAYON_NUM_THREADS` when launching a program that does many small products.** Candle
//! reads it at every matrix product to decide how many blocks to cut the product into, and when
//! it is unset it reads `/proc/cpuinfo` again at every product instead, which costs more than a
//! small product itself (measured: `vadam-uci`'s quick profile 5× slower). Its value only
//! changes how products are split, not their results.
//!
//! One kind of candle's parallel work is outside the pool: candle 0.11 splits every elementwise
//! map of 64 Ki numbers or more with a process-wide pool of its own, sized by
//! `CANDLE_NUM_THREADS` (else `RAYON_NUM_THREADS`, else every core), whose threads spin between
//! maps. A program that runs one model a core should set `CANDLE_NUM_THREADS=1`, so that no
//! such thread competes with its own. bdl never writes the environment of a running process
//! (that is unsafe); `cargo xtask` runs itself again with both variables set.

use std::sync::Arc;

use crate::{Error, Result};

/// A pool of worker threads to run bdl's computations on.
///
/// ```
/// use bdl_tensor::Threads;
/// let one = Threads::new(1).unwrap();
/// assert_eq!(one.install(rayon::current_num_threads), 1);
/// let all = Threads::new(0).unwrap(); // every core
/// assert!(all.count() >= 1);
/// ```
#[derive(Clone, Debug)]
pub struct Threads {
    pool: Arc<rayon::ThreadPool>,
}

impl Threads {
    /// A pool of `n` threads; `0` means one per available core.
    pub fn new(n: usize) -> Result<Self> {
        let n = if n == 0 {
            std::thread::available_parallelism().map_or(1, |c| c.get())
        } else {
            n
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("bdl-worker-{i}"))
            .build()
            .map_err(|e| Error::Threads(e.to_string()))?;
        Ok(Self {
            pool: Arc::new(pool),
        })
    }

    /// The number of threads.
    pub fn count(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Runs `f` on the pool: every parallel computation inside uses at most
    /// [`count`](Self::count) threads.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }
}

/// The number of threads parallel work started here would use: the size of the current rayon
/// pool (the global one outside any [`Threads::install`]).
pub fn current_threads() -> usize {
    rayon::current_num_threads()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Seed, normal};
    use candle_core::{DType, Device};

    /// A product large enough for gemm to split across threads gives the same bits on one
    /// thread and on two.
    #[test]
    fn matrix_products_do_not_depend_on_the_thread_count() {
        let dev = Device::Cpu;
        let a = normal(&mut Seed(1).rng(), (300, 400), 0.0, 1.0, DType::F32, &dev).unwrap();
        let b = normal(&mut Seed(2).rng(), (400, 300), 0.0, 1.0, DType::F32, &dev).unwrap();
        let product = |n| {
            Threads::new(n)
                .unwrap()
                .install(|| {
                    a.matmul(&b)
                        .unwrap()
                        .flatten_all()
                        .unwrap()
                        .to_vec1::<f32>()
                })
                .unwrap()
        };
        assert_eq!(product(1), product(2));
        assert_eq!(Threads::new(2).unwrap().install(current_threads), 2);
    }
}
