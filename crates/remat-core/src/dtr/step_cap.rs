//! A memory cap for one training step: set when a model's forward starts, relative to what is
//! live then, and lifted when the backward pass that follows it ends.
//!
//! `auto_checkpoint` may plan a model to run under dynamic rematerialisation instead of (or
//! rather than) static checkpoints: the step then needs a cap from the start of its forward
//! to the end of its backward, and none outside it (the optimizer's step, which allocates its
//! state on first use, and evaluation must not evict or fail). A forward knows when it
//! starts; the end is the outermost backward pass finishing, which the autograd engine
//! reports through [`BackwardScope`].
//!
//! The cap is soft: evicting works as under `set_memory_limit`, but an allocation that still
//! does not fit goes over it instead of failing the step (the plan measured the step to fit;
//! a step that does not, on other inputs, runs as it would without the plan). A limit the
//! user set (`set_memory_limit`) takes precedence: no step cap is set over it, and setting one
//! cancels a pending step cap.

use crate::device::Device;
use parking_lot::Mutex;
use std::cell::Cell;

/// A step cap in force: its device and the limit to restore when it is lifted.
struct StepCap {
    device: Device,
    previous: Option<usize>,
}

/// The step caps in force (at most one per device).
static STEP_CAPS: Mutex<Vec<StepCap>> = Mutex::new(Vec::new());

thread_local! {
    /// How many backward passes this thread is inside (a checkpoint's replay runs one
    /// inside another): only the outermost one ending lifts the step caps.
    static BACKWARD_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Cap `device`'s live bytes at what is live now plus `bytes`, softly, until the next
/// outermost backward pass ends. A step cap already in force on the device is replaced (a
/// forward that no backward followed, such as an evaluation under grad mode). Does nothing
/// while a limit set with `set_memory_limit` is in force. Returns whether the cap was set.
pub fn cap_until_backward(device: Device, bytes: usize) -> bool {
    let mut caps = STEP_CAPS.lock();
    let previous = match caps.iter().position(|c| c.device == device) {
        Some(i) => caps.swap_remove(i).previous,
        None if crate::memory::memory_limit(device).is_some() => return false,
        None => None,
    };
    super::install_evictor();
    let limit = crate::memory::memory_allocated(device).saturating_add(bytes);
    crate::memory::set_limit_with(device, Some(limit), true);
    caps.push(StepCap { device, previous });
    true
}

/// Whether a step cap is in force on `device`.
pub fn step_cap_active(device: Device) -> bool {
    STEP_CAPS.lock().iter().any(|c| c.device == device)
}

/// Forget the step cap of `device` without restoring anything (the user set a limit).
pub(super) fn cancel(device: Device) {
    STEP_CAPS.lock().retain(|c| c.device != device);
}

/// Lift every step cap, restoring the limits they replaced.
fn lift_all() {
    for cap in STEP_CAPS.lock().drain(..) {
        crate::memory::set_limit(cap.device, cap.previous);
    }
}

/// Held by the autograd engine for the length of a backward pass: when the outermost one on
/// this thread ends (finished or failed), the step caps are lifted.
pub(crate) struct BackwardScope;

impl BackwardScope {
    /// Enter a backward pass.
    pub(crate) fn enter() -> BackwardScope {
        BACKWARD_DEPTH.with(|d| d.set(d.get() + 1));
        BackwardScope
    }
}

impl Drop for BackwardScope {
    fn drop(&mut self) {
        let outermost = BACKWARD_DEPTH
            .try_with(|d| {
                let left = d.get().saturating_sub(1);
                d.set(left);
                left == 0
            })
            .unwrap_or(true);
        if outermost {
            lift_all();
        }
    }
}
