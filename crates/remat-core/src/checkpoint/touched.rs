//! Recompute caches filled during the current backward, cleared when it ends, so no cache
//! outlives the backward that needed it (retain_graph included: the next one recomputes).
//! Backward passes nest (a checkpointed function that calls `grad` while it is recomputed):
//! each clears only what was filled since it started.
//!
//! Inside a [`GraphExecGroup`] (PyTorch's `torch.utils.checkpoint.GraphExecGroup`) the caches
//! outlive each backward and are cleared when the group ends: several backward calls over
//! disjoint parts of one graph then recompute each checkpointed region at most once.

use crate::checkpoint::recipe::Recipe;
use crate::checkpoint::segment::Segment;
use crate::error::{Error, Result};
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Weak};

enum Touched {
    Recipe(Weak<Recipe>),
    Segment(Weak<Segment>),
}

thread_local! {
    static TOUCHED: RefCell<Vec<Touched>> = const { RefCell::new(Vec::new()) };
    /// Where this thread's open execution group started in its list (None: no group).
    static GROUP_MARK: Cell<Option<usize>> = const { Cell::new(None) };
}

/// While alive, recompute caches filled by backward calls on this thread are kept until it
/// drops (see the module docs). Groups do not nest.
pub struct GraphExecGroup {
    mark: usize,
}

impl GraphExecGroup {
    /// Open a group on this thread.
    pub fn enter() -> Result<GraphExecGroup> {
        if GROUP_MARK.get().is_some() {
            return Err(Error::checkpoint(
                "GraphExecGroup",
                "GraphExecGroup contexts cannot be nested: this thread is already inside one",
            ));
        }
        let mark = TOUCHED.with(|t| t.borrow().len());
        GROUP_MARK.set(Some(mark));
        Ok(GraphExecGroup { mark })
    }
}

impl Drop for GraphExecGroup {
    fn drop(&mut self) {
        GROUP_MARK.set(None);
        clear_since(self.mark);
    }
}

pub(crate) fn recipe(r: &Arc<Recipe>) {
    TOUCHED.with(|t| t.borrow_mut().push(Touched::Recipe(Arc::downgrade(r))));
}

pub(crate) fn segment(s: &Arc<Segment>) {
    TOUCHED.with(|t| t.borrow_mut().push(Touched::Segment(Arc::downgrade(s))));
}

/// Where a backward pass starts in this thread's list.
pub(crate) fn mark() -> usize {
    TOUCHED.with(|t| t.borrow().len())
}

/// A backward pass that began at `mark` ended: drop every cache filled since, unless an
/// execution group holds them until it ends.
pub(crate) fn backward_ended(mark: usize) {
    if GROUP_MARK.get().is_none() {
        clear_since(mark);
    }
}

/// Drop every cache filled since `mark`.
fn clear_since(mark: usize) {
    let list: Vec<Touched> = TOUCHED.with(|t| {
        let mut t = t.borrow_mut();
        let from = mark.min(t.len());
        t.drain(from..).collect()
    });
    for t in list {
        match t {
            Touched::Recipe(w) => {
                if let Some(r) = w.upgrade() {
                    r.clear_cache();
                }
            }
            Touched::Segment(w) => {
                if let Some(s) = w.upgrade() {
                    s.clear_cache();
                }
            }
        }
    }
}
