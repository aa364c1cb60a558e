//! Functions and `Tensor` methods over remat-core's `ops::composites`: `take_along_dim`,
//! `masked_select`, `count_nonzero`, `nan_to_num`, `addcmul`, `addcdiv` (each a function and
//! a method sharing one docstring) and the functions `var_mean` / `std_mean`; and
//! `index_add` (`ops::index_add`) with its in-place `Tensor.index_add_`.

use crate::args;
use crate::convert;
use crate::errors::to_pyerr;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use remat_core::{ops, Tensor};

macro_rules! take_along_dim_doc {
    () => {
        r#"The elements at per-position indices along an axis, the operands broadcast over the others.

As PyTorch's ``take_along_dim`` (NumPy's ``take_along_axis``): ``gather`` with broadcasting,
e.g. the values at ``argsort`` or ``argmax(keepdim=True)`` positions. With ``dim=None`` it
takes from the flattened input at the flattened indices. Differentiable in ``input``.
``Tensor.take_along_dim(indices, dim=None)`` is the method form.

Parameters
----------
input : Tensor or array_like
    The tensor to take from.
indices : Tensor
    int64/int32 positions along ``dim``, with as many axes as ``input``.
dim : int, optional
    The axis. Default: ``None`` (the flattened tensors).

Returns
-------
Tensor
    The broadcast shape, with ``indices``' extent along ``dim``.

Raises
------
ShapeError
    When the ranks differ, the other axes do not broadcast, or an index is out of range.
DTypeError
    When ``indices`` is not an integer tensor.

Examples
--------
>>> x = remat.tensor([[10, 30, 20], [60, 40, 50]])
>>> remat.take_along_dim(x, x.argsort(dim=1), dim=1)
tensor([[10, 20, 30],
        [40, 50, 60]])
>>> x.take_along_dim(remat.tensor([[0], [2]]), 1)
tensor([[10],
        [50]])"#
    };
}

#[doc = take_along_dim_doc!()]
#[pyfunction]
#[pyo3(signature = (input, indices, dim=None))]
fn take_along_dim(
    input: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    dim: Option<isize>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("take_along_dim", input)?;
    let i = convert::extract_tensor("take_along_dim", indices)?;
    ops::take_along_dim(&x, &i, dim).map(wrap).map_err(to_pyerr)
}

macro_rules! masked_select_doc {
    () => {
        r#"The elements where a bool mask is true, as a 1-d tensor (C order).

As PyTorch's ``masked_select``: the mask broadcasts with the input (``x[mask]`` needs the
mask's shape to match). Differentiable in ``input``. ``Tensor.masked_select(mask)`` is the
method form.

Parameters
----------
input : Tensor or array_like
    The tensor to select from.
mask : Tensor
    A bool tensor broadcastable with ``input``.

Returns
-------
Tensor
    A 1-d tensor of the selected elements.

Raises
------
DTypeError
    When ``mask`` is not a bool tensor.
ShapeError
    When the shapes do not broadcast.

Examples
--------
>>> x = remat.tensor([[1, 2], [3, 4]])
>>> remat.masked_select(x, x > 2)
tensor([3, 4])
>>> x.masked_select(remat.tensor([True, False]))
tensor([1, 3])"#
    };
}

#[doc = masked_select_doc!()]
#[pyfunction]
#[pyo3(signature = (input, mask))]
fn masked_select(input: &Bound<'_, PyAny>, mask: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("masked_select", input)?;
    let m = convert::extract_tensor("masked_select", mask)?;
    ops::masked_select(&x, &m).map(wrap).map_err(to_pyerr)
}

macro_rules! count_nonzero_doc {
    () => {
        r#"How many elements are nonzero (NaN counts), over axes, as int64.

As PyTorch's ``count_nonzero``. ``Tensor.count_nonzero(dim=None)`` is the method form.

Parameters
----------
input : Tensor or array_like
    The tensor to count in (any dtype).
dim : int or tuple of int, optional
    The axes to count over (removed). Default: ``None`` (all: a 0-d result).

Returns
-------
Tensor
    int64 counts.

Raises
------
ShapeError
    When an axis is out of range or repeated.

Examples
--------
>>> x = remat.tensor([[0, 1, 2], [0, 0, 3]])
>>> remat.count_nonzero(x)
tensor(3)
>>> x.count_nonzero(dim=1)
tensor([2, 1])"#
    };
}

fn count_nonzero_impl(x: &Tensor, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
    let dims = args::axes("count_nonzero", dim)?;
    ops::count_nonzero(x, dims.as_deref()).map_err(to_pyerr)
}

#[doc = count_nonzero_doc!()]
#[pyfunction]
#[pyo3(signature = (input, dim=None))]
fn count_nonzero(input: &Bound<'_, PyAny>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("count_nonzero", input)?;
    count_nonzero_impl(&x, dim).map(wrap)
}

macro_rules! nan_to_num_doc {
    () => {
        r#"NaN, +inf and -inf replaced by finite numbers.

As PyTorch's ``nan_to_num``: NaN becomes ``nan``, +inf ``posinf`` and -inf ``neginf`` (by
default the dtype's largest and lowest finite values). Integer and bool tensors come back
unchanged. The gradient flows to the elements kept. ``Tensor.nan_to_num(...)`` is the method
form.

Parameters
----------
input : Tensor or array_like
    The tensor.
nan : float, optional
    The value for NaN. Default: ``0.0``.
posinf : float, optional
    The value for +inf. Default: ``None`` (the dtype's largest finite value).
neginf : float, optional
    The value for -inf. Default: ``None`` (the dtype's lowest finite value).

Returns
-------
Tensor
    A tensor of the input's shape and dtype.

Raises
------
TypeError
    When ``input`` cannot be made a tensor.

Examples
--------
>>> x = remat.tensor([float("nan"), float("inf"), -1.0])
>>> remat.nan_to_num(x, posinf=9.0)
tensor([ 0.,  9., -1.])
>>> x.nan_to_num(nan=-7.0, posinf=1.0)
tensor([-7.,  1., -1.])"#
    };
}

#[doc = nan_to_num_doc!()]
#[pyfunction]
#[pyo3(signature = (input, nan=0.0, posinf=None, neginf=None))]
fn nan_to_num(
    input: &Bound<'_, PyAny>,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("nan_to_num", input)?;
    ops::nan_to_num(&x, nan, posinf, neginf)
        .map(wrap)
        .map_err(to_pyerr)
}

macro_rules! addc_doc {
    ($name:literal, $formula:literal, $example:literal) => {
        concat!(
            "``input + value * ",
            $formula,
            r#"`` with broadcasting.

As PyTorch's ``"#,
            $name,
            r#"`` (used by hand-written optimizers). ``Tensor."#,
            $name,
            r#"(tensor1, tensor2, value=1)`` is the method form. Differentiable in all three.

Parameters
----------
input : Tensor or array_like
    The tensor added to.
tensor1 : Tensor or array_like
    The first factor.
tensor2 : Tensor or array_like
    The second factor (the divisor for ``addcdiv``).
value : float, optional
    The scale of the product or quotient. Default: ``1``.

Returns
-------
Tensor
    The broadcast shape and promoted dtype.

Raises
------
ShapeError
    When the shapes do not broadcast.
DTypeError
    For ``addcdiv``, when both ``tensor1`` and ``tensor2`` are integer tensors.

Examples
--------
"#,
            $example
        )
    };
}

/// The docstrings of `addcmul` and `addcdiv` (function and method).
macro_rules! addcmul_doc {
    () => {
        addc_doc!("addcmul", "tensor1 * tensor2", ">>> remat.addcmul(remat.tensor([1.0, 1.0]), remat.tensor([2.0, 3.0]), remat.tensor([4.0, 5.0]), value=0.5)\ntensor([5.0000, 8.5000])\n>>> remat.tensor([0, 1]).addcmul(remat.tensor([2, 2]), remat.tensor([3, 4]))\ntensor([6, 9])")
    };
}
macro_rules! addcdiv_doc {
    () => {
        addc_doc!("addcdiv", "tensor1 / tensor2", ">>> remat.addcdiv(remat.tensor([1.0, 1.0]), remat.tensor([2.0, 3.0]), remat.tensor([4.0, 2.0]))\ntensor([1.5000, 2.5000])\n>>> remat.tensor([0.0]).addcdiv(remat.tensor([1.0]), remat.tensor([4.0]), value=2)\ntensor([0.5000])")
    };
}

fn addc(
    name: &str,
    input: &Tensor,
    t1: &Bound<'_, PyAny>,
    t2: &Bound<'_, PyAny>,
    value: f64,
) -> PyResult<Tensor> {
    let a = convert::extract_tensor(name, t1)?;
    let b = convert::extract_tensor(name, t2)?;
    if name == "addcmul" {
        ops::addcmul(input, &a, &b, value)
    } else {
        ops::addcdiv(input, &a, &b, value)
    }
    .map_err(to_pyerr)
}

#[doc = addcmul_doc!()]
#[pyfunction]
#[pyo3(signature = (input, tensor1, tensor2, *, value=1.0))]
fn addcmul(
    input: &Bound<'_, PyAny>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: f64,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("addcmul", input)?;
    addc("addcmul", &x, tensor1, tensor2, value).map(wrap)
}

#[doc = addcdiv_doc!()]
#[pyfunction]
#[pyo3(signature = (input, tensor1, tensor2, *, value=1.0))]
fn addcdiv(
    input: &Bound<'_, PyAny>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: f64,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("addcdiv", input)?;
    addc("addcdiv", &x, tensor1, tensor2, value).map(wrap)
}

macro_rules! moments_doc {
    ($name:literal, $first:literal, $example:literal) => {
        concat!(
            "The ",
            $first,
            r#" and the mean over axes, as a pair (PyTorch's ``"#,
            $name,
            r#"``).

Both with ``correction`` as ``remat.var``/``remat.std`` take it (1: Bessel's unbiased
estimate). Differentiable.

Parameters
----------
input : Tensor or array_like
    A float tensor.
dim : int or tuple of int, optional
    The axes to reduce. Default: ``None`` (all).
correction : float, optional
    Subtracted from the element count in the variance's divisor. Default: ``1``.
keepdim : bool, optional
    Keep the reduced axes with extent 1. Default: ``False``.

Returns
-------
tuple of Tensor
    ``("#,
            $first,
            r#", mean)``.

Raises
------
ShapeError
    When an axis is out of range or repeated.
DTypeError
    When ``input`` is an integer or bool tensor.

Examples
--------
"#,
            $example
        )
    };
}

fn moments<'py>(
    py: Python<'py>,
    name: &str,
    input: &Bound<'py, PyAny>,
    dim: Option<&Bound<'py, PyAny>>,
    correction: f64,
    keepdim: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let x = convert::extract_tensor(name, input)?;
    let dims = args::axes(name, dim)?;
    let (a, m) = if name == "var_mean" {
        ops::var_mean(&x, dims.as_deref(), correction, keepdim)
    } else {
        ops::std_mean(&x, dims.as_deref(), correction, keepdim)
    }
    .map_err(to_pyerr)?;
    PyTuple::new(py, [wrap(a), wrap(m)])
}

#[doc = moments_doc!("var_mean", "variance", ">>> remat.var_mean(remat.tensor([1.0, 2.0, 3.0, 4.0]))\n(tensor(1.6667), tensor(2.5000))\n>>> v, m = remat.var_mean(remat.tensor([[1.0, 3.0], [2.0, 2.0]]), dim=1, correction=0)\n>>> v\ntensor([1., 0.])")]
#[pyfunction]
#[pyo3(signature = (input, dim=None, *, correction=1.0, keepdim=false))]
fn var_mean<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    dim: Option<&Bound<'py, PyAny>>,
    correction: f64,
    keepdim: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    moments(py, "var_mean", input, dim, correction, keepdim)
}

#[doc = moments_doc!("std_mean", "standard deviation", ">>> remat.std_mean(remat.tensor([1.0, 3.0]))\n(tensor(1.4142), tensor(2.))\n>>> s, m = remat.std_mean(remat.tensor([[1.0, 3.0]]), dim=1, keepdim=True)\n>>> m\ntensor([[2.]])")]
#[pyfunction]
#[pyo3(signature = (input, dim=None, *, correction=1.0, keepdim=false))]
fn std_mean<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    dim: Option<&Bound<'py, PyAny>>,
    correction: f64,
    keepdim: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    moments(py, "std_mean", input, dim, correction, keepdim)
}

macro_rules! index_add_doc {
    () => {
        r#"A copy of the input with ``alpha * source``'s slices added at positions along an axis.

As PyTorch's ``index_add``: slice ``j`` of ``source`` along ``dim`` is added at position
``index[j]``; repeated positions accumulate (in order, deterministic on CPU and CUDA).
Differentiable in ``input`` and ``source``. ``Tensor.index_add(dim, index, source, alpha=1)``
is the method form and ``Tensor.index_add_(...)`` the in-place one (returns the tensor).

Parameters
----------
input : Tensor or array_like
    The tensor added to.
dim : int
    The axis.
index : Tensor
    A 1-d int64/int32 tensor of positions along ``dim`` (``source.shape[dim]`` of them).
source : Tensor or array_like
    The input's shape except along ``dim``.
alpha : float, optional
    The scale of ``source``. Default: ``1``.

Returns
-------
Tensor
    A tensor of the input's shape.

Raises
------
ShapeError
    When ``dim`` is out of range or ``source`` does not fit.
IndexError
    When a position is out of range.
DTypeError
    When ``index`` is not an integer tensor.

Examples
--------
>>> x = remat.zeros(3, 2, dtype=remat.int64)
>>> remat.index_add(x, 0, remat.tensor([0, 2, 0]), remat.tensor([[1, 1], [2, 2], [3, 3]]))
tensor([[4, 4],
        [0, 0],
        [2, 2]])
>>> remat.ones(2).index_add(0, remat.tensor([1]), remat.tensor([5.0]), alpha=2)
tensor([ 1., 11.])"#
    };
}

/// `index_add`'s index and source as tensors.
fn index_add_operands(
    index: &Bound<'_, PyAny>,
    source: &Bound<'_, PyAny>,
) -> PyResult<(Tensor, Tensor)> {
    Ok((
        convert::extract_tensor("index_add", index)?,
        convert::extract_tensor("index_add", source)?,
    ))
}

#[doc = index_add_doc!()]
#[pyfunction]
#[pyo3(signature = (input, dim, index, source, *, alpha=1.0))]
fn index_add(
    input: &Bound<'_, PyAny>,
    dim: isize,
    index: &Bound<'_, PyAny>,
    source: &Bound<'_, PyAny>,
    alpha: f64,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("index_add", input)?;
    let (i, s) = index_add_operands(index, source)?;
    ops::index_add(&x, dim, &i, &s, alpha)
        .map(wrap)
        .map_err(to_pyerr)
}

#[pymethods]
impl PyTensor {
    #[doc = index_add_doc!()]
    #[pyo3(name = "index_add", signature = (dim, index, source, *, alpha=1.0))]
    fn index_add_method(
        &self,
        dim: isize,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
        alpha: f64,
    ) -> PyResult<PyTensor> {
        let (i, s) = index_add_operands(index, source)?;
        ops::index_add(&self.inner, dim, &i, &s, alpha)
            .map(wrap)
            .map_err(to_pyerr)
    }
    /// ``alpha * source``'s slices added in place at positions along an axis (``index_add``'s
    /// in-place form); returns this tensor.
    ///
    /// Repeated positions accumulate. On a tensor a graph made, the write is recorded (as
    /// PyTorch's), so gradients flow to the old values and to ``source``.
    ///
    /// Parameters
    /// ----------
    /// dim : int
    ///     The axis.
    /// index : Tensor
    ///     A 1-d int64/int32 tensor of positions along ``dim``.
    /// source : Tensor or array_like
    ///     This tensor's shape except ``index``'s length along ``dim``.
    /// alpha : float, optional
    ///     The scale of ``source``. Default: ``1``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``dim`` or a position is out of range or ``source`` does not fit.
    /// GraphError
    ///     When this tensor is a leaf that requires grad (under grad mode).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.zeros(3, dtype=remat.int64)
    /// >>> x.index_add_(0, remat.tensor([2, 2]), remat.tensor([1, 4]))
    /// tensor([0, 0, 5])
    #[pyo3(name = "index_add_", signature = (dim, index, source, *, alpha=1.0))]
    fn index_add_inplace<'py>(
        slf: Bound<'py, Self>,
        dim: isize,
        index: &Bound<'py, PyAny>,
        source: &Bound<'py, PyAny>,
        alpha: f64,
    ) -> PyResult<Bound<'py, Self>> {
        let (i, s) = index_add_operands(index, source)?;
        crate::inplace::in_place(slf, |t| {
            ops::update_with_("index_add_", t, &[&i, &s], |old| {
                ops::index_add(old, dim, &i, &s, alpha)
            })
        })
    }
    #[doc = take_along_dim_doc!()]
    #[pyo3(name = "take_along_dim", signature = (indices, dim=None))]
    fn take_along_dim_method(
        &self,
        indices: &Bound<'_, PyAny>,
        dim: Option<isize>,
    ) -> PyResult<PyTensor> {
        let i = convert::extract_tensor("take_along_dim", indices)?;
        ops::take_along_dim(&self.inner, &i, dim)
            .map(wrap)
            .map_err(to_pyerr)
    }
    #[doc = masked_select_doc!()]
    #[pyo3(name = "masked_select")]
    fn masked_select_method(&self, mask: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let m = convert::extract_tensor("masked_select", mask)?;
        ops::masked_select(&self.inner, &m)
            .map(wrap)
            .map_err(to_pyerr)
    }
    #[doc = count_nonzero_doc!()]
    #[pyo3(name = "count_nonzero", signature = (dim=None))]
    fn count_nonzero_method(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        count_nonzero_impl(&self.inner, dim).map(wrap)
    }
    #[doc = nan_to_num_doc!()]
    #[pyo3(name = "nan_to_num", signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num_method(
        &self,
        nan: f64,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<PyTensor> {
        ops::nan_to_num(&self.inner, nan, posinf, neginf)
            .map(wrap)
            .map_err(to_pyerr)
    }
    #[doc = addcmul_doc!()]
    #[pyo3(name = "addcmul", signature = (tensor1, tensor2, *, value=1.0))]
    fn addcmul_method(
        &self,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: f64,
    ) -> PyResult<PyTensor> {
        addc("addcmul", &self.inner, tensor1, tensor2, value).map(wrap)
    }
    #[doc = addcdiv_doc!()]
    #[pyo3(name = "addcdiv", signature = (tensor1, tensor2, *, value=1.0))]
    fn addcdiv_method(
        &self,
        tensor1: &Bound<'_, PyAny>,
        tensor2: &Bound<'_, PyAny>,
        value: f64,
    ) -> PyResult<PyTensor> {
        addc("addcdiv", &self.inner, tensor1, tensor2, value).map(wrap)
    }
}

/// Add the composite functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(index_add, m)?)?;
    m.add_function(wrap_pyfunction!(take_along_dim, m)?)?;
    m.add_function(wrap_pyfunction!(masked_select, m)?)?;
    m.add_function(wrap_pyfunction!(count_nonzero, m)?)?;
    m.add_function(wrap_pyfunction!(nan_to_num, m)?)?;
    m.add_function(wrap_pyfunction!(addcmul, m)?)?;
    m.add_function(wrap_pyfunction!(addcdiv, m)?)?;
    m.add_function(wrap_pyfunction!(var_mean, m)?)?;
    m.add_function(wrap_pyfunction!(std_mean, m)?)?;
    Ok(())
}
