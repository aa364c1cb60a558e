//! Python bindings of tensor gradient hooks: `Tensor.register_hook(fn)` and
//! `Tensor.register_post_accumulate_grad_hook(fn)` (each returning a handle with `remove()`),
//! `Tensor.retain_grad()` and `Tensor.retains_grad`. The hook is a Python
//! callable run by the engine during backward, with the GIL taken for the call; an
//! exception it raises surfaces unchanged from `backward`.

use crate::errors::{callback_error, to_pyerr};
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;
use remat_core::autograd::{GradHook, HookHandle, PostAccumulateHook};
use remat_core::{Error, Tensor};
use std::sync::Arc;

/// Returned by `Tensor.register_hook`; `remove()` unregisters the hook.
#[pyclass(name = "_TensorHookHandle", module = "remat", frozen)]
pub struct PyHookHandle {
    handle: HookHandle,
}

#[pymethods]
impl PyHookHandle {
    /// Unregister the hook (harmless when already removed).
    fn remove(&self) {
        self.handle.remove();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&self, _a: PyObject, _b: PyObject, _c: PyObject) {
        self.handle.remove();
    }
}

/// A core hook calling `f(grad)`, which returns None or a replacement Tensor.
fn python_hook(f: PyObject) -> GradHook {
    Arc::new(move |g: &Tensor| {
        Python::with_gil(|py| {
            let out = f.call1(py, (wrap(g.clone()),)).map_err(callback_error)?;
            if out.is_none(py) {
                return Ok(None);
            }
            match out.extract::<PyRef<'_, PyTensor>>(py) {
                Ok(t) => {
                    let t = t.inner.clone();
                    if t.shape() != g.shape() {
                        return Err(Error::graph(
                            "register_hook",
                            format!(
                                "hook returned a gradient of shape {:?} for a tensor of shape \
                                 {:?}",
                                t.shape(),
                                g.shape()
                            ),
                        ));
                    }
                    Ok(Some(t))
                }
                Err(_) => Err(callback_error(PyTypeError::new_err(format!(
                    "register_hook: a hook must return None or a Tensor, got {}",
                    out.bind(py)
                        .get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                )))),
            }
        })
    })
}

/// A core post-accumulate hook calling `f(tensor)`, whose result is ignored (as PyTorch's).
///
/// `tensor` is the Python object the hook was registered on (PyTorch passes the parameter
/// itself, so `p is param` holds and attributes set on it are seen), held weakly so that the
/// hook does not keep its own tensor alive; a fresh wrapper stands in once that object is gone.
fn python_post_accumulate_hook(f: PyObject, owner: PyObject) -> PostAccumulateHook {
    Arc::new(move |leaf: &Tensor| {
        Python::with_gil(|py| {
            let alive = owner
                .bind(py)
                .downcast::<PyWeakrefReference>()
                .ok()
                .and_then(|weak| weak.upgrade());
            let arg = match alive {
                Some(obj) => obj.unbind(),
                None => Py::new(py, wrap(leaf.clone()))
                    .map_err(callback_error)?
                    .into_any(),
            };
            f.call1(py, (arg,)).map(|_| ()).map_err(callback_error)
        })
    })
}

#[pymethods]
impl PyTensor {
    /// Register a hook called with this tensor's gradient during backward.
    ///
    /// `hook(grad) -> Tensor | None` runs each time a gradient with respect to this tensor is
    /// computed; a returned tensor replaces the gradient (for the rest of the backward pass and
    /// for `.grad` of a leaf), None keeps it. The returned handle's `remove()` unregisters the
    /// hook (calling it twice is harmless); the handle is also a context manager that removes
    /// the hook on exit. An exception raised by the hook surfaces unchanged from `backward`.
    ///
    /// Parameters
    /// ----------
    /// hook : callable
    ///     Called as `hook(grad)` with a Tensor of this tensor's shape; returns None or a
    ///     Tensor of that same shape.
    ///
    /// Returns
    /// -------
    /// handle
    ///     A handle with a `remove()` method that unregisters the hook.
    ///
    /// Raises
    /// ------
    /// TypeError
    ///     If `hook` is not callable; during backward, if the hook returns something other
    ///     than None or a Tensor.
    /// GraphError
    ///     If this tensor does not require grad; during backward, if the hook returns a tensor
    ///     whose shape differs from the gradient's.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> handle = w.register_hook(lambda g: g * 2)
    /// >>> (w * 3).sum().backward()
    /// >>> w.grad
    /// tensor([6., 6.])
    /// >>> handle.remove()
    /// >>> w.grad = None
    /// >>> (w * 3).sum().backward()
    /// >>> w.grad
    /// tensor([3., 3.])
    fn register_hook(&self, hook: PyObject) -> PyResult<PyHookHandle> {
        Python::with_gil(|py| {
            if !hook.bind(py).is_callable() {
                return Err(PyTypeError::new_err("register_hook: hook must be callable"));
            }
            Ok(())
        })?;
        let handle = self
            .inner
            .register_hook(python_hook(hook))
            .map_err(to_pyerr)?;
        Ok(PyHookHandle { handle })
    }

    /// Register a hook called with this leaf after backward accumulated into its `.grad`.
    ///
    /// `hook(tensor) -> None` runs once per backward that reaches this leaf, right after its
    /// gradient was added into `.grad` (never for `remat.autograd.grad`, which accumulates
    /// nothing), as PyTorch's `register_post_accumulate_grad_hook`. Data-parallel training
    /// starts a gradient bucket's all-reduce from such hooks.
    ///
    /// Parameters
    /// ----------
    /// hook : callable
    ///     Called as `hook(tensor)` with this tensor; its return value is ignored.
    ///
    /// Returns
    /// -------
    /// handle
    ///     A handle with a `remove()` method that unregisters the hook.
    ///
    /// Raises
    /// ------
    /// TypeError
    ///     If `hook` is not callable.
    /// GraphError
    ///     If this tensor does not require grad or is not a leaf.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> seen = []
    /// >>> h = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    /// >>> (w * 3).sum().backward()
    /// >>> seen
    /// [[3.0, 3.0]]
    fn register_post_accumulate_grad_hook(
        slf: &Bound<'_, Self>,
        hook: PyObject,
    ) -> PyResult<PyHookHandle> {
        if !hook.bind(slf.py()).is_callable() {
            return Err(PyTypeError::new_err(
                "register_post_accumulate_grad_hook: hook must be callable",
            ));
        }
        let owner = PyWeakrefReference::new(slf)?.into_any().unbind();
        let handle = slf
            .get()
            .inner
            .register_post_accumulate_grad_hook(python_post_accumulate_hook(hook, owner))
            .map_err(to_pyerr)?;
        Ok(PyHookHandle { handle })
    }

    /// Keep this non-leaf tensor's gradient in `.grad` after backward.
    ///
    /// By default only leaves get a `.grad`; after `retain_grad()` an intermediate tensor's
    /// gradient is stored too (accumulated over backward calls like a leaf's). A no-op on
    /// leaves, which keep their gradient anyway.
    ///
    /// Returns
    /// -------
    /// None
    ///
    /// Raises
    /// ------
    /// GraphError
    ///     If this tensor does not require grad.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> y = w * 3
    /// >>> y.retain_grad()
    /// >>> (y * y).sum().backward()
    /// >>> y.grad
    /// tensor([ 6., 12.])
    /// >>> w.grad
    /// tensor([18., 36.])
    fn retain_grad(&self) -> PyResult<()> {
        self.inner.retain_grad().map_err(to_pyerr)
    }

    /// Whether `retain_grad()` was called on this non-leaf tensor (always False for leaves).
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0], requires_grad=True)
    /// >>> y = w * 2
    /// >>> y.retains_grad
    /// False
    /// >>> y.retain_grad()
    /// >>> y.retains_grad
    /// True
    /// >>> w.retains_grad
    /// False
    #[getter]
    fn retains_grad(&self) -> bool {
        self.inner.retains_grad()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyHookHandle>()
}
