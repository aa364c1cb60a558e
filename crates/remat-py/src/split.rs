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

/// Pieces of `split_size_or_sections` positions along `dim` (an int: equal pieces, the last
/// one smaller; a list: the size of each), as a tuple of views.
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

/// At most `chunks` pieces of equal size along `dim` (the last one smaller), as a tuple of
/// views.
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
    /// Pieces of `split_size` positions along `dim` (an int: equal pieces, the last one
    /// smaller; a list: the size of each), as a tuple of views.
    #[pyo3(signature = (split_size, dim=0))]
    fn split<'py>(
        &self,
        py: Python<'py>,
        split_size: &Bound<'py, PyAny>,
        dim: isize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        split_any(py, &self.inner, split_size, dim)
    }
    /// At most `chunks` pieces of equal size along `dim` (the last one smaller), as a tuple of
    /// views.
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
