//! Python bindings of the checkpoint API: thin wrappers that turn Python callables into the
//! core's segment and layer functions (and, for `checkpoint_sequential`, into the layer
//! identities of the core's one plan cache). Output structure, kwargs and non-tensor values
//! are handled in `python/remat/checkpoint.py`.

use crate::errors::{callback_error, to_pyerr};
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple, PyWeakrefReference};
use remat_core::checkpoint::{
    self, profiler, CheckpointGroup, LayerFn, LayerId, LayerIdentity, ScopeGuard, SegmentFn,
    SegmentOptions, Segmentation, SegmentsArg, SequentialOptions,
};
use remat_core::Tensor;
use std::sync::{Arc, Mutex};

/// A core segment function that calls the Python callable `f(*tensors)`, which must return a
/// list of Tensors.
fn segment_fn(f: PyObject) -> SegmentFn {
    Arc::new(move |ts: &[Tensor]| {
        Python::with_gil(|py| {
            let args =
                PyTuple::new(py, ts.iter().map(|t| wrap(t.clone()))).map_err(callback_error)?;
            let out = f.call1(py, args).map_err(callback_error)?;
            let list: Vec<PyRef<'_, PyTensor>> = out.extract(py).map_err(callback_error)?;
            Ok(list.iter().map(|t| t.inner.clone()).collect())
        })
    })
}

/// A core layer function that calls the Python callable `f(x)`, which must return a Tensor.
fn layer_fn(f: PyObject) -> LayerFn {
    Arc::new(move |x: &Tensor| {
        Python::with_gil(|py| {
            let out = f.call1(py, (wrap(x.clone()),)).map_err(callback_error)?;
            let t: PyRef<'_, PyTensor> = out.extract(py).map_err(callback_error)?;
            Ok(t.inner.clone())
        })
    })
}

fn tensors(v: &[PyRef<'_, PyTensor>]) -> Vec<Tensor> {
    v.iter().map(|t| t.inner.clone()).collect()
}

/// `checkpoint(x)` for a tensor.
#[pyfunction]
fn checkpoint_tensor(x: PyRef<'_, PyTensor>) -> PyResult<PyTensor> {
    checkpoint::checkpoint(&x.inner).map(wrap).map_err(to_pyerr)
}

/// `adaptive_checkpoint(x, threshold_bytes)`.
#[pyfunction]
fn adaptive_checkpoint(x: PyRef<'_, PyTensor>, threshold_bytes: usize) -> PyResult<PyTensor> {
    checkpoint::adaptive_checkpoint(&x.inner, threshold_bytes)
        .map(wrap)
        .map_err(to_pyerr)
}

/// Run `f(*inputs)` (returning a list of Tensors) as a checkpoint segment. `early_stop`
/// None: the global setting (`_set_checkpoint_early_stop`).
#[pyfunction]
#[pyo3(signature = (f, inputs, name=None, preserve_rng_state=true, offload=false, determinism_check=true, early_stop=None, policy=None))]
#[allow(clippy::too_many_arguments)]
fn checkpoint_segment(
    f: PyObject,
    inputs: Vec<PyRef<'_, PyTensor>>,
    name: Option<String>,
    preserve_rng_state: bool,
    offload: bool,
    determinism_check: bool,
    early_stop: Option<bool>,
    policy: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<PyTensor>> {
    let mut opts = SegmentOptions::new(name, preserve_rng_state, offload, determinism_check);
    if let Some(e) = early_stop {
        opts.early_stop = e;
    }
    opts.policy = crate::policy::policy_arg(policy)?;
    checkpoint::checkpoint_segment_with(segment_fn(f), &tensors(&inputs), &opts)
        .map(|v| v.into_iter().map(wrap).collect())
        .map_err(to_pyerr)
}

/// The core `CheckpointGroup`.
#[pyclass(name = "_CheckpointGroup", module = "remat")]
struct PyCheckpointGroup(CheckpointGroup);

#[pymethods]
impl PyCheckpointGroup {
    #[new]
    #[pyo3(signature = (name=None, preserve_rng_state=true, offload=false))]
    fn new(name: Option<String>, preserve_rng_state: bool, offload: bool) -> Self {
        PyCheckpointGroup(CheckpointGroup::new(name, preserve_rng_state, offload))
    }
    /// Run `f(*inputs)` (returning a list of Tensors) checkpointed; outputs share one recompute.
    fn checkpoint_fn(
        &self,
        f: PyObject,
        inputs: Vec<PyRef<'_, PyTensor>>,
    ) -> PyResult<Vec<PyTensor>> {
        self.0
            .checkpoint_shared(segment_fn(f), &tensors(&inputs))
            .map(|v| v.into_iter().map(wrap).collect())
            .map_err(to_pyerr)
    }
    #[getter]
    fn checkpoint_count(&self) -> usize {
        self.0.checkpoint_count()
    }
    #[getter]
    fn recompute_count(&self) -> usize {
        self.0.recompute_count()
    }
    #[getter]
    fn memory_saved(&self) -> usize {
        self.0.memory_saved()
    }
    #[getter]
    fn name(&self) -> Option<String> {
        self.0.name().map(str::to_string)
    }
}

/// The default of `early_stop` for segments made from now on; returns the previous one.
#[pyfunction]
fn _set_checkpoint_early_stop(enable: bool) -> bool {
    checkpoint::set_checkpoint_early_stop(enable)
}

/// The current default of `early_stop`.
#[pyfunction]
fn _checkpoint_early_stop() -> bool {
    checkpoint::checkpoint_early_stop()
}

/// Whether this thread is re-running code whose original forward already ran (a checkpoint's
/// recompute, the budget planner's measuring run, a replayed recipe): once-per-step side
/// effects (BatchNorm's ``num_batches_tracked``) skip themselves then.
#[pyfunction]
fn _is_recomputing() -> bool {
    checkpoint::is_recomputing()
}

/// An open `checkpoint_scope`; closing it (or dropping it) ends the scope, from any thread:
/// closed elsewhere, it ends for the thread that entered it.
#[pyclass(name = "_Scope", module = "remat")]
struct PyScope(Mutex<Option<ScopeGuard>>);

#[pymethods]
impl PyScope {
    fn close(&self) {
        let guard = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(guard);
    }
}

/// Enter a checkpoint scope on this thread.
#[pyfunction]
fn scope_enter() -> PyScope {
    PyScope(Mutex::new(Some(checkpoint::checkpoint_scope())))
}

/// An open `GraphExecGroup` (recompute caches kept across the backward calls inside it).
/// It belongs to the thread that entered it: closing it elsewhere is an error, and a group
/// collected on another thread is left to its own thread (never ends another's group).
#[pyclass(name = "_GraphExecGroup", module = "remat")]
struct PyGraphExecGroup {
    owner: std::thread::ThreadId,
    guard: Mutex<Option<checkpoint::GraphExecGroup>>,
}

#[pymethods]
impl PyGraphExecGroup {
    fn close(&self) -> PyResult<()> {
        if std::thread::current().id() != self.owner {
            return Err(to_pyerr(remat_core::Error::checkpoint(
                "GraphExecGroup",
                "a GraphExecGroup must be exited on the thread that entered it",
            )));
        }
        let guard = self.guard.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(guard);
        Ok(())
    }
}

impl Drop for PyGraphExecGroup {
    fn drop(&mut self) {
        if std::thread::current().id() != self.owner {
            let guard = self
                .guard
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            std::mem::forget(guard);
        }
    }
}

/// Open a `GraphExecGroup` on this thread (`CheckpointError` when one is open already).
#[pyfunction]
fn _graph_exec_group_enter() -> PyResult<PyGraphExecGroup> {
    let guard = checkpoint::GraphExecGroup::enter().map_err(to_pyerr)?;
    Ok(PyGraphExecGroup {
        owner: std::thread::current().id(),
        guard: Mutex::new(Some(guard)),
    })
}

/// The plan-cache identity of a Python layer: its `id()` together with a weak reference to
/// it. The core uses a cached plan only while the weak reference is alive, so a layer that was
/// freed and whose `id()` now belongs to a new object never gets the old layer's plan, and
/// the cache keeps no layer (and none of its parameters) alive. Objects that cannot be
/// weakly referenced (builtin functions, classes with `__slots__` and no `__weakref__`) are
/// held strongly instead: their `id()` cannot be reused while the cache holds them.
struct PyLayerIdentity {
    addr: usize,
    anchor: Anchor,
}

enum Anchor {
    Weak(Py<PyWeakrefReference>),
    Strong(#[allow(dead_code)] PyObject),
}

impl LayerIdentity for PyLayerIdentity {
    fn addr(&self) -> usize {
        self.addr
    }
    fn is_alive(&self) -> bool {
        match &self.anchor {
            Anchor::Strong(_) => true,
            // The core calls this without holding its cache lock, so taking the GIL here
            // cannot deadlock with a thread that holds the GIL and waits for that lock.
            Anchor::Weak(w) => Python::with_gil(|py| w.bind(py).upgrade().is_some()),
        }
    }
}

/// The core layers and their plan-cache identities for Python callables (a TypeError for
/// anything not callable).
fn layers_of(functions: &[Bound<'_, PyAny>]) -> PyResult<(Vec<LayerFn>, Vec<LayerId>)> {
    let mut layers = Vec::with_capacity(functions.len());
    let mut ids: Vec<LayerId> = Vec::with_capacity(functions.len());
    for f in functions {
        if !f.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "checkpoint_sequential: every function must be callable, got {}",
                f.get_type().name()?
            )));
        }
        let anchor = match PyWeakrefReference::new(f) {
            Ok(w) => Anchor::Weak(w.unbind()),
            Err(_) => Anchor::Strong(f.clone().unbind()),
        };
        ids.push(Arc::new(PyLayerIdentity {
            addr: f.as_ptr() as usize,
            anchor,
        }));
        layers.push(layer_fn(f.clone().unbind()));
    }
    Ok((layers, ids))
}

/// The segmentation asked for by Python's `segments` (an int, `"sqrt"` or None) and
/// `budget_bytes`; the core validates the values and owns the messages.
fn segmentation(segments: &Bound<'_, PyAny>, budget_bytes: Option<i64>) -> PyResult<Segmentation> {
    let name;
    let repr;
    let arg = if segments.is_none() {
        SegmentsArg::Absent
    } else if let Ok(s) = segments.downcast::<PyString>() {
        name = s.to_cow()?.into_owned();
        SegmentsArg::Named(&name)
    } else if segments.is_instance_of::<PyInt>() && !segments.is_instance_of::<PyBool>() {
        // A count too large for i64 is certainly more segments than layers.
        SegmentsArg::Count(segments.extract::<i64>().unwrap_or(i64::MAX))
    } else {
        repr = segments.repr()?.to_cow()?.into_owned();
        SegmentsArg::Other(&repr)
    };
    Segmentation::from_args(arg, budget_bytes).map_err(to_pyerr)
}

fn input_tensor(input: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    match input.downcast::<PyTensor>() {
        Ok(t) => Ok(t.borrow().inner.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "checkpoint_sequential: input must be a Tensor, got {}",
            input.get_type().name()?
        ))),
    }
}

/// `checkpoint_sequential`: planned (with the core's plan cache) and run by the core; the
/// layers are called back with the GIL.
#[pyfunction]
#[pyo3(signature = (functions, segments, input, preserve_rng_state=true, budget_bytes=None, offload=false, policy=None))]
#[allow(clippy::too_many_arguments)]
fn checkpoint_sequential(
    py: Python<'_>,
    functions: Vec<Bound<'_, PyAny>>,
    segments: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    preserve_rng_state: bool,
    budget_bytes: Option<i64>,
    offload: bool,
    policy: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let how = segmentation(segments, budget_bytes)?;
    let x = input_tensor(input)?;
    let (layers, ids) = layers_of(&functions)?;
    let opts = SequentialOptions {
        preserve_rng_state,
        offload,
        policy: crate::policy::policy_arg(policy)?,
    };
    py.allow_threads(|| checkpoint::checkpoint_sequential_with(&layers, &ids, how, &x, &opts))
        .map(wrap)
        .map_err(to_pyerr)
}

/// The runs `(start, end, checkpointed)` that `checkpoint_sequential` would use (from the
/// same plan cache).
#[pyfunction]
#[pyo3(signature = (functions, segments, input, budget_bytes=None))]
fn sequential_plan(
    py: Python<'_>,
    functions: Vec<Bound<'_, PyAny>>,
    segments: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    budget_bytes: Option<i64>,
) -> PyResult<Vec<(usize, usize, bool)>> {
    let how = segmentation(segments, budget_bytes)?;
    let x = input_tensor(input)?;
    let (layers, ids) = layers_of(&functions)?;
    let runs = py
        .allow_threads(|| checkpoint::plan_with_ids(&layers, &ids, how, &x))
        .map_err(to_pyerr)?;
    Ok(runs
        .iter()
        .map(|r| (r.start, r.end, r.checkpointed))
        .collect())
}

/// The core plan cache's counters: `{"hits", "misses", "entries"}` (budget plans).
#[pyfunction]
fn _plan_cache_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let s = checkpoint::plan_cache_stats();
    let d = PyDict::new(py);
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    d.set_item("entries", s.entries)?;
    Ok(d)
}

#[pyfunction]
fn profiler_start_tracking() {
    profiler::start_tracking()
}
#[pyfunction]
fn profiler_stop_tracking() {
    profiler::stop_tracking()
}
#[pyfunction]
fn profiler_reset() {
    profiler::reset()
}
#[pyfunction]
fn profiler_memory_saved() -> usize {
    profiler::memory_saved()
}
#[pyfunction]
fn profiler_checkpoint_count() -> usize {
    profiler::checkpoint_count()
}
#[pyfunction]
fn profiler_recompute_count() -> usize {
    profiler::recompute_count()
}
#[pyfunction]
fn profiler_recompute_seconds() -> f64 {
    profiler::recompute_seconds()
}
#[pyfunction]
fn profiler_peak_bytes() -> usize {
    profiler::peak_bytes()
}
#[pyfunction]
fn profiler_report() -> String {
    profiler::report()
}
/// The profiler's records as (name, kind, bytes_saved, recompute_seconds, recompute_count).
#[pyfunction]
fn profiler_records() -> Vec<(String, String, usize, f64, usize)> {
    profiler::records()
        .into_iter()
        .map(|r| {
            (
                r.name,
                r.kind.to_string(),
                r.bytes_saved,
                r.recompute_seconds,
                r.recompute_count,
            )
        })
        .collect()
}
/// The profiler's memory timeline as (seconds, live_bytes, event) rows.
#[pyfunction]
fn profiler_memory_timeline() -> Vec<(f64, usize, String)> {
    profiler::memory_timeline()
}
/// The profiler's timeline as a Chrome / Perfetto trace (JSON text).
#[pyfunction]
fn profiler_chrome_trace() -> String {
    profiler::chrome_trace()
}

/// The number of live checkpoint objects: recipes, segments and filled recompute caches.
///
/// A leak check: it is zero once every graph that used checkpointing has run its backward
/// (or been dropped) and no checkpointed tensor is held, and it grows while checkpointed
/// outputs are alive.
///
/// Returns
/// -------
/// int
///     The count, across all threads.
///
/// Raises
/// ------
/// TypeError
///     When given an argument (it takes none).
///
/// Examples
/// --------
/// >>> before = remat.live_checkpoint_state()
/// >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
/// >>> y = remat.checkpoint(lambda a: (a * 2).sin(), x)
/// >>> remat.live_checkpoint_state() > before
/// True
/// >>> y.sum().backward()
/// >>> del y
/// >>> remat.live_checkpoint_state() == before
/// True
#[pyfunction]
fn live_checkpoint_state() -> usize {
    checkpoint::live_checkpoint_state()
}

/// Register the checkpoint bindings on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCheckpointGroup>()?;
    m.add_class::<PyScope>()?;
    m.add_class::<PyGraphExecGroup>()?;
    m.add_function(wrap_pyfunction!(_graph_exec_group_enter, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_segment, m)?)?;
    m.add_function(wrap_pyfunction!(scope_enter, m)?)?;
    m.add_function(wrap_pyfunction!(_set_checkpoint_early_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_checkpoint_early_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_is_recomputing, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_sequential, m)?)?;
    m.add_function(wrap_pyfunction!(sequential_plan, m)?)?;
    m.add_function(wrap_pyfunction!(_plan_cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_start_tracking, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_stop_tracking, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_reset, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_memory_saved, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_checkpoint_count, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_recompute_count, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_recompute_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_peak_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_report, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_records, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_memory_timeline, m)?)?;
    m.add_function(wrap_pyfunction!(profiler_chrome_trace, m)?)?;
    m.add_function(wrap_pyfunction!(live_checkpoint_state, m)?)?;
    Ok(())
}
