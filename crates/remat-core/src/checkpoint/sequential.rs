//! `checkpoint_sequential`: a chain of layers cut into segments, each run as a checkpoint
//! segment: a fixed count, √n, or the planner's least-recompute plan under a memory budget.
//!
//! This is the one place that orchestrates it, for Rust and Python callers alike: argument
//! validation ([`Segmentation::from_args`]), planning (with the one plan cache, keyed on
//! [`LayerId`]s that cannot be confused when a layer is freed and its address reused), plan
//! validation and running. The Python binding only turns Python callables into [`LayerFn`]s
//! and [`LayerId`]s.

use crate::checkpoint::context::{self, Capture, SaveMode};
use crate::checkpoint::planner::{plan_budget, validate_segments, LayerCost, PlanSegment};
use crate::checkpoint::policy::SavePolicy;
use crate::checkpoint::segment::{checkpoint_segment_with, SegmentOptions};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::{enable_grad, is_grad_enabled};
use crate::layout::Dims;
use crate::storage::next_storage_id;
use crate::tensor::Tensor;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

const OP: &str = "checkpoint_sequential";

/// One layer of a chain.
pub type LayerFn = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// How to cut the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segmentation {
    /// This many segments of (nearly) equal length; the last runs plainly, as in PyTorch.
    Count(usize),
    /// ⌈√n⌉ segments.
    Sqrt,
    /// The least-recompute plan whose modelled activation memory fits this many bytes.
    Budget(usize),
}

/// The `segments` argument as a caller gave it, before validation (so that bindings pass
/// user input through and the messages live here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentsArg<'a> {
    /// No segment count (a budget must be given).
    Absent,
    /// An integer count.
    Count(i64),
    /// A name; only `"sqrt"` is one.
    Named(&'a str),
    /// Anything else, described by its `repr`.
    Other(&'a str),
}

impl Segmentation {
    /// The segmentation the user-facing arguments ask for: `segments` (a count or `"sqrt"`)
    /// or, with `segments` absent, `budget_bytes`. Bad combinations and values are
    /// [`Error::Value`] (Python `ValueError`).
    pub fn from_args(segments: SegmentsArg<'_>, budget_bytes: Option<i64>) -> Result<Segmentation> {
        match (segments, budget_bytes) {
            (SegmentsArg::Absent, Some(b)) if b < 0 => Err(Error::value(
                OP,
                format!("budget_bytes must be >= 0, got {b}"),
            )),
            (SegmentsArg::Absent, Some(b)) => Ok(Segmentation::Budget(b as usize)),
            (_, Some(_)) => Err(Error::value(OP, "give either segments or budget_bytes")),
            (SegmentsArg::Absent, None) => Err(Error::value(
                OP,
                "give segments (an int or \"sqrt\") or budget_bytes",
            )),
            (SegmentsArg::Count(k), None) if k < 1 => {
                Err(Error::value(OP, format!("segments must be >= 1, got {k}")))
            }
            (SegmentsArg::Count(k), None) => Ok(Segmentation::Count(k as usize)),
            (SegmentsArg::Named("sqrt"), None) => Ok(Segmentation::Sqrt),
            (SegmentsArg::Named(s), None) => Err(Error::value(
                OP,
                format!(
                    "segments must be an int, \"sqrt\", or None with budget_bytes=N; got '{s}'"
                ),
            )),
            (SegmentsArg::Other(repr), None) => Err(Error::value(
                OP,
                format!(
                    "segments must be an int, \"sqrt\", or None with budget_bytes=N; got {repr}"
                ),
            )),
        }
    }

    /// Check this segmentation against a chain of `n` layers: a count must be at least 1
    /// and (for a non-empty chain) at most `n`, as in PyTorch.
    pub fn validate(self, n: usize) -> Result<()> {
        match self {
            Segmentation::Count(0) => Err(Error::value(OP, "segments must be at least 1")),
            Segmentation::Count(k) if n > 0 && k > n => Err(Error::value(
                OP,
                format!("{k} segments for {n} layers: there cannot be more segments than layers"),
            )),
            _ => Ok(()),
        }
    }
}

/// Equal runs for `k` segments over `n` layers, all but the last checkpointed (`k` already
/// validated against `n`).
fn equal_runs(n: usize, k: usize) -> Vec<PlanSegment> {
    if n == 0 {
        return Vec::new();
    }
    let k = k.clamp(1, n);
    let size = n / k;
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    for s in 0..k {
        let end = if s == k - 1 { n } else { start + size };
        out.push(if s + 1 < k {
            PlanSegment::checkpoint(start, end)
        } else {
            PlanSegment::plain(start, end)
        });
        start = end;
    }
    out
}

/// Run each layer once and measure what it would save, output and cost in time: the
/// storages it made that its ops saved (whether its output is among them), its input's bytes
/// when it saves its input, and what its backward needs above that (its input's gradient
/// only: the parameters' `.grad` are not touched).
pub fn measure_layers(layers: &[LayerFn], input: &Tensor) -> Result<Vec<LayerCost>> {
    let mut costs = Vec::with_capacity(layers.len());
    let mut x = Tensor::flagged(input.data().clone(), true);
    for layer in layers {
        let first_new = next_storage_id();
        let input_id = x.data().storage.id();
        let capture = Capture::new(None);
        let start = Instant::now();
        let out = {
            let _g = enable_grad();
            let _c = context::enter(SaveMode::Capture(capture.clone()));
            layer(&x)?
        };
        let compute_ns = (start.elapsed().as_nanos() as u64).max(1);
        let out_id = out.data().storage.id();
        let mut seen = HashSet::new();
        let mut cost = LayerCost {
            saved: 0,
            input_saved: 0,
            keeps_output: false,
            output: out.nbytes(),
            compute_ns,
            weights: 0,
            backward: None,
        };
        for d in capture.take() {
            let id = d.storage.id();
            if !seen.insert(id) {
                continue;
            }
            if id == input_id {
                cost.input_saved = d.storage.nbytes();
            } else if id >= first_new {
                cost.saved += d.storage.nbytes();
                cost.keeps_output |= id == out_id;
            } else {
                cost.weights = cost.weights.max(d.storage.nbytes());
            }
        }
        cost.backward = backward_bytes(&out);
        costs.push(cost);
        x = Tensor::flagged(out.data().clone(), true);
    }
    Ok(costs)
}

/// The bytes a layer's backward needs above what the layer saved, measured on the graph of
/// its measuring run (`out`, from `x`): the peak of the byte counters during its backward
/// (the input's and the parameters' gradients made as in training, then dropped: see
/// [`DiscardLeafGrads`](crate::autograd::engine::DiscardLeafGrads)), above the count before
/// it (what the layer saved, held as a chain's backward holds it). The incoming gradient
/// comes from a product with ones in the graph, so the engine owns and frees it as it would
/// the gradient from the next layer; the output and the ones are held throughout, as a
/// chain's caller and next layer hold theirs. `None` when the output has no gradient or the
/// backward fails (the planner then models it).
fn backward_bytes(out: &Tensor) -> Option<usize> {
    if !out.requires_grad() || !out.dtype().is_float() {
        return None;
    }
    let device = out.device();
    let ones = crate::ops::full(out.shape(), 1.0, out.dtype(), device).ok()?;
    let loss = {
        let _g = enable_grad();
        crate::ops::sum(&crate::ops::mul(out, &ones).ok()?, None, false).ok()?
    };
    let base = crate::memory::memory_allocated(device);
    let scope = crate::memory::PeakScope::enter(device);
    let done = {
        let _discard = crate::autograd::engine::DiscardLeafGrads::enter();
        crate::autograd::backward(&[(loss, None)], false)
    };
    let peak = scope.peak();
    drop(ones);
    done.ok()?;
    Some(peak.saturating_sub(base))
}

/// How the plan cache recognises a layer across calls.
///
/// A layer's address alone is not enough: once a layer is freed, a new one can be allocated
/// at the same address and would silently get the old layer's plan. So an identity pairs the
/// address with a handle that tells whether the layer it was made for still exists: a cached
/// plan is used only while every one of its layers' identities is alive, and a live layer's
/// address belongs to no other live layer.
pub trait LayerIdentity: Send + Sync {
    /// The layer's address; unique among live layers.
    fn addr(&self) -> usize;
    /// Whether the layer this identity was made for still exists (so that `addr` still
    /// names it). May be called often and from any thread.
    fn is_alive(&self) -> bool;
}

/// A shared [`LayerIdentity`].
pub type LayerId = Arc<dyn LayerIdentity>;

/// The identity of a Rust layer: a weak reference to its `Arc`. The weak reference keeps
/// the `Arc`'s allocation (not the closure, which is dropped with the last strong
/// reference), so while a cache entry holds it no other layer can be allocated at that
/// address; a dead one only marks the entry for pruning.
struct ArcIdentity(Weak<LayerBody>);

/// What a [`LayerFn`] points to.
type LayerBody = dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync;

impl LayerIdentity for ArcIdentity {
    fn addr(&self) -> usize {
        self.0.as_ptr() as *const () as usize
    }
    fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// The plan-cache identity of a Rust layer (its `Arc`).
pub fn layer_id(layer: &LayerFn) -> LayerId {
    Arc::new(ArcIdentity(Arc::downgrade(layer)))
}

/// A budget plan and what it depends on: the layers (by identity), the input's shape and
/// dtype, and the budget.
struct CachedPlan {
    addrs: Vec<usize>,
    ids: Vec<LayerId>,
    shape: Dims,
    dtype: DType,
    budget: usize,
    runs: Vec<PlanSegment>,
}

impl CachedPlan {
    fn matches(&self, addrs: &[usize], shape: &[usize], dtype: DType, budget: usize) -> bool {
        self.addrs == addrs && *self.shape == *shape && self.dtype == dtype && self.budget == budget
    }
    fn alive(&self) -> bool {
        self.ids.iter().all(|i| i.is_alive())
    }
}

/// The plan cache: budget plans only, since measuring the layers costs a forward while the
/// other segmentations are computed in no time. Most recently used last.
///
/// Liveness checks may call into a foreign runtime (the Python binding takes the GIL), and
/// dropping an entry may release foreign objects, so neither happens while `PLANS` is
/// locked: a thread holding the GIL and waiting for `PLANS` cannot deadlock with one holding
/// `PLANS` and waiting for the GIL.
static PLANS: Mutex<Vec<Arc<CachedPlan>>> = Mutex::new(Vec::new());
const PLAN_CACHE_SIZE: usize = 32;
static HITS: AtomicUsize = AtomicUsize::new(0);
static MISSES: AtomicUsize = AtomicUsize::new(0);

/// Counters of the plan cache (budget plans).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanCacheStats {
    /// Budget plans served from the cache.
    pub hits: usize,
    /// Budget plans that had to be measured and planned.
    pub misses: usize,
    /// Plans held now.
    pub entries: usize,
}

/// The plan cache's counters since the process started.
pub fn plan_cache_stats() -> PlanCacheStats {
    PlanCacheStats {
        hits: HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        entries: PLANS.lock().len(),
    }
}

fn cached_plan(
    addrs: &[usize],
    shape: &[usize],
    dtype: DType,
    budget: usize,
) -> Option<Vec<PlanSegment>> {
    let found = PLANS
        .lock()
        .iter()
        .find(|e| e.matches(addrs, shape, dtype, budget))
        .cloned()?;
    // Outside the lock (see `PLANS`).
    let alive = found.alive();
    let removed = {
        let mut plans = PLANS.lock();
        let i = plans.iter().position(|e| Arc::ptr_eq(e, &found));
        match i.map(|i| plans.remove(i)) {
            // Most recently used goes last.
            Some(e) if alive => {
                plans.push(e);
                None
            }
            // A layer it was made for is gone: the address now names another layer.
            other => other,
        }
    };
    drop(removed);
    alive.then(|| found.runs.clone())
}

fn remember_plan(entry: CachedPlan) {
    // Prune entries whose layers are gone, checking liveness outside the lock.
    let snapshot: Vec<Arc<CachedPlan>> = PLANS.lock().clone();
    let dead: Vec<Arc<CachedPlan>> = snapshot.into_iter().filter(|e| !e.alive()).collect();
    let mut evicted = Vec::new();
    {
        let mut plans = PLANS.lock();
        plans.retain(|e| {
            let keep = !dead.iter().any(|d| Arc::ptr_eq(d, e));
            if !keep {
                evicted.push(e.clone());
            }
            keep
        });
        while plans.len() >= PLAN_CACHE_SIZE {
            evicted.push(plans.remove(0));
        }
        plans.push(Arc::new(entry));
    }
    // `evicted` and `dead` are dropped here, after the lock.
}

/// Choose the runs for `how`: equal runs for a count or √n, the planner's least-recompute
/// plan for a budget (measured by running each layer once, RNG state restored after; the plan
/// is cached per layers, input shape, dtype and budget). The layers' identities are their
/// `Arc`s.
pub fn plan(layers: &[LayerFn], how: Segmentation, input: &Tensor) -> Result<Vec<PlanSegment>> {
    let ids: Vec<LayerId> = layers.iter().map(layer_id).collect();
    plan_with_ids(layers, &ids, how, input)
}

/// [`plan`] with the layers' identities given by the caller (one per layer), e.g. for layers
/// that wrap foreign objects and are rebuilt on every call.
pub fn plan_with_ids(
    layers: &[LayerFn],
    ids: &[LayerId],
    how: Segmentation,
    input: &Tensor,
) -> Result<Vec<PlanSegment>> {
    let n = layers.len();
    if ids.len() != n {
        return Err(Error::value(
            OP,
            format!("{} layer identities for {n} layers", ids.len()),
        ));
    }
    how.validate(n)?;
    Ok(match how {
        Segmentation::Count(k) => equal_runs(n, k),
        Segmentation::Sqrt => equal_runs(n, (n as f64).sqrt().ceil() as usize),
        Segmentation::Budget(bytes) => {
            let addrs: Vec<usize> = ids.iter().map(|i| i.addr()).collect();
            if let Some(runs) = cached_plan(&addrs, input.shape(), input.dtype(), bytes) {
                HITS.fetch_add(1, Ordering::Relaxed);
                return Ok(runs);
            }
            MISSES.fetch_add(1, Ordering::Relaxed);
            // Measuring draws from a private copy of the stream: the global generator (and
            // other threads drawing from it) is left alone.
            let costs = {
                let _rng = crate::rng::replay(crate::rng::get_state());
                measure_layers(layers, input)
            };
            let runs = plan_budget(&costs?, input.nbytes(), bytes)?.segments;
            remember_plan(CachedPlan {
                addrs,
                ids: ids.to_vec(),
                shape: input.shape().into(),
                dtype: input.dtype(),
                budget: bytes,
                runs: runs.clone(),
            });
            runs
        }
    })
}

/// Options of a `checkpoint_sequential` run.
#[derive(Clone, Debug)]
pub struct SequentialOptions {
    /// Replay each segment's random draws on recompute.
    pub preserve_rng_state: bool,
    /// Keep the input of each checkpointed segment that lives on a device in host memory
    /// until backward (see `cuda::offload`); no effect on CPU tensors.
    pub offload: bool,
    /// The selective policy of every checkpointed segment.
    pub policy: Option<SavePolicy>,
}

impl Default for SequentialOptions {
    fn default() -> Self {
        SequentialOptions {
            preserve_rng_state: true,
            offload: false,
            policy: None,
        }
    }
}

/// Run `layers` on `input`, checkpointing segments chosen by `how`.
pub fn checkpoint_sequential(
    layers: &[LayerFn],
    how: Segmentation,
    input: &Tensor,
    preserve_rng_state: bool,
) -> Result<Tensor> {
    let ids: Vec<LayerId> = layers.iter().map(layer_id).collect();
    let opts = SequentialOptions {
        preserve_rng_state,
        ..SequentialOptions::default()
    };
    checkpoint_sequential_with(layers, &ids, how, input, &opts)
}

/// Run `layers` (identified for the plan cache by `ids`, one per layer) on `input`,
/// checkpointing segments chosen by `how`. An empty chain returns `input`; under `no_grad`
/// the layers simply run (nothing to plan).
pub fn checkpoint_sequential_with(
    layers: &[LayerFn],
    ids: &[LayerId],
    how: Segmentation,
    input: &Tensor,
    opts: &SequentialOptions,
) -> Result<Tensor> {
    how.validate(layers.len())?;
    if layers.is_empty() {
        return Ok(input.clone());
    }
    if !is_grad_enabled() {
        let mut x = input.clone();
        for l in layers {
            x = l(&x)?;
        }
        return Ok(x);
    }
    let runs = plan_with_ids(layers, ids, how, input)?;
    run_plan_with(layers, &runs, input, opts)
}

/// Run the layers following `runs`.
pub fn run_plan(
    layers: &[LayerFn],
    runs: &[PlanSegment],
    input: &Tensor,
    preserve_rng_state: bool,
) -> Result<Tensor> {
    run_plan_offload(layers, runs, input, preserve_rng_state, false)
}

/// Run the layers following `runs`; with `offload`, the input of each checkpointed run that
/// lives on a device is kept in host memory until backward (see `cuda::offload`). Runs that
/// do not cover the layers in order, each once, are an [`Error::Value`].
pub fn run_plan_offload(
    layers: &[LayerFn],
    runs: &[PlanSegment],
    input: &Tensor,
    preserve_rng_state: bool,
    offload: bool,
) -> Result<Tensor> {
    let opts = SequentialOptions {
        preserve_rng_state,
        offload,
        policy: None,
    };
    run_plan_with(layers, runs, input, &opts)
}

/// Run the layers following `runs` with `opts` (random-state replay, offload, and the
/// selective policy of each checkpointed run).
pub fn run_plan_with(
    layers: &[LayerFn],
    runs: &[PlanSegment],
    input: &Tensor,
    opts: &SequentialOptions,
) -> Result<Tensor> {
    validate_segments(runs, layers.len())?;
    // One shared copy of the layer list for every segment's replay closure.
    run_runs(&Arc::from(layers), runs, input, opts)
}

/// Run validated `runs`; a checkpointed run with an inner schedule replays by it (nested
/// checkpoints: multi-level schedules from the planner).
fn run_runs(
    layers: &Arc<[LayerFn]>,
    runs: &[PlanSegment],
    input: &Tensor,
    opts: &SequentialOptions,
) -> Result<Tensor> {
    let mut x = input.clone();
    for run in runs {
        x = if run.checkpointed {
            let seg = SegmentOptions {
                name: Some(format!("layers {}..{}", run.start, run.end)),
                preserve_rng_state: opts.preserve_rng_state,
                offload: opts.offload,
                policy: opts.policy.clone(),
                kind: "sequential",
                ..SegmentOptions::default()
            };
            let (layers, run, opts) = (layers.clone(), run.clone(), opts.clone());
            let f = Arc::new(move |ts: &[Tensor]| {
                let y = if run.inner.is_empty() {
                    apply_layers(&layers[run.start..run.end], &ts[0])?
                } else {
                    run_runs(&layers, &run.inner, &ts[0], &opts)?
                };
                Ok(vec![y])
            });
            checkpoint_segment_with(f, &[x], &seg)?.remove(0)
        } else {
            apply_layers(&layers[run.start..run.end], &x)?
        };
    }
    Ok(x)
}

fn apply_layers(layers: &[LayerFn], x: &Tensor) -> Result<Tensor> {
    let mut y = x.clone();
    for l in layers {
        y = l(&y)?;
    }
    Ok(y)
}
