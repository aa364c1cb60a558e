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

/// The slices of `x` at the positions `index` (0-d or 1-d, int64/int32) along `dim`.
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

/// `out[i][j][k] = x[i][index[i][j][k]][k]` (for `dim = 1`), shaped like `index`.
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

/// A copy of `x` with `src[i][j][k]` added at `[i][index[i][j][k]][k]` (for `dim = 1`).
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

/// Rows of `weight (V, D)` at the integer `input` ids, shaped `input.shape + (D,)`.
/// `padding_idx`: positions with that id pass no gradient to the table. `max_norm`: the
/// looked-up rows whose `norm_type`-norm exceeds it are first rescaled in place to that norm.
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

/// An int64 tensor of shape `input.shape + (num_classes,)` with a 1 at each class index
/// (`num_classes=-1`: the largest index plus one).
#[pyfunction]
#[pyo3(signature = (input, num_classes=-1), text_signature = "(input, num_classes=-1)")]
pub fn one_hot(py: Python<'_>, input: &Bound<'_, PyAny>, num_classes: i64) -> PyResult<PyTensor> {
    let ids = index_tensor("one_hot", input)?;
    indexed(py, &[&ids], || ops::one_hot(&ids, num_classes))
}

/// The coordinates of the nonzero elements: an int64 tensor of shape `(count, ndim)`.
#[pyfunction]
#[pyo3(name = "nonzero", signature = (x))]
fn nonzero_fn(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("nonzero", x)?;
    run(py, heavy(&[&x]), || ops::nonzero(&x)).map(wrap)
}

#[pymethods]
impl PyTensor {
    /// The slices of `x` at the positions `index` (0-d or 1-d, int64/int32) along `dim`.
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
    /// `out[i][j][k] = x[i][index[i][j][k]][k]` (for `dim = 1`), shaped like `index`.
    #[pyo3(signature = (dim, index))]
    fn gather(&self, py: Python<'_>, dim: isize, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let i = index_tensor("gather", index)?;
        indexed(py, &[&self.inner], || ops::gather(&self.inner, dim, &i))
    }
    /// A copy of `x` with `src[i][j][k]` added at `[i][index[i][j][k]][k]` (for `dim = 1`).
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
    /// The coordinates of the nonzero elements: an int64 tensor of shape `(count, ndim)`.
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
