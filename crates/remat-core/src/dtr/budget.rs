//! The rebuild budget of a step: dynamic rematerialisation pays for its memory with
//! recomputation, and under a limit too tight for the graph it would pay without end (evict a
//! tensor, rebuild it, evict another to make room, rebuild that ...). As in the DTR paper's
//! analysis, the work is bounded against the step's own forward: each device counts the
//! measured time of the ops that made its evictable tensors (the forward) and the time spent
//! rebuilding evicted ones, per step. Once the rebuilds pass `bound × forward`, eviction
//! stops for the rest of the step: a soft cap (a step planned by `auto_checkpoint`) then
//! lets allocations go over it, and reports the overshoot in `memory_stats`; a hard limit
//! (`set_memory_limit`) refuses the allocation with `MemoryError`.
//!
//! A step runs from a step cap's start (`cap_until_backward`), a limit being set, or the
//! end of the previous outermost backward pass, to the end of the next one. Its forward is at
//! least the previous step's, so a step whose rebuilds come early is not judged against the
//! little forward it has run so far, and never less than [`FLOOR_NS`].

use crate::device::Device;
use std::sync::atomic::{AtomicU64, Ordering};

const MAX_DEVICES: usize = 17;

/// The forward time a step is judged against at least: rebuilding less than
/// `bound × FLOOR_NS` never stops eviction, whatever the step.
pub const FLOOR_NS: u64 = 1_000_000;

/// The default bound: rebuilds may cost ten forwards of the step.
pub const DEFAULT_BOUND: f64 = 10.0;

struct Window {
    forward_ns: [AtomicU64; MAX_DEVICES],
    rebuild_ns: [AtomicU64; MAX_DEVICES],
    previous_forward_ns: [AtomicU64; MAX_DEVICES],
    previous_rebuild_ns: [AtomicU64; MAX_DEVICES],
    /// How many times eviction was stopped (since start or the last reset of the stats).
    stops: [AtomicU64; MAX_DEVICES],
}

static WINDOW: Window = Window {
    forward_ns: [const { AtomicU64::new(0) }; MAX_DEVICES],
    rebuild_ns: [const { AtomicU64::new(0) }; MAX_DEVICES],
    previous_forward_ns: [const { AtomicU64::new(0) }; MAX_DEVICES],
    previous_rebuild_ns: [const { AtomicU64::new(0) }; MAX_DEVICES],
    stops: [const { AtomicU64::new(0) }; MAX_DEVICES],
};

/// The bound as the bits of an f64 (one atomic word).
static BOUND: AtomicU64 = AtomicU64::new(DEFAULT_BOUND.to_bits());

fn slot(device: Device) -> usize {
    device.slot().min(MAX_DEVICES - 1)
}

/// Let rebuilds in a step cost at most `bound` times the step's forward (`f64::INFINITY`: no
/// bound); returns the previous bound. `bound` must be positive (the caller checks).
pub fn set_rebuild_bound(bound: f64) -> f64 {
    f64::from_bits(BOUND.swap(bound.to_bits(), Ordering::Relaxed))
}

/// The bound set with [`set_rebuild_bound`] ([`DEFAULT_BOUND`] unless changed).
pub fn rebuild_bound() -> f64 {
    f64::from_bits(BOUND.load(Ordering::Relaxed))
}

/// An op made an evictable tensor on `device` in `ns`: forward work of the step.
pub(crate) fn on_forward(device: Device, ns: u64) {
    WINDOW.forward_ns[slot(device)].fetch_add(ns, Ordering::Relaxed);
}

/// An evicted tensor on `device` was rebuilt in `ns`.
pub(crate) fn on_rebuild(device: Device, ns: u64) {
    WINDOW.rebuild_ns[slot(device)].fetch_add(ns, Ordering::Relaxed);
}

/// A new step starts on `device`: its counts start from zero, and the step that ended is
/// remembered as the forward to judge the next one's rebuilds against.
pub(crate) fn new_step(device: Device) {
    new_step_at(slot(device));
}

fn new_step_at(i: usize) {
    let forward = WINDOW.forward_ns[i].swap(0, Ordering::Relaxed);
    let rebuilt = WINDOW.rebuild_ns[i].swap(0, Ordering::Relaxed);
    if forward > 0 || rebuilt > 0 {
        WINDOW.previous_forward_ns[i].store(forward, Ordering::Relaxed);
        WINDOW.previous_rebuild_ns[i].store(rebuilt, Ordering::Relaxed);
    }
}

/// A new step starts on every device (the outermost backward pass ended).
pub(crate) fn new_step_everywhere() {
    (0..MAX_DEVICES).for_each(new_step_at);
}

/// A step's figures on one device: the running step's, or (when it has done nothing yet)
/// the last finished one's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepWork {
    /// Seconds of forward ops that made evictable tensors.
    pub forward_seconds: f64,
    /// Seconds spent rebuilding evicted tensors.
    pub rebuild_seconds: f64,
    /// The forward the rebuilds are judged against (this step's, the previous step's, or the
    /// floor, whichever is largest), in seconds.
    pub judged_forward_seconds: f64,
    /// How many times eviction was stopped by the bound.
    pub stops: u64,
}

fn judged_forward_ns(i: usize) -> u64 {
    WINDOW.forward_ns[i]
        .load(Ordering::Relaxed)
        .max(WINDOW.previous_forward_ns[i].load(Ordering::Relaxed))
        .max(FLOOR_NS)
}

/// The figures of the step running on `device`, or of the last one when none runs.
pub fn step_work(device: Device) -> StepWork {
    let i = slot(device);
    let (mut forward, mut rebuilt) = (
        WINDOW.forward_ns[i].load(Ordering::Relaxed),
        WINDOW.rebuild_ns[i].load(Ordering::Relaxed),
    );
    if forward == 0 && rebuilt == 0 {
        forward = WINDOW.previous_forward_ns[i].load(Ordering::Relaxed);
        rebuilt = WINDOW.previous_rebuild_ns[i].load(Ordering::Relaxed);
    }
    StepWork {
        forward_seconds: forward as f64 * 1e-9,
        rebuild_seconds: rebuilt as f64 * 1e-9,
        judged_forward_seconds: judged_forward_ns(i) as f64 * 1e-9,
        stops: WINDOW.stops[i].load(Ordering::Relaxed),
    }
}

pub(crate) fn reset_stops(device: Device) {
    WINDOW.stops[slot(device)].store(0, Ordering::Relaxed);
}

/// When the step's rebuilds on `device` are over the bound: why eviction must stop (counted
/// as a stop). None while within it.
pub(crate) fn exceeded(device: Device) -> Option<String> {
    let i = slot(device);
    let bound = rebuild_bound();
    let rebuilt = WINDOW.rebuild_ns[i].load(Ordering::Relaxed);
    let forward = judged_forward_ns(i);
    if (rebuilt as f64) <= bound * forward as f64 {
        return None;
    }
    WINDOW.stops[i].fetch_add(1, Ordering::Relaxed);
    Some(format!(
        "rebuilding evicted tensors has cost {:.1} ms in this step, more than {bound}x its \
         forward ({:.1} ms): the limit is too tight to train under without rebuilding the \
         same tensors again and again (remat.set_rebuild_bound changes the bound)",
        rebuilt as f64 * 1e-6,
        forward as f64 * 1e-6
    ))
}
