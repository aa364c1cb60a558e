//! Per-device byte counters of live tensor storage (current and peak), PyTorch semantics:
//! they count the bytes of tensors that are alive, not what an allocator holds in reserve.
//!
//! The counters depend on nothing above them: a module that wants to watch allocations (the
//! checkpoint profiler records the peak while it tracks) installs an observer here.
//!
//! They also enforce the memory limit (`set_memory_limit`): an allocation that would take a
//! device's count above its limit first asks the installed evictor (dynamic
//! rematerialisation, the `dtr` module) to free recomputable tensors, and is refused with
//! `Error::MemoryLimit` when that cannot make room. Refusing unwinds (as an out-of-memory
//! does), so it happens only inside an op boundary (`cpu::catch_oom`), where the unwind
//! becomes an error; an allocation elsewhere (wrapping a NumPy array) is counted, never
//! refused. Charging is one atomic update, so concurrent threads never overshoot together.

use crate::device::Device;
use crate::error::Error;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

const MAX_DEVICES: usize = 17;

struct Counters {
    current: [AtomicUsize; MAX_DEVICES],
    peak: [AtomicUsize; MAX_DEVICES],
}

static COUNTERS: Counters = Counters {
    current: [const { AtomicUsize::new(0) }; MAX_DEVICES],
    peak: [const { AtomicUsize::new(0) }; MAX_DEVICES],
};

/// `LIMITS[i]` for a device without a limit.
const UNLIMITED: usize = usize::MAX;

static LIMITS: [AtomicUsize; MAX_DEVICES] = [const { AtomicUsize::new(UNLIMITED) }; MAX_DEVICES];

/// Per device: the limit is soft (an allocation that does not fit after every possible
/// eviction goes over it instead of being refused). Set with the limit of a training step
/// planned to fit (`dtr::cap_until_backward`), where refusing would fail a step that the
/// plan measured to fit.
static SOFT: [AtomicBool; MAX_DEVICES] = [const { AtomicBool::new(false) }; MAX_DEVICES];

/// Per device: the most bytes a soft limit was gone over by.
static OVERSHOOT: [AtomicUsize; MAX_DEVICES] = [const { AtomicUsize::new(0) }; MAX_DEVICES];

/// The most bytes a soft limit on `device` was gone over by, since start or the last
/// [`reset_overshoot`].
pub(crate) fn overshoot(device: Device) -> usize {
    OVERSHOOT[slot(device)].load(Ordering::Relaxed)
}

/// Forget the overshoot of `device`.
pub(crate) fn reset_overshoot(device: Device) {
    OVERSHOOT[slot(device)].store(0, Ordering::Relaxed);
}

/// What an evictor did for an allocation that did not fit.
pub(crate) enum Evicted {
    /// Freed some bytes: try again.
    Freed,
    /// Nothing more can go.
    Nothing,
    /// Evicting was stopped (the step's rebuilds passed their bound), for this reason.
    Stopped(String),
}

/// Frees at least the given number of bytes on the device if it can.
pub(crate) type Evictor = fn(Device, usize) -> Evicted;

static EVICTOR: OnceLock<Evictor> = OnceLock::new();

/// Install the evictor (first installation wins, as for the observer).
pub(crate) fn set_evictor(f: Evictor) {
    let _ = EVICTOR.set(f);
}

thread_local! {
    /// How many op boundaries (`cpu::catch_oom`) this thread is inside: only there may an
    /// allocation over the limit be refused by unwinding.
    static REFUSABLE: Cell<usize> = const { Cell::new(0) };
}

/// While alive, allocations on this thread that do not fit the limit are refused (the
/// unwind is caught by the op boundary that made this scope).
pub(crate) struct RefusableScope;

impl RefusableScope {
    pub(crate) fn enter() -> RefusableScope {
        REFUSABLE.with(|d| d.set(d.get() + 1));
        RefusableScope
    }
}

impl Drop for RefusableScope {
    fn drop(&mut self) {
        let _ = REFUSABLE.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Cap the live bytes on `device` at `limit` (None removes the cap). Parameters count: the
/// cap is on `memory_allocated(device)`. `dtr::set_memory_limit` is the public entry: it
/// installs the evictor first.
pub(crate) fn set_limit(device: Device, limit: Option<usize>) {
    set_limit_with(device, limit, false);
}

/// [`set_limit`], soft or hard: a soft limit evicts as a hard one does, but an allocation
/// that still does not fit goes over it instead of being refused.
pub(crate) fn set_limit_with(device: Device, limit: Option<usize>, soft: bool) {
    SOFT[slot(device)].store(soft, Ordering::Relaxed);
    LIMITS[slot(device)].store(limit.unwrap_or(UNLIMITED), Ordering::Relaxed);
}

/// The cap on `device`'s live bytes, if one is set.
pub fn memory_limit(device: Device) -> Option<usize> {
    let l = LIMITS[slot(device)].load(Ordering::Relaxed);
    (l != UNLIMITED).then_some(l)
}

/// Charge `bytes` to `device` under its limit: evict until they fit; when nothing more can
/// be evicted, refuse (inside an op boundary, under a hard limit) or go over (elsewhere, or
/// under a soft limit). Returns the new count.
fn charge_limited(device: Device, i: usize, bytes: usize) -> usize {
    loop {
        let limit = LIMITS[i].load(Ordering::Relaxed);
        let fits = |cur: usize| cur.checked_add(bytes).filter(|n| *n <= limit);
        match COUNTERS.current[i].fetch_update(Ordering::Relaxed, Ordering::Relaxed, fits) {
            Ok(before) => return before + bytes,
            Err(cur) => {
                let need = cur.saturating_add(bytes).saturating_sub(limit);
                let stopped = match EVICTOR.get().map(|evict| evict(device, need)) {
                    Some(Evicted::Freed) => continue,
                    Some(Evicted::Stopped(why)) => Some(why),
                    Some(Evicted::Nothing) | None => None,
                };
                let soft = SOFT[i].load(Ordering::Relaxed);
                if REFUSABLE.with(|d| d.get() > 0) && !soft {
                    let error = limit_error(device, bytes, cur, limit, stopped);
                    std::panic::resume_unwind(Box::new(error));
                }
                let now = COUNTERS.current[i].fetch_add(bytes, Ordering::Relaxed) + bytes;
                if soft {
                    OVERSHOOT[i].fetch_max(now.saturating_sub(limit), Ordering::Relaxed);
                }
                return now;
            }
        }
    }
}

/// The error for an allocation that does not fit even after every possible eviction: what
/// is left (`live`) cannot be recomputed, so it plus the allocation is the smallest working
/// set at this point. When eviction was `stopped` (the rebuilds passed their bound), `live`
/// plus the allocation is what this step needed here without thrashing.
fn limit_error(
    device: Device,
    bytes: usize,
    live: usize,
    limit: usize,
    stopped: Option<String>,
) -> Error {
    let working_set = live.saturating_add(bytes);
    let message = match stopped {
        None => format!(
            "cannot allocate {bytes} bytes on {device} under its memory limit of {limit} \
             bytes: {live} bytes are live and none of them can be evicted (parameters, \
             gradients, tensors you hold and the inputs of the running op stay); the smallest \
             working set here is {working_set} bytes, so the limit must be at least that"
        ),
        Some(why) => format!(
            "cannot allocate {bytes} bytes on {device} under its memory limit of {limit} \
             bytes: {why}; the working set here is {working_set} bytes ({live} live), so a \
             limit that trains without thrashing is nearer that"
        ),
    };
    Error::MemoryLimit {
        op: "alloc".to_string(),
        message,
    }
}

/// Called after every allocation and every free with the device and its live bytes.
pub(crate) type AllocObserver = fn(Device, usize);

/// The installed observer. A `OnceLock` rather than a lock: reading it is one atomic load on
/// every allocation, and the one observer (the profiler) is installed once and checks its own
/// switch.
static OBSERVER: OnceLock<AllocObserver> = OnceLock::new();

/// Install the allocation observer. There is one per process (the profiler's): the first
/// installation wins and later calls do nothing, so installing is idempotent.
pub(crate) fn set_alloc_observer(f: AllocObserver) {
    let _ = OBSERVER.set(f);
}

fn slot(device: Device) -> usize {
    device.slot().min(MAX_DEVICES - 1)
}

/// Record that `bytes` of storage came alive on `device`.
/// With a limit set, this may first evict (see the module header) or refuse by unwinding with
/// `Error::MemoryLimit`, so callers charge before they take ownership of the memory.
pub(crate) fn on_alloc(device: Device, bytes: usize) {
    let i = slot(device);
    let now = if LIMITS[i].load(Ordering::Relaxed) == UNLIMITED {
        COUNTERS.current[i].fetch_add(bytes, Ordering::Relaxed) + bytes
    } else {
        charge_limited(device, i, bytes)
    };
    COUNTERS.peak[i].fetch_max(now, Ordering::Relaxed);
    raise_scopes(i, now);
    if let Some(observe) = OBSERVER.get() {
        observe(device, now);
    }
}

/// Record that `bytes` of storage on `device` were freed.
pub(crate) fn on_free(device: Device, bytes: usize) {
    let now = COUNTERS.current[slot(device)]
        .fetch_sub(bytes, Ordering::Relaxed)
        .wrapping_sub(bytes);
    if let Some(observe) = OBSERVER.get() {
        observe(device, now);
    }
}

/// Bytes of live tensor storage on `device`.
pub fn memory_allocated(device: Device) -> usize {
    COUNTERS.current[slot(device)].load(Ordering::Relaxed)
}

/// The highest `memory_allocated(device)` since start or the last reset.
pub fn max_memory_allocated(device: Device) -> usize {
    COUNTERS.peak[slot(device)].load(Ordering::Relaxed)
}

/// Reset the peak to the current value.
pub fn reset_peak_memory_stats(device: Device) {
    let i = slot(device);
    COUNTERS.peak[i].store(
        COUNTERS.current[i].load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
}

/// A scope that watches the peak of `memory_allocated(device)` while it lives, without
/// touching [`max_memory_allocated`]: it keeps its own peak, which every allocation on its
/// device raises while the scope is registered. The global peak is never lowered and
/// restored (which another thread reading it meanwhile would see), so concurrent scopes and
/// readers never disturb one another. Allocations by other threads meanwhile count as well.
pub(crate) struct PeakScope {
    watch: std::sync::Arc<ScopePeak>,
}

/// One live scope's device and peak.
struct ScopePeak {
    slot: usize,
    peak: AtomicUsize,
}

/// The live scopes, and how many there are (so that an allocation with none live skips the
/// lock: scopes are rare, allocations are not).
static SCOPES: std::sync::Mutex<Vec<std::sync::Arc<ScopePeak>>> = std::sync::Mutex::new(Vec::new());
static LIVE_SCOPES: AtomicUsize = AtomicUsize::new(0);

/// Raise the peak of every live scope on device slot `i` to `now`.
fn raise_scopes(i: usize, now: usize) {
    if LIVE_SCOPES.load(Ordering::Acquire) == 0 {
        return;
    }
    let scopes = SCOPES.lock().unwrap_or_else(|e| e.into_inner());
    for s in scopes.iter().filter(|s| s.slot == i) {
        s.peak.fetch_max(now, Ordering::Relaxed);
    }
}

impl PeakScope {
    /// Start watching `device`, from its current count.
    pub(crate) fn enter(device: Device) -> PeakScope {
        let i = slot(device);
        let watch = std::sync::Arc::new(ScopePeak {
            slot: i,
            peak: AtomicUsize::new(COUNTERS.current[i].load(Ordering::Relaxed)),
        });
        SCOPES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(watch.clone());
        LIVE_SCOPES.fetch_add(1, Ordering::Release);
        // An allocation between reading the count and registering is caught here.
        watch.peak.fetch_max(
            COUNTERS.current[i].load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        PeakScope { watch }
    }

    /// The highest count since [`PeakScope::enter`].
    pub(crate) fn peak(&self) -> usize {
        self.watch.peak.load(Ordering::Relaxed)
    }
}

impl Drop for PeakScope {
    fn drop(&mut self) {
        let mut scopes = SCOPES.lock().unwrap_or_else(|e| e.into_inner());
        scopes.retain(|s| !std::sync::Arc::ptr_eq(s, &self.watch));
        LIVE_SCOPES.fetch_sub(1, Ordering::Release);
    }
}
