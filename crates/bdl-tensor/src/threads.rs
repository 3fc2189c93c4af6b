//! The thread count of candle's matrix products and faer's factorisations.
//!
//! Small models run fastest on one thread (candle's multithreaded matmul pays a wake-up cost
//! larger than a tiny product); parallelism then comes from independent runs (chains, splits,
//! ensemble members). Large factorisations gain from every core.

/// Sets the number of threads used by candle's CPU matrix products and faer's dense
/// factorisations. `0` means all cores.
///
/// Candle reads its thread count from the `RAYON_NUM_THREADS` environment variable at each
/// product, so this sets that variable. Call it at the start of `main`, before other threads
/// exist: changing the environment while another thread reads it is undefined behaviour on
/// some platforms.
pub fn set_num_threads(n: usize) {
    #[allow(unsafe_code)]
    // SAFETY: documented precondition: called before the program starts other threads.
    unsafe {
        if n == 0 {
            std::env::remove_var("RAYON_NUM_THREADS");
        } else {
            std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        }
    }
    faer::set_global_parallelism(match n {
        1 => faer::Par::Seq,
        n => faer::Par::rayon(n),
    });
}

/// The number of threads candle's CPU matrix products use now.
pub fn num_threads() -> usize {
    candle_core::utils::get_num_threads()
}
