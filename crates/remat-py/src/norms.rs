//! Python bindings of `rms_norm` and `group_norm` with PyTorch's signatures.

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::losses::optional;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use remat_core::ops;

/// Root-mean-square normalisation over the trailing axes `normalized_shape`, times
/// `weight`; `eps` None: the dtype's machine epsilon (PyTorch's default).
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, eps=None))]
fn rms_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    eps: Option<f64>,
) -> PyResult<PyTensor> {
    const OP: &str = "rms_norm";
    let x = convert::extract_tensor(OP, input)?;
    let shape = args::shape_of(OP, normalized_shape)?;
    let w = optional(OP, weight, &x)?;
    run(py, heavy(&[&x]), || {
        ops::rms_norm(&x, &shape, w.as_ref(), eps)
    })
    .map(wrap)
}

/// Group normalisation of `(N, C, *)` over `num_groups` channel groups, with per-channel
/// `weight` and `bias`.
#[pyfunction]
#[pyo3(signature = (input, num_groups, weight=None, bias=None, eps=1e-5))]
fn group_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    num_groups: i64,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<PyTensor> {
    const OP: &str = "group_norm";
    let x = convert::extract_tensor(OP, input)?;
    if num_groups < 1 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{OP}: num_groups must be a positive int, got {num_groups}"
        )));
    }
    let (w, b) = (optional(OP, weight, &x)?, optional(OP, bias, &x)?);
    run(py, heavy(&[&x]), || {
        ops::group_norm(&x, num_groups as usize, w.as_ref(), b.as_ref(), eps)
    })
    .map(wrap)
}

/// Register the functions of this file on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rms_norm, m)?)?;
    m.add_function(wrap_pyfunction!(group_norm, m)?)?;
    Ok(())
}
