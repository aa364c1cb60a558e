//! PyTorch's rearranging ops as functions and `Tensor` methods: `unbind`, `roll`, `tile`,
//! `repeat_interleave`, `meshgrid`, `diagonal`, `diag`, `trace`, and the `swapaxes` /
//! `swapdims` aliases of a two-axis `transpose`. The ops are remat-core's `ops::rearrange`;
//! this file parses PyTorch's argument forms (an int or a tuple, varargs or one sequence)
//! and shares one docstring between each function and its method.

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::errors::to_pyerr;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use remat_core::{ops, Error, Tensor};

/// `tensors` as a Python tuple of Tensors.
fn tuple_of<'py>(py: Python<'py>, tensors: Vec<Tensor>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, tensors.into_iter().map(wrap))
}

macro_rules! unbind_doc {
    () => {
        r#"The slices of a tensor along an axis, each without that axis (views).

As PyTorch's ``unbind``: ``q, k, v = qkv.unbind(0)``. Gradients flow back through every
slice. ``Tensor.unbind(dim=0)`` is the method form.

Parameters
----------
input : Tensor or array_like
    The tensor to slice (at least 1-d).
dim : int, optional
    The axis to remove. Default: ``0``.

Returns
-------
tuple of Tensor
    ``input.shape[dim]`` tensors of the shape without ``dim``.

Raises
------
ShapeError
    When ``input`` is 0-d or ``dim`` is out of range.

Examples
--------
>>> a, b = remat.unbind(remat.tensor([[1, 2], [3, 4]]))
>>> a, b
(tensor([1, 2]), tensor([3, 4]))
>>> remat.tensor([[1, 2], [3, 4]]).unbind(1)
(tensor([1, 3]), tensor([2, 4]))"#
    };
}

#[doc = unbind_doc!()]
#[pyfunction]
#[pyo3(signature = (input, dim=0))]
fn unbind<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    dim: isize,
) -> PyResult<Bound<'py, PyTuple>> {
    let x = convert::extract_tensor("unbind", input)?;
    tuple_of(py, ops::unbind(&x, dim).map_err(to_pyerr)?)
}

macro_rules! roll_doc {
    () => {
        r#"The elements shifted cyclically along axes: those pushed past the end come back at the start.

As PyTorch's ``roll``. With ``dims=None`` the flattened tensor rolls by ``shifts`` (one
int) and takes the input's shape back. A copy; differentiable.
``Tensor.roll(shifts, dims=None)`` is the method form.

Parameters
----------
input : Tensor or array_like
    The tensor to roll.
shifts : int or tuple of int
    Positions to shift by (negative: towards the start), one per axis of ``dims``.
dims : int or tuple of int, optional
    The axes to roll along. Default: ``None`` (the flattened tensor).

Returns
-------
Tensor
    A tensor of the input's shape and dtype.

Raises
------
ShapeError
    When ``shifts`` and ``dims`` differ in length (or ``dims`` is None and several shifts
    are given), or an axis is out of range.
TypeError
    When a shift or an axis is not an int.

Examples
--------
>>> x = remat.tensor([[1, 2, 3], [4, 5, 6]])
>>> remat.roll(x, 1, 1)
tensor([[3, 1, 2],
        [6, 4, 5]])
>>> x.roll(-1)
tensor([[2, 3, 4],
        [5, 6, 1]])"#
    };
}

fn roll_impl(
    x: &Tensor,
    shifts: &Bound<'_, PyAny>,
    dims: Option<&Bound<'_, PyAny>>,
) -> PyResult<Tensor> {
    let shifts = args::int_list("roll", "shifts", shifts)?;
    let dims = match dims.filter(|d| !d.is_none()) {
        Some(d) => args::int_list("roll", "dims", d)?,
        None => Vec::new(),
    };
    ops::roll(x, &shifts, &dims).map_err(to_pyerr)
}

#[doc = roll_doc!()]
#[pyfunction]
#[pyo3(signature = (input, shifts, dims=None))]
fn roll(
    input: &Bound<'_, PyAny>,
    shifts: &Bound<'_, PyAny>,
    dims: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("roll", input)?;
    roll_impl(&x, shifts, dims).map(wrap)
}

macro_rules! tile_doc {
    () => {
        r#"The tensor tiled ``dims[i]`` times along axis ``i`` (a copy).

As PyTorch's ``tile`` and NumPy's ``tile``: fewer counts than axes are left-padded with 1,
more add leading axes (``repeat`` needs at least one count per axis). Differentiable.
``Tensor.tile(*dims)`` is the method form (several ints or one sequence).

Parameters
----------
input : Tensor or array_like
    The tensor to tile.
dims : tuple of int
    The repeat count per axis (non-negative).

Returns
-------
Tensor
    A tensor whose extents are the input's times the counts.

Raises
------
ShapeError
    When a count is negative.
TypeError
    When a count is not an int.

Examples
--------
>>> remat.tile(remat.tensor([1, 2]), (2,))
tensor([1, 2, 1, 2])
>>> remat.tensor([[1, 2]]).tile(2, 1)
tensor([[1, 2],
        [1, 2]])"#
    };
}

#[doc = tile_doc!()]
#[pyfunction]
#[pyo3(signature = (input, dims))]
fn tile(py: Python<'_>, input: &Bound<'_, PyAny>, dims: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("tile", input)?;
    let reps = args::shape_of("tile", dims)?;
    run(py, heavy(&[&x]), || ops::tile(&x, &reps)).map(wrap)
}

macro_rules! repeat_interleave_doc {
    () => {
        r#"Each element repeated along an axis, the copies next to each other.

As PyTorch's ``repeat_interleave``: ``[1, 2]`` with ``repeats=2`` gives ``[1, 1, 2, 2]``
(``tile``/``repeat`` give ``[1, 2, 1, 2]``); e.g. grouped-query attention's
``k.repeat_interleave(n_rep, dim=1)``. ``repeats`` is one count or one count per element
along ``dim`` (an int tensor or a list). With ``dim=None`` the flattened tensor is repeated.
A copy; differentiable. ``Tensor.repeat_interleave(repeats, dim=None)`` is the method form.

Parameters
----------
input : Tensor or array_like
    The tensor to repeat.
repeats : int or Tensor or list of int
    The count (non-negative), or one count per element along ``dim``.
dim : int, optional
    The axis to repeat along. Default: ``None`` (the flattened tensor).
output_size : int, optional
    The length of the result along ``dim``, accepted for PyTorch compatibility and checked.
    Default: ``None``.

Returns
-------
Tensor
    The input with ``dim`` lengthened to the sum of the counts.

Raises
------
ShapeError
    When ``dim`` is out of range or there are neither one count nor one per element.
ValueError
    When a count is negative or ``output_size`` differs from the result's length.
TypeError
    When ``repeats`` holds something other than ints.

Examples
--------
>>> remat.repeat_interleave(remat.tensor([1, 2]), 2)
tensor([1, 1, 2, 2])
>>> remat.tensor([[1, 2], [3, 4]]).repeat_interleave(remat.tensor([1, 2]), dim=0)
tensor([[1, 2],
        [3, 4],
        [3, 4]])"#
    };
}

fn repeat_interleave_impl(
    x: &Tensor,
    repeats: &Bound<'_, PyAny>,
    dim: Option<isize>,
    output_size: Option<usize>,
) -> PyResult<Tensor> {
    let out = if let Ok(r) = repeats.extract::<i64>() {
        if repeats.is_instance_of::<pyo3::types::PyBool>() {
            return Err(to_pyerr(Error::dtype(
                "repeat_interleave",
                "repeats must be an int, a list of ints or an integer tensor, got a bool",
            )));
        }
        ops::repeat_interleave_counts(x, &[r], dim)
    } else {
        let counts = convert::extract_tensor("repeat_interleave", repeats)?;
        if counts.dtype().is_float() || counts.ndim() > 1 {
            return Err(to_pyerr(Error::dtype(
                "repeat_interleave",
                format!(
                    "repeats must be an int or a 0-d/1-d integer tensor, got a {} tensor of \
                     shape {}",
                    counts.dtype(),
                    remat_core::layout::fmt_shape(counts.shape())
                ),
            )));
        }
        let counts = counts.try_to_vec::<i64>().map_err(to_pyerr)?;
        ops::repeat_interleave_counts(x, &counts, dim)
    }
    .map_err(to_pyerr)?;
    if let Some(n) = output_size {
        let axis = match dim {
            Some(d) => {
                remat_core::layout::normalize_axis("repeat_interleave", d, out.ndim().max(1))
                    .map_err(to_pyerr)?
            }
            None => 0,
        };
        let got = out.shape().get(axis).copied().unwrap_or(1);
        if got != n {
            return Err(to_pyerr(Error::value(
                "repeat_interleave",
                format!("output_size is {n} but the result has {got} along dim {axis}"),
            )));
        }
    }
    Ok(out)
}

#[doc = repeat_interleave_doc!()]
#[pyfunction]
#[pyo3(signature = (input, repeats, dim=None, *, output_size=None))]
fn repeat_interleave(
    input: &Bound<'_, PyAny>,
    repeats: &Bound<'_, PyAny>,
    dim: Option<isize>,
    output_size: Option<usize>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("repeat_interleave", input)?;
    repeat_interleave_impl(&x, repeats, dim, output_size).map(wrap)
}

/// Coordinate grids of 1-D tensors: output ``i`` holds ``tensors[i]`` broadcast over the grid
/// of all their lengths.
///
/// As PyTorch's ``meshgrid``: ``indexing="ij"`` puts tensor ``i`` along axis ``i`` (the
/// default, as PyTorch's, without its warning); ``"xy"`` swaps the first two axes (NumPy's
/// ``meshgrid`` default, Cartesian). The outputs are broadcast views (write to a ``clone``).
/// Differentiable.
///
/// Parameters
/// ----------
/// *tensors : Tensor
///     1-d (or 0-d) tensors on one device, or one list or tuple of them.
/// indexing : str, optional
///     ``"ij"`` or ``"xy"``. Default: ``None`` (``"ij"``).
///
/// Returns
/// -------
/// tuple of Tensor
///     One tensor per input, each of the grid's shape.
///
/// Raises
/// ------
/// ShapeError
///     When an input has more than one axis.
/// ValueError
///     When no tensor is given or ``indexing`` is neither ``"ij"`` nor ``"xy"``.
/// DeviceError
///     When the tensors are on different devices.
///
/// Examples
/// --------
/// >>> ys, xs = remat.meshgrid(remat.tensor([0, 1]), remat.tensor([5, 6, 7]), indexing="ij")
/// >>> ys
/// tensor([[0, 0, 0],
///         [1, 1, 1]])
/// >>> xs
/// tensor([[5, 6, 7],
///         [5, 6, 7]])
#[pyfunction]
#[pyo3(signature = (*tensors, indexing=None))]
fn meshgrid<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyTuple>,
    indexing: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let items: Vec<Bound<'py, PyAny>> = match tensors.len() {
        1 if tensors.get_item(0)?.is_instance_of::<PyList>()
            || tensors.get_item(0)?.is_instance_of::<PyTuple>() =>
        {
            tensors.get_item(0)?.try_iter()?.collect::<PyResult<_>>()?
        }
        _ => tensors.iter().collect(),
    };
    let ts = items
        .iter()
        .map(|t| convert::extract_tensor("meshgrid", t))
        .collect::<PyResult<Vec<_>>>()?;
    tuple_of(
        py,
        ops::meshgrid(&ts, indexing.unwrap_or("ij")).map_err(to_pyerr)?,
    )
}

macro_rules! diagonal_doc {
    () => {
        r#"A diagonal of the matrices spanned by two axes, as a last axis after the others.

As PyTorch's ``diagonal``: ``offset`` > 0 is above the main diagonal, < 0 below. A view when
``dim1``/``dim2`` are the last two axes of a contiguous tensor, else a copy (PyTorch always
returns a view: write through ``remat.diagonal`` only in the first case). Differentiable.
``Tensor.diagonal(offset=0, dim1=0, dim2=1)`` is the method form.

Parameters
----------
input : Tensor or array_like
    A tensor of at least 2 axes.
offset : int, optional
    Which diagonal. Default: ``0``.
dim1 : int, optional
    The first axis of the matrices. Default: ``0``.
dim2 : int, optional
    The second axis of the matrices. Default: ``1``.

Returns
-------
Tensor
    The remaining axes, then the diagonal (empty when ``offset`` is outside the matrices).

Raises
------
ShapeError
    When the input has fewer than 2 axes, or ``dim1``/``dim2`` are out of range or equal.

Examples
--------
>>> x = remat.tensor([[1, 2, 3], [4, 5, 6]])
>>> remat.diagonal(x)
tensor([1, 5])
>>> x.diagonal(1)
tensor([2, 6])"#
    };
}

#[doc = diagonal_doc!()]
#[pyfunction]
#[pyo3(signature = (input, offset=0, dim1=0, dim2=1))]
fn diagonal(
    input: &Bound<'_, PyAny>,
    offset: isize,
    dim1: isize,
    dim2: isize,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("diagonal", input)?;
    ops::diagonal(&x, offset, dim1, dim2)
        .map(wrap)
        .map_err(to_pyerr)
}

macro_rules! diag_doc {
    () => {
        r#"A vector placed on a diagonal of a square matrix of zeros, or a matrix's diagonal.

As PyTorch's ``diag``: for a 1-d input of length n, an (n + |diagonal|)-square matrix with the
input on diagonal ``diagonal``; for a 2-d input, that diagonal as a 1-d copy. Differentiable.
``Tensor.diag(diagonal=0)`` is the method form.

Parameters
----------
input : Tensor or array_like
    A 1-d or 2-d tensor.
diagonal : int, optional
    Which diagonal (> 0 above the main one, < 0 below). Default: ``0``.

Returns
-------
Tensor
    A 2-d tensor (from a vector) or a 1-d tensor (from a matrix).

Raises
------
ShapeError
    When the input is neither 1-d nor 2-d.

Examples
--------
>>> remat.diag(remat.tensor([1, 2]))
tensor([[1, 0],
        [0, 2]])
>>> remat.tensor([[1, 2], [3, 4]]).diag()
tensor([1, 4])"#
    };
}

#[doc = diag_doc!()]
#[pyfunction]
#[pyo3(signature = (input, diagonal=0))]
fn diag(input: &Bound<'_, PyAny>, diagonal: isize) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("diag", input)?;
    ops::diag(&x, diagonal).map(wrap).map_err(to_pyerr)
}

macro_rules! trace_doc {
    () => {
        r#"The sum of the main diagonal of a 2-d tensor.

As PyTorch's ``trace``: a 0-d tensor (integers sum to int64). Differentiable.
``Tensor.trace()`` is the method form.

Parameters
----------
input : Tensor or array_like
    A 2-d tensor (need not be square).

Returns
-------
Tensor
    A 0-d tensor.

Raises
------
ShapeError
    When the input is not 2-d.

Examples
--------
>>> remat.trace(remat.tensor([[1, 2], [3, 4]]))
tensor(5)"#
    };
}

#[doc = trace_doc!()]
#[pyfunction]
#[pyo3(signature = (input,))]
fn trace(input: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("trace", input)?;
    ops::trace(&x).map(wrap).map_err(to_pyerr)
}

macro_rules! swap_doc {
    ($a:literal, $b:literal, $name:literal) => {
        concat!(
            r#"A view with two axes exchanged (``transpose(input, "#,
            $a,
            ", ",
            $b,
            r#")`` under NumPy's name).

As PyTorch's ``swapaxes``/``swapdims`` (aliases of each other). ``Tensor."#,
            $name,
            "(",
            $a,
            ", ",
            $b,
            r#")`` is
the method form.

Parameters
----------
input : Tensor or array_like
    The tensor.
"#,
            $a,
            ", ",
            $b,
            r#" : int
    The axes to exchange.

Returns
-------
Tensor
    A view of the input with the two axes exchanged.

Raises
------
ShapeError
    When an axis is out of range.

Examples
--------
>>> remat."#,
            $name,
            r#"(remat.zeros(2, 3, 4), 0, 2).shape
(4, 3, 2)
>>> remat.tensor([[1, 2]])."#,
            $name,
            r#"(0, 1)
tensor([[1],
        [2]])"#
        )
    };
}

#[doc = swap_doc!("axis0", "axis1", "swapaxes")]
#[pyfunction]
#[pyo3(signature = (input, axis0, axis1))]
fn swapaxes(input: &Bound<'_, PyAny>, axis0: isize, axis1: isize) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("swapaxes", input)?;
    swap("swapaxes", &x, axis0, axis1)
}

/// `transpose` with axis errors naming `op`.
fn swap(op: &str, x: &Tensor, a: isize, b: isize) -> PyResult<PyTensor> {
    let nd = x.ndim().max(1);
    remat_core::layout::normalize_axis(op, a, nd).map_err(to_pyerr)?;
    remat_core::layout::normalize_axis(op, b, nd).map_err(to_pyerr)?;
    ops::transpose(x, a, b).map(wrap).map_err(to_pyerr)
}

#[doc = swap_doc!("dim0", "dim1", "swapdims")]
#[pyfunction]
#[pyo3(signature = (input, dim0, dim1))]
fn swapdims(input: &Bound<'_, PyAny>, dim0: isize, dim1: isize) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("swapdims", input)?;
    swap("swapdims", &x, dim0, dim1)
}

#[pymethods]
impl PyTensor {
    #[doc = unbind_doc!()]
    #[pyo3(name = "unbind", signature = (dim=0))]
    fn unbind_method<'py>(&self, py: Python<'py>, dim: isize) -> PyResult<Bound<'py, PyTuple>> {
        tuple_of(py, ops::unbind(&self.inner, dim).map_err(to_pyerr)?)
    }
    #[doc = roll_doc!()]
    #[pyo3(name = "roll", signature = (shifts, dims=None))]
    fn roll_method(
        &self,
        shifts: &Bound<'_, PyAny>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        roll_impl(&self.inner, shifts, dims).map(wrap)
    }
    #[doc = tile_doc!()]
    #[pyo3(name = "tile", signature = (*dims))]
    fn tile_method(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let reps = args::shape_from_args("tile", dims)?;
        let x = &self.inner;
        run(py, heavy(&[x]), || ops::tile(x, &reps)).map(wrap)
    }
    #[doc = repeat_interleave_doc!()]
    #[pyo3(name = "repeat_interleave", signature = (repeats, dim=None, *, output_size=None))]
    fn repeat_interleave_method(
        &self,
        repeats: &Bound<'_, PyAny>,
        dim: Option<isize>,
        output_size: Option<usize>,
    ) -> PyResult<PyTensor> {
        repeat_interleave_impl(&self.inner, repeats, dim, output_size).map(wrap)
    }
    #[doc = diagonal_doc!()]
    #[pyo3(name = "diagonal", signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal_method(&self, offset: isize, dim1: isize, dim2: isize) -> PyResult<PyTensor> {
        ops::diagonal(&self.inner, offset, dim1, dim2)
            .map(wrap)
            .map_err(to_pyerr)
    }
    #[doc = diag_doc!()]
    #[pyo3(name = "diag", signature = (diagonal=0))]
    fn diag_method(&self, diagonal: isize) -> PyResult<PyTensor> {
        ops::diag(&self.inner, diagonal).map(wrap).map_err(to_pyerr)
    }
    #[doc = trace_doc!()]
    #[pyo3(name = "trace")]
    fn trace_method(&self) -> PyResult<PyTensor> {
        ops::trace(&self.inner).map(wrap).map_err(to_pyerr)
    }
    #[doc = swap_doc!("axis0", "axis1", "swapaxes")]
    #[pyo3(name = "swapaxes")]
    fn swapaxes_method(&self, axis0: isize, axis1: isize) -> PyResult<PyTensor> {
        swap("swapaxes", &self.inner, axis0, axis1)
    }
    #[doc = swap_doc!("dim0", "dim1", "swapdims")]
    #[pyo3(name = "swapdims")]
    fn swapdims_method(&self, dim0: isize, dim1: isize) -> PyResult<PyTensor> {
        swap("swapdims", &self.inner, dim0, dim1)
    }
}

/// Add the rearranging functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(unbind, m)?)?;
    m.add_function(wrap_pyfunction!(roll, m)?)?;
    m.add_function(wrap_pyfunction!(tile, m)?)?;
    m.add_function(wrap_pyfunction!(repeat_interleave, m)?)?;
    m.add_function(wrap_pyfunction!(meshgrid, m)?)?;
    m.add_function(wrap_pyfunction!(diagonal, m)?)?;
    m.add_function(wrap_pyfunction!(diag, m)?)?;
    m.add_function(wrap_pyfunction!(trace, m)?)?;
    m.add_function(wrap_pyfunction!(swapaxes, m)?)?;
    m.add_function(wrap_pyfunction!(swapdims, m)?)?;
    Ok(())
}
