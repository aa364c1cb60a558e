//! The engine's own rayon thread pool, which every parallel kernel runs on.
//!
//! Kernels never touch rayon's global pool: after `fork()` a child process inherits that
//! pool's bookkeeping but none of its worker threads, so its first parallel kernel would wait
//! forever for workers that do not exist (and `fork` is multiprocessing's default start
//! method on Linux). The global pool cannot be rebuilt; ours can. A `pthread_atfork` child
//! handler forgets the inherited pool, and the next parallel kernel in the child builds a
//! fresh one.
//!
//! `set_num_threads(n)` switches to a pool of `n` threads. A pool is never freed (another
//! thread may be inside it), so pools are kept per thread count and reused: switching back and
//! forth builds at most one pool per distinct count.

use crate::error::{Error, Result};
use parking_lot::Mutex;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use team::Team;

mod team;

/// The current pool. Pools are leaked on purpose: references handed out by [`pool`] stay
/// valid forever, and a pool forgotten after `fork` has no threads that could be joined.
static POOL: AtomicPtr<ThreadPool> = AtomicPtr::new(std::ptr::null_mut());

/// Whether the fork handler is registered (once per process; children inherit it).
static AT_FORK: AtomicBool = AtomicBool::new(false);

/// The thread count asked for with `set_num_threads` (0: rayon's default, one per core or
/// `RAYON_NUM_THREADS`).
static WANTED: AtomicUsize = AtomicUsize::new(0);

/// Bumped in a forked child: pools built before the fork (kept in `BY_COUNT`) have no threads
/// there and must not be reused.
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// Pools built by `set_num_threads`, by thread count, with the fork generation they belong to.
static BY_COUNT: Mutex<Option<HashMap<usize, (u64, usize)>>> = Mutex::new(None);

/// The team [`run_parts`] last used (helper teams are leaked like pools).
static TEAM: AtomicPtr<Team> = AtomicPtr::new(std::ptr::null_mut());

/// Helper teams by helper count, with the fork generation they belong to.
static TEAMS: Mutex<Option<HashMap<usize, (u64, usize)>>> = Mutex::new(None);

/// Runs in the child right after `fork()`: the inherited pool's workers are gone.
extern "C" fn forget_pool_in_child() {
    // Atomic operations and nothing else: a fork handler must not lock or allocate (another
    // thread of the parent may have held the allocator's or any other lock at the fork).
    POOL.store(std::ptr::null_mut(), Ordering::Release);
    TEAM.store(std::ptr::null_mut(), Ordering::Release);
    FORK_GENERATION.fetch_add(1, Ordering::AcqRel);
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

fn register_fork_handler() {
    if !AT_FORK.swap(true, Ordering::AcqRel) {
        // SAFETY: registers a handler that only performs atomic operations.
        unsafe {
            libc::pthread_atfork(None, None, Some(forget_pool_in_child));
        }
    }
}

/// A new pool of `threads` threads (0: rayon's default count).
fn new_pool(threads: usize) -> std::result::Result<ThreadPool, rayon::ThreadPoolBuildError> {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("remat-{i}"))
        .build()
}

#[cold]
fn build() -> &'static ThreadPool {
    register_fork_handler();
    let built = new_pool(WANTED.load(Ordering::Acquire))
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

/// Run `f(0)`, ..., `f(parts - 1)` in parallel with the calling thread taking part: it runs
/// parts itself while a team of helper threads (`parallel/team.rs`, one fewer than the
/// pool's threads) runs the others. This skips the thread handoffs of [`install`]; a caller
/// inside the pool (or while another thread's job holds the team) uses the pool.
pub fn run_parts<F: Fn(usize) + Sync>(parts: usize, f: F) {
    use rayon::prelude::*;
    let threads = num_threads();
    if parts <= 1 || threads <= 1 {
        return (0..parts).for_each(f);
    }
    let mut f = f;
    if rayon::current_thread_index().is_none() {
        match team(threads - 1).run(parts, f) {
            Ok(()) => return,
            Err(back) => f = back,
        }
    }
    install(|| (0..parts).into_par_iter().for_each(&f));
}

/// The team with `helpers` helper threads, started on first use (and again in a forked
/// child).
fn team(helpers: usize) -> &'static Team {
    let current = TEAM.load(Ordering::Acquire);
    // SAFETY: teams are never freed once published.
    if let Some(team) = unsafe { current.as_ref() } {
        if team.helpers() == helpers {
            return team;
        }
    }
    let generation = FORK_GENERATION.load(Ordering::Acquire);
    let mut teams = TEAMS.lock();
    let teams = teams.get_or_insert_with(HashMap::new);
    let team = match teams.get(&helpers) {
        // SAFETY: as above.
        Some(&(g, t)) if g == generation => unsafe { &*(t as *const Team) },
        _ => {
            register_fork_handler();
            let team = Team::start(helpers);
            teams.insert(helpers, (generation, team as *const Team as usize));
            team
        }
    };
    TEAM.store(team as *const Team as *mut Team, Ordering::Release);
    team
}

/// Number of threads parallel kernels use.
pub fn num_threads() -> usize {
    pool().current_num_threads()
}

/// Run parallel kernels on `threads` threads from now on (PyTorch's `set_num_threads`).
pub fn set_num_threads(threads: usize) -> Result<()> {
    if threads == 0 {
        return Err(Error::value(
            "set_num_threads",
            "the number of threads must be at least 1, got 0",
        ));
    }
    register_fork_handler();
    WANTED.store(threads, Ordering::Release);
    let generation = FORK_GENERATION.load(Ordering::Acquire);
    let mut by_count = BY_COUNT.lock();
    let pools = by_count.get_or_insert_with(HashMap::new);
    let ptr = match pools.get(&threads) {
        Some(&(g, p)) if g == generation => p as *mut ThreadPool,
        _ => {
            let pool = new_pool(threads).map_err(|e| Error::Device {
                op: "set_num_threads".to_string(),
                message: format!("could not start {threads} CPU threads: {e}"),
            })?;
            let p = Box::into_raw(Box::new(pool));
            pools.insert(threads, (generation, p as usize));
            p
        }
    };
    // The previous pool stays alive (a kernel on another thread may be running in it); it is
    // kept in `BY_COUNT` when `set_num_threads` built it, and reused if its count comes back.
    POOL.store(ptr, Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests that change the thread count (or forget the pool) take turns.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn parallel_work_runs_on_the_engine_pool() {
        let name = install(|| std::thread::current().name().map(str::to_string));
        assert!(name.is_some_and(|n| n.starts_with("remat-")));
        assert!(num_threads() >= 1);
    }

    #[test]
    fn the_thread_count_can_be_set_and_pools_are_reused() {
        let _serial = SERIAL.lock();
        set_num_threads(3).unwrap();
        assert_eq!(num_threads(), 3);
        let first = pool() as *const ThreadPool;
        set_num_threads(1).unwrap();
        assert_eq!(num_threads(), 1);
        set_num_threads(3).unwrap();
        assert_eq!(pool() as *const ThreadPool, first);
        assert!(set_num_threads(0).is_err());
        let sum: u64 = install(|| {
            use rayon::prelude::*;
            (0..1000u64).into_par_iter().sum()
        });
        assert_eq!(sum, 499_500);
    }

    /// Runs `run_parts` and returns how many times each part ran and on how many threads.
    fn count_parts(parts: usize) -> (Vec<usize>, usize) {
        let counts: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
        let names = Mutex::new(std::collections::HashSet::new());
        run_parts(parts, |i| {
            counts[i].fetch_add(1, Ordering::Relaxed);
            names.lock().insert(std::thread::current().id());
            // Long enough that a helper wakes up before the caller has taken every part.
            std::thread::sleep(std::time::Duration::from_millis(2));
        });
        let counts = counts.into_iter().map(AtomicUsize::into_inner).collect();
        (counts, names.into_inner().len())
    }

    #[test]
    fn every_part_runs_once_with_the_caller_and_its_helpers() {
        let _serial = SERIAL.lock();
        for threads in [1, 2, 3] {
            set_num_threads(threads).unwrap();
            for parts in [0, 1, 2, 5, 16] {
                let (counts, used) = count_parts(parts);
                assert_eq!(counts, vec![1; parts], "{threads} threads, {parts} parts");
                assert!(used <= threads.max(1), "{used} threads for {threads}");
                if threads > 1 && parts == 16 {
                    // 32 ms of parts: a helper wakes long before the caller is done.
                    assert!(used > 1, "{parts} parts of 2 ms ran on one thread");
                }
            }
        }
        // Inside the pool the parts go to rayon instead of the team.
        set_num_threads(2).unwrap();
        let (counts, _) = install(|| count_parts(4));
        assert_eq!(counts, vec![1; 4]);
    }

    #[test]
    fn callers_on_several_threads_at_once_each_get_every_part() {
        let _serial = SERIAL.lock();
        set_num_threads(2).unwrap();
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..4).map(|_| s.spawn(|| count_parts(6).0)).collect();
            for run in runs {
                assert_eq!(run.join().unwrap(), vec![1; 6]);
            }
        });
    }

    #[test]
    fn a_panicking_part_reaches_the_caller_and_the_team_keeps_working() {
        let _serial = SERIAL.lock();
        set_num_threads(2).unwrap();
        for _ in 0..3 {
            let caught = std::panic::catch_unwind(|| {
                run_parts(4, |i| {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    assert!(i != 3, "part 3 fails");
                })
            });
            let message = caught.unwrap_err();
            assert_eq!(message.downcast_ref::<&str>(), Some(&"part 3 fails"));
            assert_eq!(count_parts(4).0, vec![1; 4]);
        }
    }

    #[test]
    fn a_forgotten_pool_is_rebuilt() {
        let _serial = SERIAL.lock();
        install(|| ());
        forget_pool_in_child();
        let sum: u64 = install(|| {
            use rayon::prelude::*;
            (0..10_000u64).into_par_iter().sum()
        });
        assert_eq!(sum, 49_995_000);
    }
}
