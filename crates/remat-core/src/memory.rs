//! Per-device byte counters of live tensor storage (current and peak), PyTorch semantics:
//! they count the bytes of tensors that are alive, not what an allocator holds in reserve.

use crate::device::Device;
use std::sync::atomic::{AtomicUsize, Ordering};

const MAX_DEVICES: usize = 17;

struct Counters {
    current: [AtomicUsize; MAX_DEVICES],
    peak: [AtomicUsize; MAX_DEVICES],
}

static COUNTERS: Counters = Counters {
    current: [const { AtomicUsize::new(0) }; MAX_DEVICES],
    peak: [const { AtomicUsize::new(0) }; MAX_DEVICES],
};

fn slot(device: Device) -> usize {
    device.slot().min(MAX_DEVICES - 1)
}

/// Record that `bytes` of storage came alive on `device`.
pub(crate) fn on_alloc(device: Device, bytes: usize) {
    let i = slot(device);
    let now = COUNTERS.current[i].fetch_add(bytes, Ordering::Relaxed) + bytes;
    COUNTERS.peak[i].fetch_max(now, Ordering::Relaxed);
    crate::checkpoint::profiler::observe_bytes(device, now);
}

/// Record that `bytes` of storage on `device` were freed.
pub(crate) fn on_free(device: Device, bytes: usize) {
    COUNTERS.current[slot(device)].fetch_sub(bytes, Ordering::Relaxed);
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
