//! PyTorch's `max`/`min` with their three forms (function `remat.max(x, ...)` and method
//! `Tensor.max(...)`): no `dim`, the 0-d maximum (values only); an int `dim`, the named tuple
//! `remat.return_types.max(values, indices)`; a tensor second argument, `maximum(x, other)`.
//! They return a tensor or a tuple, so they live outside the `tensor_ops!` table (whose rows
//! return one tensor). NumPy's `np.max(t)` calls `t.max(axis=None, out=None)`: `axis`,
//! `keepdims` and `out=None` are accepted.

use crate::args::{self, ReduceArgs};
use crate::call::{binary, run, unary};
use crate::convert;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyType;
use remat_core::{ops, Tensor};

static MAX_TYPE: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static MIN_TYPE: GILOnceCell<Py<PyType>> = GILOnceCell::new();

type ValuesFn = fn(&Tensor, Option<&[isize]>, bool) -> remat_core::Result<Tensor>;
type DimFn = fn(&Tensor, isize, bool) -> remat_core::Result<(Tensor, Tensor)>;
type PairFn = fn(&Tensor, &Tensor) -> remat_core::Result<Tensor>;

/// The shared body of `max`/`min` in both forms.
#[allow(clippy::too_many_arguments)]
fn extreme<'py>(
    py: Python<'py>,
    op: &'static str,
    x: &Tensor,
    dim: Option<&Bound<'py, PyAny>>,
    keepdim: bool,
    axis: Option<&Bound<'py, PyAny>>,
    keepdims: Option<bool>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    args::no_out(op, out)?;
    let (values, by_dim, pair, ty): (ValuesFn, DimFn, PairFn, _) = if op == "max" {
        (ops::max, ops::max_dim, ops::maximum, &MAX_TYPE)
    } else {
        (ops::min, ops::min_dim, ops::minimum, &MIN_TYPE)
    };
    if let Some(other) = dim.filter(|d| d.is_instance_of::<PyTensor>()) {
        let b = other.downcast::<PyTensor>()?.get().inner.clone();
        return Ok(Bound::new(py, binary(py, x, &b, pair)?)?.into_any());
    }
    let r = ReduceArgs::new(op, dim, axis, keepdim, keepdims)?;
    match r.single_dim(op)? {
        None => Ok(Bound::new(py, unary(py, x, |x| values(x, None, r.keepdim))?)?.into_any()),
        Some(d) => {
            let heavy = crate::call::heavy(&[x]);
            let (v, i) = run(py, heavy, || by_dim(x, d, r.keepdim))?;
            let t = ty.import(py, "remat.return_types", op)?;
            t.call1((wrap(v), wrap(i)))
        }
    }
}

/// The docstring of `remat.max` and `Tensor.max` (one text, so they cannot
/// drift apart; the method form is `input.max(...)`).
macro_rules! max_doc {
    () => {
        r#"The maximum of all elements, along an axis (with indices), or elementwise.

Three forms, as PyTorch's ``max``:

- ``remat.max(x)``: the largest element, a 0-d tensor (NaN if any element is NaN); tied elements
  share the gradient equally.
- ``remat.max(x, dim)`` with an int ``dim``: the named tuple
  ``remat.return_types.max(values, indices)`` along that axis; ``indices`` (int64) is the first
  position of each maximum (of a NaN, if the slice has one), and the gradient goes to that
  element.
- ``remat.max(x, other)`` with a tensor ``other``: the elementwise ``maximum`` (broadcasting;
  NaN propagates).

``axis`` and ``keepdims`` are NumPy's names of ``dim`` and ``keepdim``, so that ``np.max(t)``
and ``np.max(t, axis=0)`` work.

Parameters
----------
x : Tensor or array_like
    The input.
dim : int or Tensor, optional
    The axis to reduce (negative counts from the end), or a tensor ``other`` for the elementwise
    form. Default: ``None`` (all elements).
keepdim : bool, optional
    Keep the reduced axis (every axis, without ``dim``) with size 1. Default: ``False``.
axis : int, optional
    Keyword-only alias of ``dim``. Default: ``None``.
keepdims : bool, optional
    Keyword-only alias of ``keepdim``. Default: ``None``.
out : None, optional
    Only ``None`` is accepted (NumPy passes it). Default: ``None``.

Returns
-------
Tensor or remat.return_types.max
    A 0-d tensor (all elements), the tuple ``(values, indices)`` (an int ``dim``), or the
    elementwise maximum (a tensor ``other``); ``values`` keep the input's dtype.

Raises
------
ShapeError
    When ``dim`` is out of range, the reduced axis (or the whole tensor) is empty, or ``other``
    does not broadcast.
TypeError
    When ``dim`` is neither an int nor a tensor (a tuple, a float, ...), both ``dim`` and
    ``axis`` are given, or ``out`` is not ``None``.

Examples
--------
>>> x = remat.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 4.0]])
>>> remat.max(x)
tensor(5.)
>>> remat.max(x, dim=1)
max(values=tensor([5., 4.]), indices=tensor([1, 0]))
>>> values, indices = remat.max(x, 0)
>>> indices
tensor([1, 0, 1])
>>> remat.max(x, remat.tensor([3.0, 3.0, 3.0]))
tensor([[3., 5., 3.],
        [4., 3., 4.]])"#
    };
}

#[doc = max_doc!()]
#[pyfunction]
#[pyo3(signature = (x, dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
#[allow(clippy::too_many_arguments)]
fn max<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    dim: Option<&Bound<'py, PyAny>>,
    keepdim: bool,
    axis: Option<&Bound<'py, PyAny>>,
    keepdims: Option<bool>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let x = convert::extract_tensor("max", x)?;
    extreme(py, "max", &x, dim, keepdim, axis, keepdims, out)
}

/// The docstring of `remat.min` and `Tensor.min` (one text, so they cannot
/// drift apart; the method form is `input.min(...)`).
macro_rules! min_doc {
    () => {
        r#"The minimum of all elements, along an axis (with indices), or elementwise.

Three forms, as PyTorch's ``min``:

- ``remat.min(x)``: the smallest element, a 0-d tensor (NaN if any element is NaN); tied
  elements share the gradient equally.
- ``remat.min(x, dim)`` with an int ``dim``: the named tuple
  ``remat.return_types.min(values, indices)`` along that axis; ``indices`` (int64) is the first
  position of each minimum (of a NaN, if the slice has one), and the gradient goes to that
  element.
- ``remat.min(x, other)`` with a tensor ``other``: the elementwise ``minimum`` (broadcasting;
  NaN propagates).

``axis`` and ``keepdims`` are NumPy's names of ``dim`` and ``keepdim``, so that ``np.min(t)``
and ``np.min(t, axis=0)`` work.

Parameters
----------
x : Tensor or array_like
    The input.
dim : int or Tensor, optional
    The axis to reduce (negative counts from the end), or a tensor ``other`` for the elementwise
    form. Default: ``None`` (all elements).
keepdim : bool, optional
    Keep the reduced axis (every axis, without ``dim``) with size 1. Default: ``False``.
axis : int, optional
    Keyword-only alias of ``dim``. Default: ``None``.
keepdims : bool, optional
    Keyword-only alias of ``keepdim``. Default: ``None``.
out : None, optional
    Only ``None`` is accepted (NumPy passes it). Default: ``None``.

Returns
-------
Tensor or remat.return_types.min
    A 0-d tensor (all elements), the tuple ``(values, indices)`` (an int ``dim``), or the
    elementwise minimum (a tensor ``other``); ``values`` keep the input's dtype.

Raises
------
ShapeError
    When ``dim`` is out of range, the reduced axis (or the whole tensor) is empty, or ``other``
    does not broadcast.
TypeError
    When ``dim`` is neither an int nor a tensor (a tuple, a float, ...), both ``dim`` and
    ``axis`` are given, or ``out`` is not ``None``.

Examples
--------
>>> x = remat.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 4.0]])
>>> remat.min(x)
tensor(0.)
>>> remat.min(x, dim=1)
min(values=tensor([1., 0.]), indices=tensor([0, 1]))
>>> values, indices = remat.min(x, 0)
>>> indices
tensor([0, 1, 0])
>>> remat.min(x, remat.tensor([3.0, 3.0, 3.0]))
tensor([[1., 3., 2.],
        [3., 0., 3.]])"#
    };
}

#[doc = min_doc!()]
#[pyfunction]
#[pyo3(signature = (x, dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
#[allow(clippy::too_many_arguments)]
fn min<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    dim: Option<&Bound<'py, PyAny>>,
    keepdim: bool,
    axis: Option<&Bound<'py, PyAny>>,
    keepdims: Option<bool>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let x = convert::extract_tensor("min", x)?;
    extreme(py, "min", &x, dim, keepdim, axis, keepdims, out)
}

#[pymethods]
impl PyTensor {
    #[doc = max_doc!()]
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
    fn max<'py>(
        &self,
        py: Python<'py>,
        dim: Option<&Bound<'py, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'py, PyAny>>,
        keepdims: Option<bool>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        extreme(py, "max", &self.inner, dim, keepdim, axis, keepdims, out)
    }
    #[doc = min_doc!()]
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None, out=None))]
    fn min<'py>(
        &self,
        py: Python<'py>,
        dim: Option<&Bound<'py, PyAny>>,
        keepdim: bool,
        axis: Option<&Bound<'py, PyAny>>,
        keepdims: Option<bool>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        extreme(py, "min", &self.inner, dim, keepdim, axis, keepdims, out)
    }
}

/// Add `max` and `min` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(max, m)?)?;
    m.add_function(wrap_pyfunction!(min, m)?)?;
    Ok(())
}
