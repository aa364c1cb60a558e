//! Python bindings of the checkpoint API: thin wrappers that turn Python callables into the
//! core's segment and layer functions. Output structure, kwargs and non-tensor values are
//! handled in `python/remat/checkpoint.py`.

use crate::errors::{callback_error, to_pyerr};
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use remat_core::checkpoint::{
    self, profiler, CheckpointGroup, LayerFn, PlanSegment, ScopeGuard, SegmentFn, SegmentOptions,
    Segmentation,
};
use remat_core::Tensor;
use std::sync::Arc;

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

/// Run `f(*inputs)` (returning a list of Tensors) as a checkpoint segment.
#[pyfunction]
#[pyo3(signature = (f, inputs, name=None, preserve_rng_state=true, offload=false, determinism_check=true))]
fn checkpoint_segment(
    f: PyObject,
    inputs: Vec<PyRef<'_, PyTensor>>,
    name: Option<String>,
    preserve_rng_state: bool,
    offload: bool,
    determinism_check: bool,
) -> PyResult<Vec<PyTensor>> {
    let opts = SegmentOptions::new(name, preserve_rng_state, offload, determinism_check);
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
            .checkpoint_fn(segment_fn(f), &tensors(&inputs))
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

/// An open `checkpoint_scope`; closing it (or dropping it) ends the scope.
#[pyclass(name = "_Scope", module = "remat", unsendable)]
struct PyScope(Option<ScopeGuard>);

#[pymethods]
impl PyScope {
    fn close(&mut self) {
        self.0.take();
    }
}

/// Enter a checkpoint scope on this thread.
#[pyfunction]
fn scope_enter() -> PyScope {
    PyScope(Some(checkpoint::checkpoint_scope()))
}

fn segmentation(
    segments: Option<usize>,
    sqrt: bool,
    budget: Option<usize>,
) -> PyResult<Segmentation> {
    match (segments, sqrt, budget) {
        (_, _, Some(b)) => Ok(Segmentation::Budget(b)),
        (_, true, None) => Ok(Segmentation::Sqrt),
        (Some(k), false, None) => Ok(Segmentation::Count(k)),
        (None, false, None) => Err(pyo3::exceptions::PyValueError::new_err(
            "checkpoint_sequential: give segments (an int or \"sqrt\") or budget_bytes",
        )),
    }
}

/// The runs `(start, end, checkpointed)` that `checkpoint_sequential` would use.
#[pyfunction]
#[pyo3(signature = (functions, input, segments=None, sqrt=false, budget_bytes=None))]
fn sequential_plan(
    py: Python<'_>,
    functions: Vec<PyObject>,
    input: PyRef<'_, PyTensor>,
    segments: Option<usize>,
    sqrt: bool,
    budget_bytes: Option<usize>,
) -> PyResult<Vec<(usize, usize, bool)>> {
    let how = segmentation(segments, sqrt, budget_bytes)?;
    let layers: Vec<LayerFn> = functions.into_iter().map(layer_fn).collect();
    let x = input.inner.clone();
    let runs = py
        .allow_threads(|| checkpoint::plan(&layers, how, &x))
        .map_err(to_pyerr)?;
    Ok(runs
        .iter()
        .map(|r| (r.start, r.end, r.checkpointed))
        .collect())
}

/// Run `functions` on `input` following `plan` (from `sequential_plan`).
#[pyfunction]
#[pyo3(signature = (functions, plan, input, preserve_rng_state=true, offload=false))]
fn sequential_run(
    functions: Vec<PyObject>,
    plan: Vec<(usize, usize, bool)>,
    input: PyRef<'_, PyTensor>,
    preserve_rng_state: bool,
    offload: bool,
) -> PyResult<PyTensor> {
    let n = functions.len();
    let runs: Vec<PlanSegment> = plan
        .iter()
        .map(|&(start, end, checkpointed)| PlanSegment {
            start,
            end,
            checkpointed,
        })
        .collect();
    let covers = runs.first().is_none_or(|r| r.start == 0)
        && runs.last().map_or(n == 0, |r| r.end == n)
        && runs.windows(2).all(|w| w[0].end == w[1].start)
        && runs.iter().all(|r| r.start < r.end);
    if !covers {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "checkpoint_sequential: the plan {plan:?} does not cover the {n} layers in order"
        )));
    }
    let layers: Vec<LayerFn> = functions.into_iter().map(layer_fn).collect();
    checkpoint::run_plan_offload(&layers, &runs, &input.inner, preserve_rng_state, offload)
        .map(wrap)
        .map_err(to_pyerr)
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

/// Live recipes, segments and recompute caches (zero once every checkpointed graph is gone).
#[pyfunction]
fn live_checkpoint_state() -> usize {
    checkpoint::live_checkpoint_state()
}

/// Register the checkpoint bindings on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCheckpointGroup>()?;
    m.add_class::<PyScope>()?;
    m.add_function(wrap_pyfunction!(checkpoint_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(checkpoint_segment, m)?)?;
    m.add_function(wrap_pyfunction!(scope_enter, m)?)?;
    m.add_function(wrap_pyfunction!(sequential_plan, m)?)?;
    m.add_function(wrap_pyfunction!(sequential_run, m)?)?;
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
    m.add_function(wrap_pyfunction!(live_checkpoint_state, m)?)?;
    Ok(())
}
