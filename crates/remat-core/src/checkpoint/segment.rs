//! Checkpoint segments: a function run keeping only its inputs. Inside it, every saved tensor
//! becomes a slot of the segment; the first backward read re-runs the function once (with the
//! RNG state of the forward) and each recomputed tensor is freed as soon as its one reader has
//! used it.

use crate::checkpoint::context::{self, SaveMode};
use crate::checkpoint::group::GroupStats;
use crate::checkpoint::live::{self, LiveToken};
use crate::checkpoint::profiler::{self, Record, StorageRef};
use crate::checkpoint::slot::Slot;
use crate::checkpoint::touched;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::{enable_grad, is_grad_enabled};
use crate::layout::{fmt_shape, Dims};
use crate::rng::{self, RngState};
use crate::tensor::{Tensor, TensorData};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

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
    /// Check that the recompute saves tensors of the same shapes and dtypes.
    pub determinism_check: bool,
    pub(crate) group: Option<Arc<GroupStats>>,
    pub(crate) kind: &'static str,
}

impl SegmentOptions {
    /// Options with the given settings (no group).
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
            group: None,
            kind: "segment",
        }
    }
}

struct SavedMeta {
    shape: Dims,
    dtype: DType,
}

/// One checkpointed call of a function.
pub(crate) struct Segment {
    name: String,
    func: SegmentFn,
    inputs: Vec<Slot>,
    input_requires_grad: Vec<bool>,
    rng: Option<RngState>,
    determinism_check: bool,
    meta: Mutex<Vec<SavedMeta>>,
    forward_storages: Mutex<Vec<StorageRef>>,
    cache: Mutex<Option<Vec<Option<TensorData>>>>,
    recomputing: AtomicBool,
    record: Option<Arc<Record>>,
    group: Option<Arc<GroupStats>>,
    _live: LiveToken,
}

impl Segment {
    /// Register a tensor saved inside the segment's forward; returns its index.
    pub(crate) fn save(&self, d: &TensorData) -> usize {
        let mut meta = self.meta.lock();
        meta.push(SavedMeta {
            shape: d.layout.shape.clone(),
            dtype: d.storage.dtype(),
        });
        self.forward_storages
            .lock()
            .push(StorageRef::new(&d.storage));
        meta.len() - 1
    }

    /// The `i`-th saved tensor, re-running the function on first use.
    pub(crate) fn get(self: &Arc<Self>, i: usize) -> Result<TensorData> {
        if self.recomputing.load(Ordering::Relaxed) {
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
            self.recomputing.store(true, Ordering::Relaxed);
            let r = self.recompute();
            self.recomputing.store(false, Ordering::Relaxed);
            *cache = Some(r?);
            live::cache_filled();
            touched::segment(self);
        }
        match cache
            .as_ref()
            .and_then(|c| c.get(i))
            .and_then(|e| e.clone())
        {
            Some(d) => Ok(d),
            None => Err(Error::graph(
                "backward",
                "trying to backward through the graph a second time (the saved tensors of a \
                 checkpoint segment were already freed); specify retain_graph=True on the \
                 first backward",
            )),
        }
    }

    /// The reader of entry `i` is done with it: free it now.
    pub(crate) fn release(&self, i: usize) {
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
        let inputs: Vec<Tensor> = self
            .inputs
            .iter()
            .zip(&self.input_requires_grad)
            .map(|(s, &rg)| Ok(Tensor::flagged(s.materialize()?.data().clone(), rg)))
            .collect::<Result<_>>()?;
        let buf = Rc::new(RefCell::new(Vec::new()));
        let rng_now = rng::get_state();
        if let Some(st) = self.rng {
            rng::set_state(st);
        }
        let start = Instant::now();
        let result = {
            let _g = enable_grad();
            let _c = context::enter(SaveMode::Capture(buf.clone()));
            (self.func)(&inputs)
        };
        if self.rng.is_some() {
            rng::set_state(rng_now);
        }
        if let Err(e) = result {
            return Err(match e {
                Error::Callback { .. } => e,
                other => Error::checkpoint(
                    "checkpoint_segment",
                    format!("recomputing segment {:?} failed: {other}", self.name),
                ),
            });
        }
        let captured = std::mem::take(&mut *buf.borrow_mut());
        let meta = self.meta.lock();
        if self.determinism_check {
            if captured.len() != meta.len() {
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
            for (k, (d, m)) in captured.iter().zip(meta.iter()).enumerate() {
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
        } else if captured.len() < meta.len() {
            return Err(Error::checkpoint(
                "checkpoint_segment",
                format!(
                    "segment {:?}: the recompute saved fewer tensors than the forward",
                    self.name
                ),
            ));
        }
        profiler::on_recompute(self.record.as_deref(), start.elapsed());
        if let Some(g) = &self.group {
            g.on_recompute();
        }
        Ok(captured.into_iter().map(Some).collect())
    }
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
    match &mode {
        SaveMode::Capture(buf) => {
            // An outer segment is being recomputed: save what the forward saved (our inputs),
            // then run without saving anything of our own.
            buf.borrow_mut()
                .extend(inputs.iter().map(|t| t.data().clone()));
            let _c = context::enter(SaveMode::Discard);
            return f(inputs);
        }
        SaveMode::Discard => return f(inputs),
        SaveMode::Normal | SaveMode::Scope | SaveMode::Segment(_) => {}
    }
    // With offload, the inputs of a top-level segment live in host memory until backward
    // (inside an outer segment they are that segment's slots already).
    let input_slots: Vec<Slot> = if opts.offload && !matches!(mode, SaveMode::Segment(_)) {
        inputs.iter().map(Slot::offloaded).collect::<Result<_>>()?
    } else {
        inputs.iter().map(|t| context::slot_for(t, &mode)).collect()
    };
    let name = opts.name.clone().unwrap_or_else(|| "segment".to_string());
    let record = profiler::new_record(name.clone(), opts.kind);
    let seg = Arc::new(Segment {
        name,
        func: f.clone(),
        inputs: input_slots,
        input_requires_grad: inputs.iter().map(|t| t.requires_grad()).collect(),
        rng: opts.preserve_rng_state.then(rng::get_state),
        determinism_check: opts.determinism_check,
        meta: Mutex::new(Vec::new()),
        forward_storages: Mutex::new(Vec::new()),
        cache: Mutex::new(None),
        recomputing: AtomicBool::new(false),
        record,
        group: opts.group.clone(),
        _live: LiveToken::new(),
    });
    let outputs = {
        let _c = context::enter(SaveMode::Segment(seg.clone()));
        f(inputs)?
    };
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
    }
}
