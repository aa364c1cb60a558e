//! Python bindings of tensor gradient hooks: `Tensor.register_hook(fn)` (returning a handle
//! with `remove()`), `Tensor.retain_grad()` and `Tensor.retains_grad`. The hook is a Python
//! callable run by the engine during backward, with the GIL taken for the call; an
//! exception it raises surfaces unchanged from `backward`.

use crate::errors::{callback_error, to_pyerr};
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use remat_core::autograd::{GradHook, HookHandle};
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

#[pymethods]
impl PyTensor {
    /// Register `hook(grad) -> Tensor | None`, called with the gradient with respect to this
    /// tensor each time one is computed; a returned tensor replaces the gradient. Returns a
    /// handle whose `remove()` unregisters the hook.
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

    /// Keep this non-leaf tensor's gradient in `.grad` after backward (a no-op on leaves).
    fn retain_grad(&self) -> PyResult<()> {
        self.inner.retain_grad().map_err(to_pyerr)
    }

    /// Whether `retain_grad()` was called on this non-leaf tensor.
    #[getter]
    fn retains_grad(&self) -> bool {
        self.inner.retains_grad()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyHookHandle>()
}
