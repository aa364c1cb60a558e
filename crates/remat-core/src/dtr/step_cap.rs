//! A memory cap for one training step: set when a model's forward starts, relative to what is
//! live then, and lifted when the backward pass that follows it ends.
//!
//! `auto_checkpoint` may plan a model to run under dynamic rematerialisation rather than
//! static checkpoints: the step then needs a cap from the start of its forward
//! to the end of its backward, and none outside it (the optimizer's step, which allocates its
//! state on first use, and evaluation must not evict or fail). A forward knows when it
//! starts; the end is the outermost backward pass finishing, which the autograd engine
//! reports through [`BackwardScope`].
//!
//! The cap is soft: evicting works as under `set_memory_limit`, but an allocation that still
//! does not fit goes over it instead of failing the step (the plan measured the step to fit;
//! a step that does not, on other inputs, runs as it would without the plan). A limit the
//! user set (`set_memory_limit`) takes precedence: no step cap is set over it, and setting one
//! cancels a pending step cap. So a step cap never replaces a limit, and lifting it leaves
//! none.

use crate::device::Device;
use parking_lot::Mutex;
use std::cell::Cell;

/// The devices with a step cap in force (each at most once).
static STEP_CAPS: Mutex<Vec<Device>> = Mutex::new(Vec::new());

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
    let replacing = caps.contains(&device);
    if !replacing && crate::memory::memory_limit(device).is_some() {
        return false;
    }
    super::install_evictor();
    super::budget::new_step(device);
    let limit = crate::memory::memory_allocated(device).saturating_add(bytes);
    crate::memory::set_limit_with(device, Some(limit), true);
    if !replacing {
        caps.push(device);
    }
    true
}

/// Whether a step cap is in force on `device`.
pub fn step_cap_active(device: Device) -> bool {
    STEP_CAPS.lock().contains(&device)
}

/// Forget the step cap of `device` without restoring anything (the user set a limit).
pub(super) fn cancel(device: Device) {
    STEP_CAPS.lock().retain(|d| *d != device);
}

/// Lift every step cap (none replaced a limit: see the module header).
fn lift_all() {
    for device in STEP_CAPS.lock().drain(..) {
        crate::memory::set_limit(device, None);
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
            super::budget::new_step_everywhere();
        }
    }
}
