//! Vectors recycled within a thread, for kernels that need the same large buffers call after
//! call: allocating and freeing them each time makes the allocator give the memory back to the
//! system and fault it in again (a tenth of a small network's training time, measured).

use std::any::Any;
use std::cell::RefCell;

use crate::Real;

/// At most this many vectors wait in a thread's pool.
const KEPT: usize = 64;

thread_local! {
    static POOL: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// A vector of `len` numbers from this thread's pool (its contents are whatever the previous
/// user left: the caller overwrites them; the shortest one already that long is taken, so that
/// no numbers are filled in), or a new one of zeros.
///
/// ```
/// let mut v = bdl_tensor::recycled::<f64>(3);
/// v.copy_from_slice(&[1.0, 2.0, 3.0]);
/// bdl_tensor::recycle(v);
/// let w = bdl_tensor::recycled::<f64>(2); // the same allocation, stale numbers
/// assert_eq!(w.len(), 2);
/// ```
pub fn recycled<T: Real>(len: usize) -> Vec<T> {
    let found = POOL.with_borrow_mut(|pool| {
        // The shortest vector already holding `len` numbers, so that nothing is filled; else
        // the longest with the room.
        let vectors = pool.iter().enumerate().filter_map(|(at, v)| {
            let v = v.downcast_ref::<Vec<T>>()?;
            (v.capacity() >= len).then_some((at, v.len()))
        });
        let (at, _) = vectors.min_by_key(|&(_, held)| (held < len, held.abs_diff(len)))?;
        pool.swap_remove(at).downcast::<Vec<T>>().ok()
    });
    match found {
        Some(mut v) => {
            v.resize(len, T::from_f64(0.0));
            *v
        }
        None => vec![T::from_f64(0.0); len],
    }
}

/// Gives `v` back to this thread's pool for a later [`recycled`].
pub fn recycle<T: Real>(v: Vec<T>) {
    if v.capacity() == 0 {
        return;
    }
    POOL.with_borrow_mut(|pool| {
        if pool.len() < KEPT {
            pool.push(Box::new(v));
        }
    });
}
