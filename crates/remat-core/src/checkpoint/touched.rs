//! Recompute caches filled during the current backward, cleared when it ends, so no cache
//! outlives the backward that needed it (retain_graph included: the next one recomputes).
//! Backward passes nest (a checkpointed function that calls `grad` while it is recomputed):
//! each clears only what was filled since it started.

use crate::checkpoint::recipe::Recipe;
use crate::checkpoint::segment::Segment;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

enum Touched {
    Recipe(Weak<Recipe>),
    Segment(Weak<Segment>),
}

thread_local! {
    static TOUCHED: RefCell<Vec<Touched>> = const { RefCell::new(Vec::new()) };
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

/// Drop every cache filled since `mark`.
pub(crate) fn clear_since(mark: usize) {
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
