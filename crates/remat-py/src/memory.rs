//! Memory statistics, CUDA queries and seeding: thin wrappers over remat-core.

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

/// Seed every random source (randn, rand, dropout, initialisation). Negative seeds wrap.
#[pyfunction]
fn manual_seed(seed: i128) {
    remat_core::manual_seed(seed as u64);
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(max_memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    Ok(())
}
