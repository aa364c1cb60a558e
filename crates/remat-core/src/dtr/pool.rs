//! The pool of evictable cells and the eviction rule. When an allocation does not fit the
//! limit, the memory counters call [`evict`]: it scores every resident, evictable cell on the
//! device by the DTR heuristic
//!
//! `h = cost / (bytes × staleness)`,
//!
//! where `cost` is the measured time of the cell's op plus that of its evicted ancestors
//! (what reading it back would really rebuild, as in the paper's h_DTR), and staleness is
//! the logical time since the cell was last read. The lowest scores go first, until enough
//! bytes are free.

use super::cell::Cell;
use crate::device::Device;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

const MAX_DEVICES: usize = 17;

/// Ancestors visited when costing one cell: enough to see a chain of evicted layers,
/// bounded so scoring stays linear in the pool.
const ANCESTOR_BUDGET: usize = 64;

struct Pool {
    cells: Vec<Weak<Cell>>,
    /// Dead entries are swept once the list reaches this length.
    sweep_at: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    cells: Vec::new(),
    sweep_at: 1024,
});

/// The logical clock: one tick per cell made or read.
static CLOCK: AtomicU64 = AtomicU64::new(1);

pub(crate) fn tick() -> u64 {
    CLOCK.fetch_add(1, Ordering::Relaxed)
}

/// Per-device counters of `memory_stats`.
struct Stats {
    evictions: [AtomicU64; MAX_DEVICES],
    evicted_bytes: [AtomicU64; MAX_DEVICES],
    remats: [AtomicU64; MAX_DEVICES],
    remat_ns: [AtomicU64; MAX_DEVICES],
}

static STATS: Stats = Stats {
    evictions: [const { AtomicU64::new(0) }; MAX_DEVICES],
    evicted_bytes: [const { AtomicU64::new(0) }; MAX_DEVICES],
    remats: [const { AtomicU64::new(0) }; MAX_DEVICES],
    remat_ns: [const { AtomicU64::new(0) }; MAX_DEVICES],
};

fn slot(device: Device) -> usize {
    device.slot().min(MAX_DEVICES - 1)
}

/// Counts of evictions and rematerialisations on one device since start or the last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EvictionStats {
    /// Storages freed to make room.
    pub evictions: u64,
    /// Bytes those storages held.
    pub evicted_bytes: u64,
    /// Storages rebuilt when read after an eviction.
    pub rematerializations: u64,
    /// Time spent rebuilding them, in seconds.
    pub remat_seconds: f64,
}

pub(crate) fn stats(device: Device) -> EvictionStats {
    let i = slot(device);
    EvictionStats {
        evictions: STATS.evictions[i].load(Ordering::Relaxed),
        evicted_bytes: STATS.evicted_bytes[i].load(Ordering::Relaxed),
        rematerializations: STATS.remats[i].load(Ordering::Relaxed),
        remat_seconds: STATS.remat_ns[i].load(Ordering::Relaxed) as f64 * 1e-9,
    }
}

pub(crate) fn reset_stats(device: Device) {
    let i = slot(device);
    for c in [
        &STATS.evictions[i],
        &STATS.evicted_bytes[i],
        &STATS.remats[i],
        &STATS.remat_ns[i],
    ] {
        c.store(0, Ordering::Relaxed);
    }
}

pub(crate) fn on_rematerialize(device: Device, took: Duration) {
    let i = slot(device);
    STATS.remats[i].fetch_add(1, Ordering::Relaxed);
    STATS.remat_ns[i].fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
}

/// Add a new (resident) cell to the pool.
pub(crate) fn register(cell: &Arc<Cell>) {
    let mut p = POOL.lock();
    if p.cells.len() >= p.sweep_at {
        p.cells.retain(|w| w.strong_count() > 0);
        p.sweep_at = (2 * p.cells.len()).max(1024);
    }
    p.cells.push(Arc::downgrade(cell));
}

/// Cells in the pool that are alive (tests and statistics).
pub(crate) fn live_cells() -> usize {
    POOL.lock()
        .cells
        .iter()
        .filter(|w| w.strong_count() > 0)
        .count()
}

/// What rebuilding `cell` would cost now: its op's time plus that of the evicted cells it
/// would have to rebuild first (a bounded walk).
fn rebuild_cost(cell: &Cell) -> u64 {
    let mut cost = cell.compute_ns.max(1);
    let mut stack: Vec<&Arc<Cell>> = cell.input_cells().collect();
    let mut seen = 0;
    while let Some(c) = stack.pop() {
        seen += 1;
        if seen > ANCESTOR_BUDGET {
            break;
        }
        if c.is_evicted() {
            cost = cost.saturating_add(c.compute_ns.max(1));
            stack.extend(c.input_cells());
        }
    }
    cost
}

/// Free at least `need` bytes on `device` by evicting cells, cheapest score first. Returns
/// the bytes freed (0 when nothing can go). Installed as the memory counters' evictor.
pub(crate) fn evict(device: Device, need: usize) -> usize {
    let now = CLOCK.load(Ordering::Relaxed);
    let mut scored: Vec<(f64, Arc<Cell>)> = {
        let mut p = POOL.lock();
        p.cells.retain(|w| w.strong_count() > 0);
        p.cells
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| c.device == device && c.nbytes > 0 && c.is_candidate())
            .map(|c| {
                let staleness = now.saturating_sub(c.last_use()).max(1) as f64;
                let h = rebuild_cost(&c) as f64 / (c.nbytes as f64 * staleness);
                (h, c)
            })
            .collect()
    };
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let i = slot(device);
    let mut freed = 0;
    for (_, cell) in scored {
        if freed >= need {
            break;
        }
        if let Some(storage) = cell.try_evict() {
            freed += cell.nbytes;
            STATS.evictions[i].fetch_add(1, Ordering::Relaxed);
            STATS.evicted_bytes[i].fetch_add(cell.nbytes as u64, Ordering::Relaxed);
            // The last holder: this drop frees the memory (and uncounts it).
            drop(storage);
        }
    }
    freed
}
