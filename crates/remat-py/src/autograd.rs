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
///
/// Grad mode is per thread; ``remat.no_grad``, ``remat.enable_grad``,
/// ``remat.set_grad_enabled`` and ``remat.inference_mode`` change it.
///
/// Returns
/// -------
/// bool
///     ``True`` when graph recording is on.
///
/// Raises
/// ------
/// TypeError
///     When given an argument (it takes none).
///
/// Examples
/// --------
/// >>> remat.is_grad_enabled()
/// True
/// >>> with remat.no_grad():
/// ...     remat.is_grad_enabled()
/// False
#[pyfunction]
fn is_grad_enabled() -> bool {
    remat_core::is_grad_enabled()
}

/// For each of `leaves`, whether a backward from `outputs` would reach it (data-parallel
/// training marks the parameters a forward did not use from this).
#[pyfunction]
fn _reachable_leaves(
    outputs: Vec<PyRef<'_, PyTensor>>,
    leaves: Vec<PyRef<'_, PyTensor>>,
) -> Vec<bool> {
    let roots: Vec<Tensor> = outputs.iter().map(|t| t.inner.clone()).collect();
    let leaves: Vec<Tensor> = leaves.iter().map(|t| t.inner.clone()).collect();
    remat_core::autograd::reachable_leaves(&roots, &leaves)
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
            .unwrap_or(Like::from(remat_core::DType::default_float()))
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

/// Gradients of `outputs` with respect to `inputs`, as a tuple; no ``.grad`` is touched.
///
/// PyTorch's ``torch.autograd.grad``: the sum over `outputs` of each output's
/// vector-Jacobian product with its gradient in `grad_outputs`. Only the part of the graph it
/// runs through is freed (unless `retain_graph`), so a later ``grad`` or ``backward`` over
/// other parts still works. With `create_graph` the gradients are themselves differentiable
/// (higher-order gradients), also through checkpoints. The GIL is released while the backward
/// engine runs.
///
/// Parameters
/// ----------
/// outputs : Tensor or sequence of Tensor
///     The tensors to differentiate.
/// inputs : Tensor or sequence of Tensor
///     The tensors to differentiate with respect to; each must require grad.
/// grad_outputs : Tensor, number or sequence, optional
///     The gradient of each output (a sequence may hold ``None`` for a 0-d output, which
///     gets 1). Default: ``None`` (every output must be 0-d; its gradient is 1).
/// retain_graph : bool, optional
///     Keep the graph's saved tensors for another backward. Default: ``None`` (the value of
///     `create_graph`).
/// create_graph : bool, optional
///     Record the backward itself, so the gradients can be differentiated again.
///     Default: ``False``.
/// allow_unused : bool, optional
///     Return ``None`` for an input the outputs do not depend on, instead of raising.
///     Default: ``False``.
///
/// Returns
/// -------
/// tuple of Tensor or None
///     One gradient per input, in order, each of its input's shape.
///
/// Raises
/// ------
/// TypeError
///     When `outputs` or `inputs` is not a Tensor or a sequence of Tensors.
/// GraphError
///     When an input is unused (without `allow_unused`) or does not require grad, an output
///     does not require grad, a non-0-d output has no gradient in `grad_outputs`, or the
///     graph was already freed by an earlier backward (use ``retain_graph=True``).
/// ShapeError
///     When a gradient in `grad_outputs` does not have its output's shape.
///
/// Examples
/// --------
/// >>> x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
/// >>> remat.grad((x ** 2).sum(), x)
/// (tensor([2., 4., 6.]),)
/// >>> x.grad is None
/// True
/// >>> (g,) = remat.grad((x ** 3).sum(), x, create_graph=True)
/// >>> remat.grad(g.sum(), x)
/// (tensor([ 6., 12., 18.]),)
/// >>> w = remat.tensor([2.0], requires_grad=True)
/// >>> remat.grad(x.sum(), [x, w], allow_unused=True)
/// (tensor([1., 1., 1.]), None)
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

/// Back-propagate from `tensors` into the ``.grad`` of the leaves that require grad.
///
/// PyTorch's ``torch.autograd.backward`` (``Tensor.backward`` for several roots at once):
/// gradients accumulate into ``.grad`` (they add to what is there), and the graph's saved
/// tensors are freed afterwards unless `retain_graph`. The GIL is released while the backward
/// engine runs.
///
/// Parameters
/// ----------
/// tensors : Tensor or sequence of Tensor
///     The roots to back-propagate from.
/// grad_tensors : Tensor, number or sequence, optional
///     The gradient of each root (a sequence may hold ``None`` for a 0-d root, which gets 1).
///     Default: ``None`` (every root must be 0-d; its gradient is 1).
/// retain_graph : bool, optional
///     Keep the graph's saved tensors for another backward. Default: ``None`` (the value of
///     `create_graph`).
/// create_graph : bool, optional
///     Record the backward itself, so the gradients can be differentiated again.
///     Default: ``False``.
/// inputs : Tensor or sequence of Tensor, optional
///     Accumulate only into these tensors' ``.grad``. Default: ``None`` (every leaf that
///     requires grad).
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// TypeError
///     When `tensors` or `inputs` is not a Tensor or a sequence of Tensors.
/// GraphError
///     When a root does not require grad, a non-0-d root has no gradient in `grad_tensors`,
///     or the graph was already freed by an earlier backward (use ``retain_graph=True``).
/// ShapeError
///     When a gradient does not have its root's shape.
///
/// Examples
/// --------
/// >>> x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
/// >>> w = remat.tensor([2.0], requires_grad=True)
/// >>> remat.backward([(x * x).sum(), (w * 3).sum()])
/// >>> x.grad, w.grad
/// (tensor([2., 4., 6.]), tensor([3.]))
/// >>> remat.backward(x * w, grad_tensors=remat.ones(3), inputs=[w])
/// >>> w.grad
/// tensor([9.])
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
    m.add_function(wrap_pyfunction!(_reachable_leaves, m)?)?;
    Ok(())
}
