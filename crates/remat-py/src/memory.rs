//! Memory statistics, CUDA queries, seeding and the CPU thread count: thin wrappers over
//! remat-core.

use crate::args;
use crate::errors::CoreResultExt;
use pyo3::prelude::*;

/// Bytes of live tensor storage on `device`.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn memory_allocated(device: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    Ok(remat_core::memory_allocated(args::device(device)?))
}

/// The highest `memory_allocated(device)` since start or the last reset.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn max_memory_allocated(device: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    Ok(remat_core::max_memory_allocated(args::device(device)?))
}

/// Reset the peak counter of `device` to the current value.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn reset_peak_memory_stats(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    remat_core::reset_peak_memory_stats(args::device(device)?);
    Ok(())
}

/// A limit argument: None, a byte count, or a string such as "8MB".
fn limit_bytes(limit: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(limit) = limit.filter(|l| !l.is_none()) else {
        return Ok(None);
    };
    if let Ok(text) = limit.extract::<String>() {
        return remat_core::dtr::parse_bytes(&text).map(Some).py();
    }
    if limit.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "set_memory_limit: expected a byte count, a string such as \"8MB\", or None; got \
             a bool",
        ));
    }
    match limit.extract::<i128>() {
        Ok(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Ok(n) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "set_memory_limit: the limit must be at least 0 bytes, got {n}"
        ))),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "set_memory_limit: expected a byte count, a string such as \"8MB\", or None; got \
             {}",
            limit.get_type().name()?
        ))),
    }
}

/// Cap the live tensor bytes of `device` (None removes the cap): ops evict and rebuild
/// recomputable tensors to stay under it.
#[pyfunction]
#[pyo3(signature = (limit, device=None))]
fn set_memory_limit(
    limit: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let limit = limit_bytes(limit)?;
    remat_core::set_memory_limit(args::device(device)?, limit);
    Ok(())
}

/// The cap on `device`'s live tensor bytes, or None.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn get_memory_limit(device: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    Ok(remat_core::get_memory_limit(args::device(device)?))
}

/// Live and peak bytes, the limit, and the eviction counters of `device`.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn memory_stats<'py>(
    py: Python<'py>,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let device = args::device(device)?;
    let s = remat_core::memory_stats(device);
    let d = pyo3::types::PyDict::new(py);
    d.set_item("allocated", s.allocated)?;
    d.set_item("peak", s.peak)?;
    d.set_item("limit", s.limit)?;
    d.set_item("evictions", s.eviction.evictions)?;
    d.set_item("evicted_bytes", s.eviction.evicted_bytes)?;
    d.set_item("rematerializations", s.eviction.rematerializations)?;
    d.set_item("remat_seconds", s.eviction.remat_seconds)?;
    d.set_item("evictable_cells", remat_core::dtr::live_cells())?;
    Ok(d)
}

/// Whether a usable CUDA device exists.
#[pyfunction]
fn cuda_is_available() -> bool {
    remat_core::cuda::is_available()
}

/// Number of usable CUDA devices.
#[pyfunction]
fn cuda_device_count() -> usize {
    remat_core::cuda::device_count()
}

/// Wait for queued GPU work (GIL released while waiting).
#[pyfunction]
fn cuda_synchronize(py: Python<'_>) -> PyResult<()> {
    py.allow_threads(remat_core::cuda::synchronize).py()
}

/// Return cached device blocks and pooled pinned host blocks to the driver (GIL released).
#[pyfunction]
fn cuda_empty_cache(py: Python<'_>) -> PyResult<()> {
    py.allow_threads(remat_core::cuda::empty_cache).py()
}

/// Seed every random source (randn, rand, dropout, initialisation). Negative seeds wrap.
#[pyfunction]
fn manual_seed(seed: i128) {
    remat_core::manual_seed(seed as u64);
}

/// Run CPU kernels on `n` threads from now on.
#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n < 1 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "set_num_threads: the number of threads must be at least 1, got {n}"
        )));
    }
    remat_core::set_num_threads(n as usize).py()
}

/// The number of threads CPU kernels run on.
#[pyfunction]
fn get_num_threads() -> usize {
    remat_core::get_num_threads()
}

/// Tell the CUDA probe about this interpreter's package folders (`sys.path`), so the
/// libraries of the `nvidia-*` pip wheels are found. Runs at import, before any probe.
fn register_cuda_library_dirs(py: Python<'_>) {
    let dirs: Vec<String> = py
        .import("sys")
        .and_then(|sys| sys.getattr("path"))
        .and_then(|p| p.extract())
        .unwrap_or_default();
    let dirs: Vec<std::path::PathBuf> = dirs
        .into_iter()
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .collect();
    remat_core::cuda::add_library_dirs(&dirs);
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_cuda_library_dirs(m.py());
    m.add_function(wrap_pyfunction!(memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(max_memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(set_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(get_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    Ok(())
}
