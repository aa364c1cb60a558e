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

/// The maximum: of all elements (no `dim`; a 0-d tensor), `(values, indices)` along an int
/// `dim` (first index among ties; the gradient goes to that element), or the elementwise
/// `maximum` with a tensor second argument. `axis`/`keepdims` are NumPy's spellings.
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

/// The minimum, with `max`'s three forms.
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
    /// The maximum: of all elements (no `dim`; a 0-d tensor), `(values, indices)` along an int
    /// `dim` (first index among ties; the gradient goes to that element), or the elementwise
    /// `maximum` with a tensor second argument. `axis`/`keepdims` are NumPy's spellings.
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
    /// The minimum, with `max`'s three forms.
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
