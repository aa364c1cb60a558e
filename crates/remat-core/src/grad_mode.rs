//! Grad mode: whether ops record the graph (thread-local, like PyTorch).

use std::cell::Cell;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops on this thread record the autograd graph.
pub fn is_grad_enabled() -> bool {
    ENABLED.with(|c| c.get())
}

/// Set grad mode, returning the previous value.
pub fn set_grad_enabled(on: bool) -> bool {
    ENABLED.with(|c| c.replace(on))
}

/// Restores the previous grad mode when dropped.
pub struct GradModeGuard(bool);

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.0);
    }
}

/// Disable recording until the guard drops.
pub fn no_grad() -> GradModeGuard {
    GradModeGuard(set_grad_enabled(false))
}

/// Enable recording until the guard drops.
pub fn enable_grad() -> GradModeGuard {
    GradModeGuard(set_grad_enabled(true))
}
