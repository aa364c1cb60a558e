//! A team of helper threads that share one job's parts with the thread that asks for it.
//!
//! Rayon's `install` hands a job from the calling thread to a pool worker, which wakes a
//! second worker to steal half of it, and the caller sleeps until the last one wakes it back:
//! three thread wake-ups in a row, each some 10–30 µs on a virtual machine. For a 256×256
//! product (about 170 µs on two cores) that is most of the gap to OpenMP, whose caller runs a
//! share itself while helpers that spin between jobs pick up the rest at once.
//!
//! A team works the same way: the caller publishes the job, runs parts itself, and waits
//! (spinning, then yielding) for the parts helpers took. Helpers claim parts one at a time
//! from a shared counter, so a helper that wakes late simply finds fewer parts left. After a
//! job a helper keeps looking for the next one for [`LINGER`] (yielding its core to any
//! other runnable thread), then parks until woken. Teams are kept per helper count and are
//! forgotten in a forked child, whose copy of the team has no threads (see `parallel`).

use parking_lot::{Condvar, Mutex};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a helper keeps looking for a next job before it parks: long enough to cover
/// the Python and bookkeeping between two products of one step, short enough that an idle
/// engine goes quiet at once.
const LINGER: Duration = Duration::from_micros(200);

/// Busy-wait rounds before a waiting thread starts yielding its core.
const SPINS: u32 = 64;

/// One job: `parts` calls of `work`, claimed one at a time.
struct Job {
    /// The caller's closure, borrowed from its stack. Called only for a claimed part below
    /// `parts`, and the caller does not return before `done` reaches `parts`, so it is alive
    /// whenever it is called.
    work: *const (dyn Fn(usize) + Sync),
    parts: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

// SAFETY: `work` is `Sync` and only called while the caller keeps it alive (see `Job::work`).
unsafe impl Send for Job {}
// SAFETY: as above; every other field is thread-safe.
unsafe impl Sync for Job {}

impl Job {
    /// Claims and runs parts until none are left.
    fn run_parts(&self) {
        loop {
            let part = self.next.fetch_add(1, Ordering::AcqRel);
            if part >= self.parts {
                return;
            }
            // SAFETY: `part < parts` and it is not done yet, so the caller is still waiting.
            let work = unsafe { &*self.work };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| work(part))) {
                self.panic.lock().get_or_insert(payload);
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// Helper threads and the job they are working on.
pub(super) struct Team {
    /// The current job (none between jobs).
    slot: Mutex<Option<Arc<Job>>>,
    /// Bumped, under `slot`'s lock, for every job: helpers wait for it to change.
    generation: AtomicU64,
    /// Wakes parked helpers.
    wake: Condvar,
    /// One job at a time: a second caller meanwhile uses the thread pool instead.
    busy: AtomicBool,
    /// Number of helper threads.
    helpers: usize,
}

impl Team {
    /// A team of `helpers` threads. Helpers that cannot be started (a thread limit) are
    /// simply missing: parts are claimed, not assigned, so the caller runs what no helper
    /// takes.
    pub(super) fn start(helpers: usize) -> &'static Team {
        let team: &'static Team = Box::leak(Box::new(Team {
            slot: Mutex::new(None),
            generation: AtomicU64::new(0),
            wake: Condvar::new(),
            busy: AtomicBool::new(false),
            helpers,
        }));
        for i in 0..helpers {
            let started = std::thread::Builder::new()
                .name(format!("remat-helper-{i}"))
                .spawn(move || team.help_forever());
            if started.is_err() {
                break;
            }
        }
        team
    }

    /// Number of helper threads.
    pub(super) fn helpers(&self) -> usize {
        self.helpers
    }

    /// Runs `work(0..parts)` on the caller and the helpers, or returns `work` untouched when
    /// another job is under way.
    pub(super) fn run<F: Fn(usize) + Sync>(&self, parts: usize, work: F) -> Result<(), F> {
        if self.busy.swap(true, Ordering::Acquire) {
            return Err(work);
        }
        let borrowed: &(dyn Fn(usize) + Sync) = &work;
        // SAFETY: only the lifetime is erased; `Job::work` says why the closure outlives
        // every call.
        let erased: *const (dyn Fn(usize) + Sync + 'static) =
            unsafe { std::mem::transmute(borrowed) };
        let job = Arc::new(Job {
            work: erased,
            parts,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
        });
        {
            let mut slot = self.slot.lock();
            *slot = Some(job.clone());
            self.generation.fetch_add(1, Ordering::Release);
        }
        self.wake.notify_all();
        job.run_parts();
        wait_until(|| job.done.load(Ordering::Acquire) == parts, None);
        *self.slot.lock() = None;
        self.busy.store(false, Ordering::Release);
        if let Some(payload) = job.panic.lock().take() {
            resume_unwind(payload);
        }
        Ok(())
    }

    /// A helper's life: wait for a job, help with it, repeat.
    fn help_forever(&self) {
        let mut seen = self.generation.load(Ordering::Acquire);
        loop {
            let changed = || self.generation.load(Ordering::Acquire) != seen;
            if !wait_until(changed, Some(LINGER)) {
                let mut slot = self.slot.lock();
                while !changed() {
                    self.wake.wait(&mut slot);
                }
            }
            seen = self.generation.load(Ordering::Acquire);
            let job = self.slot.lock().clone();
            if let Some(job) = job {
                job.run_parts();
            }
        }
    }
}

/// Waits for `ready`: a few busy rounds, then yielding the core to other threads, for at
/// most `limit`. Returns whether `ready` became true.
fn wait_until(ready: impl Fn() -> bool, limit: Option<Duration>) -> bool {
    for _ in 0..SPINS {
        if ready() {
            return true;
        }
        std::hint::spin_loop();
    }
    let start = Instant::now();
    while !ready() {
        if limit.is_some_and(|l| start.elapsed() >= l) {
            return false;
        }
        std::thread::yield_now();
    }
    true
}
