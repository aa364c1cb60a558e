//! The `remat.Tensor` class: a Rust pyclass over `remat_core::Tensor`, with its attributes,
//! methods and operators implemented here so the per-op Python overhead stays tiny (no
//! Python-level wrappers on the hot path). Behaviour lives in remat-core.

use crate::args;
use crate::call::{binary, unary};
use crate::convert::{self, operand, python_scalar};
use crate::dtype::{
    dtype_object, numpy_dtype_name, parse_opt_dtype, try_parse, unsupported_dtype, PyDType,
};
use crate::errors::{to_pyerr, CoreResultExt, DTypeError};
use crate::numpy_bridge::to_numpy;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList, PyString, PyTuple};
use pyo3::{intern, IntoPyObjectExt};
use remat_core::{ops, DType, Device, Tensor};

/// An n-dimensional array with autograd.
///
/// Elements are float32, float64, int64, int32 or bool; only floating-point tensors can
/// require gradients. `Tensor(data, ...)` is the same as `remat.tensor(data, ...)` without
/// its `device` argument: `data` is copied. Unlike PyTorch, `Tensor(2, 3)` does not make
/// an uninitialised 2x3 tensor (use `remat.empty(2, 3)`); the second argument is the dtype.
///
/// Parameters
/// ----------
/// data : array-like
///     A Python number, nested lists or tuples of numbers, a NumPy array or a Tensor.
/// dtype : DType or str, optional
///     The element type (`remat.float32`, `"float64"`, a NumPy dtype, ...). Default:
///     ``None``: float32 for Python floats, int64 for ints, bool for bools; NumPy data keep
///     their dtype where remat has it (otherwise float32 for floats, int64 for integers).
/// requires_grad : bool, optional
///     Whether autograd records operations on the tensor. Default: ``False``.
///
/// Raises
/// ------
/// DTypeError
///     If `dtype` is not one remat supports, the data are not numbers, or
///     `requires_grad=True` is asked for a non-floating-point tensor.
/// ShapeError
///     If nested lists are ragged.
///
/// Examples
/// --------
/// >>> remat.Tensor([[1.0, 2.0], [3.0, 4.0]])
/// tensor([[1., 2.],
///         [3., 4.]])
/// >>> remat.Tensor([1.5, 2.0], dtype=remat.float64)
/// tensor([1.5000, 2.0000], dtype=remat.float64)
/// >>> w = remat.Tensor([1.0, 2.0], requires_grad=True)
/// >>> (w * w).sum().backward()
/// >>> w.grad
/// tensor([2., 4.])
#[pyclass(name = "Tensor", module = "remat", frozen, subclass, weakref)]
pub struct PyTensor {
    /// The engine tensor (a cheap `Arc` handle).
    pub inner: Tensor,
}

impl From<Tensor> for PyTensor {
    #[inline]
    fn from(inner: Tensor) -> Self {
        PyTensor { inner }
    }
}

/// Wrap an engine tensor for Python.
#[inline]
pub fn wrap(t: Tensor) -> PyTensor {
    PyTensor { inner: t }
}

/// A Tensor argument, or anything array-like converted like `remat.tensor` does.
pub fn extract_tensor(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    convert::extract_tensor("tensor", obj)
}

/// Either operand of operator `op`, or None when Python should try the other operand's
/// reflected method (`NotImplemented`): a type remat cannot convert. A NumPy array or scalar
/// (or a Python complex) of a dtype remat lacks raises `DTypeError` naming `op` and the dtype
/// instead: handing it to NumPy's reflected operator would return an ndarray without the graph.
#[inline]
fn op_operand(op: &str, other: &Bound<'_, PyAny>, like: &Tensor) -> PyResult<Option<Tensor>> {
    let py = other.py();
    match operand(op, other, like) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_instance_of::<DTypeError>(py) && convert::is_numpy_value(other)? => Err(e),
        Err(e) if e.is_instance_of::<PyTypeError>(py) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `self (op) other` (or `other (op) self` when `reflected`), returning NotImplemented for
/// operand types remat does not know; `op` names the operator in errors.
#[inline]
fn binop(
    py: Python<'_>,
    op: &str,
    this: &Tensor,
    other: &Bound<'_, PyAny>,
    reflected: bool,
    f: fn(&Tensor, &Tensor) -> remat_core::Result<Tensor>,
) -> PyResult<PyObject> {
    let Some(o) = op_operand(op, other, this)? else {
        return Ok(py.NotImplemented());
    };
    let out = if reflected {
        binary(py, &o, this, f)?
    } else {
        binary(py, this, &o, f)?
    };
    Ok(Py::new(py, out)?.into_any())
}

/// `x ** p`: a Python scalar exponent uses the scalar power (cheaper backward).
fn power(py: Python<'_>, x: &Tensor, p: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    if let Some(v) = python_scalar(p) {
        let float = p.is_instance_of::<PyFloat>();
        let out = unary(py, x, |x| ops::pow_number(x, v, float))?;
        return Ok(Py::new(py, out)?.into_any());
    }
    binop(py, "pow", x, p, false, ops::pow)
}

#[pymethods]
impl PyTensor {
    /// `Tensor(data, dtype=None, requires_grad=False)`: the same as `remat.tensor`.
    #[new]
    #[pyo3(signature = (data, dtype=None, requires_grad=false))]
    fn py_new(
        data: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<Self> {
        let t = convert::tensor_from_py("Tensor", data, parse_opt_dtype(dtype)?)?;
        t.set_requires_grad(requires_grad).py()?;
        Ok(wrap(t))
    }

    // ---- attributes -------------------------------------------------------------------

    /// The extent of each axis, as a tuple of ints (`()` for a 0-d tensor).
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2, 3).shape
    /// (2, 3)
    /// >>> remat.tensor(5.0).shape
    /// ()
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }
    /// The number of axes (0 for a scalar tensor).
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2, 3).ndim
    /// 2
    /// >>> remat.tensor(5.0).ndim
    /// 0
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }
    /// The element type of this tensor.
    ///
    /// One of `remat.float32`, `remat.float64`, `remat.int64`, `remat.int32`, `remat.bool`.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([1.0, 2.0]).dtype
    /// remat.float32
    /// >>> remat.tensor([1, 2]).dtype
    /// remat.int64
    /// >>> remat.tensor([1.0], dtype=remat.float64).dtype == remat.float64
    /// True
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyDType>> {
        dtype_object(py, self.inner.dtype())
    }
    /// The device holding the elements.
    ///
    /// A `remat.device`, a `str` subclass equal to `"cpu"` or `"cuda:N"`.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0])
    /// >>> x.device
    /// device(type='cpu')
    /// >>> x.device == "cpu"
    /// True
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        static CLASS: pyo3::sync::GILOnceCell<PyObject> = pyo3::sync::GILOnceCell::new();
        let class = CLASS.get_or_try_init(py, || -> PyResult<PyObject> {
            Ok(py.import("remat._device")?.getattr("device")?.unbind())
        })?;
        let name = match self.inner.device() {
            Device::Cpu => intern!(py, "cpu").clone(),
            d => PyString::new(py, &d.to_string()),
        };
        class.bind(py).call1((name,))
    }
    /// Whether autograd records operations on this tensor (and computes its gradient).
    ///
    /// Assignable on leaves (`t.requires_grad = True`), like `requires_grad_()`: only
    /// floating-point tensors can require gradients (a `DTypeError` otherwise), and a tensor
    /// made by a recorded op cannot change it (a `GraphError`; use `detach()`).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0])
    /// >>> x.requires_grad
    /// False
    /// >>> x.requires_grad = True
    /// >>> (x * 2).requires_grad
    /// True
    #[getter]
    fn requires_grad(&self) -> bool {
        self.inner.requires_grad()
    }
    #[setter]
    fn set_requires_grad(&self, flag: bool) -> PyResult<()> {
        self.inner.set_requires_grad(flag).py()
    }
    /// The gradient accumulated by `backward` (leaves and `retain_grad()` tensors), or None.
    ///
    /// Each backward pass adds into it; set it to None to reset. Assigning takes a Tensor of
    /// this tensor's shape, dtype and device, or None: another type is a `TypeError`, another
    /// shape a `ShapeError`, another dtype a `DTypeError`. Backward never writes into an
    /// assigned tensor in place.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> print(w.grad)
    /// None
    /// >>> (w * w).sum().backward()
    /// >>> w.grad
    /// tensor([2., 4.])
    /// >>> w.grad = None
    #[getter]
    fn grad(&self) -> Option<PyTensor> {
        self.inner.grad().map(wrap)
    }
    /// Assign a gradient: a Tensor of this tensor's shape, dtype and device, or None (as
    /// PyTorch, anything else is a `TypeError`). Backward never writes into it in place.
    #[setter]
    fn set_grad(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match value {
            Some(v) if !v.is_none() => match v.downcast::<PyTensor>() {
                Ok(t) => Some(t.get().inner.clone()),
                Err(_) => {
                    return Err(PyTypeError::new_err(format!(
                        "assigned grad expected to be a Tensor or None but got grad of type {}",
                        convert::type_name(v)
                    )))
                }
            },
            _ => None,
        };
        self.inner.set_grad(g).py()
    }
    /// Whether this tensor is a leaf of the autograd graph.
    ///
    /// Leaves are created by the user (or detached) rather than by a recorded op; tensors
    /// that do not require grad are leaves too.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> w.is_leaf
    /// True
    /// >>> (w * 2).is_leaf
    /// False
    /// >>> (w * 2).detach().is_leaf
    /// True
    #[getter]
    fn is_leaf(&self) -> bool {
        self.inner.is_leaf()
    }
    /// The name of the op that produced this tensor, as a string (None for leaves).
    ///
    /// Unlike PyTorch this is the op's name, not a graph node object.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([2.0], requires_grad=True)
    /// >>> (w * 3).grad_fn
    /// 'mul'
    /// >>> print(w.grad_fn)
    /// None
    #[getter]
    fn grad_fn(&self) -> Option<&'static str> {
        self.inner.grad_fn().map(|n| n.name())
    }
    /// The bytes of this tensor's elements.
    ///
    /// `numel() * itemsize`: the logical size, also for a view or a broadcast tensor that
    /// shares storage.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2, 3).nbytes
    /// 24
    /// >>> remat.zeros(2, 3, dtype=remat.float64).nbytes
    /// 48
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }
    /// The shape as a tuple, or the extent of one axis.
    ///
    /// Parameters
    /// ----------
    /// dim : int, optional
    ///     The axis (negative counts from the end). Default: ``None`` (the whole shape).
    ///
    /// Returns
    /// -------
    /// tuple of int or int
    ///     The shape (as `shape`) when `dim` is None, else the extent of axis `dim`.
    ///
    /// Raises
    /// ------
    /// IndexError
    ///     If `dim` is out of range (any `dim` for a 0-d tensor).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.zeros(2, 3)
    /// >>> x.size()
    /// (2, 3)
    /// >>> x.size(-1)
    /// 3
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<isize>) -> PyResult<Bound<'py, PyAny>> {
        let shape = self.inner.shape();
        let Some(d) = dim else {
            return Ok(PyTuple::new(py, shape)?.into_any());
        };
        let n = shape.len() as isize;
        let a = if d < 0 { d + n } else { d };
        if n == 0 {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "size: dimension specified as {d} but the tensor has no dimensions"
            )));
        }
        if !(0..n).contains(&a) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "size: dimension out of range (expected to be in range of [{}, {}], but got {d})",
                -n,
                n - 1
            )));
        }
        shape[a as usize].into_bound_py_any(py)
    }
    /// The bytes per element (PyTorch's spelling of `itemsize`).
    ///
    /// Returns
    /// -------
    /// int
    ///     4 for float32 and int32, 8 for float64 and int64, 1 for bool.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(3).element_size()
    /// 4
    /// >>> remat.zeros(3, dtype=remat.float64).element_size()
    /// 8
    fn element_size(&self) -> usize {
        self.inner.dtype().size()
    }
    /// The bytes per element: 4 for float32 and int32, 8 for float64 and int64, 1 for bool.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(3).itemsize
    /// 4
    /// >>> remat.zeros(3, dtype=remat.bool).itemsize
    /// 1
    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.dtype().size()
    }
    /// The number of elements (the product of the shape; 1 for a 0-d tensor).
    ///
    /// Returns
    /// -------
    /// int
    ///     The element count.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2, 3).numel()
    /// 6
    /// >>> remat.tensor(5.0).numel()
    /// 1
    fn numel(&self) -> usize {
        self.inner.numel()
    }
    /// The number of axes (PyTorch's spelling of `ndim`).
    ///
    /// Returns
    /// -------
    /// int
    ///     0 for a scalar tensor, 1 for a vector, ...
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2, 3).dim()
    /// 2
    /// >>> remat.tensor(5.0).dim()
    /// 0
    fn dim(&self) -> usize {
        self.inner.ndim()
    }
    /// Whether the elements sit in memory in C (row-major) order without gaps.
    ///
    /// Transposed, permuted and broadcast views usually are not; `contiguous()` makes a
    /// contiguous tensor.
    ///
    /// Returns
    /// -------
    /// bool
    ///     True when the layout is C-contiguous.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.zeros(2, 3)
    /// >>> x.is_contiguous()
    /// True
    /// >>> x.T.is_contiguous()
    /// False
    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }

    /// NumPy asks operators to defer to this class (`ndarray + tensor` gives a Tensor).
    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }

    // ---- conversion ---------------------------------------------------------------------

    /// This tensor's elements as a NumPy array that shares its memory.
    ///
    /// For a CPU tensor the array is a view (no copy): writing into it changes the tensor, and
    /// the array keeps the memory alive. Broadcast views (a stride of 0 on an axis of extent
    /// 2 or more) give read-only arrays, like `np.broadcast_to`. A CUDA tensor gives an array
    /// over a host copy. As in PyTorch, a tensor that requires grad is refused (the array
    /// would be outside the graph) unless `force=True`, which gives the detached tensor's
    /// array; `np.asarray(t)` (the array protocol) does not refuse.
    ///
    /// Parameters
    /// ----------
    /// force : bool, optional
    ///     Detach first instead of refusing a tensor that requires grad. Default: `False`.
    ///
    /// Returns
    /// -------
    /// numpy.ndarray
    ///     An array of this tensor's shape and matching dtype (float32, float64, int64, int32
    ///     or bool).
    ///
    /// Raises
    /// ------
    /// GraphError
    ///     When the tensor requires grad and `force` is false (a `RuntimeError`, as PyTorch's).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0])
    /// >>> a = x.numpy()
    /// >>> a
    /// array([1., 2.], dtype=float32)
    /// >>> a[0] = 10.0
    /// >>> x
    /// tensor([10.,  2.])
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.requires_grad() && !force {
            return Err(to_pyerr(remat_core::Error::graph(
                "numpy",
                format!(
                    "can't call numpy() on a tensor of shape {} that requires grad (the array \
                     would be outside the graph); use tensor.detach().numpy() instead",
                    remat_core::layout::fmt_shape(self.inner.shape())
                ),
            )));
        }
        to_numpy(py, &host(&self.inner)?)
    }
    /// NumPy's array protocol.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let arr = to_numpy(py, &host(&self.inner)?)?;
        match dtype {
            Some(d) if !d.is_none() => {
                let same = arr.getattr(intern!(py, "dtype"))?.eq(d).unwrap_or(false);
                if !same {
                    if copy == Some(false) {
                        return Err(PyValueError::new_err(
                            "__array__: converting the dtype needs a copy, but copy=False",
                        ));
                    }
                    return arr.call_method1(intern!(py, "astype"), (d,));
                }
            }
            _ => {}
        }
        if copy == Some(true) {
            return arr.call_method0(intern!(py, "copy"));
        }
        Ok(arr)
    }
    /// The value of a one-element tensor as a Python number.
    ///
    /// Returns
    /// -------
    /// float, int or bool
    ///     A float for float tensors, an int for integer tensors, a bool for bool tensors (as
    ///     in PyTorch).
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If the tensor does not have exactly one element.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([[1.0, 2.0], [3.0, 4.0]]).sum().item()
    /// 10.0
    /// >>> remat.tensor([7]).item()
    /// 7
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.inner.dtype() {
            DType::F32 | DType::F64 | DType::BF16 | DType::F16 => {
                self.inner.item().py()?.into_bound_py_any(py)
            }
            DType::Bool => (self.inner.item().py()? != 0.0).into_bound_py_any(py),
            DType::I64 | DType::I32 => self.inner.item_i64().py()?.into_bound_py_any(py),
        }
    }
    /// The elements as (nested) Python lists of numbers.
    ///
    /// Returns
    /// -------
    /// list or number
    ///     Nested lists matching the shape, of floats, ints or bools per dtype; a 0-d tensor
    ///     gives a plain number.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([[1.0, 2.0], [3.0, 4.0]]).tolist()
    /// [[1.0, 2.0], [3.0, 4.0]]
    /// >>> remat.tensor(2.5).tolist()
    /// 2.5
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_numpy(py, &host(&self.inner)?)?.call_method0(intern!(py, "tolist"))
    }
    fn __float__(&self) -> PyResult<f64> {
        self.inner.item().py()
    }
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if !self.inner.dtype().is_float() {
            return self.inner.item_i64().py()?.into_bound_py_any(py);
        }
        let v = self.inner.item().py()?;
        PyFloat::new(py, v).call_method0(intern!(py, "__int__"))
    }
    /// An integer tensor with one element can index Python sequences (`xs[t]`), as in
    /// PyTorch; float tensors cannot.
    fn __index__(&self) -> PyResult<i64> {
        if self.inner.dtype().is_float() || self.inner.numel() != 1 {
            return Err(PyTypeError::new_err(format!(
                "only integer tensors of a single element can be converted to an index, got \
                 a {} tensor of shape {}",
                self.inner.dtype(),
                remat_core::layout::fmt_shape(self.inner.shape())
            )));
        }
        self.inner.item_i64().py()
    }
    fn __bool__(&self) -> PyResult<bool> {
        Ok(self.inner.item().py()? != 0.0)
    }
    fn __len__(&self) -> PyResult<usize> {
        self.inner
            .shape()
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let n = self
            .__len__()
            .map_err(|_| PyTypeError::new_err("iteration over a 0-d tensor"))?;
        let items = (0..n)
            .map(|i| ops::index(&self.inner, &[ops::IndexItem::Int(i as isize)]).map(wrap))
            .collect::<remat_core::Result<Vec<_>>>()
            .py()?;
        Ok(PyList::new(py, items)?.try_iter()?.into_any())
    }
    fn __repr__(&self) -> PyResult<String> {
        crate::repr::repr(&self.inner)
    }
    /// A leaf copy (value, requires_grad and grad copied), as `copy.deepcopy` expects.
    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let t = &self.inner;
        let c = ops::contiguous_copy(t, t.dtype()).py()?;
        if let Some(g) = t.grad() {
            c.set_grad(Some(ops::contiguous_copy(&g, g.dtype()).py()?))
                .py()?;
        }
        c.set_requires_grad(t.requires_grad()).py()?;
        Ok(wrap(c))
    }
    /// Pickles as `remat.tensor(array, dtype, requires_grad, device)` (a device tensor's
    /// values through a host copy; unpickling puts them back on that device).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, PyObject)> {
        let f = py.import("remat")?.getattr("tensor")?;
        let arr = to_numpy(py, &host(&self.inner)?)?.call_method0("copy")?;
        let t = &self.inner;
        let device = t.device().to_string();
        let args = (arr, t.dtype().name(), t.requires_grad(), device).into_py_any(py)?;
        Ok((f, args))
    }

    // ---- autograd -----------------------------------------------------------------------

    /// Back-propagate from this tensor, accumulating gradients into the leaves' `.grad`.
    ///
    /// The gradients add to what `.grad` already holds. The graph's saved tensors are freed
    /// afterwards unless `retain_graph` is true, so a second backward through the same graph
    /// needs `retain_graph=True` on the first. The GIL is released throughout (hooks take it).
    ///
    /// Parameters
    /// ----------
    /// gradient : Tensor or number, optional
    ///     The gradient with respect to this tensor, of its shape. Default: ``None``: 1 for a
    ///     one-element tensor (required otherwise).
    /// retain_graph : bool, optional
    ///     Keep the graph for another backward. Default: ``None`` (the value of
    ///     `create_graph`).
    /// create_graph : bool, optional
    ///     Record the backward pass itself, so the gradients can be differentiated again.
    ///     Default: ``False``.
    /// inputs : Tensor or sequence of Tensor, optional
    ///     Accumulate only into these tensors' `.grad`. Default: ``None`` (all leaves that
    ///     require grad).
    ///
    /// Returns
    /// -------
    /// None
    ///
    /// Raises
    /// ------
    /// GraphError
    ///     If this tensor does not require grad, `gradient` is omitted for a tensor with more
    ///     than one element, the graph was already freed by an earlier backward, or an entry
    ///     of `inputs` does not require grad.
    /// ShapeError
    ///     If `gradient`'s shape differs from this tensor's.
    /// TypeError
    ///     If `inputs` is not a Tensor or a sequence of Tensors.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> (w * w).sum().backward()
    /// >>> w.grad
    /// tensor([2., 4.])
    /// >>> (w * 3).backward(remat.tensor([1.0, 0.5]))
    /// >>> w.grad
    /// tensor([5.0000, 5.5000])
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let g = match gradient {
            Some(g) if !g.is_none() => Some(operand("backward", g, &self.inner)?),
            _ => None,
        };
        let inputs = match inputs {
            Some(i) if !i.is_none() => Some(crate::autograd::tensors("backward", "inputs", i)?),
            _ => None,
        };
        let roots = [(self.inner.clone(), g)];
        let opts = remat_core::autograd::GradOptions {
            retain_graph,
            create_graph,
            allow_unused: true,
        };
        py.allow_threads(|| remat_core::autograd::backward_with(&roots, inputs.as_deref(), opts))
            .py()
    }
    /// A new leaf that shares this tensor's storage, cut from the graph.
    ///
    /// The result does not require grad; in-place writes to either tensor show in the other.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The same values, `requires_grad=False`, no `grad_fn`.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> y = (w * 2).detach()
    /// >>> y
    /// tensor([2., 4.])
    /// >>> y.requires_grad, y.is_leaf
    /// (False, True)
    fn detach(&self) -> PyTensor {
        wrap(self.inner.detach())
    }
    /// The tensor's values without autograd.
    ///
    /// Reading gives a tensor that shares this one's storage and needs no gradient (as
    /// `detach()`).
    ///
    /// Assigning (`p.data = new_values`) copies the values of a Tensor of the same shape and
    /// dtype into this tensor's storage, outside the graph; unlike PyTorch it does not rebind
    /// the storage, so another shape or dtype is a `RuntimeError`.
    ///
    /// Examples
    /// --------
    /// >>> p = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> p.data
    /// tensor([1., 2.])
    /// >>> p.data = remat.tensor([5.0, 6.0])
    /// >>> p
    /// tensor([5., 6.], requires_grad=True)
    #[getter]
    fn data(&self) -> PyTensor {
        wrap(self.inner.detach())
    }
    #[setter]
    fn set_data(&self, value: PyRef<'_, PyTensor>) -> PyResult<()> {
        let (dst, src) = (&self.inner, &value.inner);
        if dst.shape() != src.shape() || dst.dtype() != src.dtype() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "data: remat assigns .data by copying, so the new value must have this \
                 tensor's shape and dtype: got {} {:?} for {} {:?}",
                src.dtype(),
                src.shape(),
                dst.dtype(),
                dst.shape()
            )));
        }
        let _guard = remat_core::no_grad();
        remat_core::ops::copy_(&dst.detach(), src).py()
    }
    /// Set `requires_grad` on this tensor in place and return it.
    ///
    /// Parameters
    /// ----------
    /// flag : bool, optional
    ///     Whether autograd should record operations on this tensor. Default: ``True``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     This tensor (the same object).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     If `flag` is true and this is not a floating-point tensor.
    /// GraphError
    ///     If this tensor was made by a recorded op (not a leaf); use `detach()`.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0]).requires_grad_()
    /// >>> x
    /// tensor([1., 2.], requires_grad=True)
    /// >>> x.requires_grad_(False).requires_grad
    /// False
    #[pyo3(signature = (flag=true))]
    fn requires_grad_(slf: Bound<'_, Self>, flag: bool) -> PyResult<Bound<'_, Self>> {
        slf.get().inner.set_requires_grad(flag).py()?;
        Ok(slf)
    }

    // ---- device / dtype -------------------------------------------------------------------

    /// This tensor converted to another dtype and/or moved to another device.
    ///
    /// Call forms: `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)` (the dtype and
    /// device of Tensor `other`), or the keywords `dtype=` and `device=`. Returns this tensor
    /// itself when nothing changes. Float conversions and device moves are differentiable;
    /// conversions to integer or bool types pass no gradient.
    ///
    /// Parameters
    /// ----------
    /// *args
    ///     Positional dtypes (`remat.float64`, `"float64"`, a NumPy dtype), devices (`"cpu"`,
    ///     `"cuda"`, `"cuda:N"`, a `remat.device`) or a Tensor whose dtype and device to take.
    /// dtype : DType or str, optional
    ///     The target dtype. Default: ``None`` (keep).
    /// device : str or device, optional
    ///     The target device. Default: ``None`` (keep).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor when dtype and device already match.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     If a dtype is not one remat supports (e.g. ``"int8"``).
    /// DeviceError
    ///     If a device string is unknown, or the CUDA device is not available.
    /// TypeError
    ///     If a positional argument is neither a dtype, a device string nor a Tensor.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.5, -2.5, 0.0])
    /// >>> x.to(remat.float64)
    /// tensor([ 1.5000, -2.5000,  0.0000], dtype=remat.float64)
    /// >>> x.to("cpu") is x
    /// True
    /// >>> x.to(remat.tensor([1]))
    /// tensor([ 1, -2,  0])
    #[pyo3(signature = (*args, dtype=None, device=None))]
    fn to<'py>(
        slf: Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        dtype: Option<&Bound<'py, PyAny>>,
        device: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let mut want_dtype = parse_opt_dtype(dtype)?;
        let mut want_device = match device {
            Some(d) if !d.is_none() => Some(args::device(Some(d))?),
            _ => None,
        };
        for a in args.iter() {
            if let Ok(t) = a.downcast::<PyTensor>() {
                want_dtype = Some(t.get().inner.dtype());
                want_device = Some(t.get().inner.device());
                continue;
            }
            if let Ok(s) = a.downcast::<PyString>() {
                // As in PyTorch, a string is a device, never a dtype: `to("int32")` is an
                // unknown device, not a cast.
                let name = s.to_cow()?;
                match Device::parse(&name) {
                    Ok(d) => want_device = Some(d),
                    Err(_) if try_parse(&a).is_some() || numpy_dtype_name(&a).is_some() => {
                        let instead = try_parse(&a)
                            .map_or("a dtype object".to_string(), |d| format!("remat.{d}"));
                        return Err(to_pyerr(remat_core::Error::device(
                            "to",
                            format!(
                                "{name:?} is not a device: a string given to to() always \
                                 names a device (\"cpu\", \"cuda\", \"cuda:N\"), as in \
                                 PyTorch; to cast, pass {instead}"
                            ),
                        )));
                    }
                    Err(e) => return Err(to_pyerr(e)),
                }
                continue;
            }
            if let Some(d) = try_parse(&a) {
                want_dtype = Some(d);
                continue;
            }
            if let Some(name) = numpy_dtype_name(&a) {
                return Err(unsupported_dtype("to", &name));
            }
            return Err(PyTypeError::new_err(format!(
                "to: expected a dtype, a device string or a tensor, got {}",
                a.repr()?
            )));
        }
        let mut this = slf.get().inner.clone();
        let mut changed = false;
        if let Some(dev) = want_device {
            if dev != this.device() {
                remat_core::cuda::ensure_available("to", dev).py()?;
                this = unary(py, &this, |x| ops::to_device(x, dev))?.inner;
                changed = true;
            }
        }
        match want_dtype {
            Some(d) if d != this.dtype() => {
                let out = unary(py, &this, |x| ops::to_dtype(x, d))?;
                Ok(Bound::new(py, out)?.into_any())
            }
            _ if changed => Ok(Bound::new(py, PyTensor::from(this))?.into_any()),
            _ => Ok(slf.into_any()),
        }
    }
    /// This tensor on the CPU (itself when it already is there; differentiable).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A CPU tensor with the same values.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0])
    /// >>> x.cpu() is x
    /// True
    fn cpu(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        if slf.get().inner.device() == Device::Cpu {
            return Ok(slf);
        }
        let py = slf.py();
        let out = unary(py, &slf.get().inner, |x| ops::to_device(x, Device::Cpu))?;
        Bound::new(py, out)
    }
    /// This tensor moved to a CUDA device (differentiable).
    ///
    /// Parameters
    /// ----------
    /// device : int or str, optional
    ///     The GPU: an index or a `"cuda:N"` string. Default: ``None`` (GPU 0).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The tensor on that device.
    ///
    /// Raises
    /// ------
    /// DeviceError
    ///     If `device` is a negative index or not a CUDA device, or the device is not usable
    ///     (the message gives the reason, e.g. no CUDA driver).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, 2.0])
    /// >>> y = x.cuda() if remat.cuda.is_available() else x
    /// >>> y.cpu().tolist()
    /// [1.0, 2.0]
    #[pyo3(signature = (device=None))]
    fn cuda(&self, py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dev = args::cuda_device("cuda", device)?;
        remat_core::cuda::ensure_available("cuda", dev).py()?;
        unary(py, &self.inner, |x| ops::to_device(x, dev))
    }
    /// This tensor as float32 (differentiable for floating-point tensors).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor itself when it already is float32.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([0, 2]).float()
    /// tensor([0., 2.])
    fn float(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::F32)
    }
    /// This tensor as float64 (differentiable for floating-point tensors).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor itself when it already is float64.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([1.5, 2.0]).double()
    /// tensor([1.5000, 2.0000], dtype=remat.float64)
    fn double(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::F64)
    }
    /// This tensor as float16 (differentiable for floating-point tensors; values round to
    /// nearest even).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor itself when it already is float16.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([1.0, 1.0001]).half()
    /// tensor([1., 1.], dtype=remat.float16)
    fn half(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::F16)
    }
    /// This tensor as bfloat16 (differentiable for floating-point tensors; values round to
    /// nearest even, keeping 8 significant bits).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor itself when it already is bfloat16.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([1.0, 3.14159]).bfloat16()
    /// tensor([1.0000, 3.1406], dtype=remat.bfloat16)
    fn bfloat16(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::BF16)
    }
    /// Whether the tensor's dtype is a floating-point one (float32, float64, bfloat16 or
    /// float16), as PyTorch's ``Tensor.is_floating_point``.
    ///
    /// Returns
    /// -------
    /// bool
    ///     True for float dtypes, False for integer and bool ones.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.ones(2, dtype=remat.bfloat16).is_floating_point(), remat.arange(2).is_floating_point()
    /// (True, False)
    fn is_floating_point(&self) -> bool {
        self.inner.dtype().is_float()
    }
    /// This tensor as int64 (floats truncate toward zero; no gradient flows through).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor itself when it already is int64.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([1.5, -2.5, 0.0]).long()
    /// tensor([ 1, -2,  0])
    fn long(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::I64)
    }
    /// This tensor as int32 (floats truncate toward zero; no gradient flows through).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor itself when it already is int32.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([1.5, -2.5, 0.0]).int()
    /// tensor([ 1, -2,  0], dtype=remat.int32)
    fn int(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::I32)
    }
    /// This tensor as bool: nonzero elements are True (no gradient flows through).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The converted tensor, or this tensor itself when it already is bool.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([1.5, 0.0, -2.0]).bool()
    /// tensor([ True, False,  True])
    fn bool(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::Bool)
    }
    /// This tensor converted to `dtype`, or without an argument the name of its type.
    ///
    /// Parameters
    /// ----------
    /// dtype : DType or str, optional
    ///     The target dtype (as for `to`). Default: ``None``: return the type's name instead.
    ///     Unlike PyTorch, type names such as ``"remat.DoubleTensor"`` are not accepted.
    ///
    /// Returns
    /// -------
    /// Tensor or str
    ///     The converted tensor (this tensor itself when it already has `dtype`), or the name:
    ///     ``"remat.FloatTensor"``, ``"remat.DoubleTensor"``, ``"remat.LongTensor"``,
    ///     ``"remat.IntTensor"`` or ``"remat.BoolTensor"``.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     If `dtype` is not a dtype remat supports.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.5, 2.0])
    /// >>> x.type()
    /// 'remat.FloatTensor'
    /// >>> x.type(remat.int64)
    /// tensor([1, 2])
    #[pyo3(signature = (dtype=None))]
    fn r#type<'py>(
        slf: Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        match crate::dtype::parse_opt_dtype(dtype)? {
            Some(d) => cast_to(slf, d),
            None => {
                let name = match slf.get().inner.dtype() {
                    DType::F32 => "FloatTensor",
                    DType::F64 => "DoubleTensor",
                    DType::I64 => "LongTensor",
                    DType::I32 => "IntTensor",
                    DType::Bool => "BoolTensor",
                    DType::BF16 => "BFloat16Tensor",
                    DType::F16 => "HalfTensor",
                };
                format!("remat.{name}").into_bound_py_any(py)
            }
        }
    }

    // ---- shape ------------------------------------------------------------------------

    /// This tensor with another shape (an alias of `reshape`).
    ///
    /// The result always shares this tensor's storage. As in PyTorch, a layout that has no
    /// such view (a transpose flattened, say) raises ``ShapeError``; ``reshape`` copies then.
    /// Differentiable.
    ///
    /// Parameters
    /// ----------
    /// *shape
    ///     The new shape, as separate ints or one tuple/list; one entry may be ``-1`` (inferred
    ///     from the element count).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The tensor with the new shape and the same elements in C order.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If the shape does not match the element count, more than one entry is ``-1``, or
    ///     no strides show this tensor's storage in the new shape.
    /// TypeError
    ///     If an entry is not an integer.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.arange(6)
    /// >>> x.view(2, 3)
    /// tensor([[0, 1, 2],
    ///         [3, 4, 5]])
    /// >>> x.view(-1, 2).shape
    /// (3, 2)
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let x = &self.inner;
        let dims = args::signed_dims("view", shape)?;
        let shape = ops::shape::infer_shape("view", x.shape(), &dims).py()?;
        crate::call::run(py, crate::call::heavy(&[x]), || {
            ops::view_as_shape(x, &shape)
        })
        .map(wrap)
    }
    /// This tensor with all axes reversed (a view; 0-d and 1-d tensors are unchanged).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    /// >>> x.T
    /// tensor([[1., 4.],
    ///         [2., 5.],
    ///         [3., 6.]])
    /// >>> remat.zeros(2, 3, 4).T.shape
    /// (4, 3, 2)
    #[getter(T)]
    fn t_prop(&self) -> PyResult<PyTensor> {
        ops::reverse_axes(&self.inner).py().map(wrap)
    }
    /// This 2-D tensor transposed (PyTorch's ``t()``; a view). A 0-D or 1-D tensor comes back
    /// unchanged.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A view with the two axes swapped.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     If the tensor has more than 2 dimensions (use ``transpose`` or ``mT``).
    ///
    /// Examples
    /// --------
    /// >>> remat.tensor([[1.0, 2.0, 3.0]]).t()
    /// tensor([[1.],
    ///         [2.],
    ///         [3.]])
    /// >>> remat.zeros(3).t().shape
    /// (3,)
    fn t(&self) -> PyResult<PyTensor> {
        ops::t(&self.inner).py().map(wrap)
    }
    /// This tensor with its last two axes swapped (a view of a batch of matrices).
    ///
    /// Reading it on a tensor with fewer than 2 dimensions raises a `ShapeError`.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2, 3, 4).mT.shape
    /// (2, 4, 3)
    /// >>> remat.tensor([[1.0, 2.0]]).mT
    /// tensor([[1.],
    ///         [2.]])
    #[getter(mT)]
    fn mt_prop(&self) -> PyResult<PyTensor> {
        ops::matrix_transpose(&self.inner).py().map(wrap)
    }
    /// A C-contiguous tensor with the same values.
    ///
    /// A tensor that already is contiguous comes back itself (the same object, as in
    /// PyTorch); otherwise the elements are copied into C order. Differentiable.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A contiguous tensor equal to this one.
    ///
    /// Raises
    /// ------
    /// None
    ///     Nothing is raised.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]]).T
    /// >>> x.is_contiguous()
    /// False
    /// >>> y = x.contiguous()
    /// >>> y.is_contiguous()
    /// True
    /// >>> y
    /// tensor([[1., 3.],
    ///         [2., 4.]])
    fn contiguous(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        // PyTorch returns the tensor itself when it is contiguous already.
        if slf.get().inner.is_contiguous() {
            return Ok(slf);
        }
        let out = unary(slf.py(), &slf.get().inner, ops::contiguous)?;
        Bound::new(slf.py(), out)
    }
    /// Basic indexing: ints, slices, None, `...`, and tuples of these.
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        crate::indexing::getitem(&self.inner, key)
    }

    // ---- operators --------------------------------------------------------------------

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "add", &self.inner, other, false, ops::add)
    }
    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "add", &self.inner, other, true, ops::add)
    }
    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "sub", &self.inner, other, false, ops::sub)
    }
    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "sub", &self.inner, other, true, ops::sub)
    }
    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "mul", &self.inner, other, false, ops::mul)
    }
    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "mul", &self.inner, other, true, ops::mul)
    }
    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "div", &self.inner, other, false, ops::div)
    }
    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "div", &self.inner, other, true, ops::div)
    }
    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "matmul", &self.inner, other, false, ops::matmul)
    }
    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "matmul", &self.inner, other, true, ops::matmul)
    }
    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        power(py, &self.inner, other)
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        binop(py, "pow", &self.inner, other, true, ops::pow)
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        unary(py, &self.inner, ops::neg)
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        unary(py, &self.inner, ops::abs)
    }
    fn __pos__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }
    fn __floordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(
            py,
            "floor_divide",
            &self.inner,
            other,
            false,
            ops::floor_divide,
        )
    }
    fn __rfloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(
            py,
            "floor_divide",
            &self.inner,
            other,
            true,
            ops::floor_divide,
        )
    }
    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "remainder", &self.inner, other, false, ops::remainder)
    }
    fn __rmod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "remainder", &self.inner, other, true, ops::remainder)
    }
    fn __and__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(
            py,
            "bitwise_and",
            &self.inner,
            other,
            false,
            ops::bitwise_and,
        )
    }
    fn __rand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(
            py,
            "bitwise_and",
            &self.inner,
            other,
            true,
            ops::bitwise_and,
        )
    }
    fn __or__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "bitwise_or", &self.inner, other, false, ops::bitwise_or)
    }
    fn __ror__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(py, "bitwise_or", &self.inner, other, true, ops::bitwise_or)
    }
    fn __xor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(
            py,
            "bitwise_xor",
            &self.inner,
            other,
            false,
            ops::bitwise_xor,
        )
    }
    fn __rxor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        binop(
            py,
            "bitwise_xor",
            &self.inner,
            other,
            true,
            ops::bitwise_xor,
        )
    }
    fn __invert__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        unary(py, &self.inner, ops::bitwise_not)
    }

    // ---- comparisons: elementwise, bool tensors (Python reflects `2 < t` to `t > 2`) -----

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        compare_op(py, "eq", &self.inner, other, ops::eq)
    }
    fn __ne__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        compare_op(py, "ne", &self.inner, other, ops::ne)
    }
    fn __lt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        compare_op(py, "lt", &self.inner, other, ops::lt)
    }
    fn __le__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        compare_op(py, "le", &self.inner, other, ops::le)
    }
    fn __gt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        compare_op(py, "gt", &self.inner, other, ops::gt)
    }
    fn __ge__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        compare_op(py, "ge", &self.inner, other, ops::ge)
    }
    /// Identity-based, as `object.__hash__` (and PyTorch): tensors are dict keys and set
    /// members by identity, although `==` compares elementwise.
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        // CPython's `_Py_HashPointer`: the address rotated right by 4 bits (-1 is reserved).
        let p = slf.as_ptr() as usize;
        let h = p.rotate_right(4) as isize;
        if h == -1 {
            -2
        } else {
            h
        }
    }
}

/// `self (op) other` for a comparison: like [`binop`], but an operand remat cannot convert
/// (None, a string, any object) gives NotImplemented, so `t == None` is False and
/// `t in [1, "a", t]` works as for any Python object. NumPy values of a dtype remat lacks
/// still raise.
fn compare_op(
    py: Python<'_>,
    op: &str,
    this: &Tensor,
    other: &Bound<'_, PyAny>,
    f: fn(&Tensor, &Tensor) -> remat_core::Result<Tensor>,
) -> PyResult<PyObject> {
    match binop(py, op, this, other, false, f) {
        Err(_)
            if !other.is_instance_of::<PyTensor>()
                && python_scalar(other).is_none()
                && !convert::is_numpy_value(other)?
                && !other.is_instance_of::<PyList>()
                && !other.is_instance_of::<PyTuple>() =>
        {
            Ok(py.NotImplemented())
        }
        r => r,
    }
}

/// `slf` converted to `dtype` (itself when it already has it).
fn cast_to(slf: Bound<'_, PyTensor>, dtype: DType) -> PyResult<Bound<'_, PyAny>> {
    let py = slf.py();
    let this = &slf.get().inner;
    if this.dtype() == dtype {
        return Ok(slf.into_any());
    }
    let out = unary(py, this, |x| ops::to_dtype(x, dtype))?;
    Ok(Bound::new(py, out)?.into_any())
}

/// `t` itself on the CPU, or a host copy of a device tensor (no graph): what NumPy sees.
pub(crate) fn host(t: &Tensor) -> PyResult<Tensor> {
    if t.device() == Device::Cpu {
        return Ok(t.clone());
    }
    remat_core::cuda::launch::transfer("numpy", t, Device::Cpu).py()
}
