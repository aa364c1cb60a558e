//! The engine's own rayon thread pool, which every parallel kernel runs on.
//!
//! Kernels never touch rayon's global pool: after `fork()` a child process inherits that
//! pool's bookkeeping but none of its worker threads, so its first parallel kernel would wait
//! forever for workers that do not exist (and `fork` is multiprocessing's default start
//! method on Linux). The global pool cannot be rebuilt; ours can. A `pthread_atfork` child
//! handler forgets the inherited pool, and the next parallel kernel in the child builds a
//! fresh one.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The current pool. Pools are leaked on purpose: references handed out by [`pool`] stay
/// valid forever, and a pool forgotten after `fork` has no threads that could be joined.
static POOL: AtomicPtr<ThreadPool> = AtomicPtr::new(std::ptr::null_mut());

/// Whether the fork handler is registered (once per process; children inherit it).
static AT_FORK: AtomicBool = AtomicBool::new(false);

/// Runs in the child right after `fork()`: the inherited pool's workers are gone.
extern "C" fn forget_pool_in_child() {
    // One atomic store and nothing else: a fork handler must not lock or allocate (another
    // thread of the parent may have held the allocator's or any other lock at the fork).
    POOL.store(std::ptr::null_mut(), Ordering::Release);
}

/// The engine's pool, built on first use (and again in a forked child).
fn pool() -> &'static ThreadPool {
    let p = POOL.load(Ordering::Acquire);
    if p.is_null() {
        return build();
    }
    // SAFETY: pools are never freed once published, so the pointer stays valid.
    unsafe { &*p }
}

#[cold]
fn build() -> &'static ThreadPool {
    if !AT_FORK.swap(true, Ordering::AcqRel) {
        // SAFETY: registers a handler that only performs an atomic store.
        unsafe {
            libc::pthread_atfork(None, None, Some(forget_pool_in_child));
        }
    }
    let built = ThreadPoolBuilder::new()
        .thread_name(|i| format!("remat-{i}"))
        .build()
        // A process that cannot start the threads it asked for (a thread or address-space
        // limit) still runs every kernel, on one extra thread.
        .or_else(|_| ThreadPoolBuilder::new().num_threads(1).build());
    let pool = match built {
        Ok(p) => p,
        Err(e) => std::panic::resume_unwind(Box::new(crate::error::Error::Device {
            op: "thread pool".to_string(),
            message: format!("could not start the CPU thread pool: {e}"),
        })),
    };
    let fresh = Box::into_raw(Box::new(pool));
    match POOL.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just published; never freed.
        Ok(_) => unsafe { &*fresh },
        Err(other) => {
            // Another thread built one first: use it, and drop ours (never shared).
            // SAFETY: `fresh` came from `Box::into_raw` above and was not published.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: published pools are never freed.
            unsafe { &*other }
        }
    }
}

/// Run `f` on the engine's pool: rayon's parallel iterators, `join` and GEMM's threads inside
/// `f` use this pool. Called from a worker of the pool, `f` simply runs in place.
#[inline]
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    pool().install(f)
}

/// Number of threads parallel kernels use.
pub fn num_threads() -> usize {
    pool().current_num_threads()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_work_runs_on_the_engine_pool() {
        let name = install(|| std::thread::current().name().map(str::to_string));
        assert!(name.is_some_and(|n| n.starts_with("remat-")));
        assert!(num_threads() >= 1);
    }

    #[test]
    fn a_forgotten_pool_is_rebuilt() {
        install(|| ());
        forget_pool_in_child();
        let sum: u64 = install(|| {
            use rayon::prelude::*;
            (0..10_000u64).into_par_iter().sum()
        });
        assert_eq!(sum, 49_995_000);
    }
}
