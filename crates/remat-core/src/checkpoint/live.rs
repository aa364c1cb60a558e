//! A count of live checkpoint state (recipes, segments, filled recompute caches), so tests can
//! assert that nothing outlives a backward.

use std::sync::atomic::{AtomicIsize, Ordering};

static LIVE_OBJECTS: AtomicIsize = AtomicIsize::new(0);
static LIVE_CACHES: AtomicIsize = AtomicIsize::new(0);

/// Counted while alive.
pub(crate) struct LiveToken(());

impl LiveToken {
    pub(crate) fn new() -> Self {
        LIVE_OBJECTS.fetch_add(1, Ordering::Relaxed);
        LiveToken(())
    }
}

impl Drop for LiveToken {
    fn drop(&mut self) {
        LIVE_OBJECTS.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) fn cache_filled() {
    LIVE_CACHES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn cache_dropped() {
    LIVE_CACHES.fetch_sub(1, Ordering::Relaxed);
}

/// Live recipes and segments plus filled recompute caches. Zero once every graph that used
/// checkpointing has run its backward (or been dropped) and no checkpointed handle is held.
pub fn live_checkpoint_state() -> usize {
    (LIVE_OBJECTS.load(Ordering::Relaxed) + LIVE_CACHES.load(Ordering::Relaxed)).max(0) as usize
}

/// Filled recompute caches only (zero after every backward).
pub fn live_recompute_caches() -> usize {
    LIVE_CACHES.load(Ordering::Relaxed).max(0) as usize
}
