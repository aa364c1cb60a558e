//! Grad mode and the functional autograd entry points (`remat.grad`, `remat.backward`). The
//! GIL is released around the backward engine: it may call back into Python to recompute a
//! checkpoint segment, and those callbacks take the GIL themselves.

use crate::convert::{operand, type_name, Like};
use crate::errors::CoreResultExt;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use remat_core::autograd::GradOptions;
use remat_core::Tensor;

/// Whether ops on this thread record the autograd graph.
#[pyfunction]
fn is_grad_enabled() -> bool {
    remat_core::is_grad_enabled()
}

/// Turn graph recording on or off for this thread; returns the previous mode.
#[pyfunction]
fn set_grad_enabled(flag: bool) -> bool {
    remat_core::set_grad_enabled(flag)
}

/// One tensor or a sequence of tensors (no conversion: gradients only exist for Tensors).
pub(crate) fn tensors(op: &str, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    let one = |o: &Bound<'_, PyAny>| -> PyResult<Tensor> {
        o.downcast::<PyTensor>()
            .map(|t| t.get().inner.clone())
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "{op}: {what} must be Tensors, got {}",
                    type_name(o)
                ))
            })
    };
    if obj.is_instance_of::<PyTensor>() {
        return Ok(vec![one(obj)?]);
    }
    if !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
        return Err(PyTypeError::new_err(format!(
            "{op}: {what} must be a Tensor or a sequence of Tensors, got {}",
            type_name(obj)
        )));
    }
    obj.try_iter()?.map(|t| one(&t?)).collect()
}

/// Output gradients: None, one tensor, or a sequence with None entries.
fn grad_outputs(
    op: &str,
    obj: Option<&Bound<'_, PyAny>>,
    outs: &[Tensor],
) -> PyResult<Option<Vec<Option<Tensor>>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let like = |i: usize| {
        outs.get(i)
            .map(Like::from)
            .unwrap_or(Like::from(remat_core::DType::F32))
    };
    if obj.is_instance_of::<PyTensor>() {
        return Ok(Some(vec![Some(operand(op, obj, like(0))?)]));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut v = Vec::new();
        for (i, g) in obj.try_iter()?.enumerate() {
            let g = g?;
            v.push(if g.is_none() {
                None
            } else {
                Some(operand(op, &g, like(i))?)
            });
        }
        return Ok(Some(v));
    }
    Ok(Some(vec![Some(operand(op, obj, like(0))?)]))
}

/// Gradients of `outputs` with respect to `inputs`, as a tuple; no `.grad` is touched.
/// `retain_graph` defaults to `create_graph`; without `allow_unused` an input the outputs do
/// not depend on is an error (as in PyTorch), with it its gradient is None.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=false, allow_unused=false))]
fn grad<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyAny>,
    inputs: &Bound<'py, PyAny>,
    grad_outputs: Option<&Bound<'py, PyAny>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let outs = tensors("grad", "outputs", outputs)?;
    let ins = tensors("grad", "inputs", inputs)?;
    let gos = self::grad_outputs("grad", grad_outputs, &outs)?;
    let opts = GradOptions {
        retain_graph,
        create_graph,
        allow_unused,
    };
    let grads = py
        .allow_threads(|| remat_core::autograd::grad_with(&outs, &ins, gos.as_deref(), opts))
        .py()?;
    let items = grads
        .into_iter()
        .map(|g| match g {
            Some(g) => Ok(Py::new(py, wrap(g))?.into_any()),
            None => Ok(py.None()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// Back-propagate from `tensors` (each with its gradient) into the leaves' `.grad`, with
/// PyTorch's keywords (see `Tensor.backward`).
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors=None, retain_graph=None, create_graph=false, inputs=None))]
fn backward(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    grad_tensors: Option<&Bound<'_, PyAny>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let outs = self::tensors("backward", "tensors", tensors)?;
    let gos = grad_outputs("backward", grad_tensors, &outs)?.unwrap_or_default();
    let inputs = match inputs {
        Some(i) if !i.is_none() => Some(self::tensors("backward", "inputs", i)?),
        _ => None,
    };
    let roots: Vec<(Tensor, Option<Tensor>)> = outs
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, gos.get(i).cloned().flatten()))
        .collect();
    let opts = GradOptions {
        retain_graph,
        create_graph,
        allow_unused: true,
    };
    py.allow_threads(|| remat_core::autograd::backward_with(&roots, inputs.as_deref(), opts))
        .py()
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(grad, m)?)?;
    m.add_function(wrap_pyfunction!(backward, m)?)?;
    Ok(())
}
