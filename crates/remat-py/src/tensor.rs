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

/// An n-dimensional array of float32 or float64 with autograd.
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
        let out = unary(py, x, |x| ops::pow_scalar(x, v))?;
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

    /// Extent of each axis.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }
    /// Number of axes.
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }
    /// Element type (`remat.float32` or `remat.float64`).
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyDType>> {
        dtype_object(py, self.inner.dtype())
    }
    /// The device: a `remat.device` (a `str` subclass), `"cpu"` or `"cuda:N"`.
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
    /// Whether gradients flow to this tensor.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.inner.requires_grad()
    }
    #[setter]
    fn set_requires_grad(&self, flag: bool) -> PyResult<()> {
        self.inner.set_requires_grad(flag).py()
    }
    /// The accumulated gradient (leaves), or None.
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
    /// Whether this tensor was created by the user rather than by a recorded op.
    #[getter]
    fn is_leaf(&self) -> bool {
        self.inner.is_leaf()
    }
    /// The name of the op that produced this tensor (None for leaves).
    #[getter]
    fn grad_fn(&self) -> Option<&'static str> {
        self.inner.grad_fn().map(|n| n.name())
    }
    /// Bytes of this tensor's elements.
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.nbytes()
    }
    /// The shape as a tuple (PyTorch's method), or the extent of axis `dim` (negative
    /// counts from the end; out of range is an IndexError). `numel()` counts the elements.
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
    /// Bytes per element (PyTorch spelling of `itemsize`).
    fn element_size(&self) -> usize {
        self.inner.dtype().size()
    }
    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.dtype().size()
    }
    /// Number of elements (PyTorch spelling).
    fn numel(&self) -> usize {
        self.inner.numel()
    }
    /// Number of axes (PyTorch spelling).
    fn dim(&self) -> usize {
        self.inner.ndim()
    }
    /// Whether the elements sit in C order without gaps.
    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }

    /// NumPy asks operators to defer to this class (`ndarray + tensor` gives a Tensor).
    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }

    // ---- conversion ---------------------------------------------------------------------

    /// A NumPy array sharing this tensor's memory (a view; broadcast views are read-only).
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
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
    /// The value of a one-element tensor as a Python number: a float for float tensors, an
    /// int for integer tensors, a bool for bool tensors (as in PyTorch).
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.inner.dtype() {
            DType::F32 | DType::F64 => self.inner.item().py()?.into_bound_py_any(py),
            DType::Bool => (self.inner.item().py()? != 0.0).into_bound_py_any(py),
            DType::I64 | DType::I32 => self.inner.item_i64().py()?.into_bound_py_any(py),
        }
    }
    /// The elements as (nested) Python lists of numbers (floats, ints or bools, per dtype).
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
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        crate::repr::repr(py, &self.inner)
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

    /// Back-propagate from this tensor into the leaves' `.grad` (GIL released throughout).
    /// PyTorch's keywords: `retain_graph` (default: `create_graph`), `create_graph` (record
    /// the backward so gradients can be differentiated again), `inputs` (accumulate only
    /// into these tensors' `.grad`).
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
    /// A new leaf sharing this tensor's storage, cut from the graph.
    fn detach(&self) -> PyTensor {
        wrap(self.inner.detach())
    }
    /// The tensor's values without autograd: a tensor sharing this one's storage that needs
    /// no gradient (as `detach()`). Assigning writes the values of a tensor of the same shape
    /// and dtype into this tensor's storage, outside the graph (`p.data = new_values`).
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
    /// Set `requires_grad` in place and return this tensor.
    #[pyo3(signature = (flag=true))]
    fn requires_grad_(slf: Bound<'_, Self>, flag: bool) -> PyResult<Bound<'_, Self>> {
        slf.get().inner.set_requires_grad(flag).py()?;
        Ok(slf)
    }

    // ---- device / dtype -------------------------------------------------------------------

    /// `to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other_tensor)` or keywords
    /// `dtype=`, `device=`. Returns this tensor when nothing changes.
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
            if let Some(d) = try_parse(&a) {
                want_dtype = Some(d);
                continue;
            }
            if let Ok(s) = a.downcast::<PyString>() {
                // Not a dtype remat has: a device, or else a dtype remat lacks ("int32") or an
                // unknown device.
                match Device::parse(&s.to_cow()?) {
                    Ok(d) => want_device = Some(d),
                    Err(e) => match numpy_dtype_name(&a) {
                        Some(name) => return Err(unsupported_dtype("to", &name)),
                        None => return Err(to_pyerr(e)),
                    },
                }
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
    /// This tensor on the CPU (itself when it already is; differentiable).
    fn cpu(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        if slf.get().inner.device() == Device::Cpu {
            return Ok(slf);
        }
        let py = slf.py();
        let out = unary(py, &slf.get().inner, |x| ops::to_device(x, Device::Cpu))?;
        Bound::new(py, out)
    }
    /// This tensor on a CUDA device (differentiable): `device` is None (GPU 0), an index or a
    /// `"cuda:N"` string. Raises `DeviceError` naming a bad index, or with the reason where no
    /// GPU is usable.
    #[pyo3(signature = (device=None))]
    fn cuda(&self, py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dev = args::cuda_device("cuda", device)?;
        remat_core::cuda::ensure_available("cuda", dev).py()?;
        unary(py, &self.inner, |x| ops::to_device(x, dev))
    }
    /// As float32 (differentiable).
    fn float(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::F32)
    }
    /// As float64 (differentiable).
    fn double(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::F64)
    }
    /// As int64 (floats truncate toward zero; no gradient flows through).
    fn long(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::I64)
    }
    /// As int32 (floats truncate toward zero; no gradient flows through).
    fn int(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::I32)
    }
    /// As bool (nonzero is True).
    fn bool(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        cast_to(slf, DType::Bool)
    }
    /// PyTorch's `type(dtype)`: as `dtype`; without an argument, the type's name
    /// (`"remat.FloatTensor"`, `"remat.LongTensor"`, ...).
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
                };
                format!("remat.{name}").into_bound_py_any(py)
            }
        }
    }

    // ---- shape ------------------------------------------------------------------------

    /// Alias of `reshape` (PyTorch spelling).
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        self.reshape(py, shape)
    }
    /// All axes reversed.
    #[getter(T)]
    fn t_prop(&self) -> PyResult<PyTensor> {
        ops::reverse_axes(&self.inner).py().map(wrap)
    }
    /// The last two axes swapped (a view; needs at least 2 dims).
    #[getter(mT)]
    fn mt_prop(&self) -> PyResult<PyTensor> {
        ops::matrix_transpose(&self.inner).py().map(wrap)
    }
    /// A C-contiguous tensor with the same values (this one if it already is).
    fn contiguous(&self, py: Python<'_>) -> PyResult<PyTensor> {
        unary(py, &self.inner, ops::contiguous)
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
