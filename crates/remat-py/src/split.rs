//! `split` and `chunk`, the ops that return a tuple of views: each a function `remat.X(x, ...)`
//! and a method `Tensor.X(...)` with PyTorch's parameters (the `tensor_ops!` table in `ops.rs`
//! is for ops returning one tensor).

use crate::args;
use crate::convert;
use crate::errors::{CoreResultExt, ShapeError};
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use remat_core::{ops, Tensor};

/// The pieces as a Python tuple of tensors.
fn tuple(py: Python<'_>, pieces: remat_core::Result<Vec<Tensor>>) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, pieces.py()?.into_iter().map(wrap))
}

/// `split(split_size_or_sections, dim)`: an int is the size of every piece, a list or tuple the
/// size of each.
fn split_any<'py>(
    py: Python<'py>,
    x: &Tensor,
    split_size_or_sections: &Bound<'py, PyAny>,
    dim: isize,
) -> PyResult<Bound<'py, PyTuple>> {
    let obj = split_size_or_sections;
    let sizes = args::shape_of("split", obj)?;
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        tuple(py, ops::split_sections(x, &sizes, dim))
    } else {
        tuple(py, ops::split(x, sizes[0], dim))
    }
}

/// `chunk(chunks, dim)`; the core refuses 0, a negative count is refused here.
fn chunk_any<'py>(
    py: Python<'py>,
    x: &Tensor,
    chunks: isize,
    dim: isize,
) -> PyResult<Bound<'py, PyTuple>> {
    let chunks = usize::try_from(chunks).map_err(|_| {
        ShapeError::new_err(format!(
            "chunk: chunks must be greater than 0, got {chunks}"
        ))
    })?;
    tuple(py, ops::chunk(x, chunks, dim))
}

/// Split ``x`` into pieces along an axis, as PyTorch's ``split``.
///
/// An int ``split_size_or_sections`` gives pieces of that size (the last one smaller when the axis
/// does not divide evenly); a list or tuple gives the size of each piece. The pieces are views of
/// the input (they share its storage) and take part in autograd.
///
/// Parameters
/// ----------
/// x : Tensor or array_like
///     The tensor to split.
/// split_size_or_sections : int or sequence of int
///     The size of every piece, or the list of piece sizes (which must sum to the axis size).
/// dim : int, optional
///     The axis to split (negative counts from the end). Default: ``0``.
///
/// Returns
/// -------
/// tuple of Tensor
///     The pieces, in order.
///
/// Raises
/// ------
/// ShapeError
///     When ``dim`` is out of range, the sizes in a list do not sum to the axis size, a size is
///     negative, or an int size is 0 on a non-empty axis.
/// TypeError
///     When a size is not an int.
///
/// Examples
/// --------
/// >>> x = remat.arange(5)
/// >>> remat.split(x, 2)
/// (tensor([0, 1]), tensor([2, 3]), tensor([4]))
/// >>> remat.split(x, [1, 4])
/// (tensor([0]), tensor([1, 2, 3, 4]))
/// >>> a, b = remat.split(remat.arange(6).reshape(2, 3), 2, dim=1)
/// >>> b
/// tensor([[2],
///         [5]])
#[pyfunction]
#[pyo3(signature = (x, split_size_or_sections, dim=0))]
fn split<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    split_size_or_sections: &Bound<'py, PyAny>,
    dim: isize,
) -> PyResult<Bound<'py, PyTuple>> {
    let x = convert::extract_tensor("split", x)?;
    split_any(py, &x, split_size_or_sections, dim)
}

/// Split ``x`` into at most ``chunks`` pieces along an axis, as PyTorch's ``chunk``.
///
/// Every piece has ``ceil(size / chunks)`` positions except the last, which may be smaller, so
/// there can be fewer than ``chunks`` pieces. The pieces are views of the input (they share its
/// storage) and take part in autograd.
///
/// Parameters
/// ----------
/// x : Tensor or array_like
///     The tensor to split.
/// chunks : int
///     The number of pieces wanted; at least 1.
/// dim : int, optional
///     The axis to split (negative counts from the end). Default: ``0``.
///
/// Returns
/// -------
/// tuple of Tensor
///     The pieces, in order.
///
/// Raises
/// ------
/// ShapeError
///     When ``chunks < 1`` or ``dim`` is out of range.
/// TypeError
///     When ``chunks`` or ``dim`` is not an int.
///
/// Examples
/// --------
/// >>> x = remat.arange(5)
/// >>> remat.chunk(x, 2)
/// (tensor([0, 1, 2]), tensor([3, 4]))
/// >>> remat.chunk(remat.arange(6), 4)
/// (tensor([0, 1]), tensor([2, 3]), tensor([4, 5]))
#[pyfunction]
#[pyo3(signature = (x, chunks, dim=0))]
fn chunk<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    chunks: isize,
    dim: isize,
) -> PyResult<Bound<'py, PyTuple>> {
    let x = convert::extract_tensor("chunk", x)?;
    chunk_any(py, &x, chunks, dim)
}

#[pymethods]
impl PyTensor {
    /// Split the tensor into pieces along an axis, as PyTorch's ``split``.
    ///
    /// An int ``split_size`` gives pieces of that size (the last one smaller when the axis does not
    /// divide evenly); a list or tuple gives the size of each piece. The pieces are views of the
    /// input (they share its storage) and take part in autograd.
    ///
    /// Parameters
    /// ----------
    /// split_size : int or sequence of int
    ///     The size of every piece, or the list of piece sizes (which must sum to the axis size).
    /// dim : int, optional
    ///     The axis to split (negative counts from the end). Default: ``0``.
    ///
    /// Returns
    /// -------
    /// tuple of Tensor
    ///     The pieces, in order.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``dim`` is out of range, the sizes in a list do not sum to the axis size, a size is
    ///     negative, or an int size is 0 on a non-empty axis.
    /// TypeError
    ///     When a size is not an int.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.arange(5)
    /// >>> x.split(2)
    /// (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    /// >>> x.split([1, 4])
    /// (tensor([0]), tensor([1, 2, 3, 4]))
    /// >>> a, b = remat.arange(6).reshape(2, 3).split(2, dim=1)
    /// >>> b
    /// tensor([[2],
    ///         [5]])
    #[pyo3(signature = (split_size, dim=0))]
    fn split<'py>(
        &self,
        py: Python<'py>,
        split_size: &Bound<'py, PyAny>,
        dim: isize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        split_any(py, &self.inner, split_size, dim)
    }
    /// Split the tensor into at most ``chunks`` pieces along an axis, as PyTorch's ``chunk``.
    ///
    /// Every piece has ``ceil(size / chunks)`` positions except the last, which may be smaller, so
    /// there can be fewer than ``chunks`` pieces. The pieces are views of the input (they share its
    /// storage) and take part in autograd.
    ///
    /// Parameters
    /// ----------
    /// chunks : int
    ///     The number of pieces wanted; at least 1.
    /// dim : int, optional
    ///     The axis to split (negative counts from the end). Default: ``0``.
    ///
    /// Returns
    /// -------
    /// tuple of Tensor
    ///     The pieces, in order.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``chunks < 1`` or ``dim`` is out of range.
    /// TypeError
    ///     When ``chunks`` or ``dim`` is not an int.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.arange(5)
    /// >>> x.chunk(2)
    /// (tensor([0, 1, 2]), tensor([3, 4]))
    /// >>> remat.arange(6).chunk(4)
    /// (tensor([0, 1]), tensor([2, 3]), tensor([4, 5]))
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk<'py>(
        &self,
        py: Python<'py>,
        chunks: isize,
        dim: isize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        chunk_any(py, &self.inner, chunks, dim)
    }
}

/// Add the functions to the module (the methods come with the class).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(split, m)?)?;
    m.add_function(wrap_pyfunction!(chunk, m)?)?;
    Ok(())
}
