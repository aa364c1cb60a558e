//! The checkpoint profiler: real figures from the engine's byte counters. Bytes saved are the
//! bytes of storages that a checkpoint kept out of the graph and that were really freed, each
//! storage counted once.

use crate::device::Device;
use crate::memory;
use crate::storage::Storage;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A storage a checkpoint did not keep: its id and size, and whether it is still alive.
pub(crate) struct StorageRef {
    id: u64,
    bytes: usize,
    weak: Weak<Storage>,
}

impl StorageRef {
    pub(crate) fn new(s: &Arc<Storage>) -> StorageRef {
        StorageRef {
            id: s.id(),
            bytes: s.nbytes(),
            weak: Arc::downgrade(s),
        }
    }
}

/// The (id, bytes) of the storages in `refs` that are no longer alive, each once.
pub(crate) fn dead_storages(refs: &[StorageRef]) -> Vec<(u64, usize)> {
    let mut seen = HashSet::new();
    refs.iter()
        .filter(|r| r.weak.strong_count() == 0 && seen.insert(r.id))
        .map(|r| (r.id, r.bytes))
        .collect()
}

/// One checkpointed tensor or segment, as the profiler saw it.
pub(crate) struct Record {
    name: String,
    kind: &'static str,
    tracked: Mutex<Vec<StorageRef>>,
    frozen: Mutex<Option<Vec<(u64, usize)>>>,
    recompute_ns: AtomicU64,
    recomputes: AtomicUsize,
}

impl Record {
    pub(crate) fn track_storage(&self, s: &Arc<Storage>) {
        self.tracked.lock().push(StorageRef::new(s));
    }
    /// Fix the saved bytes now (at the first backward read): what is dead now was not kept.
    pub(crate) fn freeze(&self) {
        let mut f = self.frozen.lock();
        if f.is_none() {
            *f = Some(dead_storages(&std::mem::take(&mut *self.tracked.lock())));
        }
    }
    pub(crate) fn set_frozen(&self, v: Vec<(u64, usize)>) {
        *self.frozen.lock() = Some(v);
    }
    fn saved(&self) -> Vec<(u64, usize)> {
        match &*self.frozen.lock() {
            Some(v) => v.clone(),
            None => dead_storages(&self.tracked.lock()),
        }
    }
}

/// A record as returned to users.
#[derive(Clone, Debug)]
pub struct RecordInfo {
    /// Segment name, or the op that produced a checkpointed tensor.
    pub name: String,
    /// "segment", "group", "sequential", "tensor" or "scope".
    pub kind: &'static str,
    /// Bytes not kept thanks to this checkpoint.
    pub bytes_saved: usize,
    /// Seconds spent recomputing it.
    pub recompute_seconds: f64,
    /// How many times it was recomputed.
    pub recompute_count: usize,
}

#[derive(Default)]
struct State {
    records: Vec<Arc<Record>>,
    checkpoints: usize,
    recomputes: usize,
    recompute_ns: u64,
}

static TRACKING: AtomicBool = AtomicBool::new(false);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static STATE: Mutex<State> = Mutex::new(State {
    records: Vec::new(),
    checkpoints: 0,
    recomputes: 0,
    recompute_ns: 0,
});

pub(crate) fn new_record(name: String, kind: &'static str) -> Option<Arc<Record>> {
    if !TRACKING.load(Ordering::Relaxed) {
        return None;
    }
    let r = Arc::new(Record {
        name,
        kind,
        tracked: Mutex::new(Vec::new()),
        frozen: Mutex::new(None),
        recompute_ns: AtomicU64::new(0),
        recomputes: AtomicUsize::new(0),
    });
    let mut st = STATE.lock();
    st.checkpoints += 1;
    st.records.push(r.clone());
    Some(r)
}

pub(crate) fn on_recompute(record: Option<&Record>, dt: Duration) {
    let ns = dt.as_nanos() as u64;
    if let Some(r) = record {
        r.recompute_ns.fetch_add(ns, Ordering::Relaxed);
        r.recomputes.fetch_add(1, Ordering::Relaxed);
    }
    if TRACKING.load(Ordering::Relaxed) {
        let mut st = STATE.lock();
        st.recomputes += 1;
        st.recompute_ns += ns;
    }
}

/// The byte counters' allocation observer (installed by `start_tracking`; the counters do
/// not know about the profiler).
fn observe_bytes(_device: Device, now: usize) {
    if TRACKING.load(Ordering::Relaxed) {
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

/// Start recording checkpoints, recomputes and the peak of live bytes.
pub fn start_tracking() {
    // Installed on first use (idempotent): the counters call out only to what subscribed.
    memory::set_alloc_observer(observe_bytes);
    PEAK.store(memory::memory_allocated(Device::Cpu), Ordering::Relaxed);
    TRACKING.store(true, Ordering::Relaxed);
}

/// Stop recording (figures stay readable).
pub fn stop_tracking() {
    TRACKING.store(false, Ordering::Relaxed);
}

/// Whether the profiler is recording.
pub fn is_tracking() -> bool {
    TRACKING.load(Ordering::Relaxed)
}

/// Forget all records and counts.
pub fn reset() {
    *STATE.lock() = State::default();
    PEAK.store(memory::memory_allocated(Device::Cpu), Ordering::Relaxed);
}

/// Bytes of tensors not kept thanks to checkpointing, each storage counted once.
pub fn memory_saved() -> usize {
    let st = STATE.lock();
    let mut seen = HashSet::new();
    st.records
        .iter()
        .flat_map(|r| r.saved())
        .filter(|(id, _)| seen.insert(*id))
        .map(|(_, b)| b)
        .sum()
}

/// Checkpoints created while tracking (segments and checkpointed tensors).
pub fn checkpoint_count() -> usize {
    STATE.lock().checkpoints
}

/// Recomputes run while tracking.
pub fn recompute_count() -> usize {
    STATE.lock().recomputes
}

/// Seconds spent recomputing while tracking.
pub fn recompute_seconds() -> f64 {
    STATE.lock().recompute_ns as f64 * 1e-9
}

/// The highest live byte count seen while tracking.
pub fn peak_bytes() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// One entry per checkpointed segment or tensor.
pub fn records() -> Vec<RecordInfo> {
    STATE
        .lock()
        .records
        .iter()
        .map(|r| RecordInfo {
            name: r.name.clone(),
            kind: r.kind,
            bytes_saved: r.saved().iter().map(|(_, b)| b).sum(),
            recompute_seconds: r.recompute_ns.load(Ordering::Relaxed) as f64 * 1e-9,
            recompute_count: r.recomputes.load(Ordering::Relaxed),
        })
        .collect()
}

fn human(bytes: usize) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.2} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// A readable table of the records and totals.
pub fn report() -> String {
    let recs = records();
    let mut s = String::new();
    s.push_str(&format!(
        "{:<24} {:<10} {:>14} {:>10} {:>14}\n",
        "name", "kind", "bytes saved", "recomputes", "recompute (ms)"
    ));
    s.push_str(&format!("{}\n", "-".repeat(76)));
    for r in &recs {
        s.push_str(&format!(
            "{:<24} {:<10} {:>14} {:>10} {:>14.3}\n",
            r.name,
            r.kind,
            human(r.bytes_saved),
            r.recompute_count,
            r.recompute_seconds * 1e3
        ));
    }
    s.push_str(&format!("{}\n", "-".repeat(76)));
    s.push_str(&format!(
        "checkpoints: {}   recomputes: {}   recompute time: {:.3} ms\n",
        checkpoint_count(),
        recompute_count(),
        recompute_seconds() * 1e3
    ));
    s.push_str(&format!(
        "memory saved: {}   peak live bytes while tracking: {}\n",
        human(memory_saved()),
        human(peak_bytes())
    ));
    s
}
