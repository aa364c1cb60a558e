//! The engine side of `remat.autograd.Function`: one recorded op per differentiable output
//! of a Python-defined function, whose backward and (for recomputation) forward call back
//! into Python. The Python class (`python/remat/autograd.py`) runs the user's `forward`,
//! then records the result here with the tensors `ctx.save_for_backward` named as the op's
//! saved-tensor slots (an input or the output; anything else travels as an extra input), so
//! they go through the same slots, version checks and checkpoint policies as built-in ops.

use crate::errors::callback_error;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use remat_core::autograd::node::record;
use remat_core::autograd::{BackwardCtx, Op, Save};
use remat_core::{Error, Result, Tensor};
use std::collections::HashSet;
use std::sync::Mutex;

/// A Python-defined op. `backward(grad, saved)` returns one gradient (Tensor or None) per
/// input; `replay(inputs)` recomputes the output (a checkpoint's recipe).
struct PyFunctionOp {
    name: &'static str,
    backward: PyObject,
    replay: PyObject,
}

/// The op name as a `&'static str`: each distinct class name is leaked once.
fn interned(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut guard = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let set = guard.get_or_insert_with(HashSet::new);
    if let Some(s) = set.get(name) {
        return s;
    }
    let s: &'static str = Box::leak(name.to_owned().into_boxed_str());
    set.insert(s);
    s
}

fn tensor_list(py: Python<'_>, ts: Vec<Tensor>) -> Result<Bound<'_, PyList>> {
    PyList::new(py, ts.into_iter().map(wrap)).map_err(callback_error)
}

impl PyFunctionOp {
    fn call_replay(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Python::with_gil(|py| {
            let args = tensor_list(py, inputs.iter().map(|t| (*t).clone()).collect())?;
            let out = self.replay.call1(py, (args,)).map_err(callback_error)?;
            let t: PyRef<'_, PyTensor> = out.extract(py).map_err(callback_error)?;
            Ok(t.inner.clone())
        })
    }
}

impl Op for PyFunctionOp {
    fn name(&self) -> &'static str {
        self.name
    }
    fn any_dtype(&self) -> bool {
        true
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.call_replay(inputs)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.call_replay(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let n = ctx.inputs.len();
        Python::with_gil(|py| {
            let saved = tensor_list(py, ctx.saved.to_vec())?;
            let out = self
                .backward
                .call1(py, (wrap(ctx.grad.clone()), saved))
                .map_err(callback_error)?;
            let grads: Vec<Option<PyRef<'_, PyTensor>>> =
                out.extract(py).map_err(callback_error)?;
            if grads.len() != n {
                return Err(Error::graph(
                    self.name,
                    format!("backward gave {} gradients for {n} inputs", grads.len()),
                ));
            }
            Ok(grads
                .into_iter()
                .map(|g| g.map(|g| g.inner.clone()))
                .collect())
        })
    }
}

/// Record `output` as the result of the Python function `name` on `inputs`. `saves` lists
/// the saved-tensor slots in order: `i >= 0` is input `i`, `-1` the output.
#[pyfunction]
#[pyo3(signature = (name, inputs, output, saves, backward, replay))]
fn _record_function(
    name: &str,
    inputs: Vec<PyRef<'_, PyTensor>>,
    output: PyRef<'_, PyTensor>,
    saves: Vec<i64>,
    backward: PyObject,
    replay: PyObject,
) -> PyResult<PyTensor> {
    let ins: Vec<Tensor> = inputs.iter().map(|t| t.inner.clone()).collect();
    let mut slots = Vec::with_capacity(saves.len());
    for s in saves {
        slots.push(match s {
            -1 => Save::Output,
            i if i >= 0 && (i as usize) < ins.len() => Save::Input(i as usize),
            i => {
                return Err(PyValueError::new_err(format!(
                    "{name}: saved slot {i} is neither an input nor the output"
                )))
            }
        });
    }
    let op = PyFunctionOp {
        name: interned(name),
        backward,
        replay,
    };
    let refs: Vec<&Tensor> = ins.iter().collect();
    Ok(wrap(record(op, &refs, output.inner.clone(), &slots)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_record_function, m)?)
}
