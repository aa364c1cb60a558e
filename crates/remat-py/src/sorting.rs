//! PyTorch's `sort`, `argsort` and `topk` (functions and `Tensor` methods): `sort` and `topk`
//! return the named tuples `remat.return_types.sort(values, indices)` and
//! `remat.return_types.topk(values, indices)`, so they live outside the `tensor_ops!` table
//! (whose rows return one tensor). The ordering is remat-core's `ops::sort` (stable, NaN
//! greatest), so `stable=` is accepted with either value.

use crate::call::{heavy, run};
use crate::convert;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyType;
use remat_core::{ops, Tensor};

static SORT_TYPE: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static TOPK_TYPE: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// `(values, indices)` as the named tuple `remat.return_types.<name>`.
fn pair<'py>(
    py: Python<'py>,
    ty: &'static GILOnceCell<Py<PyType>>,
    name: &str,
    (v, i): (Tensor, Tensor),
) -> PyResult<Bound<'py, PyAny>> {
    ty.import(py, "remat.return_types", name)?
        .call1((wrap(v), wrap(i)))
}

fn sort_impl<'py>(
    py: Python<'py>,
    x: &Tensor,
    dim: isize,
    descending: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let r = run(py, heavy(&[x]), || ops::sort(x, dim, descending))?;
    pair(py, &SORT_TYPE, "sort", r)
}

fn topk_impl<'py>(
    py: Python<'py>,
    x: &Tensor,
    k: i64,
    dim: isize,
    largest: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let k = usize::try_from(k).map_err(|_| {
        crate::errors::to_pyerr(remat_core::Error::value(
            "topk",
            format!("k must be non-negative, got {k}"),
        ))
    })?;
    let r = run(py, heavy(&[x]), || ops::topk(x, k, dim, largest))?;
    pair(py, &TOPK_TYPE, "topk", r)
}

/// The docstring of `remat.sort` and `Tensor.sort`.
macro_rules! sort_doc {
    () => {
        r#"The elements sorted along an axis, with the positions they came from.

As PyTorch's ``sort``: returns the named tuple ``remat.return_types.sort(values, indices)``.
NaN orders above every number (last ascending, first descending) and equal elements keep
their order (the sort is always stable, so ``stable`` changes nothing). ``values`` is
differentiable: the gradient goes back to the position each value came from.

Parameters
----------
input : Tensor or array_like
    The tensor to sort (any dtype).
dim : int, optional
    The axis to sort along. Default: ``-1``.
descending : bool, optional
    Largest first. Default: ``False``.
stable : bool, optional
    Accepted for PyTorch compatibility (the sort is stable either way).

Returns
-------
remat.return_types.sort
    ``(values, indices)``: the sorted tensor and the int64 positions along ``dim``.

Raises
------
ShapeError
    When ``dim`` is out of range for the input.
TypeError
    When ``input`` cannot be made a tensor.

Examples
--------
>>> x = remat.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
>>> remat.sort(x, dim=1)
sort(values=tensor([[1., 2., 3.],
        [0., 5., 5.]]), indices=tensor([[1, 2, 0],
        [0, 1, 2]]))
>>> remat.sort(x, dim=1, descending=True).indices
tensor([[0, 2, 1],
        [1, 2, 0]])"#
    };
}

/// The docstring of `remat.argsort` and `Tensor.argsort`.
macro_rules! argsort_doc {
    () => {
        r#"The int64 positions that sort the elements along an axis (``sort(...).indices``).

Parameters
----------
input : Tensor or array_like
    The tensor to order (any dtype).
dim : int, optional
    The axis to order along. Default: ``-1``.
descending : bool, optional
    Largest first. Default: ``False``.
stable : bool, optional
    Accepted for PyTorch compatibility (the order is stable either way).

Returns
-------
Tensor
    int64 positions along ``dim``, of the input's shape.

Raises
------
ShapeError
    When ``dim`` is out of range for the input.
TypeError
    When ``input`` cannot be made a tensor.

Examples
--------
>>> remat.argsort(remat.tensor([3.0, 1.0, 2.0]))
tensor([1, 2, 0])"#
    };
}

/// The docstring of `remat.topk` and `Tensor.topk`.
macro_rules! topk_doc {
    () => {
        r#"The ``k`` largest (or smallest) elements along an axis, with their positions.

As PyTorch's ``topk``: returns the named tuple ``remat.return_types.topk(values, indices)``,
largest first (smallest first with ``largest=False``). Equal elements come in their order in
the input; ``sorted=False`` is accepted and the result is sorted anyway. ``values`` is
differentiable.

Parameters
----------
input : Tensor or array_like
    The input (any dtype).
k : int
    How many elements to take, at most the axis's length.
dim : int, optional
    The axis. Default: ``-1``.
largest : bool, optional
    The largest (``True``) or the smallest. Default: ``True``.
sorted : bool, optional
    Accepted for PyTorch compatibility (the result is always sorted).

Returns
-------
remat.return_types.topk
    ``(values, indices)`` with ``dim`` of length ``k``; ``indices`` is int64.

Raises
------
ValueError
    When ``k`` is negative or larger than the axis.
ShapeError
    When ``dim`` is out of range for the input.

Examples
--------
>>> x = remat.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.9]])
>>> remat.topk(x, 2)
topk(values=tensor([[0.7000, 0.2000],
        [0.9000, 0.5000]]), indices=tensor([[1, 2],
        [2, 0]]))
>>> remat.topk(x, 1, dim=0, largest=False).indices
tensor([[0, 1, 0]])"#
    };
}

#[doc = sort_doc!()]
#[pyfunction]
#[pyo3(signature = (input, dim=-1, descending=false, stable=false),
       text_signature = "(input, dim=-1, descending=False, stable=False)")]
fn sort<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    dim: isize,
    descending: bool,
    stable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let _ = stable;
    let x = convert::extract_tensor("sort", input)?;
    sort_impl(py, &x, dim, descending)
}

#[doc = argsort_doc!()]
#[pyfunction]
#[pyo3(signature = (input, dim=-1, descending=false, stable=false),
       text_signature = "(input, dim=-1, descending=False, stable=False)")]
fn argsort(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    dim: isize,
    descending: bool,
    stable: bool,
) -> PyResult<PyTensor> {
    let _ = stable;
    let x = convert::extract_tensor("argsort", input)?;
    run(py, heavy(&[&x]), || ops::argsort(&x, dim, descending)).map(wrap)
}

#[doc = topk_doc!()]
#[pyfunction]
#[pyo3(signature = (input, k, dim=-1, largest=true, sorted=true),
       text_signature = "(input, k, dim=-1, largest=True, sorted=True)")]
fn topk<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    k: i64,
    dim: isize,
    largest: bool,
    sorted: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let _ = sorted;
    let x = convert::extract_tensor("topk", input)?;
    topk_impl(py, &x, k, dim, largest)
}

#[pymethods]
impl PyTensor {
    #[doc = sort_doc!()]
    #[pyo3(name = "sort", signature = (dim=-1, descending=false, stable=false),
           text_signature = "(self, dim=-1, descending=False, stable=False)")]
    fn sort_method<'py>(
        &self,
        py: Python<'py>,
        dim: isize,
        descending: bool,
        stable: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = stable;
        sort_impl(py, &self.inner, dim, descending)
    }
    #[doc = argsort_doc!()]
    #[pyo3(name = "argsort", signature = (dim=-1, descending=false, stable=false),
           text_signature = "(self, dim=-1, descending=False, stable=False)")]
    fn argsort_method(
        &self,
        py: Python<'_>,
        dim: isize,
        descending: bool,
        stable: bool,
    ) -> PyResult<PyTensor> {
        let _ = stable;
        let x = &self.inner;
        run(py, heavy(&[x]), || ops::argsort(x, dim, descending)).map(wrap)
    }
    #[doc = topk_doc!()]
    #[pyo3(name = "topk", signature = (k, dim=-1, largest=true, sorted=true),
           text_signature = "(self, k, dim=-1, largest=True, sorted=True)")]
    fn topk_method<'py>(
        &self,
        py: Python<'py>,
        k: i64,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = sorted;
        topk_impl(py, &self.inner, k, dim, largest)
    }
}

/// Add `sort`, `argsort` and `topk` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sort, m)?)?;
    m.add_function(wrap_pyfunction!(argsort, m)?)?;
    m.add_function(wrap_pyfunction!(topk, m)?)?;
    Ok(())
}
