//! Calling engine ops from Python: release the GIL around heavy work, map errors, wrap results.

use crate::errors::CoreResultExt;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use remat_core::Tensor;

/// Ops whose inputs have at least this many elements run with the GIL released: below it,
/// releasing and re-taking the GIL costs more than other threads could gain.
pub const GIL_RELEASE_MIN: usize = 65536;

/// Whether an op on `ts` is heavy enough to release the GIL for.
#[inline]
pub fn heavy(ts: &[&Tensor]) -> bool {
    ts.iter().any(|t| t.numel() >= GIL_RELEASE_MIN)
}

/// Run `f`, releasing the GIL when `heavy`.
#[inline]
pub fn run<T, F>(py: Python<'_>, heavy: bool, f: F) -> PyResult<T>
where
    F: FnOnce() -> remat_core::Result<T> + Send,
    T: Send,
{
    if heavy {
        py.allow_threads(f).py()
    } else {
        f().py()
    }
}

/// A one-input op.
#[inline]
pub fn unary(
    py: Python<'_>,
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> remat_core::Result<Tensor> + Send,
) -> PyResult<PyTensor> {
    run(py, heavy(&[x]), || f(x)).map(PyTensor::from)
}

/// A two-input op.
#[inline]
pub fn binary(
    py: Python<'_>,
    a: &Tensor,
    b: &Tensor,
    f: fn(&Tensor, &Tensor) -> remat_core::Result<Tensor>,
) -> PyResult<PyTensor> {
    run(py, heavy(&[a, b]), || f(a, b)).map(PyTensor::from)
}
