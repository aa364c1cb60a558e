//! The in-place methods of `remat.Tensor` (`add_`, `mul_`, `copy_`, `normal_`, ...), the
//! in-place operators `+=`, `-=`, `*=`, `/=`, `t[idx] = v` and `_version`. Each converts its
//! arguments and calls the core op of the same name; the methods return the tensor itself
//! (the same Python object), as PyTorch's do.

use crate::call::{heavy, run};
use crate::convert::{self, python_scalar};
use crate::errors::to_index_pyerr;
use crate::indexing::index_key;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use remat_core::ops::{self, Operand};
use remat_core::Tensor;

/// An operand from Python: a number (kept a number: it takes the tensor's dtype), or a
/// tensor-like (a Tensor, a NumPy array, nested lists).
enum PyOperand {
    Scalar(f64),
    Tensor(Tensor),
}

impl PyOperand {
    fn from_py(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<PyOperand> {
        if let Ok(t) = obj.downcast::<PyTensor>() {
            return Ok(PyOperand::Tensor(t.get().inner.clone()));
        }
        if let Some(v) = python_scalar(obj) {
            return Ok(PyOperand::Scalar(v));
        }
        Ok(PyOperand::Tensor(convert::tensor_from_py(op, obj, None)?))
    }

    /// An optional bound (`clamp_`): None stays None.
    fn optional(op: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<PyOperand>> {
        match obj {
            Some(o) if !o.is_none() => Ok(Some(PyOperand::from_py(op, o)?)),
            _ => Ok(None),
        }
    }

    fn core(&self) -> Operand<'_> {
        match self {
            PyOperand::Scalar(v) => Operand::Scalar(*v),
            PyOperand::Tensor(t) => Operand::Tensor(t),
        }
    }

    fn bound(&self) -> ops::Bound<'_> {
        match self {
            PyOperand::Scalar(v) => ops::Bound::Scalar(*v),
            PyOperand::Tensor(t) => ops::Bound::Tensor(t),
        }
    }
}

/// Run the in-place op `f` on `slf`'s tensor (GIL released for large tensors) and return
/// `slf` itself.
fn in_place<'py>(
    slf: Bound<'py, PyTensor>,
    f: impl FnOnce(&Tensor) -> remat_core::Result<()> + Send,
) -> PyResult<Bound<'py, PyTensor>> {
    let t = slf.get().inner.clone();
    run(slf.py(), heavy(&[&t]), || f(&t))?;
    Ok(slf)
}

/// `self (op)= other` for the operators `+=`, `-=`, `*=`, `/=`.
fn operator(
    this: &PyTensor,
    py: Python<'_>,
    op: &str,
    other: &Bound<'_, PyAny>,
    f: fn(&Tensor, Operand<'_>) -> remat_core::Result<()>,
) -> PyResult<()> {
    let o = PyOperand::from_py(op, other)?;
    let t = &this.inner;
    run(py, heavy(&[t]), || f(t, o.core()))
}

#[pymethods]
impl PyTensor {
    /// How many in-place writes this tensor's storage has seen, shared by all its views
    /// (PyTorch's version counter).
    #[getter]
    fn _version(&self) -> u64 {
        self.inner.version()
    }

    /// `self += alpha * other` in place (broadcast to this tensor's shape); returns self.
    #[pyo3(signature = (other, alpha=1.0))]
    fn add_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: f64,
    ) -> PyResult<Bound<'py, Self>> {
        let o = PyOperand::from_py("add_", other)?;
        in_place(slf, |t| ops::add_(t, o.core(), alpha))
    }
    /// `self -= alpha * other` in place (broadcast to this tensor's shape); returns self.
    #[pyo3(signature = (other, alpha=1.0))]
    fn sub_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: f64,
    ) -> PyResult<Bound<'py, Self>> {
        let o = PyOperand::from_py("sub_", other)?;
        in_place(slf, |t| ops::sub_(t, o.core(), alpha))
    }
    /// `self *= other` in place (broadcast to this tensor's shape); returns self.
    fn mul_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let o = PyOperand::from_py("mul_", other)?;
        in_place(slf, |t| ops::mul_(t, o.core()))
    }
    /// `self /= other` in place (broadcast to this tensor's shape); returns self.
    fn div_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let o = PyOperand::from_py("div_", other)?;
        in_place(slf, |t| ops::div_(t, o.core()))
    }
    /// Every element set to zero in place; returns self.
    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        in_place(slf, ops::zero_)
    }
    /// Every element set to `value` (a number or a 0-d tensor) in place; returns self.
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = PyOperand::from_py("fill_", value)?;
        in_place(slf, |t| ops::fill_(t, v.core()))
    }
    /// `src`'s values copied in (broadcast, cast to this tensor's dtype, moved from another
    /// device); returns self. `non_blocking` is accepted for PyTorch compatibility.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: Bound<'py, Self>,
        src: &Bound<'py, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let _ = non_blocking;
        let s = match PyOperand::from_py("copy_", src)? {
            PyOperand::Tensor(t) => t,
            PyOperand::Scalar(v) => Tensor::scalar(v, slf.get().inner.dtype()),
        };
        in_place(slf, |t| ops::copy_(t, &s))
    }
    /// Clamped into `[min, max]` in place (numbers or tensors; at least one); returns self.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let lo = PyOperand::optional("clamp_", min)?;
        let hi = PyOperand::optional("clamp_", max)?;
        in_place(slf, |t| {
            ops::clamp_by_(
                t,
                lo.as_ref().map(PyOperand::bound),
                hi.as_ref().map(PyOperand::bound),
            )
        })
    }
    /// Alias of `clamp_`.
    #[pyo3(signature = (min=None, max=None))]
    fn clip_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::clamp_(slf, min, max)
    }
    /// `value` (a number or a 0-d tensor) written where `mask` is true (nonzero), in place;
    /// returns self.
    fn masked_fill_<'py>(
        slf: Bound<'py, Self>,
        mask: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let m = convert::extract_tensor("masked_fill_", mask)?;
        let v = PyOperand::from_py("masked_fill_", value)?;
        in_place(slf, |t| ops::masked_fill_(t, &m, v.core()))
    }
    /// Filled with normal samples (mean `mean`, standard deviation `std`) in place from the
    /// engine's generator (`remat.manual_seed` makes them reproducible); returns self.
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_<'py>(
        slf: Bound<'py, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        crate::generator::drawing(generator, || in_place(slf, |t| ops::normal_(t, mean, std)))
    }
    /// Filled with uniform samples in `[a, b)` in place from the engine's generator; returns
    /// self.
    #[pyo3(signature = (a=0.0, b=1.0, *, generator=None))]
    fn uniform_<'py>(
        slf: Bound<'py, Self>,
        a: f64,
        b: f64,
        generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        crate::generator::drawing(generator, || in_place(slf, |t| ops::uniform_(t, a, b)))
    }

    /// `self[key] = value` in place: `key` as for indexing (ints, slices, None, `...`,
    /// integer tensors/lists/arrays, bool masks), `value` a number, a Tensor or an
    /// array-like broadcast to the indexed shape.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let items = index_key(key)?;
        let v = PyOperand::from_py("setitem", value)?;
        let t = &self.inner;
        let set = || ops::setitem(t, &items, v.core());
        let done = if heavy(&[t]) {
            py.allow_threads(set)
        } else {
            set()
        };
        done.map_err(|e| to_index_pyerr(py, e))
    }

    fn __iadd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        operator(self, py, "add_", other, |t, o| ops::add_(t, o, 1.0))
    }
    fn __isub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        operator(self, py, "sub_", other, |t, o| ops::sub_(t, o, 1.0))
    }
    fn __imul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        operator(self, py, "mul_", other, ops::mul_)
    }
    fn __itruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        operator(self, py, "div_", other, ops::div_)
    }
}
