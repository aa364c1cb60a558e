//! Selection by integer index, bound to Python: `index_select`, `gather`, `scatter_add`
//! (functions and methods), `embedding`, `one_hot`, `nonzero`, and the parsing of advanced
//! `t[...]` keys (integer tensors, lists, NumPy arrays and bool masks among ints, slices,
//! `None` and `...`). Out-of-range indices raise `IndexingError` (an `IndexError` and a
//! `ShapeError`), as PyTorch raises `IndexError`.

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::errors::to_index_pyerr;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use remat_core::ops::{self, Index};
use remat_core::Tensor;

/// Run an indexing op, releasing the GIL for big inputs; shape errors become
/// `IndexingError`.
fn indexed(
    py: Python<'_>,
    ts: &[&Tensor],
    f: impl FnOnce() -> remat_core::Result<Tensor> + Send,
) -> PyResult<PyTensor> {
    let big = heavy(ts);
    let r = if big { py.allow_threads(f) } else { f() };
    r.map(wrap).map_err(|e| to_index_pyerr(py, e))
}

/// An index operand: a Tensor, or a list / NumPy array / Python int made into one (an empty
/// list is an empty int64 index, as in PyTorch, not NumPy's float64).
fn index_tensor(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if obj.downcast::<PyList>().is_ok_and(|l| l.is_empty()) {
        return convert::tensor_from_py(op, obj, Some(remat_core::DType::I64));
    }
    convert::extract_tensor(op, obj)
}

/// Whether `obj` is an advanced index item (a tensor, list or NumPy array; a bool).
fn is_advanced(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.downcast::<PyTensor>().is_ok()
        || obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<pyo3::types::PyBool>()
        || obj.downcast::<numpy::PyUntypedArray>().is_ok())
}

/// The items of `t[key]`, advanced ones included.
pub fn index_key(key: &Bound<'_, PyAny>) -> PyResult<Vec<Index>> {
    let one = |k: &Bound<'_, PyAny>| -> PyResult<Index> {
        if is_advanced(k)? {
            Ok(Index::Tensor(index_tensor("__getitem__", k)?))
        } else {
            Ok(Index::Basic(args::index_item(k)?))
        }
    };
    if let Ok(t) = key.downcast::<PyTuple>() {
        return t.iter().map(|k| one(&k)).collect();
    }
    Ok(vec![one(key)?])
}

/// `t[key]` for any key (basic keys give views, advanced ones copies).
pub fn getitem(x: &Tensor, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let items = index_key(key)?;
    indexed(key.py(), &[x], || ops::index_advanced(x, &items))
}

/// The docstring of `remat.index_select` and `Tensor.index_select` (one text, so they cannot
/// drift apart; the method form is `input.index_select(...)`).
macro_rules! index_select_doc {
    () => {
        r#"Select the slices of `x` at the positions `index` along axis `dim`.

The result has `x`'s shape with axis `dim` replaced by the number of indices; it is a
copy, differentiable with respect to `x`. As in PyTorch, a 0-d `x` takes `dim` 0 (or -1)
and exactly one position, 0, and gives a 0-d result.

Parameters
----------
x : Tensor or array-like
    The tensor to select from.
dim : int
    The axis to select along (negative counts from the end).
index : Tensor, int or list of int
    The positions: a 0-d or 1-d int64/int32 tensor (or a list or Python int made into
    one). Negative positions are out of range.

Returns
-------
Tensor
    The selected slices, with `x`'s dtype.

Raises
------
DimensionError
    If `dim` is out of range (an `IndexError` and a `ShapeError`).
IndexingError
    If `index` has more than one dimension (or, for a 0-d `x`, not exactly one position)
    or a position is out of bounds (an `IndexError` and a `ShapeError`).
DTypeError
    If `index` is not an integer tensor.

Examples
--------
>>> x = remat.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
>>> remat.index_select(x, 1, remat.tensor([2, 0]))
tensor([[3., 1.],
        [6., 4.]])
>>> remat.index_select(x, 0, [1, 1])
tensor([[4., 5., 6.],
        [4., 5., 6.]])"#
    };
}

#[doc = index_select_doc!()]
#[pyfunction]
#[pyo3(name = "index_select", signature = (x, dim, index))]
fn index_select_fn(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dim: isize,
    index: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("index_select", x)?;
    let i = index_tensor("index_select", index)?;
    indexed(py, &[&x], || ops::index_select(&x, dim, &i))
}

/// The docstring of `remat.gather` and `Tensor.gather` (one text, so they cannot
/// drift apart; the method form is `input.gather(...)`).
macro_rules! gather_doc {
    () => {
        r#"Pick values of `x` along axis `dim` at the positions in `index`.

For a 2-D input, `out[i][j] = x[i][index[i][j]]` with `dim = 1` and
`out[i][j] = x[index[i][j]][j]` with `dim = 0`. The result is shaped like `index`, which
must have `x`'s number of dimensions and no larger extent than `x` on the axes other
than `dim`. Differentiable with respect to `x` (gathered twice, a position's gradient
adds up).

Parameters
----------
x : Tensor or array-like
    The tensor to gather from.
dim : int
    The axis to gather along (negative counts from the end).
index : Tensor or array-like
    The int64/int32 positions along `dim`.

Returns
-------
Tensor
    The gathered values, shaped like `index`, with `x`'s dtype.

Raises
------
DimensionError
    If `dim` is out of range (an `IndexError` and a `ShapeError`).
IndexingError
    If `index` does not fit `x`'s shape, or a position is out of bounds.
DTypeError
    If `index` is not an integer tensor.

Examples
--------
>>> x = remat.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
>>> remat.gather(x, 1, remat.tensor([[2, 0], [1, 1]]))
tensor([[3., 1.],
        [5., 5.]])
>>> remat.gather(x, 0, remat.tensor([[1, 0, 1]]))
tensor([[4., 2., 6.]])"#
    };
}

#[doc = gather_doc!()]
#[pyfunction]
#[pyo3(name = "gather", signature = (x, dim, index))]
fn gather_fn(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dim: isize,
    index: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("gather", x)?;
    let i = index_tensor("gather", index)?;
    indexed(py, &[&x], || ops::gather(&x, dim, &i))
}

/// The docstring of `remat.scatter_add` and `Tensor.scatter_add` (one text, so they cannot
/// drift apart; the method form is `input.scatter_add(...)`).
macro_rules! scatter_add_doc {
    () => {
        r#"Add the values of `src` into a copy of `x` at the positions `index` along `dim`.

For a 2-D input with `dim = 1`, `out[i][index[i][j]] += src[i][j]` (with `dim = 0`,
`out[index[i][j]][j] += src[i][j]`); positions repeated in `index` accumulate. `index`
must have `src`'s number of dimensions, no larger extent than `src` on any axis and no
larger extent than `x` on the axes other than `dim`. The input is not modified.
Differentiable with respect to `x` and `src`.

Parameters
----------
x : Tensor or array-like
    The tensor to add into.
dim : int
    The axis along which `index` points (negative counts from the end).
index : Tensor or array-like
    The int64/int32 positions along `dim`.
src : Tensor or array-like
    The values to add, of `x`'s dtype.

Returns
-------
Tensor
    A new tensor of `x`'s shape and dtype.

Raises
------
DimensionError
    If `dim` is out of range (an `IndexError` and a `ShapeError`).
IndexingError
    If `index` does not fit `x` or `src`, or a position is out of bounds.
DTypeError
    If `index` is not an integer tensor, or `src`'s dtype differs from `x`'s.

Examples
--------
>>> remat.scatter_add(remat.zeros(3), 0, remat.tensor([0, 2, 0]),
...                   remat.tensor([1.0, 2.0, 3.0]))
tensor([4., 0., 2.])"#
    };
}

#[doc = scatter_add_doc!()]
#[pyfunction]
#[pyo3(name = "scatter_add", signature = (x, dim, index, src))]
fn scatter_add_fn(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dim: isize,
    index: &Bound<'_, PyAny>,
    src: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("scatter_add", x)?;
    let i = index_tensor("scatter_add", index)?;
    let s = convert::extract_tensor("scatter_add", src)?;
    indexed(py, &[&x], || ops::scatter_add(&x, dim, &i, &s))
}

/// Look up the rows of an embedding table at integer ids.
///
/// `embedding(input, weight)` is `weight[input]`: for `weight` of shape `(V, D)` the result
/// has shape `input.shape + (D,)`. Differentiable with respect to `weight`.
///
/// Parameters
/// ----------
/// input : Tensor or array-like
///     The int64/int32 ids, each in `[0, V)`.
/// weight : Tensor
///     The table, 2-D `(V, D)`.
/// padding_idx : int, optional
///     An id whose positions pass no gradient to the table (negative counts from the end).
///     Default: ``None``.
/// max_norm : float, optional
///     When given, the looked-up rows whose `norm_type`-norm exceeds it are first rescaled
///     to that norm, in place in `weight` (outside the graph). Default: ``None``.
/// norm_type : float, optional
///     The p of the p-norm used with `max_norm`. Default: ``2.0``.
/// scale_grad_by_freq : bool, optional
///     Not supported; must be False. Default: ``False``.
/// sparse : bool, optional
///     Not supported (gradients are dense); must be False. Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     The rows, of shape `input.shape + (D,)` and `weight`'s dtype.
///
/// Raises
/// ------
/// IndexingError
///     If an id or `padding_idx` is out of range, or `weight` is not 2-D.
/// DTypeError
///     If `input` is not an integer tensor.
/// NotImplementedError
///     If `scale_grad_by_freq` or `sparse` is True.
///
/// Examples
/// --------
/// >>> weight = remat.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
/// >>> out = remat.embedding(remat.tensor([2, 0, 2]), weight)
/// >>> out
/// tensor([[5., 6.],
///         [1., 2.],
///         [5., 6.]], grad_fn=<embedding>)
/// >>> out.sum().backward()
/// >>> weight.grad
/// tensor([[1., 1.],
///         [0., 0.],
///         [2., 2.]])
/// >>> table = remat.tensor([[3.0, 4.0], [0.3, 0.4]])
/// >>> remat.embedding(remat.tensor([0]), table, max_norm=1.0)
/// tensor([[0.6000, 0.8000]])
/// >>> table
/// tensor([[0.6000, 0.8000],
///         [0.3000, 0.4000]])
#[pyfunction]
#[pyo3(signature = (
    input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=false,
    sparse=false
))]
#[allow(clippy::too_many_arguments)]
pub fn embedding(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    padding_idx: Option<i64>,
    max_norm: Option<f64>,
    norm_type: f64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> PyResult<PyTensor> {
    if scale_grad_by_freq || sparse {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err(
            "embedding: scale_grad_by_freq and sparse gradients are not supported",
        ));
    }
    let ids = index_tensor("embedding", input)?;
    let w = convert::extract_tensor("embedding", weight)?;
    if let Some(m) = max_norm {
        indexed(py, &[&w, &ids], || {
            ops::embedding_renorm_(&w, &ids, m, norm_type)?;
            Ok(ids.clone())
        })?;
    }
    indexed(py, &[&w, &ids], || match padding_idx {
        Some(p) => ops::embedding_padded(&ids, &w, p),
        None => ops::embedding(&ids, &w),
    })
}

/// One-hot encode integer class indices.
///
/// Parameters
/// ----------
/// input : Tensor or array-like
///     The int64/int32 class indices, each in `[0, num_classes)`.
/// num_classes : int, optional
///     The number of classes; ``-1`` uses the largest index plus one. Default: ``-1``.
///
/// Returns
/// -------
/// Tensor
///     An int64 tensor of shape `input.shape + (num_classes,)`, 1 at each class index and 0
///     elsewhere.
///
/// Raises
/// ------
/// IndexingError
///     If an index is negative or not below `num_classes`.
/// DTypeError
///     If `input` is not an integer tensor.
///
/// Examples
/// --------
/// >>> remat.one_hot(remat.tensor([0, 2, 1]))
/// tensor([[1, 0, 0],
///         [0, 0, 1],
///         [0, 1, 0]])
/// >>> remat.one_hot(remat.tensor([0, 2]), num_classes=4)
/// tensor([[1, 0, 0, 0],
///         [0, 0, 1, 0]])
#[pyfunction]
#[pyo3(signature = (input, num_classes=-1), text_signature = "(input, num_classes=-1)")]
pub fn one_hot(py: Python<'_>, input: &Bound<'_, PyAny>, num_classes: i64) -> PyResult<PyTensor> {
    let ids = index_tensor("one_hot", input)?;
    indexed(py, &[&ids], || ops::one_hot(&ids, num_classes))
}

/// The docstring of `remat.nonzero` and `Tensor.nonzero` (one text, so they cannot
/// drift apart; the method form is `input.nonzero(...)`).
macro_rules! nonzero_doc {
    () => {
        r#"The coordinates of the nonzero elements of `x`.

Parameters
----------
x : Tensor or array-like
    The input (any dtype; nonzero means true for bools).

Returns
-------
Tensor
    An int64 tensor of shape `(count, ndim)`, one row of coordinates per nonzero element
    in C order.

Raises
------
DTypeError
    If `x` cannot be made into a tensor (non-numeric data).

Examples
--------
>>> remat.nonzero(remat.tensor([0, 3, 0, 5]))
tensor([[1],
        [3]])"#
    };
}

#[doc = nonzero_doc!()]
#[pyfunction]
#[pyo3(name = "nonzero", signature = (x))]
fn nonzero_fn(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("nonzero", x)?;
    run(py, heavy(&[&x]), || ops::nonzero(&x)).map(wrap)
}

#[pymethods]
impl PyTensor {
    #[doc = index_select_doc!()]
    #[pyo3(signature = (dim, index))]
    fn index_select(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let i = index_tensor("index_select", index)?;
        indexed(py, &[&self.inner], || {
            ops::index_select(&self.inner, dim, &i)
        })
    }
    #[doc = gather_doc!()]
    #[pyo3(signature = (dim, index))]
    fn gather(&self, py: Python<'_>, dim: isize, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let i = index_tensor("gather", index)?;
        indexed(py, &[&self.inner], || ops::gather(&self.inner, dim, &i))
    }
    #[doc = scatter_add_doc!()]
    #[pyo3(signature = (dim, index, src))]
    fn scatter_add(
        &self,
        py: Python<'_>,
        dim: isize,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let i = index_tensor("scatter_add", index)?;
        let s = convert::extract_tensor("scatter_add", src)?;
        indexed(py, &[&self.inner], || {
            ops::scatter_add(&self.inner, dim, &i, &s)
        })
    }
    #[doc = nonzero_doc!()]
    fn nonzero(&self, py: Python<'_>) -> PyResult<PyTensor> {
        run(py, heavy(&[&self.inner]), || ops::nonzero(&self.inner)).map(wrap)
    }
}

/// Add the functions to the module (the methods come with the class).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(index_select_fn, m)?)?;
    m.add_function(wrap_pyfunction!(gather_fn, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_add_fn, m)?)?;
    m.add_function(wrap_pyfunction!(embedding, m)?)?;
    m.add_function(wrap_pyfunction!(one_hot, m)?)?;
    m.add_function(wrap_pyfunction!(nonzero_fn, m)?)?;
    Ok(())
}
