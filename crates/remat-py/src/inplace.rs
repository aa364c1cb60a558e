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
pub(crate) fn in_place<'py>(
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

/// `self (op)= other` for the operators without an in-place kernel (`//=`, `%=`, `**=`): the
/// out-of-place op, written back (see `ops::update_with_`).
fn computed(
    this: &PyTensor,
    py: Python<'_>,
    op: &str,
    other: &Bound<'_, PyAny>,
    f: fn(&Tensor, &Tensor) -> remat_core::Result<Tensor>,
) -> PyResult<()> {
    let t = &this.inner;
    let o = crate::convert::operand(op, other, t)?;
    run(py, heavy(&[t]), || {
        ops::update_with_(op, t, &[&o], |x| f(x, &o))
    })
}

#[pymethods]
impl PyTensor {
    /// How many in-place writes this tensor's storage has seen, shared by all its views
    /// (PyTorch's version counter).
    #[getter]
    fn _version(&self) -> u64 {
        self.inner.version()
    }

    /// Add `alpha * other` to this tensor in place.
    ///
    /// `other` broadcasts to this tensor's shape (not the other way round), and the result is
    /// cast to this tensor's dtype, which must be able to hold it: adding a float to an integer
    /// tensor is refused.
    ///
    /// Parameters
    /// ----------
    /// other : Tensor, number or array-like
    ///     The value to add, broadcastable to this tensor's shape.
    /// alpha : float, optional
    ///     Multiplier of `other`. Default: ``1.0``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If `other` does not broadcast to this tensor's shape.
    /// DTypeError
    ///     If the result type cannot be cast to this tensor's dtype (a float added to an
    ///     integer tensor), or `other` is not numeric.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0, 3.0])
    /// >>> x.add_(1)
    /// tensor([2., 3., 4.])
    /// >>> x.add_(remat.tensor([1.0, 1.0, 1.0]), alpha=2)
    /// tensor([4., 5., 6.])
    /// >>> x
    /// tensor([4., 5., 6.])
    #[pyo3(signature = (other, alpha=1.0))]
    fn add_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: f64,
    ) -> PyResult<Bound<'py, Self>> {
        let o = PyOperand::from_py("add_", other)?;
        in_place(slf, |t| ops::add_(t, o.core(), alpha))
    }
    /// Subtract `alpha * other` from this tensor in place.
    ///
    /// `other` broadcasts to this tensor's shape (not the other way round), and the result is
    /// cast to this tensor's dtype, which must be able to hold it.
    ///
    /// Parameters
    /// ----------
    /// other : Tensor, number or array-like
    ///     The value to subtract, broadcastable to this tensor's shape.
    /// alpha : float, optional
    ///     Multiplier of `other`. Default: ``1.0``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If `other` does not broadcast to this tensor's shape.
    /// DTypeError
    ///     If the result type cannot be cast to this tensor's dtype (a float subtracted from
    ///     an integer tensor), or `other` is not numeric.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0, 3.0])
    /// >>> x.sub_(1)
    /// tensor([0., 1., 2.])
    /// >>> x.sub_(remat.tensor([1.0, 1.0, 1.0]), alpha=0.5)
    /// tensor([-0.5000,  0.5000,  1.5000])
    #[pyo3(signature = (other, alpha=1.0))]
    fn sub_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: f64,
    ) -> PyResult<Bound<'py, Self>> {
        let o = PyOperand::from_py("sub_", other)?;
        in_place(slf, |t| ops::sub_(t, o.core(), alpha))
    }
    /// Multiply this tensor by `other` in place.
    ///
    /// `other` broadcasts to this tensor's shape (not the other way round), and the result is
    /// cast to this tensor's dtype, which must be able to hold it.
    ///
    /// Parameters
    /// ----------
    /// other : Tensor, number or array-like
    ///     The factor, broadcastable to this tensor's shape.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If `other` does not broadcast to this tensor's shape.
    /// DTypeError
    ///     If the result type cannot be cast to this tensor's dtype (an integer tensor times
    ///     a float), or `other` is not numeric.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
    /// >>> x.mul_(remat.tensor([10.0, -1.0]))
    /// tensor([[10., -2.],
    ///         [30., -4.]])
    /// >>> remat.tensor([1, 2]).mul_(2)
    /// tensor([2, 4])
    fn mul_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let o = PyOperand::from_py("mul_", other)?;
        in_place(slf, |t| ops::mul_(t, o.core()))
    }
    /// Divide this tensor by `other` in place (true division, or rounded with
    /// `rounding_mode`).
    ///
    /// `other` broadcasts to this tensor's shape (not the other way round). Division by zero
    /// gives `inf` or `nan` as in IEEE arithmetic. An integer tensor cannot hold the float
    /// quotient, so dividing one in place is refused, unless `rounding_mode` (PyTorch's
    /// `"trunc"` or `"floor"`) keeps the quotient an integer.
    ///
    /// Parameters
    /// ----------
    /// other : Tensor, number or array-like
    ///     The divisor, broadcastable to this tensor's shape.
    /// rounding_mode : str, optional
    ///     `"trunc"` (toward zero), `"floor"` (toward -inf) or `None` (true division).
    ///     Default: `None`.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If `other` does not broadcast to this tensor's shape.
    /// DTypeError
    ///     If this tensor is an integer tensor (the quotient is a float), or `other` is not
    ///     numeric.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0, 3.0])
    /// >>> x.div_(remat.tensor([2.0, 4.0, 8.0]))
    /// tensor([0.5000, 0.5000, 0.3750])
    /// >>> x.div_(0)
    /// tensor([inf, inf, inf])
    /// >>> remat.tensor([-7, 7]).div_(2, rounding_mode="floor")
    /// tensor([-4,  3])
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        rounding_mode: Option<String>,
    ) -> PyResult<Bound<'py, Self>> {
        if let Some(mode) = rounding_mode {
            let t = slf.get().inner.clone();
            let o = crate::convert::operand("div_", other, &t)?;
            run(slf.py(), heavy(&[&t]), || {
                ops::update_with_("div_", &t, &[&o], |x| ops::div_rounded(x, &o, Some(&mode)))
            })?;
            return Ok(slf);
        }
        let o = PyOperand::from_py("div_", other)?;
        in_place(slf, |t| ops::div_(t, o.core()))
    }
    /// Set every element to zero in place.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0, 3.0])
    /// >>> x.zero_()
    /// tensor([0., 0., 0.])
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> with remat.no_grad():
    /// ...     _ = w.zero_()
    /// >>> w
    /// tensor([0., 0.], requires_grad=True)
    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        in_place(slf, ops::zero_)
    }
    /// ``max(x, 0)`` written over this tensor (PyTorch's ``Tensor.relu_``).
    ///
    /// In a graph the write is recorded over this tensor's own storage: the backward reads
    /// the result, so no copy of the overwritten input is kept.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([-1.0, 2.0]).relu_()
    /// tensor([0., 2.])
    fn relu_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        in_place(slf, ops::relu_)
    }
    /// Set every element to `value` in place.
    ///
    /// Parameters
    /// ----------
    /// value : number or Tensor
    ///     The value: a Python number or a 0-d tensor (cast to this tensor's dtype).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If `value` is a tensor with one or more dimensions.
    /// DTypeError
    ///     If `value` is not numeric (a string, None).
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.zeros(2, 2)
    /// >>> x.fill_(7)
    /// tensor([[7., 7.],
    ///         [7., 7.]])
    /// >>> x.fill_(remat.tensor(2.5))
    /// tensor([[2.5000, 2.5000],
    ///         [2.5000, 2.5000]])
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = PyOperand::from_py("fill_", value)?;
        in_place(slf, |t| ops::fill_(t, v.core()))
    }
    /// Copy the values of `src` into this tensor in place.
    ///
    /// `src` broadcasts to this tensor's shape, is cast to this tensor's dtype (floats copied
    /// into an integer tensor truncate toward zero) and moved from its device when it lives
    /// elsewhere. This tensor keeps its shape, dtype and device.
    ///
    /// Parameters
    /// ----------
    /// src : Tensor, number or array-like
    ///     The values, broadcastable to this tensor's shape.
    /// non_blocking : bool, optional
    ///     Accepted for PyTorch compatibility and ignored (the copy is synchronous).
    ///     Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If `src` does not broadcast to this tensor's shape.
    /// DTypeError
    ///     If `src` is not numeric.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.zeros(3)
    /// >>> x.copy_(remat.tensor([1, 2, 3]))
    /// tensor([1., 2., 3.])
    /// >>> x.copy_(remat.tensor(9.0))
    /// tensor([9., 9., 9.])
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
    /// Clamp every element into `[min, max]` in place.
    ///
    /// Either bound may be omitted, but not both. When `min > max` every element becomes
    /// `max`; NaN stays NaN (and a NaN bound makes the elements NaN).
    ///
    /// Parameters
    /// ----------
    /// min : number or Tensor, optional
    ///     Lower bound (a tensor broadcasts to this tensor's shape). Default: ``None`` (no
    ///     lower bound).
    /// max : number or Tensor, optional
    ///     Upper bound. Default: ``None`` (no upper bound).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ValueError
    ///     If both `min` and `max` are None.
    /// ShapeError
    ///     If a tensor bound does not broadcast to this tensor's shape.
    /// DTypeError
    ///     If a float bound is given for an integer tensor.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([-2.0, 0.5, 3.0])
    /// >>> x.clamp_(-1, 1)
    /// tensor([-1.0000,  0.5000,  1.0000])
    /// >>> remat.tensor([-2.0, 0.5, 3.0]).clamp_(min=remat.tensor([0.0, 1.0, 2.0]))
    /// tensor([0., 1., 3.])
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
    /// Clamp every element into `[min, max]` in place (alias of `clamp_`).
    ///
    /// Parameters
    /// ----------
    /// min : number or Tensor, optional
    ///     Lower bound (a tensor broadcasts to this tensor's shape). Default: ``None`` (no
    ///     lower bound).
    /// max : number or Tensor, optional
    ///     Upper bound. Default: ``None`` (no upper bound).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ValueError
    ///     If both `min` and `max` are None.
    /// ShapeError
    ///     If a tensor bound does not broadcast to this tensor's shape.
    /// DTypeError
    ///     If a float bound is given for an integer tensor.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([-2.0, 0.5, 3.0]).clip_(max=1)
    /// tensor([-2.0000,  0.5000,  1.0000])
    #[pyo3(signature = (min=None, max=None))]
    fn clip_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::clamp_(slf, min, max)
    }
    /// Write `value` where `mask` is true, in place.
    ///
    /// Parameters
    /// ----------
    /// mask : Tensor or array-like
    ///     Where to write: a bool tensor (any nonzero element counts as true), broadcastable
    ///     to this tensor's shape.
    /// value : number or Tensor
    ///     The value to write: a Python number or a 0-d tensor.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If `mask` does not broadcast to this tensor's shape, or `value` is a tensor with
    ///     one or more dimensions.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0, 3.0])
    /// >>> x.masked_fill_(x > 1.5, -1)
    /// tensor([ 1., -1., -1.])
    /// >>> remat.ones(2, 3).masked_fill_(remat.tensor([True, False, True]), 0)
    /// tensor([[0., 1., 0.],
    ///         [0., 1., 0.]])
    fn masked_fill_<'py>(
        slf: Bound<'py, Self>,
        mask: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let m = convert::extract_tensor("masked_fill_", mask)?;
        let v = PyOperand::from_py("masked_fill_", value)?;
        in_place(slf, |t| ops::masked_fill_(t, &m, v.core()))
    }
    /// Fill this tensor in place with samples from a normal distribution.
    ///
    /// The samples come from the global generator (`remat.manual_seed` makes them
    /// reproducible) or from `generator`.
    ///
    /// Parameters
    /// ----------
    /// mean : float, optional
    ///     Mean of the distribution. Default: ``0.0``.
    /// std : float, optional
    ///     Standard deviation (``>= 0``; ``0`` fills with `mean`). Default: ``1.0``.
    /// generator : Generator, optional
    ///     A `remat.Generator` to draw from instead of the global one. Default: ``None``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ValueError
    ///     If `mean` is not finite or `std` is negative or not finite.
    /// DTypeError
    ///     If this tensor is not a floating-point tensor.
    /// TypeError
    ///     If `generator` is not a `remat.Generator`.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.empty(1000).normal_(mean=2.0, std=0.5)
    /// >>> x.shape
    /// (1000,)
    /// >>> remat.zeros(2, 2).normal_(5, 0)
    /// tensor([[5., 5.],
    ///         [5., 5.]])
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_<'py>(
        slf: Bound<'py, Self>,
        mean: f64,
        std: f64,
        generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
    ) -> PyResult<Bound<'py, Self>> {
        crate::generator::drawing(generator, || in_place(slf, |t| ops::normal_(t, mean, std)))
    }
    /// Fill this tensor in place with samples from the uniform distribution on `[a, b)`.
    ///
    /// The samples come from the global generator (`remat.manual_seed` makes them
    /// reproducible) or from `generator`.
    ///
    /// Parameters
    /// ----------
    /// a : float, optional
    ///     Lower bound (inclusive). Default: ``0.0``.
    /// b : float, optional
    ///     Upper bound (exclusive; ``a == b`` fills with `a`). Default: ``1.0``.
    /// generator : Generator, optional
    ///     A `remat.Generator` to draw from instead of the global one. Default: ``None``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object), modified.
    ///
    /// Raises
    /// ------
    /// ValueError
    ///     If `a > b` or a bound is not finite.
    /// DTypeError
    ///     If this tensor is not a floating-point tensor.
    /// TypeError
    ///     If `generator` is not a `remat.Generator`.
    /// GraphError
    ///     If grad mode is on and this tensor is a leaf that requires grad, or a view of one
    ///     (write it under `remat.no_grad()`). A tensor a graph made is written through the
    ///     graph (rebased onto the write, as in PyTorch).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.zeros(2, 3).uniform_(-1, 1)
    /// >>> x.shape
    /// (2, 3)
    /// >>> bool(((x >= -1) & (x < 1)).all())
    /// True
    /// >>> g = remat.Generator().manual_seed(1)
    /// >>> remat.zeros(3).uniform_(generator=g).shape
    /// (3,)
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
    fn __ifloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        computed(self, py, "floor_divide_", other, ops::floor_divide)
    }
    fn __imod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        computed(self, py, "remainder_", other, ops::remainder)
    }
    fn __ipow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let t = &self.inner;
        if let Some(p) = crate::convert::python_scalar(other) {
            let float = other.is_instance_of::<pyo3::types::PyFloat>();
            return run(py, heavy(&[t]), || {
                ops::update_with_("pow_", t, &[], |x| ops::pow_number(x, p, float))
            });
        }
        computed(self, py, "pow_", other, ops::pow)
    }
}
