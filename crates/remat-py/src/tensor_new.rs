//! The `Tensor` methods that make tensors like this one (`new_zeros`, `new_ones`,
//! `new_full`, `new_empty`, `new_tensor`) and the small queries scripts use (`view_as`,
//! `nelement`, `is_cuda`, `is_meta`), with PyTorch's signatures: the new tensor takes this
//! one's dtype and device unless told otherwise.

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::dtype::parse_opt_dtype;
use crate::errors::CoreResultExt;
use crate::functions::leaf;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use remat_core::{ops, DType, Device, Tensor};

impl PyTensor {
    /// The dtype and device of a tensor made from this one: the arguments, else this
    /// tensor's.
    fn new_kind(
        &self,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(DType, Device)> {
        let dt = parse_opt_dtype(dtype)?.unwrap_or(self.inner.dtype());
        let dev = match device {
            Some(d) if !d.is_none() => args::device(Some(d))?,
            _ => self.inner.device(),
        };
        remat_core::cuda::ensure_available("new_tensor", dev).py()?;
        Ok((dt, dev))
    }

    /// A new leaf of `size` filled with `value`, of this tensor's kind by default.
    #[allow(clippy::too_many_arguments)]
    fn new_filled(
        &self,
        py: Python<'_>,
        op: &str,
        size: &Bound<'_, PyTuple>,
        value: f64,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        let shape = args::shape_from_args(op, size)?;
        let (dt, dev) = self.new_kind(dtype, device)?;
        let t = run(py, false, || ops::full(&shape, value, dt, dev))?;
        leaf(t, requires_grad)
    }
}

#[pymethods]
impl PyTensor {
    /// A new tensor of zeros of shape `size`, with this tensor's dtype and device by default.
    ///
    /// Parameters
    /// ----------
    /// *size : int or tuple of int
    ///     The shape, as separate ints or one tuple or list.
    /// dtype : DType, optional
    ///     The element type. Default: ``None`` (this tensor's).
    /// device : str or device, optional
    ///     The device. Default: ``None`` (this tensor's).
    /// requires_grad : bool, optional
    ///     Whether the result is a leaf that requires grad. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A new leaf tensor; it shares nothing with this one.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When an extent is negative.
    /// DeviceError
    ///     When `device` is unknown or not available.
    ///
    /// Examples
    /// --------
    /// >>> remat.ones(3, dtype=remat.float64).new_zeros(2)
    /// tensor([0., 0.], dtype=remat.float64)
    /// >>> remat.ones(3).new_zeros((2, 1)).shape
    /// (2, 1)
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
    fn new_zeros(
        &self,
        py: Python<'_>,
        size: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        self.new_filled(py, "new_zeros", size, 0.0, dtype, device, requires_grad)
    }
    /// A new tensor of ones of shape `size`, with this tensor's dtype and device by default.
    ///
    /// Parameters
    /// ----------
    /// *size : int or tuple of int
    ///     The shape, as separate ints or one tuple or list.
    /// dtype : DType, optional
    ///     The element type. Default: ``None`` (this tensor's).
    /// device : str or device, optional
    ///     The device. Default: ``None`` (this tensor's).
    /// requires_grad : bool, optional
    ///     Whether the result is a leaf that requires grad. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A new leaf tensor.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When an extent is negative.
    /// DeviceError
    ///     When `device` is unknown or not available.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(1, dtype=remat.int64).new_ones(3)
    /// tensor([1, 1, 1])
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
    fn new_ones(
        &self,
        py: Python<'_>,
        size: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        self.new_filled(py, "new_ones", size, 1.0, dtype, device, requires_grad)
    }
    /// A new uninitialised tensor of shape `size`, with this tensor's dtype and device by
    /// default (remat fills it with zeros; its values must not be relied on).
    ///
    /// Parameters
    /// ----------
    /// *size : int or tuple of int
    ///     The shape, as separate ints or one tuple or list.
    /// dtype : DType, optional
    ///     The element type. Default: ``None`` (this tensor's).
    /// device : str or device, optional
    ///     The device. Default: ``None`` (this tensor's).
    /// requires_grad : bool, optional
    ///     Whether the result is a leaf that requires grad. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A new leaf tensor.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When an extent is negative.
    /// DeviceError
    ///     When `device` is unknown or not available.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(1).new_empty(2, 3).shape
    /// (2, 3)
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
    fn new_empty(
        &self,
        py: Python<'_>,
        size: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        self.new_filled(py, "new_empty", size, 0.0, dtype, device, requires_grad)
    }
    /// A new tensor of shape `size` filled with `fill_value`, with this tensor's dtype and
    /// device by default.
    ///
    /// Parameters
    /// ----------
    /// size : tuple of int
    ///     The shape.
    /// fill_value : float
    ///     The value of every element.
    /// dtype : DType, optional
    ///     The element type. Default: ``None`` (this tensor's).
    /// device : str or device, optional
    ///     The device. Default: ``None`` (this tensor's).
    /// requires_grad : bool, optional
    ///     Whether the result is a leaf that requires grad. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A new leaf tensor.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When an extent is negative.
    /// DeviceError
    ///     When `device` is unknown or not available.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(1).new_full((2,), 7.5)
    /// tensor([7.5000, 7.5000])
    #[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
    fn new_full(
        &self,
        py: Python<'_>,
        size: &Bound<'_, PyAny>,
        fill_value: f64,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        let size = PyTuple::new(py, [size])?;
        self.new_filled(
            py,
            "new_full",
            &size,
            fill_value,
            dtype,
            device,
            requires_grad,
        )
    }
    /// A new tensor holding a copy of `data`, with this tensor's dtype and device by default
    /// (PyTorch's rule: even integer data becomes this tensor's dtype).
    ///
    /// Parameters
    /// ----------
    /// data : array_like or Tensor
    ///     The values: nested sequences, a NumPy array, a number or a Tensor (copied and
    ///     detached).
    /// dtype : DType, optional
    ///     The element type. Default: ``None`` (this tensor's).
    /// device : str or device, optional
    ///     The device. Default: ``None`` (this tensor's).
    /// requires_grad : bool, optional
    ///     Whether the result is a leaf that requires grad. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A new leaf tensor that shares no memory with `data`.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When `data` holds no numbers.
    /// ShapeError
    ///     When nested sequences are ragged.
    /// DeviceError
    ///     When `device` is unknown or not available.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(1).new_tensor([1, 2])
    /// tensor([1., 2.])
    /// >>> remat.zeros(1).new_tensor([1, 2], dtype=remat.int64)
    /// tensor([1, 2])
    #[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
    fn new_tensor(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<PyTensor> {
        let (dt, dev) = self.new_kind(dtype, device)?;
        let src = convert::tensor_from_py("new_tensor", data, Some(dt))?.detach();
        let t: Tensor = run(py, heavy(&[&src]), || {
            let t = ops::to_dtype(&ops::to_device(&src, dev)?, dt)?;
            ops::clone(&t).map(|c| c.detach())
        })?;
        leaf(t, requires_grad)
    }
    /// This tensor viewed with `other`'s shape (``view(other.shape)``), sharing storage.
    ///
    /// Parameters
    /// ----------
    /// other : Tensor
    ///     The tensor whose shape to take.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A view of this tensor.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When the element counts differ, or no strides show this tensor in that shape.
    ///
    /// Examples
    /// --------
    /// >>> remat.arange(6).view_as(remat.zeros(2, 3))
    /// tensor([[0, 1, 2],
    ///         [3, 4, 5]])
    fn view_as(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let other = convert::extract_tensor("view_as", other)?;
        let (x, shape) = (&self.inner, other.shape().to_vec());
        run(py, heavy(&[x]), || ops::view_as_shape(x, &shape)).map(wrap)
    }
    /// The number of elements (PyTorch's alias of `numel`).
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
    /// >>> remat.zeros(2, 3).nelement()
    /// 6
    fn nelement(&self) -> usize {
        self.inner.numel()
    }
    /// Whether this tensor lives on a CUDA device.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2).is_cuda
    /// False
    #[getter]
    fn is_cuda(&self) -> bool {
        matches!(self.inner.device(), Device::Cuda(_))
    }
    /// Whether this tensor is on the meta device (shape only, no storage). remat has no meta
    /// device yet, so this is always False.
    ///
    /// Examples
    /// --------
    /// >>> remat.zeros(2).is_meta
    /// False
    #[getter]
    fn is_meta(&self) -> bool {
        false
    }
}
