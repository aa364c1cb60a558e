//! Python exceptions for the engine's error kinds, and the one conversion from
//! `remat_core::Error` to `PyErr`.
//!
//! Errors raised by Python code that the engine called back (a checkpointed function being
//! recomputed during backward) travel through the engine as `Error::Callback`; the original
//! Python exception is parked in a thread-local so it can be re-raised unchanged.

use pyo3::create_exception;
use pyo3::exceptions::{
    PyBaseException, PyIndexError, PyMemoryError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};
use remat_core::Error;
use std::cell::RefCell;

create_exception!(
    remat,
    ShapeError,
    PyValueError,
    "Shapes (or axes, indices) that do not fit the op."
);
create_exception!(
    remat,
    DTypeError,
    PyTypeError,
    "A dtype the op does not accept."
);
create_exception!(
    remat,
    DeviceError,
    PyRuntimeError,
    "A device that is missing or mixed within one op."
);
create_exception!(
    remat,
    GraphError,
    PyRuntimeError,
    "Misuse of the autograd graph (backward through a freed graph, non-scalar backward, ...)."
);
create_exception!(
    remat,
    CheckpointError,
    PyRuntimeError,
    "A checkpoint whose recompute does not match its forward, or a failed recompute."
);
// Internal (not exported): the engine's `Error::EarlyStop` on its way through Python code.
// A segment's recompute raises it from the op that recomputed the last saved tensor, so it
// unwinds out of the checkpointed function; the engine catches it when the function
// returns. A BaseException, so that `except Exception` in user code does not swallow it.
create_exception!(
    remat,
    _StopRecomputation,
    PyBaseException,
    "Internal: a checkpoint recompute has every tensor it needs and stops early."
);

static INDEXING_ERROR: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// `remat.IndexingError(ShapeError, IndexError)`: a bad index in `t[...]`. It is an
/// IndexError as Python and NumPy users expect (`for` loops over `__getitem__` stop on it),
/// and a ShapeError like every other shape mismatch. Built with `type()` because PyO3's
/// `create_exception!` takes a single base.
pub fn indexing_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    INDEXING_ERROR
        .get_or_try_init(py, || {
            let bases = PyTuple::new(
                py,
                [py.get_type::<ShapeError>(), py.get_type::<PyIndexError>()],
            )?;
            let ns = PyDict::new(py);
            ns.set_item("__module__", "remat")?;
            ns.set_item(
                "__doc__",
                "An index that does not fit the tensor's shape (IndexError and ShapeError).",
            )?;
            let ty = py
                .get_type::<PyType>()
                .call1(("IndexingError", bases, ns))?
                .downcast_into::<PyType>()?;
            Ok::<_, PyErr>(ty.unbind())
        })
        .map(|t| t.bind(py))
}

/// Like `to_pyerr`, but shape errors become `IndexingError` (for `__getitem__`).
pub fn to_index_pyerr(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Shape { .. } => match indexing_error_type(py) {
            Ok(ty) => PyErr::from_type(ty.clone(), e.to_string()),
            Err(err) => err,
        },
        other => to_pyerr(other),
    }
}

thread_local! {
    /// The Python exception behind the latest `Error::Callback` made on this thread, with
    /// the message it was turned into (so a stale entry is never re-raised for another error).
    static STASHED: RefCell<Option<(String, PyErr)>> = const { RefCell::new(None) };
}

/// Turn a Python exception raised inside an engine callback into an engine error. The
/// exception itself is kept so that `to_pyerr` re-raises it unchanged.
pub fn callback_error(err: PyErr) -> Error {
    if Python::with_gil(|py| err.is_instance_of::<_StopRecomputation>(py)) {
        return Error::EarlyStop;
    }
    let message = Python::with_gil(|py| {
        let ty = err
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Exception".to_string());
        format!("{ty}: {}", err.value(py))
    });
    STASHED.with(|s| *s.borrow_mut() = Some((message.clone(), err)));
    Error::Callback { message }
}

/// The Python exception for an engine error.
pub fn to_pyerr(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Shape { .. } => ShapeError::new_err(msg),
        Error::DType { .. } => DTypeError::new_err(msg),
        Error::Device { .. } => DeviceError::new_err(msg),
        Error::Graph { .. } => GraphError::new_err(msg),
        Error::Checkpoint { .. } => CheckpointError::new_err(msg),
        Error::OutOfMemory { .. } | Error::MemoryLimit { .. } => PyMemoryError::new_err(msg),
        Error::Value { .. } => PyValueError::new_err(msg),
        Error::EarlyStop => _StopRecomputation::new_err(msg),
        Error::Callback { message } => {
            let stashed = STASHED.with(|s| s.borrow_mut().take());
            match stashed {
                Some((m, err)) if m == message => err,
                _ => CheckpointError::new_err(message),
            }
        }
    }
}

/// `Result<T, Error>` → `PyResult<T>`.
pub trait CoreResultExt<T> {
    /// Map the engine error to its Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> CoreResultExt<T> for remat_core::Result<T> {
    #[inline]
    fn py(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}

/// Register the exception classes in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ShapeError", py.get_type::<ShapeError>())?;
    m.add("DTypeError", py.get_type::<DTypeError>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("GraphError", py.get_type::<GraphError>())?;
    m.add("CheckpointError", py.get_type::<CheckpointError>())?;
    m.add("IndexingError", indexing_error_type(py)?)?;
    Ok(())
}
