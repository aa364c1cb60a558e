//! The pool of evictable cells and the eviction rule. When an allocation does not fit the
//! limit, the memory counters call [`evict`]: it scores every resident, evictable cell on the
//! device by the DTR heuristic
//!
//! `h = cost / (bytes × w(staleness))`, `w(s) = s / (s + 4)`,
//!
//! where `cost` is the measured time of the cell's op plus that of its evicted ancestors
//! (what reading it back would really rebuild, as in the paper's h_DTR), and staleness is
//! the logical time since the cell was last read (saturating: see [`recency_weight`]). The
//! lowest scores go first, until enough bytes are free.

use super::cell::Cell;
use crate::device::Device;
use crate::memory::Evicted;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

const MAX_DEVICES: usize = 17;

/// Ancestors visited when costing one cell: enough to see a run of evicted layers, bounded
/// so that scoring stays cheap.
const ANCESTOR_BUDGET: usize = 16;

/// Candidates scored per eviction round: a random sample when more are resident (the DTR
/// paper's sampling; the choice changes speed, never values).
const SAMPLE: usize = 32;

/// Cells that may hold their storage (resident): eviction looks only at these, so its cost
/// follows what fits under the limit, not the length of the graph. A cell is added when a
/// storage comes (back) into it (once: `Cell::in_pool`), and removed lazily, when a probe
/// finds it gone or released.
struct Pool {
    resident: Vec<Weak<Cell>>,
    /// Gone entries are swept once the list reaches this length.
    sweep_at: usize,
    /// State of the sampling generator (xorshift).
    rng: u64,
}

impl Pool {
    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Entry `j` if it is still resident; otherwise it leaves the list (then the entry now at
    /// `j` is another one) and None.
    fn probe(&mut self, j: usize) -> Option<Arc<Cell>> {
        match self.resident[j].upgrade() {
            Some(c) if !c.is_released() => Some(c),
            gone => {
                if let Some(c) = gone {
                    c.leave_pool();
                }
                self.resident.swap_remove(j);
                None
            }
        }
    }
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    resident: Vec::new(),
    sweep_at: 1024,
    rng: 0x9E37_79B9_7F4A_7C15,
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
    let ns = took.as_nanos() as u64;
    STATS.remats[i].fetch_add(1, Ordering::Relaxed);
    STATS.remat_ns[i].fetch_add(ns, Ordering::Relaxed);
    super::budget::on_rebuild(device, ns);
}

/// Note that `cell` holds its storage (new, rebuilt, or taken back).
pub(crate) fn register(cell: &Arc<Cell>) {
    let mut p = POOL.lock();
    if !cell.enter_pool() {
        return;
    }
    if p.resident.len() >= p.sweep_at {
        let mut j = 0;
        while j < p.resident.len() {
            if p.probe(j).is_some() {
                j += 1;
            }
        }
        p.sweep_at = (2 * p.resident.len()).max(1024);
    }
    p.resident.push(Arc::downgrade(cell));
}

/// Cells alive now (made under a limit, not yet dropped with their graph).
static LIVE: AtomicU64 = AtomicU64::new(0);

pub(crate) fn cell_made() {
    LIVE.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn cell_dropped() {
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

/// Cells alive now (tests: zero once every graph made under a limit is gone).
pub(crate) fn live_cells() -> usize {
    LIVE.load(Ordering::Relaxed) as usize
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

/// Ticks of staleness at which a cell counts half as stale as an old one (see
/// [`recency_weight`]).
const STALE_HALF: f64 = 4.0;

/// The staleness factor of the score, `s / (s + STALE_HALF)` for `s` ticks since the cell was
/// last read: it protects what was just made or read (a forward reads an output right after
/// making it, so evicting it would rebuild it at once), and weighs every older cell alike.
/// Plain staleness (`s`) would also rank old cells by age, so late in a forward a layer's
/// expensive matmul output from long ago would go before a cheap GELU output from a few
/// layers back; in training every evicted tensor is rebuilt once in the backward whatever its
/// age, so past the first few ticks only the cost per byte should decide.
fn recency_weight(now: u64, cell: &Cell) -> f64 {
    let s = now.saturating_sub(cell.last_use()).max(1) as f64;
    s / (s + STALE_HALF)
}

/// Resident cells of `device` that could be evicted now: a random sample of about
/// [`SAMPLE`] (`all`: every one). Entries found gone leave the list on the way.
fn candidates(device: Device, all: bool) -> Vec<Arc<Cell>> {
    let mut found: Vec<Arc<Cell>> = Vec::new();
    {
        let mut p = POOL.lock();
        if all || p.resident.len() <= SAMPLE {
            let mut j = 0;
            while j < p.resident.len() {
                if let Some(c) = p.probe(j) {
                    if c.device == device {
                        found.push(c);
                    }
                    j += 1;
                }
            }
        } else {
            // Probes with replacement; a cell drawn twice is scored once.
            for _ in 0..2 * SAMPLE {
                if p.resident.is_empty() || found.len() >= SAMPLE {
                    break;
                }
                let j = (p.next_random() % p.resident.len() as u64) as usize;
                if let Some(c) = p.probe(j) {
                    if c.device == device && !found.iter().any(|f| Arc::ptr_eq(f, &c)) {
                        found.push(c);
                    }
                }
            }
        }
    }
    found.retain(|c| c.nbytes > 0 && c.is_candidate());
    found
}

/// Free at least `need` bytes on `device` by evicting cells, cheapest score first. Returns
/// the bytes freed (nothing when nothing can go, or when the step's rebuilds are past their
/// bound: then with the reason). Installed as the memory counters' evictor. Each round
/// scores a sample; a round that evicts nothing is retried on every resident cell before
/// giving up, so sampling never turns a possible eviction into a `MemoryError`.
pub(crate) fn evict(device: Device, need: usize) -> Evicted {
    if let Some(why) = super::budget::exceeded(device) {
        return Evicted::Stopped(why);
    }
    let i = slot(device);
    let mut freed = 0;
    let mut all = false;
    while freed < need {
        let now = CLOCK.load(Ordering::Relaxed);
        let mut scored: Vec<(f64, Arc<Cell>)> = candidates(device, all)
            .into_iter()
            .map(|c| {
                let h = rebuild_cost(&c) as f64 / (c.nbytes as f64 * recency_weight(now, &c));
                (h, c)
            })
            .collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut evicted_any = false;
        for (_, cell) in scored {
            if freed >= need {
                break;
            }
            if let Some(storage) = cell.try_evict() {
                freed += cell.nbytes;
                evicted_any = true;
                STATS.evictions[i].fetch_add(1, Ordering::Relaxed);
                STATS.evicted_bytes[i].fetch_add(cell.nbytes as u64, Ordering::Relaxed);
                // The last holder: this drop frees the memory (and uncounts it).
                drop(storage);
            }
        }
        if !evicted_any {
            if all {
                break;
            }
            all = true;
        }
    }
    if freed == 0 {
        Evicted::Nothing
    } else {
        Evicted::Freed
    }
}
