//! The thread-local checkpoint context: which kind of slot a saved tensor gets, depending on
//! whether we are inside a checkpoint scope, a segment's forward, or a segment's recompute.

use crate::checkpoint::segment::Segment;
use crate::checkpoint::slot::Slot;
use crate::tensor::{Tensor, TensorData};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

/// The innermost checkpoint context.
#[derive(Clone)]
pub(crate) enum SaveMode {
    /// No checkpointing: slots keep the data.
    Normal,
    /// Inside `checkpoint_scope()`: every tensor created gets a recompute recipe.
    Scope,
    /// Inside a segment's forward: saved tensors become slots of the segment.
    Segment(Arc<Segment>),
    /// Inside a segment's recompute: saved tensors are collected in order, no graph is built.
    Capture(Rc<RefCell<Vec<TensorData>>>),
    /// Inside a nested segment during an outer recompute: nothing is saved.
    Discard,
}

thread_local! {
    static STACK: RefCell<Vec<SaveMode>> = const { RefCell::new(Vec::new()) };
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// The innermost context (cheap when no checkpointing is active).
pub(crate) fn current() -> SaveMode {
    if DEPTH.with(|d| d.get()) == 0 {
        return SaveMode::Normal;
    }
    STACK.with(|s| s.borrow().last().cloned().unwrap_or(SaveMode::Normal))
}

/// Pops the context it pushed when dropped.
pub(crate) struct ContextGuard(());

impl Drop for ContextGuard {
    fn drop(&mut self) {
        STACK.with(|s| s.borrow_mut().pop());
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Enter a context until the guard drops.
pub(crate) fn enter(mode: SaveMode) -> ContextGuard {
    STACK.with(|s| s.borrow_mut().push(mode));
    DEPTH.with(|d| d.set(d.get() + 1));
    ContextGuard(())
}

/// The slot for saving tensor `t` in context `mode`.
pub(crate) fn slot_for(t: &Tensor, mode: &SaveMode) -> Slot {
    match mode {
        SaveMode::Segment(seg) => Slot::Segment(seg.clone(), seg.save(t.data())),
        _ => match t.recipe() {
            Some(r) => Slot::recompute(r),
            None => Slot::Stored(t.data().clone()),
        },
    }
}

/// The slot for saving raw data (an op's own output) in context `mode`.
pub(crate) fn slot_for_data(d: &TensorData, mode: &SaveMode) -> Slot {
    match mode {
        SaveMode::Segment(seg) => Slot::Segment(seg.clone(), seg.save(d)),
        _ => Slot::Stored(d.clone()),
    }
}
