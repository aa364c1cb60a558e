//! The checkpoint profiler: real figures from the engine's byte counters. Bytes saved are the
//! bytes of storages that a checkpoint kept out of the graph and that were really freed, each
//! storage counted once.
//!
//! Memory held while tracking is bounded: a record lives only as long as its checkpoint;
//! when the checkpoint goes, its figures are folded into one total per (name, kind). The
//! memory timeline (live bytes over time with the checkpoint, recompute and backward events)
//! is bounded too: see [`super::timeline`].

use super::timeline::{Timeline, TimelineRow};
use crate::device::Device;
use crate::memory;
use crate::storage::Storage;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Weak};
use std::time::{Duration, Instant};

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

/// One checkpointed tensor or segment, as the profiler saw it while it lives.
pub(crate) struct Record {
    id: u64,
    name: String,
    kind: &'static str,
    /// Whether a node or segment would have kept the value in a plain run (a scope tensor
    /// read only by other recipes frees nothing that a plain run would have kept).
    kept: AtomicBool,
    tracked: Mutex<Vec<StorageRef>>,
    frozen: Mutex<Option<Vec<(u64, usize)>>>,
    /// The smallest storage id this record may count (storage ids only grow), so ids below
    /// every live record's can be forgotten.
    min_id: AtomicU64,
    recompute_ns: AtomicU64,
    recomputes: AtomicUsize,
}

impl Record {
    pub(crate) fn track_storage(&self, s: &Arc<Storage>) {
        self.min_id.fetch_min(s.id(), Ordering::Relaxed);
        self.tracked.lock().push(StorageRef::new(s));
    }
    /// A plain run would have kept this value.
    pub(crate) fn mark_kept(&self) {
        self.kept.store(true, Ordering::Relaxed);
    }
    /// Fix the saved bytes now (at the first backward read): what is dead now was not kept.
    pub(crate) fn freeze(&self) {
        let mut f = self.frozen.lock();
        if f.is_none() {
            *f = Some(dead_storages(&std::mem::take(&mut *self.tracked.lock())));
        }
    }
    pub(crate) fn set_frozen(&self, v: Vec<(u64, usize)>) {
        if let Some(min) = v.iter().map(|(id, _)| *id).min() {
            self.min_id.fetch_min(min, Ordering::Relaxed);
        }
        *self.frozen.lock() = Some(v);
    }
    fn saved(&self) -> Vec<(u64, usize)> {
        if !self.kept.load(Ordering::Relaxed) {
            return Vec::new();
        }
        match &*self.frozen.lock() {
            Some(v) => v.clone(),
            None => dead_storages(&self.tracked.lock()),
        }
    }
}

/// The owner's handle of a [`Record`] (held by its recipe or segment). When the checkpoint
/// goes, its figures are folded into the totals of its name and kind and the record itself
/// is forgotten, so tracking holds memory for live checkpoints only.
pub(crate) struct RecordHandle(Arc<Record>);

impl std::ops::Deref for RecordHandle {
    type Target = Record;
    fn deref(&self) -> &Record {
        &self.0
    }
}

impl Drop for RecordHandle {
    fn drop(&mut self) {
        fold(&self.0);
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

/// The summed figures of every finished checkpoint of one name and kind.
struct Totals {
    name: String,
    kind: &'static str,
    bytes_saved: usize,
    recompute_ns: u64,
    recomputes: usize,
}

#[derive(Default)]
struct State {
    /// One entry per (name, kind), in order of first appearance.
    totals: Vec<Totals>,
    index: HashMap<(String, &'static str), usize>,
    /// Records of live checkpoints, by id.
    live: HashMap<u64, Arc<Record>>,
    /// Storages already counted by finished records (each storage is counted once), kept
    /// only while a live record could still name them.
    counted: HashSet<u64>,
    checkpoints: usize,
    recomputes: usize,
    recompute_ns: u64,
}

impl State {
    fn totals_of(&mut self, name: &str, kind: &'static str) -> &mut Totals {
        let k = match self.index.get(&(name.to_string(), kind)) {
            Some(&k) => k,
            None => {
                self.index
                    .insert((name.to_string(), kind), self.totals.len());
                self.totals.push(Totals {
                    name: name.to_string(),
                    kind,
                    bytes_saved: 0,
                    recompute_ns: 0,
                    recomputes: 0,
                });
                self.totals.len() - 1
            }
        };
        &mut self.totals[k]
    }

    /// Forget counted storages that no live record can name any more.
    fn prune_counted(&mut self) {
        if self.live.is_empty() {
            self.counted.clear();
            return;
        }
        if self.counted.len() <= 1024 + 4 * self.live.len() {
            return;
        }
        let min = self
            .live
            .values()
            .map(|r| r.min_id.load(Ordering::Relaxed))
            .min()
            .unwrap_or(u64::MAX);
        self.counted.retain(|id| *id >= min);
    }
}

static TRACKING: AtomicBool = AtomicBool::new(false);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static NEXT_RECORD: AtomicU64 = AtomicU64::new(1);
static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::default()));
/// Its own lock (not `STATE`'s): every allocation and free while tracking takes it. Lock
/// order where both are taken: `STATE`, then `TIMELINE`.
static TIMELINE: Mutex<Option<Timeline>> = Mutex::new(None);

fn on_timeline(f: impl FnOnce(&mut Timeline)) {
    if let Some(t) = TIMELINE.lock().as_mut() {
        f(t);
    }
}

pub(crate) fn new_record(name: String, kind: &'static str) -> Option<RecordHandle> {
    if !TRACKING.load(Ordering::Relaxed) {
        return None;
    }
    let r = Arc::new(Record {
        id: NEXT_RECORD.fetch_add(1, Ordering::Relaxed),
        name,
        kind,
        kept: AtomicBool::new(kind != "tensor" && kind != "scope"),
        tracked: Mutex::new(Vec::new()),
        frozen: Mutex::new(None),
        min_id: AtomicU64::new(u64::MAX),
        recompute_ns: AtomicU64::new(0),
        recomputes: AtomicUsize::new(0),
    });
    let mut st = STATE.lock();
    st.checkpoints += 1;
    st.totals_of(&r.name, kind);
    st.live.insert(r.id, r.clone());
    on_timeline(|t| t.checkpoint(&r.name));
    Some(RecordHandle(r))
}

/// A checkpoint ended: add its figures to its totals (storages counted once) and forget it.
fn fold(r: &Record) {
    let mut st = STATE.lock();
    // Records made before a `reset` are not part of the figures any more.
    if st.live.remove(&r.id).is_none() {
        return;
    }
    let mut bytes = 0;
    for (id, b) in r.saved() {
        if st.counted.insert(id) {
            bytes += b;
        }
    }
    let t = st.totals_of(&r.name, r.kind);
    t.bytes_saved += bytes;
    t.recompute_ns += r.recompute_ns.load(Ordering::Relaxed);
    t.recomputes += r.recomputes.load(Ordering::Relaxed);
    st.prune_counted();
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
        let name = record.map_or("(untracked checkpoint)", |r| r.name.as_str());
        on_timeline(|t| t.recompute(name, dt));
    }
}

/// Marks a backward pass on the timeline when dropped (held by the autograd engine's run).
pub(crate) struct BackwardSpan(Option<Instant>);

/// Start a backward span (nothing is recorded unless tracking).
pub(crate) fn backward_span() -> BackwardSpan {
    BackwardSpan(TRACKING.load(Ordering::Relaxed).then(Instant::now))
}

impl Drop for BackwardSpan {
    fn drop(&mut self) {
        if let Some(start) = self.0 {
            if TRACKING.load(Ordering::Relaxed) {
                on_timeline(|t| t.backward(start.elapsed()));
            }
        }
    }
}

/// The byte counters' observer of allocations and frees (installed by `start_tracking`; the
/// counters do not know about the profiler).
fn observe_bytes(device: Device, now: usize) {
    if TRACKING.load(Ordering::Relaxed) {
        PEAK.fetch_max(now, Ordering::Relaxed);
        on_timeline(|t| t.memory(device, now));
    }
}

/// Start recording checkpoints, recomputes and the peak of live bytes.
pub fn start_tracking() {
    // Installed on first use (idempotent): the counters call out only to what subscribed.
    memory::set_alloc_observer(observe_bytes);
    let now = memory::memory_allocated(Device::Cpu);
    PEAK.store(now, Ordering::Relaxed);
    TIMELINE.lock().get_or_insert_with(|| Timeline::new(now));
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
    // Records of checkpoints still alive are forgotten: their handles find nothing to fold.
    *STATE.lock() = State::default();
    let now = memory::memory_allocated(Device::Cpu);
    PEAK.store(now, Ordering::Relaxed);
    *TIMELINE.lock() = TRACKING.load(Ordering::Relaxed).then(|| Timeline::new(now));
}

/// Live bytes over time since tracking started (or the last reset), sorted by time: one row
/// per allocation or free (`"memory"`, or `"memory cuda:0"` for a device), per checkpoint
/// made (`"checkpoint:NAME"`), per recompute (`"recompute:NAME"` and `"recompute_end:NAME"`)
/// and per backward pass (`"backward"`, `"backward_end"`). Bounded: a long run keeps the
/// shape and the peaks of the curve at a coarser resolution.
pub fn memory_timeline() -> Vec<TimelineRow> {
    TIMELINE
        .lock()
        .as_ref()
        .map(Timeline::rows)
        .unwrap_or_default()
}

/// The timeline as a Chrome / Perfetto trace (Trace Event Format, JSON object form).
pub fn chrome_trace() -> String {
    match TIMELINE.lock().as_ref() {
        Some(t) => t.chrome_trace(),
        None => Timeline::new(memory::memory_allocated(Device::Cpu)).chrome_trace(),
    }
}

/// Bytes of tensors not kept thanks to checkpointing, each storage counted once.
pub fn memory_saved() -> usize {
    let st = STATE.lock();
    let mut seen = HashSet::new();
    let live: usize = st
        .live
        .values()
        .flat_map(|r| r.saved())
        .filter(|(id, _)| !st.counted.contains(id) && seen.insert(*id))
        .map(|(_, b)| b)
        .sum();
    live + st.totals.iter().map(|t| t.bytes_saved).sum::<usize>()
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

/// One entry per distinct (name, kind) of checkpointed segment or tensor, with the figures
/// of all its checkpoints summed (finished ones and live ones).
pub fn records() -> Vec<RecordInfo> {
    let st = STATE.lock();
    let mut out: Vec<RecordInfo> = st
        .totals
        .iter()
        .map(|t| RecordInfo {
            name: t.name.clone(),
            kind: t.kind,
            bytes_saved: t.bytes_saved,
            recompute_seconds: t.recompute_ns as f64 * 1e-9,
            recompute_count: t.recomputes,
        })
        .collect();
    for r in st.live.values() {
        if let Some(&k) = st.index.get(&(r.name.clone(), r.kind)) {
            let o = &mut out[k];
            o.bytes_saved += r
                .saved()
                .iter()
                .filter(|(id, _)| !st.counted.contains(id))
                .map(|(_, b)| b)
                .sum::<usize>();
            o.recompute_seconds += r.recompute_ns.load(Ordering::Relaxed) as f64 * 1e-9;
            o.recompute_count += r.recomputes.load(Ordering::Relaxed);
        }
    }
    out
}

/// Bookkeeping entries the profiler holds (totals, live records, counted storages): bounded
/// by the distinct names and the live checkpoints, however long tracking runs.
pub fn held_entries() -> usize {
    let st = STATE.lock();
    st.totals.len() + st.live.len() + st.counted.len()
}

/// Entries the memory timeline holds: at most [`super::timeline::CAPACITY`], however long
/// tracking runs.
pub fn timeline_entries() -> usize {
    TIMELINE.lock().as_ref().map_or(0, Timeline::len)
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
