//! Recompute caches filled during the current backward, cleared when it ends, so no cache
//! outlives the backward that needed it (retain_graph included: the next one recomputes).

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

/// Drop every cache filled since the last call.
pub(crate) fn clear_all() {
    let list = TOUCHED.with(|t| std::mem::take(&mut *t.borrow_mut()));
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
