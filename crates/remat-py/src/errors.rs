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
use remat_core::{Error, ShapeKind};
use std::cell::RefCell;

create_exception!(
    remat,
    ShapeError,
    PyValueError,
    "Shapes, axes or indices that do not fit the op.

A subclass of ``ValueError``. Raised, for example, when operands do not broadcast, a ``reshape``
changes the number of elements, an axis is out of range, the inner sizes of a matrix product
disagree, a loss's input and target differ in shape, or nested lists are ragged.
``IndexingError`` (a bad index in ``t[...]``) and ``DimensionError`` (an axis argument out of
range) are subclasses, both also ``IndexError``s.

Parameters
----------
*args : object
    The message (and any further values), kept in ``args``; ``str(e)`` is the message.

Raises
------
TypeError
    When given keyword arguments, as every built-in exception.

Examples
--------
>>> try:
...     remat.ones(2, 3) + remat.ones(4)
... except remat.ShapeError as e:
...     print(e)
add: shapes (2, 3) and (4,) cannot be broadcast together
>>> issubclass(remat.ShapeError, ValueError)
True"
);
create_exception!(
    remat,
    DTypeError,
    PyTypeError,
    "A dtype that the op does not accept.

A subclass of ``TypeError``. Raised, for example, by a float-only op (``matmul``, a convolution,
a pooling, a loss) on an integer tensor, by a ``dtype=`` argument that remat does not support
(it supports float32, float64, int64, int32 and bool), by negating a bool tensor, or by data
that holds no numbers.

Parameters
----------
*args : object
    The message (and any further values), kept in ``args``; ``str(e)`` is the message.

Raises
------
TypeError
    When given keyword arguments, as every built-in exception.

Examples
--------
>>> try:
...     remat.zeros(2, dtype='complex64')
... except remat.DTypeError as e:
...     print(e)
dtype: remat supports float32, float64, bfloat16, float16, int64, int32 and bool, got 'complex64'
>>> issubclass(remat.DTypeError, TypeError)
True"
);
create_exception!(
    remat,
    DeviceError,
    PyRuntimeError,
    "A device that is unknown, unavailable, or mixed within one op.

A subclass of ``RuntimeError``. Raised for an unknown device string, for a CUDA device on a
machine without a usable GPU (or an index beyond its GPUs), and for an op whose tensors live on
different devices.

Parameters
----------
*args : object
    The message (and any further values), kept in ``args``; ``str(e)`` is the message.

Raises
------
TypeError
    When given keyword arguments, as every built-in exception.

Examples
--------
>>> try:
...     remat.ones(2, device='tpu')
... except remat.DeviceError as e:
...     print(type(e).__name__)
DeviceError
>>> issubclass(remat.DeviceError, RuntimeError)
True"
);
create_exception!(
    remat,
    GraphError,
    PyRuntimeError,
    "Misuse of the autograd graph.

A subclass of ``RuntimeError``. Raised, for example, by ``backward()`` on a non-scalar output
without a gradient, by a second backward through a graph whose saved tensors were freed (pass
``retain_graph=True`` to the first), or by backward from a tensor that does not require grad.

Parameters
----------
*args : object
    The message (and any further values), kept in ``args``; ``str(e)`` is the message.

Raises
------
TypeError
    When given keyword arguments, as every built-in exception.

Examples
--------
>>> x = remat.ones(2, requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> try:
...     y.backward()
... except remat.GraphError as e:
...     print(type(e).__name__)
GraphError
>>> try:
...     (x * 2).backward()
... except remat.GraphError as e:
...     print(e)
backward: grad can be implicitly created only for scalar outputs, but the output has
shape (2,); pass a gradient of that shape"
);
create_exception!(
    remat,
    CheckpointError,
    PyRuntimeError,
    "A checkpoint whose recompute does not match its forward, or a failed recompute.

A subclass of ``RuntimeError``, raised during backward. A checkpointed function (or op) run
again must produce saved tensors of the same shapes and dtypes as in its forward: one that
depends on Python state that changed does not. Also raised when a recompute fails in the engine,
or when rematerialising under a memory limit needs an input that was freed. An exception that
the Python function itself raises while being recomputed is re-raised unchanged instead.

Parameters
----------
*args : object
    The message (and any further values), kept in ``args``; ``str(e)`` is the message.

Raises
------
TypeError
    When given keyword arguments, as every built-in exception.

Examples
--------
>>> calls = []
>>> def f(x):
...     calls.append(1)
...     return x[: len(calls)] * 2
>>> x = remat.ones(3, requires_grad=True)
>>> y = remat.checkpoint(f, x)
>>> try:
...     y.sum().backward()
... except remat.CheckpointError as e:
...     print(type(e).__name__)
CheckpointError"
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
static DIMENSION_ERROR: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// The docstring of `remat.IndexingError`.
const INDEXING_ERROR_DOC: &str = "An index that does not fit the tensor's shape in ``t[...]``.

Both an ``IndexError`` (as Python and NumPy users expect: a ``for`` loop over ``__getitem__``
stops on it) and a ``ShapeError``. Raised when reading or writing ``t[...]`` with an integer (or
index tensor) out of bounds, or with more indices than ``t`` has axes.

Parameters
----------
*args : object
    The message (and any further values), kept in ``args``; ``str(e)`` is the message.

Raises
------
TypeError
    When given keyword arguments, as every built-in exception.

Examples
--------
>>> t = remat.arange(3)
>>> try:
...     t[5]
... except remat.IndexingError as e:
...     print(e)
index: index 5 is out of bounds for axis 0 with size 3
>>> issubclass(remat.IndexingError, IndexError), issubclass(remat.IndexingError, remat.ShapeError)
(True, True)";

/// The docstring of `remat.DimensionError`.
const DIMENSION_ERROR_DOC: &str = "A dimension (axis) argument out of range for the tensor.

Both a ``ShapeError`` (as every other shape problem, so existing ``except remat.ShapeError``
code keeps catching it) and an ``IndexError`` (what PyTorch raises: \"Dimension out of
range\"). Raised by every op that takes an axis (``dim=``, ``axis=``, ``sum``, ``softmax``,
``transpose``, ``unsqueeze``, ``cat``, ``stack``, ``index_select``, ...) when it is not in
``[-ndim, ndim)``.

Parameters
----------
*args : object
    The message (and any further values), kept in ``args``; ``str(e)`` is the message.

Raises
------
TypeError
    When given keyword arguments, as every built-in exception.

Examples
--------
>>> try:
...     remat.ones(2, 3).sum(dim=2)
... except remat.DimensionError as e:
...     print(e)
sum: axis 2 is out of bounds for a tensor of 2 dimensions
>>> issubclass(remat.DimensionError, IndexError), issubclass(remat.DimensionError, remat.ShapeError)
(True, True)";

/// A Python class `name(ShapeError, IndexError)` in module `remat` with docstring `doc`,
/// made once and kept in `cell`. Built with `type()` because PyO3's `create_exception!`
/// takes a single base.
fn shape_and_index_error<'py>(
    py: Python<'py>,
    cell: &'static GILOnceCell<Py<PyType>>,
    name: &str,
    doc: &str,
) -> PyResult<&'py Bound<'py, PyType>> {
    cell.get_or_try_init(py, || {
        let bases = PyTuple::new(
            py,
            [py.get_type::<ShapeError>(), py.get_type::<PyIndexError>()],
        )?;
        let ns = PyDict::new(py);
        ns.set_item("__module__", "remat")?;
        ns.set_item("__doc__", doc)?;
        let ty = py
            .get_type::<PyType>()
            .call1((name, bases, ns))?
            .downcast_into::<PyType>()?;
        Ok::<_, PyErr>(ty.unbind())
    })
    .map(|t| t.bind(py))
}

/// `remat.IndexingError(ShapeError, IndexError)`: a bad index in `t[...]`. It is an
/// IndexError as Python and NumPy users expect (`for` loops over `__getitem__` stop on it),
/// and a ShapeError like every other shape mismatch.
pub fn indexing_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    shape_and_index_error(py, &INDEXING_ERROR, "IndexingError", INDEXING_ERROR_DOC)
}

/// `remat.DimensionError(ShapeError, IndexError)`: an axis argument out of range
/// (`ShapeKind::DimOutOfRange`), an IndexError as PyTorch's "Dimension out of range" and a
/// ShapeError as before it existed.
pub fn dimension_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    shape_and_index_error(py, &DIMENSION_ERROR, "DimensionError", DIMENSION_ERROR_DOC)
}

/// A `PyErr` of the class `ty` (or the error making the class) with `msg`.
fn raise_as(ty: PyResult<&Bound<'_, PyType>>, msg: String) -> PyErr {
    match ty {
        Ok(ty) => PyErr::from_type(ty.clone(), msg),
        Err(err) => err,
    }
}

/// Like `to_pyerr`, but shape errors become `IndexingError` (for `__getitem__` and the index
/// ops), except an axis out of range, which stays a `DimensionError` (both are IndexErrors).
pub fn to_index_pyerr(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Shape {
            kind: ShapeKind::Mismatch,
            ..
        } => raise_as(indexing_error_type(py), e.to_string()),
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
        Error::Shape {
            kind: ShapeKind::DimOutOfRange,
            ..
        } => Python::with_gil(|py| raise_as(dimension_error_type(py), msg)),
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
    m.add("DimensionError", dimension_error_type(py)?)?;
    Ok(())
}
