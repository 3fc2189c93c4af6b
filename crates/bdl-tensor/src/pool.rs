//! Vectors recycled within a thread, for kernels that need the same large buffers call after
//! call: allocating and freeing them each time makes the allocator give the memory back to the
//! system and fault it in again (a tenth of a small network's training time, measured).

use std::any::{Any, TypeId};
use std::cell::RefCell;

use crate::Real;

/// At most this many vectors of each type wait in a thread's pool.
const KEPT: usize = 64;

thread_local! {
    static F32: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
    static F64: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
}

/// `f` on this thread's vectors of T (a [`Real`] is f32 or f64): one type check a call, where a
/// pool of boxed vectors of any type took one for each vector it held and an allocation for
/// each box.
fn with_pool<T: Real, R>(f: impl FnOnce(&mut Vec<Vec<T>>) -> R) -> R {
    fn typed<T: 'static>(pool: &mut dyn Any) -> &mut Vec<Vec<T>> {
        pool.downcast_mut().expect("the pool of the matching type")
    }
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        F32.with_borrow_mut(|pool| f(typed(pool)))
    } else {
        F64.with_borrow_mut(|pool| f(typed(pool)))
    }
}

/// A vector of `len` numbers from this thread's pool (its contents are whatever the previous
/// user left: the caller overwrites them; the shortest one already that long is taken, so that
/// no numbers are filled in), or a new one of zeros. A held vector with room for more than
/// twice `len` is left for a longer request: cut to `len`, it would have to be filled again up
/// to its own length when that is asked for.
///
/// ```
/// let mut v = bdl_tensor::recycled::<f64>(3);
/// v.copy_from_slice(&[1.0, 2.0, 3.0]);
/// bdl_tensor::recycle(v);
/// let w = bdl_tensor::recycled::<f64>(2); // the same allocation, stale numbers
/// assert_eq!(w.len(), 2);
/// ```
pub fn recycled<T: Real>(len: usize) -> Vec<T> {
    let found = with_pool::<T, _>(|pool| {
        // The shortest vector already holding `len` numbers, so that nothing is filled; else
        // the longest with the room.
        let (at, _) = (pool.iter().enumerate())
            .filter(|(_, v)| (len..=2 * len).contains(&v.capacity()))
            .min_by_key(|&(_, v)| (v.len() < len, v.len().abs_diff(len)))?;
        Some(pool.swap_remove(at))
    });
    match found {
        Some(mut v) => {
            v.resize(len, T::from_f64(0.0));
            v
        }
        None => vec![T::from_f64(0.0); len],
    }
}

/// Gives `v` back to this thread's pool for a later [`recycled`].
pub fn recycle<T: Real>(v: Vec<T>) {
    if v.capacity() == 0 {
        return;
    }
    with_pool::<T, _>(|pool| {
        if pool.len() < KEPT {
            pool.push(v);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short request leaves a long vector alone (it gets a new one), and the long vector
    /// comes back whole to a request of its own length.
    #[test]
    fn a_long_vector_waits_for_a_long_request() {
        let long = vec![1.0f32; 1000];
        let at = long.as_ptr();
        recycle(long);
        let short = recycled::<f32>(10);
        assert_ne!(short.as_ptr(), at, "the short request took the long vector");
        let again = recycled::<f32>(1000);
        assert_eq!(again.as_ptr(), at);
        assert!(again.iter().all(|&x| x == 1.0), "nothing was filled in");
        let near = {
            recycle(again);
            recycled::<f32>(600)
        };
        assert_eq!(near.as_ptr(), at, "within twice the length it is taken");
    }
}
