//! Python bindings of selective checkpointing: `_SavePolicy` (the built-in policies and
//! Python callables, which the engine asks for each op output inside a checkpoint) and
//! `checkpoint_name`. `python/remat/checkpoint_policies.py` and `CheckpointPolicy` in
//! `python/remat/utils/checkpoint.py` are the public names.

use crate::call::{heavy, run};
use crate::convert;
use crate::errors::callback_error;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use remat_core::checkpoint::{CheckpointPolicy, PolicyQuery, SavePolicy};
use remat_core::ops;
use std::sync::Arc;

/// A selective checkpoint policy: which op outputs a checkpoint keeps from its forward.
///
/// The objects of ``remat.checkpoint_policies`` are instances: ``everything_saveable`` (keep every
/// op output: no recompute), ``nothing_saveable`` (keep nothing: recompute the whole function, the
/// default), ``dots_saveable`` (keep the outputs of matrix products, linear layers and
/// convolutions; recompute the rest), and the policies that ``save_only_these_names(*names)`` and
/// ``offload_these_names(*names)`` return (keep, or keep in host memory, the tensors tagged by
/// ``remat.checkpoint_name``). Pass one as ``policy=`` to ``remat.checkpoint``,
/// ``checkpoint_segment``, ``checkpoint_sequential`` or ``Module.activation_checkpointing_policy``.
/// A kept output is not recomputed: the recompute takes it instead of running its op, so gradients
/// are bit-identical either way. A Python callable ``policy(op_name, output)`` returning a
/// ``CheckpointPolicy`` or a bool (``True`` keeps) may be passed instead of a policy object.
///
/// Parameters
/// ----------
/// kind : str
///     ``"everything_saveable"``, ``"nothing_saveable"``, ``"dots_saveable"``,
///     ``"save_only_these_names"`` or ``"offload_these_names"``.
/// names : list of str, optional
///     The tags of the last two kinds. Default: no names.
///
/// Raises
/// ------
/// ValueError
///     When ``kind`` is none of the five.
/// TypeError
///     When ``names`` is not a list of str.
///
/// Examples
/// --------
/// >>> from remat.checkpoint_policies import dots_saveable
/// >>> dots_saveable
/// <checkpoint policy dots_saveable>
/// >>> w = remat.tensor([[1.0, 0.0], [0.0, 2.0]], requires_grad=True)
/// >>> def f(x):
/// ...     return remat.tanh(x @ w).sum()
/// >>> remat.checkpoint(f, remat.ones(1, 2), policy=dots_saveable).backward()
/// >>> w.grad.shape
/// (2, 2)
/// >>> seen = []
/// >>> def record(op_name, output):
/// ...     seen.append(op_name)
/// ...     return False
/// >>> remat.checkpoint(f, remat.ones(1, 2), policy=record).backward()
/// >>> seen
/// ['matmul', 'tanh', 'sum']
#[pyclass(name = "_SavePolicy", module = "remat", frozen)]
pub struct PySavePolicy(pub SavePolicy);

/// PyTorch's `CheckpointPolicy` member names.
fn decision_of(name: &str) -> Option<CheckpointPolicy> {
    Some(match name {
        "MUST_SAVE" => CheckpointPolicy::MustSave,
        "PREFER_SAVE" => CheckpointPolicy::PreferSave,
        "MUST_RECOMPUTE" => CheckpointPolicy::MustRecompute,
        "PREFER_RECOMPUTE" => CheckpointPolicy::PreferRecompute,
        "MUST_OFFLOAD" => CheckpointPolicy::MustOffload,
        _ => return None,
    })
}

/// A policy's answer: a `CheckpointPolicy` member (by name) or a bool (True keeps).
fn extract_decision(obj: &Bound<'_, PyAny>) -> PyResult<CheckpointPolicy> {
    if let Ok(b) = obj.extract::<bool>() {
        return Ok(if b {
            CheckpointPolicy::MustSave
        } else {
            CheckpointPolicy::PreferRecompute
        });
    }
    let name: Option<String> = obj.getattr("name").ok().and_then(|n| n.extract().ok());
    name.as_deref().and_then(decision_of).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "checkpoint policy: a policy must return a CheckpointPolicy (or a bool), got {}",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

#[pymethods]
impl PySavePolicy {
    /// A built-in policy: `kind` one of `everything_saveable`, `nothing_saveable`,
    /// `dots_saveable`, `save_only_these_names`, `offload_these_names` (the last two with
    /// `names`).
    #[new]
    #[pyo3(signature = (kind, names=Vec::new()))]
    fn new(kind: &str, names: Vec<String>) -> PyResult<Self> {
        Ok(PySavePolicy(match kind {
            "everything_saveable" => SavePolicy::EverythingSaveable,
            "nothing_saveable" => SavePolicy::NothingSaveable,
            "dots_saveable" => SavePolicy::DotsSaveable,
            "save_only_these_names" => SavePolicy::SaveOnlyTheseNames(names),
            "offload_these_names" => SavePolicy::OffloadTheseNames(names),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "checkpoint policy: unknown policy {kind:?}"
                )))
            }
        }))
    }

    /// A policy that calls `fn(op_name, output)` for each op output inside a checkpoint
    /// (`op_name` is the tag for a `checkpoint_name` tensor); it returns a `CheckpointPolicy`
    /// or a bool.
    #[staticmethod]
    fn from_callable(f: PyObject) -> Self {
        let f = Arc::new(f);
        PySavePolicy(SavePolicy::Custom(Arc::new(
            move |q: &PolicyQuery<'_>| -> remat_core::Result<CheckpointPolicy> {
                Python::with_gil(|py| {
                    let out = f
                        .call1(py, (q.op, wrap(q.output.clone())))
                        .map_err(callback_error)?;
                    extract_decision(out.bind(py)).map_err(callback_error)
                })
            },
        )))
    }

    fn __repr__(&self) -> String {
        format!("<checkpoint policy {:?}>", self.0)
    }
}

/// The policy of a `policy=` argument (None, a `_SavePolicy`, or a callable).
pub fn policy_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<SavePolicy>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(p) = obj.downcast::<PySavePolicy>() {
        return Ok(Some(p.get().0.clone()));
    }
    if obj.is_callable() {
        return Ok(Some(PySavePolicy::from_callable(obj.clone().unbind()).0));
    }
    Err(PyTypeError::new_err(format!(
        "policy must be one of remat.checkpoint_policies or a callable (op_name, output) -> \
         CheckpointPolicy, got {}",
        obj.get_type().name()?
    )))
}

/// Tag a tensor with a name for selective checkpoint policies.
///
/// Returns a view of ``x`` (same values and storage; the gradient passes through unchanged) whose
/// producing op is named ``name``. Inside a checkpoint, ``save_only_these_names(name)`` keeps it,
/// ``offload_these_names(name)`` keeps it in host memory, and a callable policy sees ``name`` as
/// its ``op_name``. Outside a checkpoint the tag changes nothing.
///
/// Parameters
/// ----------
/// x : Tensor or array_like
///     The tensor to tag.
/// name : str
///     The tag, not empty.
///
/// Returns
/// -------
/// Tensor
///     A view of ``x`` carrying the tag.
///
/// Raises
/// ------
/// ValueError
///     When ``name`` is empty.
/// TypeError
///     When ``name`` is not a str.
///
/// Examples
/// --------
/// >>> x = remat.tensor([0.0, 1.0], requires_grad=True)
/// >>> remat.checkpoint_name(x, "h")
/// tensor([0., 1.], grad_fn=<checkpoint_name>)
/// >>> seen = []
/// >>> def record(op_name, output):
/// ...     seen.append(op_name)
/// ...     return op_name == "h"
/// >>> def f(t):
/// ...     h = remat.checkpoint_name(remat.sin(t), "h")
/// ...     return remat.cos(h).sum()
/// >>> remat.checkpoint(f, x, policy=record).backward()
/// >>> seen
/// ['sin', 'h', 'cos', 'sum']
/// >>> x.grad.shape
/// (2,)
#[pyfunction]
fn checkpoint_name(py: Python<'_>, x: &Bound<'_, PyAny>, name: &str) -> PyResult<PyTensor> {
    let t = convert::extract_tensor("checkpoint_name", x)?;
    run(py, heavy(&[]), || ops::checkpoint_name(&t, name)).map(wrap)
}

/// Register the names of this file on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySavePolicy>()?;
    m.add_function(wrap_pyfunction!(checkpoint_name, m)?)?;
    Ok(())
}
