//! Checkpoint segments: a function run keeping only its inputs. Inside it, every saved tensor
//! becomes a slot of the segment; the first backward read re-runs the function once (drawing
//! from a private replay of the forward's random stream) and each recomputed tensor is freed
//! as soon as its one reader has used it.
//!
//! The forward draws from the global generator as the plain run does and logs every key it
//! got; the recompute plays the log back, so other threads drawing in between never change a
//! replayed mask.
//!
//! Until the forward returns, the saved tensors stay with the segment, so the function may
//! differentiate its own graph (`grad` inside a checkpoint). The recompute builds its graph as
//! a plain run does, for the same reason. With early stop the recompute ends as soon as every
//! saved tensor has been recomputed. One thread recomputes a segment at a time; others that
//! need it meanwhile wait for the result.

use crate::autograd::saved;
use crate::checkpoint::context::{self, Capture, SaveMode};
use crate::checkpoint::group::GroupStats;
use crate::checkpoint::live::{self, LiveToken};
use crate::checkpoint::policy::{KeptOutputs, PolicyQuery, SavePolicy};
use crate::checkpoint::profiler::{self, RecordHandle, StorageRef};
use crate::checkpoint::slot::{self, Slot};
use crate::checkpoint::touched;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::{enable_grad, is_grad_enabled};
use crate::layout::{fmt_shape, Dims, Layout};
use crate::rng::{self, DrawLog, RngState};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Whether new segments stop their recompute early (PyTorch's default: yes).
static EARLY_STOP: AtomicBool = AtomicBool::new(true);

/// Set the default of [`SegmentOptions::early_stop`] for segments made from now on; returns
/// the previous setting (PyTorch's `set_checkpoint_early_stop`).
pub fn set_checkpoint_early_stop(enable: bool) -> bool {
    EARLY_STOP.swap(enable, Ordering::Relaxed)
}

/// The current default of [`SegmentOptions::early_stop`].
pub fn checkpoint_early_stop() -> bool {
    EARLY_STOP.load(Ordering::Relaxed)
}

/// A checkpointed function: tensors in, tensors out.
pub type SegmentFn = Arc<dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync>;

/// Options of one segment (Python's keyword arguments).
#[derive(Clone)]
pub struct SegmentOptions {
    /// Name used in errors, records and the report.
    pub name: Option<String>,
    /// Replay the forward's random draws on recompute.
    pub preserve_rng_state: bool,
    /// Keep the saved inputs of device tensors in host memory until backward copies them
    /// back (no effect on CPU tensors).
    pub offload: bool,
    /// Check that the recompute saves as many tensors as the forward. (Their shapes and
    /// dtypes are always checked: a backward rule must never see the wrong ones.)
    pub determinism_check: bool,
    /// Stop the recompute as soon as every tensor the backward needs has been recomputed
    /// (the rest of the function is skipped). Defaults to [`checkpoint_early_stop`].
    pub early_stop: bool,
    /// Which op outputs the forward keeps (None: nothing; the whole function is recomputed).
    pub policy: Option<SavePolicy>,
    pub(crate) group: Option<Arc<GroupStats>>,
    pub(crate) kind: &'static str,
}

impl SegmentOptions {
    /// Options with the given settings (no group; early stop from the global default).
    pub fn new(
        name: Option<String>,
        preserve_rng_state: bool,
        offload: bool,
        determinism_check: bool,
    ) -> Self {
        SegmentOptions {
            name,
            preserve_rng_state,
            offload,
            determinism_check,
            ..Default::default()
        }
    }
}

impl Default for SegmentOptions {
    fn default() -> Self {
        SegmentOptions {
            name: None,
            preserve_rng_state: true,
            offload: false,
            determinism_check: true,
            early_stop: checkpoint_early_stop(),
            policy: None,
            group: None,
            kind: "segment",
        }
    }
}

struct SavedMeta {
    shape: Dims,
    dtype: DType,
    /// The op that saved it, and its storage's id and version then: a tensor from outside
    /// the segment (an input, a captured parameter) is saved again by the recompute from
    /// the same storage, which must not have been written in place meanwhile.
    who: &'static str,
    storage_id: u64,
    version: u64,
}

impl SavedMeta {
    /// Error when `d`, saved again for this entry, is the forward's storage written in
    /// place since (a recompute would hand its backward other values than the forward used).
    fn check_same(&self, seg: &str, d: &TensorData) -> Result<()> {
        if d.storage.id() != self.storage_id {
            return Ok(());
        }
        let who = format!("{} (in checkpoint segment {seg:?})", self.who);
        saved::check(d, self.version, &who)
    }
}

/// One checkpointed call of a function.
pub(crate) struct Segment {
    name: String,
    func: SegmentFn,
    inputs: Vec<Slot>,
    input_requires_grad: Vec<bool>,
    /// The stream at the forward's start and the keys of the forward's draws (None without
    /// `preserve_rng_state`: the recompute draws fresh numbers, as PyTorch's does).
    rng: Option<(RngState, Arc<DrawLog>)>,
    /// The autocast state of the forward: the recompute runs under it, whatever the state
    /// at backward time.
    autocast: crate::autocast::AutocastState,
    determinism_check: bool,
    early_stop: bool,
    meta: Mutex<Vec<SavedMeta>>,
    forward_storages: Mutex<Vec<StorageRef>>,
    /// The saved tensors while the forward runs (None once it returned).
    pending: Mutex<Option<Vec<Option<TensorData>>>>,
    cache: Mutex<Option<Vec<Option<TensorData>>>>,
    /// The tag of the thread recomputing this segment (0: none).
    recomputing: AtomicU64,
    record: Option<RecordHandle>,
    group: Option<Arc<GroupStats>>,
    /// The selective policy, the number of ops its forward has run, and what it kept.
    policy: Option<SavePolicy>,
    ops_run: AtomicUsize,
    /// How many ops had run when the forward last saved a tensor: with early stop the
    /// recompute ends there, so what ops numbered from here on kept is never used.
    ops_before_last_save: AtomicUsize,
    /// The last op that saved tensors: its number, how many tensors the segment had saved
    /// after it, and whether one of them was its own output.
    last_saver: Mutex<Option<(usize, usize, bool)>>,
    kept: Arc<KeptOutputs>,
    /// For each storage an op of the forward returned: the last such op's number and its
    /// output's layout (no data is held).
    producers: Mutex<HashMap<u64, (usize, Layout)>>,
    _live: LiveToken,
}

impl Segment {
    /// An op of the forward ran: number it and let the policy keep its output.
    ///
    /// A kept `checkpoint_name` output also keeps the output of the op that produced its
    /// input (the same storage and layout, so no extra memory): the recompute then skips that
    /// op too.
    pub(crate) fn offer(
        &self,
        op: &str,
        tag: Option<&str>,
        inputs: &[&Tensor],
        out: &Tensor,
    ) -> Result<usize> {
        let i = self.ops_run.fetch_add(1, Ordering::Relaxed);
        let Some(policy) = &self.policy else {
            return Ok(i);
        };
        let decision = policy.decide(&PolicyQuery {
            op: tag.unwrap_or(op),
            tag,
            output: out,
        })?;
        let mut producers = self.producers.lock();
        if tag.is_some() && decision.keeps() {
            if let Some(x) = inputs.first() {
                if let Some((j, layout)) = producers.get(&x.storage().id()) {
                    if layout == x.layout() && self.kept.get(*j).is_none() {
                        self.kept.offer(*j, x, decision)?;
                    }
                }
            }
        }
        producers.insert(out.storage().id(), (i, out.layout().clone()));
        drop(producers);
        self.kept.offer(i, out, decision)?;
        Ok(i)
    }

    /// Op number `i` of the forward saved tensors for its backward (`output`: its own
    /// output among them).
    pub(crate) fn op_saved(&self, i: usize, output: bool) {
        *self.last_saver.lock() = Some((i, self.meta.lock().len(), output));
    }

    /// The forward is over. An early-stopping recompute ends with the last save: what ops
    /// after it kept would be held for nothing (a matmul feeding only the block's closing
    /// residual add), and when that save was an op's and took only its inputs, the op itself
    /// need not run again.
    fn end_forward(&self) {
        if !self.early_stop {
            return;
        }
        let stop = self.ops_before_last_save.load(Ordering::Relaxed);
        let saved = self.meta.lock().len();
        let last = self
            .last_saver
            .lock()
            .take()
            // No save came after this op's (so it is also where `stop` was set).
            .filter(|&(_, n, output)| n == saved && !output)
            .map(|(i, ..)| i);
        self.kept.end_at(stop, last);
    }

    /// Register a tensor saved inside the segment's forward by `who`; returns its index.
    pub(crate) fn save(&self, d: &TensorData, who: &'static str) -> usize {
        self.ops_before_last_save
            .store(self.ops_run.load(Ordering::Relaxed), Ordering::Relaxed);
        let mut meta = self.meta.lock();
        meta.push(SavedMeta {
            shape: d.layout.shape.clone(),
            dtype: d.storage.dtype(),
            who,
            storage_id: d.storage.id(),
            version: d.storage.version(),
        });
        self.forward_storages
            .lock()
            .push(StorageRef::new(&d.storage));
        if let Some(p) = self.pending.lock().as_mut() {
            p.push(Some(d.clone()));
        }
        meta.len() - 1
    }

    /// The inputs, taken out (for dropping chains iteratively).
    pub(crate) fn take_inputs(&mut self) -> Vec<Slot> {
        std::mem::take(&mut self.inputs)
    }

    /// The `i`-th saved tensor, re-running the function on first use. Another thread that
    /// is recomputing this segment is waited for; only this thread's own re-entry is an error.
    pub(crate) fn get(self: &Arc<Self>, i: usize) -> Result<TensorData> {
        if let Some(p) = self.pending.lock().as_ref() {
            // The forward is still running (it differentiates its own graph).
            let d = p.get(i).cloned().flatten().ok_or_else(freed)?;
            if let Some(m) = self.meta.lock().get(i) {
                m.check_same(&self.name, &d)?;
            }
            return Ok(d);
        }
        let me = context::thread_tag();
        if me != 0 && self.recomputing.load(Ordering::Acquire) == me {
            return Err(Error::checkpoint(
                "checkpoint_segment",
                format!(
                    "segment {:?} needed its own saved tensors while recomputing",
                    self.name
                ),
            ));
        }
        let mut cache = self.cache.lock();
        if cache.is_none() {
            self.recomputing.store(me, Ordering::Release);
            let r = self.recompute();
            self.recomputing.store(0, Ordering::Release);
            *cache = Some(r?);
            live::cache_filled();
            touched::segment(self);
            // A nested segment's inputs are entries of its outer segment's recompute, read
            // only here: free them now, not when the outer's backward ends (multi-level
            // schedules would otherwise keep one input per level until then). While the
            // outer's forward still runs they are its own saved tensors, which a later
            // `grad` of that forward (create_graph) may need to recompute us again.
            for s in &self.inputs {
                if let Slot::Segment(outer, _) = s {
                    if !outer.forward_running() {
                        s.release();
                    }
                }
            }
        }
        cache
            .as_ref()
            .and_then(|c| c.get(i))
            .and_then(|e| e.clone())
            .ok_or_else(freed)
    }

    /// Whether the forward is still running (its saved tensors are held, not recomputed).
    fn forward_running(&self) -> bool {
        self.pending.lock().is_some()
    }

    /// The reader of entry `i` is done with it: free it now.
    pub(crate) fn release(&self, i: usize) {
        if let Some(p) = self.pending.lock().as_mut() {
            if let Some(e) = p.get_mut(i) {
                *e = None;
            }
            return;
        }
        let mut cache = self.cache.lock();
        if let Some(c) = cache.as_mut() {
            if let Some(e) = c.get_mut(i) {
                *e = None;
            }
            if c.iter().all(|e| e.is_none()) {
                *cache = None;
                live::cache_dropped();
            }
        }
    }

    pub(crate) fn clear_cache(&self) {
        if self.cache.lock().take().is_some() {
            live::cache_dropped();
        }
    }

    fn recompute(&self) -> Result<Vec<Option<TensorData>>> {
        // An input written in place since the forward would be re-run on other values.
        let who = format!("checkpoint segment {:?}", self.name);
        let inputs: Vec<Tensor> = self
            .inputs
            .iter()
            .zip(&self.input_requires_grad)
            .map(|(s, &rg)| Ok(Tensor::flagged(s.materialize(&who)?.data().clone(), rg)))
            .collect::<Result<_>>()?;
        let needed = self.meta.lock().len();
        let capture = Capture::with_kept(
            self.early_stop.then_some(needed),
            Some(self.kept.clone()),
            self.name.clone(),
        );
        let start = Instant::now();
        let result = {
            // The forward's draws, played back from its log: the global generator (and any
            // other thread drawing from it) is left alone.
            let _rng = self
                .rng
                .as_ref()
                .map(|(start, log)| rng::playback(log.clone(), *start));
            let _g = enable_grad();
            let _a = crate::autocast::enter_state(self.autocast);
            let _c = context::enter(SaveMode::Capture(capture.clone()));
            (self.func)(&inputs).map(drop)
        };
        // The kept outputs served this recompute (a second one, after retain_graph, runs
        // every op again: the same values).
        self.kept.clear();
        self.producers.lock().clear();
        match result {
            Ok(()) => {}
            Err(Error::EarlyStop) if capture.is_full() => {}
            Err(e @ Error::Callback { .. }) => return Err(e),
            Err(other) => {
                return Err(Error::checkpoint(
                    "checkpoint_segment",
                    format!("recomputing segment {:?} failed: {other}", self.name),
                ))
            }
        }
        let mut captured = capture.take();
        let meta = self.meta.lock();
        if captured.len() < meta.len() || (self.determinism_check && captured.len() != meta.len()) {
            return Err(Error::checkpoint(
                "checkpoint_segment",
                format!(
                    "segment {:?}: the recompute saved {} tensors but the forward saved {}; \
                     the function must do the same work when it is re-run",
                    self.name,
                    captured.len(),
                    meta.len()
                ),
            ));
        }
        captured.truncate(meta.len());
        // Checked even without `determinism_check`: a backward rule must never be handed
        // tensors of other shapes than the ones it was recorded with.
        for (k, (d, m)) in captured.iter().zip(meta.iter()).enumerate() {
            // A captured parameter written in place since the forward (an optimizer step
            // between forward and backward): its backward would see the new values.
            m.check_same(&self.name, d)?;
            if d.layout.shape != m.shape || d.storage.dtype() != m.dtype {
                return Err(Error::checkpoint(
                    "checkpoint_segment",
                    format!(
                        "segment {:?}: saved tensor #{k} was {} {} in the forward but {} {} \
                         in the recompute",
                        self.name,
                        fmt_shape(&m.shape),
                        m.dtype,
                        fmt_shape(&d.layout.shape),
                        d.storage.dtype()
                    ),
                ));
            }
        }
        profiler::on_recompute(self.record.as_deref(), start.elapsed());
        if let Some(g) = &self.group {
            g.on_recompute();
        }
        Ok(captured.into_iter().map(Some).collect())
    }
}

fn freed() -> Error {
    Error::graph(
        "backward",
        "trying to backward through the graph a second time (the saved tensors of a \
         checkpoint segment were already freed); specify retain_graph=True on the first \
         backward",
    )
}

/// Run `f(inputs)` as a checkpoint segment: only the inputs are kept for backward.
pub fn checkpoint_segment_with(
    f: SegmentFn,
    inputs: &[Tensor],
    opts: &SegmentOptions,
) -> Result<Vec<Tensor>> {
    if !is_grad_enabled() {
        return f(inputs);
    }
    let mode = context::current();
    // An outer segment is being recomputed: its backward needs what its forward saved of us
    // (our inputs). We then run as a segment of our own, as in that forward, so what our ops
    // save becomes our slots and is dropped as it goes: a replay never holds a nested
    // segment's activations (multi-level schedules depend on it).
    let in_replay = matches!(mode, SaveMode::Capture(_));
    if let SaveMode::Capture(capture) = &mode {
        for t in inputs {
            capture.push(t.data().clone());
        }
        context::check_early_stop(&mode)?;
    }
    // With offload, the inputs of a top-level segment live in host memory until backward
    // (inside an outer segment they are that segment's slots already).
    let top_level = !matches!(mode, SaveMode::Segment(_)) && !in_replay;
    let input_slots: Vec<Slot> = if opts.offload && top_level {
        inputs.iter().map(Slot::offloaded).collect::<Result<_>>()?
    } else {
        inputs
            .iter()
            .map(|t| context::slot_for(t, &mode, "checkpoint_segment"))
            .collect()
    };
    let name = opts.name.clone().unwrap_or_else(|| "segment".to_string());
    // A replay's nested segment is the same checkpoint as in the forward, not a new one.
    let record = if in_replay {
        None
    } else {
        profiler::new_record(name.clone(), opts.kind)
    };
    let seg = Arc::new(Segment {
        name,
        func: f.clone(),
        inputs: input_slots,
        input_requires_grad: inputs.iter().map(|t| t.requires_grad()).collect(),
        rng: opts
            .preserve_rng_state
            .then(|| (rng::get_state(), DrawLog::new())),
        autocast: crate::autocast::state(),
        determinism_check: opts.determinism_check,
        early_stop: opts.early_stop,
        meta: Mutex::new(Vec::new()),
        forward_storages: Mutex::new(Vec::new()),
        pending: Mutex::new(Some(Vec::new())),
        cache: Mutex::new(None),
        recomputing: AtomicU64::new(0),
        record,
        group: opts.group.clone(),
        policy: opts.policy.clone(),
        ops_run: AtomicUsize::new(0),
        ops_before_last_save: AtomicUsize::new(0),
        last_saver: Mutex::new(None),
        kept: Arc::new(KeptOutputs::default()),
        producers: Mutex::new(HashMap::new()),
        _live: LiveToken::new(),
    });
    let outputs = {
        let _c = context::enter(SaveMode::Segment(seg.clone()));
        let _rng = seg.rng.as_ref().map(|(_, log)| rng::record(log.clone()));
        f(inputs)
    };
    // The forward is over: from now on the saved tensors are recomputed when needed.
    seg.pending.lock().take();
    seg.end_forward();
    let outputs = outputs?;
    for o in &outputs {
        o.clear_creation();
    }
    // Offloaded inputs: the forward is done with their device copies.
    for s in &seg.inputs {
        s.settle()?;
    }
    // Whatever the segment saved that is no longer alive now was not kept thanks to it.
    let refs = std::mem::take(&mut *seg.forward_storages.lock());
    let freed = profiler::dead_storages(&refs);
    let bytes: usize = freed.iter().map(|(_, b)| b).sum();
    if let Some(r) = &seg.record {
        r.set_frozen(freed);
    }
    if let Some(g) = &seg.group {
        g.on_checkpoint(bytes);
    }
    Ok(outputs)
}

/// Run `f(inputs)` as a checkpoint segment with the given options (a closure, no `Arc`).
pub fn checkpoint_segment_flex<F>(
    inputs: &[Tensor],
    opts: &SegmentOptions,
    f: F,
) -> Result<Vec<Tensor>>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
{
    checkpoint_segment_with(Arc::new(f), inputs, opts)
}

/// Run `f(inputs)` as a checkpoint segment with default options.
pub fn checkpoint_segment<F>(inputs: &[Tensor], f: F) -> Result<Vec<Tensor>>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
{
    checkpoint_segment_with(Arc::new(f), inputs, &SegmentOptions::default())
}

impl Drop for Segment {
    fn drop(&mut self) {
        // A segment can die with a filled cache (an inner segment held the last reference);
        // the cache goes with it, and so does its count.
        self.clear_cache();
        // Its inputs may head long chains of recipes and segments: unlink them iteratively.
        slot::drop_iteratively(std::mem::take(&mut self.inputs));
    }
}
