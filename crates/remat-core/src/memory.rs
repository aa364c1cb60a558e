//! Per-device byte counters of live tensor storage (current and peak), PyTorch semantics:
//! they count the bytes of tensors that are alive, not what an allocator holds in reserve.
//!
//! The counters depend on nothing above them: a module that wants to watch allocations (the
//! checkpoint profiler records the peak while it tracks) installs an observer here.

use crate::device::Device;
use std::sync::atomic::{AtomicUsize, Ordering};
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
pub(crate) fn on_alloc(device: Device, bytes: usize) {
    let i = slot(device);
    let now = COUNTERS.current[i].fetch_add(bytes, Ordering::Relaxed) + bytes;
    COUNTERS.peak[i].fetch_max(now, Ordering::Relaxed);
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
