//! Module-level functions that have no `Tensor` method: tensor constructors, joining
//! (`concat`, `stack`, `where`), activations with parameters (`softplus`, `leaky_relu`), layers
//! and losses. Each converts its arguments and calls remat-core. Ops that are also `Tensor`
//! methods are declared once in `ops.rs`.

use crate::args;
use crate::call::{heavy, run, unary};
use crate::convert::{self, operand, operand_pair};
use crate::dtype::parse_opt_dtype;
use crate::errors::CoreResultExt;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use remat_core::{ops, DType, Device, Tensor};

/// Set `requires_grad` on a fresh leaf and wrap it.
pub(crate) fn leaf(t: Tensor, requires_grad: bool) -> PyResult<PyTensor> {
    if requires_grad {
        t.set_requires_grad(true).py()?;
    }
    Ok(wrap(t))
}

/// The CPU, or a DeviceError for an unusable device.
fn creation_device(op: &str, device: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    let d = args::device(device)?;
    remat_core::cuda::ensure_available(op, d).py()?;
    Ok(d)
}

// ---- constructors ---------------------------------------------------------------------------

/// Create a new leaf tensor holding a copy of `data`.
///
/// `data` may be nested lists or tuples of numbers, a Python scalar, a NumPy array or scalar,
/// or a Tensor; it is always copied (``from_numpy`` and ``as_tensor`` share memory instead).
/// Without `dtype` the dtype follows PyTorch: Python floats give float32, ints int64 and bools
/// bool; a NumPy array keeps its dtype (float64 and float32 stay, int32 stays, other integers
/// become int64, other floats float32, whatever the byte order). A Tensor is copied without
/// its graph: the result is always a leaf.
///
/// Parameters
/// ----------
/// data : array_like or Tensor
///     The values: nested sequences of numbers, a Python scalar, a NumPy array or a Tensor.
/// dtype : DType, optional
///     The element type (``remat.float32``, ``remat.float64``, ``remat.int64``,
///     ``remat.int32`` or ``remat.bool``; NumPy dtypes and dtype names are accepted); values
///     are converted to it. Default: ``None`` (inferred from `data` as above).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor with the shape of `data`.
///
/// Raises
/// ------
/// DTypeError
///     When `data` holds no numbers (strings, ``None``, complex numbers, objects), `dtype`
///     names no supported dtype, or `requires_grad` is set for an integer or bool dtype.
/// ShapeError
///     When nested sequences are ragged (e.g. ``[[1, 2], [3]]``).
/// OverflowError
///     When a Python int scalar does not fit in the integer dtype.
/// DeviceError
///     When `device` is unknown or not available (e.g. ``"cuda"`` without a usable GPU).
///
/// Examples
/// --------
/// >>> remat.tensor([[1, 2], [3, 4]])
/// tensor([[1, 2],
///         [3, 4]])
/// >>> remat.tensor([1.5, 2.0], dtype=remat.float64)
/// tensor([1.5000, 2.0000], dtype=remat.float64)
/// >>> remat.tensor(np.array([1, 2], dtype=np.int32))
/// tensor([1, 2], dtype=remat.int32)
/// >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
/// >>> (x * x).sum().backward()
/// >>> x.grad
/// tensor([2., 4.])
#[pyfunction]
#[pyo3(signature = (data, dtype=None, requires_grad=false, device=None))]
fn tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = creation_device("tensor", device)?;
    let mut t = convert::tensor_from_py("tensor", data, parse_opt_dtype(dtype)?)?;
    if dev != Device::Cpu {
        t = remat_core::cuda::launch::transfer("tensor", &t, dev).py()?;
    }
    leaf(t, requires_grad)
}

/// Make a tensor from a NumPy array, sharing its memory where the layout allows.
///
/// The memory is shared when the array is C-contiguous, aligned, writeable, in native byte
/// order and of a remat dtype (float32, float64, int64, int32 or bool): writes through either
/// one show in the other, and the array is kept alive as long as the tensor. Any other array
/// is copied once, converted as ``remat.tensor`` converts it (other floats become float32,
/// other integers int64). The result is a leaf that does not require grad.
///
/// Parameters
/// ----------
/// array : numpy.ndarray
///     The array to wrap.
///
/// Returns
/// -------
/// Tensor
///     A tensor of the array's shape and (as above) dtype.
///
/// Raises
/// ------
/// TypeError
///     When `array` is not a ``numpy.ndarray`` (a list or a NumPy scalar, say).
/// DTypeError
///     When the array does not hold numbers (strings, objects, complex numbers).
///
/// Examples
/// --------
/// >>> a = np.array([1.0, 2.0, 3.0])
/// >>> t = remat.from_numpy(a)
/// >>> t
/// tensor([1., 2., 3.], dtype=remat.float64)
/// >>> a[0] = 10.0
/// >>> t
/// tensor([10.,  2.,  3.], dtype=remat.float64)
/// >>> remat.from_numpy(np.array([1, 2], dtype=np.uint8))
/// tensor([1, 2])
#[pyfunction]
fn from_numpy(array: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    convert::from_numpy(array).map(wrap)
}

/// Element count of a requested shape, saturating: the engine reports shapes too large to
/// allocate; this count only decides whether to release the GIL.
fn numel_saturating(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |a, &d| a.saturating_mul(d))
}

pub(crate) type Filler = fn(&[usize], DType, Device) -> remat_core::Result<Tensor>;

fn filled(
    py: Python<'_>,
    shape: Vec<usize>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
    f: Filler,
) -> PyResult<PyTensor> {
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let dev = args::device(device)?;
    let big = numel_saturating(&shape) >= crate::call::GIL_RELEASE_MIN;
    let t = run(py, big, || f(&shape, dt, dev))?;
    leaf(t, requires_grad)
}

/// A new tensor of the given shape filled with zeros.
///
/// Parameters
/// ----------
/// *shape : int or tuple of int
///     The extents, as separate ints (``zeros(2, 3)``) or one tuple or list
///     (``zeros((2, 3))``); none gives a 0-d tensor.
/// dtype : DType, optional
///     The element type. Default: ``None`` (float32).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of zeros.
///
/// Raises
/// ------
/// TypeError
///     When a dimension is not an integer.
/// ShapeError
///     When a dimension is negative, or the shape is too large to represent.
/// DTypeError
///     When `dtype` names no supported dtype, or `requires_grad` is set for an integer or
///     bool dtype.
/// DeviceError
///     When `device` is unknown or not available.
/// MemoryError
///     When the storage cannot be allocated.
///
/// Examples
/// --------
/// >>> remat.zeros(2, 3)
/// tensor([[0., 0., 0.],
///         [0., 0., 0.]])
/// >>> remat.zeros((2,), dtype=remat.int64)
/// tensor([0, 0])
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn zeros(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let s = args::shape_from_args("zeros", shape)?;
    filled(py, s, dtype, requires_grad, device, ops::zeros)
}

/// A new tensor of the given shape filled with ones.
///
/// Parameters
/// ----------
/// *shape : int or tuple of int
///     The extents, as separate ints (``ones(2, 3)``) or one tuple or list
///     (``ones((2, 3))``); none gives a 0-d tensor.
/// dtype : DType, optional
///     The element type. Default: ``None`` (float32).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of ones.
///
/// Raises
/// ------
/// TypeError
///     When a dimension is not an integer.
/// ShapeError
///     When a dimension is negative, or the shape is too large to represent.
/// DTypeError
///     When `dtype` names no supported dtype, or `requires_grad` is set for an integer or
///     bool dtype.
/// DeviceError
///     When `device` is unknown or not available.
/// MemoryError
///     When the storage cannot be allocated.
///
/// Examples
/// --------
/// >>> remat.ones(2, 2)
/// tensor([[1., 1.],
///         [1., 1.]])
/// >>> remat.ones(3, dtype=remat.bool)
/// tensor([True, True, True])
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None))]
fn ones(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let s = args::shape_from_args("ones", shape)?;
    filled(py, s, dtype, requires_grad, device, ops::ones)
}

/// A new tensor of samples from the standard normal distribution (mean 0, variance 1).
///
/// Parameters
/// ----------
/// *shape : int or tuple of int
///     The extents, as separate ints or one tuple or list.
/// dtype : DType, optional
///     The element type, ``remat.float32`` or ``remat.float64``. Default: ``None`` (float32).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result. Default: ``False``.
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
/// generator : Generator, optional
///     The random stream to draw from; the global one (``remat.manual_seed``) is then left
///     alone. Default: ``None`` (the global stream).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of the shape, filled with independent samples.
///
/// Raises
/// ------
/// TypeError
///     When a dimension is not an integer, or `generator` is not a ``remat.Generator``.
/// ShapeError
///     When a dimension is negative, or the shape is too large to represent.
/// DTypeError
///     When `dtype` is not a floating point dtype.
/// DeviceError
///     When `device` is unknown or not available.
/// MemoryError
///     When the storage cannot be allocated.
///
/// Examples
/// --------
/// >>> x = remat.randn(2, 3)
/// >>> x.shape, x.dtype
/// ((2, 3), remat.float32)
/// >>> g = remat.Generator().manual_seed(0)
/// >>> a = remat.randn(4, generator=g)
/// >>> b = remat.randn(4, generator=remat.Generator().manual_seed(0))
/// >>> bool((a == b).all())
/// True
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None, generator=None))]
fn randn(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
) -> PyResult<PyTensor> {
    let s = args::shape_from_args("randn", shape)?;
    crate::generator::drawing(generator, || {
        filled(py, s, dtype, requires_grad, device, ops::randn)
    })
}

/// A new tensor of samples drawn uniformly from the half-open interval ``[0, 1)``.
///
/// Parameters
/// ----------
/// *shape : int or tuple of int
///     The extents, as separate ints or one tuple or list.
/// dtype : DType, optional
///     The element type, ``remat.float32`` or ``remat.float64``. Default: ``None`` (float32).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result. Default: ``False``.
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
/// generator : Generator, optional
///     The random stream to draw from; the global one (``remat.manual_seed``) is then left
///     alone. Default: ``None`` (the global stream).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of the shape, filled with independent samples.
///
/// Raises
/// ------
/// TypeError
///     When a dimension is not an integer, or `generator` is not a ``remat.Generator``.
/// ShapeError
///     When a dimension is negative, or the shape is too large to represent.
/// DTypeError
///     When `dtype` is not a floating point dtype.
/// DeviceError
///     When `device` is unknown or not available.
/// MemoryError
///     When the storage cannot be allocated.
///
/// Examples
/// --------
/// >>> x = remat.rand(2, 3, dtype=remat.float64)
/// >>> x.shape, x.dtype
/// ((2, 3), remat.float64)
/// >>> bool(((x >= 0) & (x < 1)).all())
/// True
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, requires_grad=false, device=None, generator=None))]
fn rand(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
) -> PyResult<PyTensor> {
    let s = args::shape_from_args("rand", shape)?;
    crate::generator::drawing(generator, || {
        filled(py, s, dtype, requires_grad, device, ops::rand)
    })
}

/// A new tensor of the given shape with every element equal to `value`.
///
/// As in PyTorch, the dtype follows `value` unless `dtype` is given: a bool gives bool, an int
/// int64 and a float float32. The value is converted to the dtype (a float is truncated
/// toward zero for an integer dtype).
///
/// Parameters
/// ----------
/// shape : int or tuple of int
///     The extents: one int or a tuple or list of ints.
/// value : bool, int or float
///     The fill value.
/// dtype : DType, optional
///     The element type. Default: ``None`` (inferred from `value`).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor filled with `value`.
///
/// Raises
/// ------
/// TypeError
///     When a dimension is not an integer, or `value` is not a number.
/// ShapeError
///     When a dimension is negative, or the shape is too large to represent.
/// DTypeError
///     When `dtype` names no supported dtype, or `requires_grad` is set for an integer or
///     bool dtype.
/// DeviceError
///     When `device` is unknown or not available.
/// MemoryError
///     When the storage cannot be allocated.
///
/// Examples
/// --------
/// >>> remat.full((2, 2), 7)
/// tensor([[7, 7],
///         [7, 7]])
/// >>> remat.full(3, 1.5)
/// tensor([1.5000, 1.5000, 1.5000])
/// >>> remat.full((2,), 7, dtype=remat.float64)
/// tensor([7., 7.], dtype=remat.float64)
#[pyfunction]
#[pyo3(signature = (shape, value, dtype=None, requires_grad=false, device=None))]
fn full(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let s = args::shape_of("full", shape)?;
    // PyTorch infers the dtype from the fill value: bool, int64 or the default float32.
    let inferred = if value.is_instance_of::<pyo3::types::PyBool>() {
        DType::Bool
    } else if value.is_instance_of::<pyo3::types::PyInt>() {
        DType::I64
    } else {
        DType::default_float()
    };
    let dt = parse_opt_dtype(dtype)?.unwrap_or(inferred);
    let dev = args::device(device)?;
    let big = numel_saturating(&s) >= crate::call::GIL_RELEASE_MIN;
    let t = if inferred == DType::I64 && matches!(dt, DType::I64 | DType::I32) {
        // An int into an int tensor: exactly (not through f64), and an int beyond int64 is
        // an OverflowError, as in PyTorch.
        let value: i64 = value.extract().map_err(|_| {
            pyo3::exceptions::PyOverflowError::new_err(format!(
                "full: value {value} cannot be converted to type {dt} without overflow"
            ))
        })?;
        run(py, big, || ops::full_int(&s, value, dt, dev))?
    } else {
        let value: f64 = value.extract()?;
        run(py, big, || ops::full(&s, value, dt, dev))?
    };
    leaf(t, requires_grad)
}

pub(crate) fn like(
    py: Python<'_>,
    op: &str,
    t: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
    f: Filler,
) -> PyResult<PyTensor> {
    let t = convert::extract_tensor(op, t)?;
    let dt = parse_opt_dtype(dtype)?.unwrap_or(t.dtype());
    let dev = match device {
        Some(d) if !d.is_none() => args::device(Some(d))?,
        _ => t.device(),
    };
    let shape = t.shape().to_vec();
    let out = run(py, heavy(&[&t]), || f(&shape, dt, dev))?;
    leaf(out, requires_grad)
}

/// A new tensor of zeros with the shape, dtype and device of `t`.
///
/// Parameters
/// ----------
/// t : Tensor or array_like
///     The tensor whose shape (and, by default, dtype and device) the result takes; other data
///     is converted as ``remat.tensor`` converts it.
/// dtype : DType, optional
///     The element type. Default: ``None`` (`t`'s dtype).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
/// device : str or device, optional
///     The device of the result. Default: ``None`` (`t`'s device).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of zeros; it never shares `t`'s graph.
///
/// Raises
/// ------
/// DTypeError
///     When `t` holds no numbers, `dtype` names no supported dtype, or `requires_grad` is set
///     for an integer or bool dtype.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1, 2], [3, 4]])
/// >>> remat.zeros_like(x)
/// tensor([[0, 0],
///         [0, 0]])
/// >>> remat.zeros_like(x, dtype=remat.float32)
/// tensor([[0., 0.],
///         [0., 0.]])
#[pyfunction]
#[pyo3(signature = (t, dtype=None, requires_grad=false, device=None))]
fn zeros_like(
    py: Python<'_>,
    t: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    like(
        py,
        "zeros_like",
        t,
        dtype,
        requires_grad,
        device,
        ops::zeros,
    )
}

/// A new tensor of ones with the shape, dtype and device of `t`.
///
/// Parameters
/// ----------
/// t : Tensor or array_like
///     The tensor whose shape (and, by default, dtype and device) the result takes; other data
///     is converted as ``remat.tensor`` converts it.
/// dtype : DType, optional
///     The element type. Default: ``None`` (`t`'s dtype).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
/// device : str or device, optional
///     The device of the result. Default: ``None`` (`t`'s device).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of ones; it never shares `t`'s graph.
///
/// Raises
/// ------
/// DTypeError
///     When `t` holds no numbers, `dtype` names no supported dtype, or `requires_grad` is set
///     for an integer or bool dtype.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
/// >>> remat.ones_like(x)
/// tensor([1., 1., 1.])
/// >>> remat.ones_like(x, dtype=remat.int64)
/// tensor([1, 1, 1])
#[pyfunction]
#[pyo3(signature = (t, dtype=None, requires_grad=false, device=None))]
fn ones_like(
    py: Python<'_>,
    t: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    like(py, "ones_like", t, dtype, requires_grad, device, ops::ones)
}

// ---- joining and selecting ---------------------------------------------------------------

fn tensor_list(op: &str, tensors: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    let it = tensors.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{op}: expected a sequence of tensors, got {}",
            convert::type_name(tensors)
        ))
    })?;
    it.map(|t| convert::extract_tensor(op, &t?)).collect()
}

/// `cat` / `concat` / `concatenate`: one op under PyTorch's and NumPy's names, `dim` or
/// (NumPy) `axis` naming the axis.
fn join_along(
    py: Python<'_>,
    op: &str,
    tensors: &Bound<'_, PyAny>,
    dim: isize,
    axis: Option<isize>,
) -> PyResult<PyTensor> {
    let ts = tensor_list(op, tensors)?;
    let axis = axis.unwrap_or(dim);
    let big = ts.iter().map(|t| t.numel()).sum::<usize>() >= crate::call::GIL_RELEASE_MIN;
    run(py, big, || ops::concat(&ts, axis)).map(wrap)
}

/// Join tensors along an existing axis `dim` (PyTorch's ``cat``).
///
/// All tensors must have the same dtype and number of dimensions, and the same extents except
/// along `dim`. Non-tensor items of `tensors` are converted as ``remat.tensor`` converts them.
/// Gradients flow back to each input.
///
/// Parameters
/// ----------
/// tensors : sequence of Tensor
///     The tensors to join, at least one.
/// dim : int, optional
///     The axis to join along; negative values count from the end. Default: ``0``.
/// axis : int, optional
///     NumPy's name for `dim` (keyword only); when given it wins over `dim`.
///     Default: ``None``.
///
/// Returns
/// -------
/// Tensor
///     A new tensor whose extent along `dim` is the sum of the inputs' extents.
///
/// Raises
/// ------
/// TypeError
///     When `tensors` is not a sequence.
/// ValueError
///     When `tensors` is empty.
/// ShapeError
///     When the shapes differ other than along `dim`, `dim` is out of range, or the tensors
///     are 0-d.
/// DTypeError
///     When the tensors have different dtypes.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1, 2], [3, 4]])
/// >>> remat.cat([x, x])
/// tensor([[1, 2],
///         [3, 4],
///         [1, 2],
///         [3, 4]])
/// >>> remat.cat([x, x], dim=1)
/// tensor([[1, 2, 1, 2],
///         [3, 4, 3, 4]])
/// >>> remat.cat((x, x), axis=-1).shape
/// (2, 4)
#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, axis=None))]
fn cat(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: isize,
    axis: Option<isize>,
) -> PyResult<PyTensor> {
    join_along(py, "cat", tensors, dim, axis)
}

/// Join tensors along an existing axis `dim` (PyTorch's ``concat``).
///
/// The same op as ``remat.cat`` and ``remat.concatenate``.
///
/// All tensors must have the same dtype and number of dimensions, and the same extents except
/// along `dim`. Non-tensor items of `tensors` are converted as ``remat.tensor`` converts them.
/// Gradients flow back to each input.
///
/// Parameters
/// ----------
/// tensors : sequence of Tensor
///     The tensors to join, at least one.
/// dim : int, optional
///     The axis to join along; negative values count from the end. Default: ``0``.
/// axis : int, optional
///     NumPy's name for `dim` (keyword only); when given it wins over `dim`.
///     Default: ``None``.
///
/// Returns
/// -------
/// Tensor
///     A new tensor whose extent along `dim` is the sum of the inputs' extents.
///
/// Raises
/// ------
/// TypeError
///     When `tensors` is not a sequence.
/// ValueError
///     When `tensors` is empty.
/// ShapeError
///     When the shapes differ other than along `dim`, `dim` is out of range, or the tensors
///     are 0-d.
/// DTypeError
///     When the tensors have different dtypes.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1, 2], [3, 4]])
/// >>> remat.concat([x, x])
/// tensor([[1, 2],
///         [3, 4],
///         [1, 2],
///         [3, 4]])
/// >>> remat.concat([x, x], dim=1)
/// tensor([[1, 2, 1, 2],
///         [3, 4, 3, 4]])
/// >>> remat.concat((x, x), axis=-1).shape
/// (2, 4)
#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, axis=None))]
fn concat(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: isize,
    axis: Option<isize>,
) -> PyResult<PyTensor> {
    join_along(py, "concat", tensors, dim, axis)
}

/// Join tensors along an existing axis `dim` (PyTorch's ``concatenate``).
///
/// The same op as ``remat.cat`` and ``remat.concat`` (NumPy's name).
///
/// All tensors must have the same dtype and number of dimensions, and the same extents except
/// along `dim`. Non-tensor items of `tensors` are converted as ``remat.tensor`` converts them.
/// Gradients flow back to each input.
///
/// Parameters
/// ----------
/// tensors : sequence of Tensor
///     The tensors to join, at least one.
/// dim : int, optional
///     The axis to join along; negative values count from the end. Default: ``0``.
/// axis : int, optional
///     NumPy's name for `dim` (keyword only); when given it wins over `dim`.
///     Default: ``None``.
///
/// Returns
/// -------
/// Tensor
///     A new tensor whose extent along `dim` is the sum of the inputs' extents.
///
/// Raises
/// ------
/// TypeError
///     When `tensors` is not a sequence.
/// ValueError
///     When `tensors` is empty.
/// ShapeError
///     When the shapes differ other than along `dim`, `dim` is out of range, or the tensors
///     are 0-d.
/// DTypeError
///     When the tensors have different dtypes.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1, 2], [3, 4]])
/// >>> remat.concatenate([x, x])
/// tensor([[1, 2],
///         [3, 4],
///         [1, 2],
///         [3, 4]])
/// >>> remat.concatenate([x, x], dim=1)
/// tensor([[1, 2, 1, 2],
///         [3, 4, 3, 4]])
/// >>> remat.concatenate((x, x), axis=-1).shape
/// (2, 4)
#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, axis=None))]
fn concatenate(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: isize,
    axis: Option<isize>,
) -> PyResult<PyTensor> {
    join_along(py, "concatenate", tensors, dim, axis)
}

/// Join tensors of one shape along a new axis.
///
/// All tensors must have the same shape and dtype; the result has one more dimension, of
/// extent ``len(tensors)``, at position `dim`. Non-tensor items are converted as
/// ``remat.tensor`` converts them. Gradients flow back to each input.
///
/// Parameters
/// ----------
/// tensors : sequence of Tensor
///     The tensors to stack, at least one.
/// dim : int, optional
///     The position of the new axis in the result, from ``-(ndim + 1)`` to ``ndim``.
///     Default: ``0``.
/// axis : int, optional
///     NumPy's spelling of `dim`; when given, it wins over `dim`.
///
/// Returns
/// -------
/// Tensor
///     A new tensor of shape ``shape[:axis] + (len(tensors),) + shape[axis:]``.
///
/// Raises
/// ------
/// TypeError
///     When `tensors` is not a sequence, or an unknown keyword is given.
/// ValueError
///     When `tensors` is empty.
/// ShapeError
///     When the shapes differ, or `axis` is out of range.
/// DTypeError
///     When the tensors have different dtypes.
///
/// Examples
/// --------
/// >>> a = remat.tensor([1.0, 2.0, 3.0])
/// >>> b = remat.tensor([4.0, 5.0, 6.0])
/// >>> remat.stack([a, b])
/// tensor([[1., 2., 3.],
///         [4., 5., 6.]])
/// >>> remat.stack([a, b], dim=1)
/// tensor([[1., 4.],
///         [2., 5.],
///         [3., 6.]])
#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, axis=None))]
fn stack(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: isize,
    axis: Option<isize>,
) -> PyResult<PyTensor> {
    let axis = axis.unwrap_or(dim);
    let ts = tensor_list("stack", tensors)?;
    let big = ts.iter().map(|t| t.numel()).sum::<usize>() >= crate::call::GIL_RELEASE_MIN;
    run(py, big, || ops::stack(&ts, axis)).map(wrap)
}

/// Pick elements of `a` where `cond` is true (nonzero), else of `b`.
///
/// `cond`, `a` and `b` broadcast together (NumPy rules). Either of `a` and `b` may be a Python
/// scalar, which takes the other's dtype as in PyTorch; two tensors of different dtypes are
/// promoted. Gradients flow to `a` and `b` where each was picked; `cond` gets none.
///
/// Parameters
/// ----------
/// cond : Tensor or array_like
///     The condition: a bool tensor, or any tensor (nonzero counts as true).
/// a : Tensor or scalar
///     The values taken where `cond` is true.
/// b : Tensor or scalar
///     The values taken where `cond` is false.
///
/// Returns
/// -------
/// Tensor
///     A new tensor of the broadcast shape.
///
/// Raises
/// ------
/// ShapeError
///     When `cond`, `a` and `b` do not broadcast together.
/// TypeError
///     When only one of `a` and `b` is given.
/// DTypeError
///     When an argument holds no numbers.
///
/// With `cond` alone, PyTorch's ``where(cond)``: the indices of the nonzero elements, one
/// int64 tensor per axis (``nonzero(as_tuple=True)``). `Tensor.where(cond, other)` is the
/// method form (``where(cond, self, other)``).
///
/// Examples
/// --------
/// >>> x = remat.tensor([1.0, 2.0, 3.0])
/// >>> remat.where(x > 1.5, x, 0.0)
/// tensor([0., 2., 3.])
/// >>> remat.where(remat.tensor([True, False, True]), x, -x)
/// tensor([ 1., -2.,  3.])
/// >>> remat.where(x > 1.5, 1, 0)
/// tensor([0, 1, 1])
/// >>> remat.where(remat.tensor([[0, 1], [1, 1]]))
/// (tensor([0, 1, 1]), tensor([1, 0, 1]))
#[pyfunction(name = "where")]
#[pyo3(signature = (cond, a=None, b=None))]
fn where_(
    py: Python<'_>,
    cond: &Bound<'_, PyAny>,
    a: Option<&Bound<'_, PyAny>>,
    b: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    let c = convert::extract_tensor("where", cond)?;
    match (a, b) {
        (Some(a), Some(b)) => {
            let (a, b) = operand_pair("where", a, b)?;
            let out = run(py, heavy(&[&c, &a, &b]), || ops::where_(&c, &a, &b))?;
            Ok(Py::new(py, wrap(out))?.into_any())
        }
        (None, None) => {
            let cols = run(py, heavy(&[&c]), || nonzero_columns(&c))?;
            let items: Vec<PyTensor> = cols.into_iter().map(wrap).collect();
            Ok(pyo3::types::PyTuple::new(py, items)?.into_any().unbind())
        }
        _ => Err(pyo3::exceptions::PyTypeError::new_err(
            "where: expected where(cond, a, b) or where(cond), got only one of a and b",
        )),
    }
}

/// The indices of `c`'s nonzero elements, one int64 tensor per axis (`where(cond)`).
fn nonzero_columns(c: &Tensor) -> remat_core::Result<Vec<Tensor>> {
    let idx = ops::nonzero(c)?; // (n, ndim)
    let n = idx.shape()[0];
    (0..c.ndim() as isize)
        .map(|a| ops::contiguous(&ops::reshape(&ops::narrow(&idx, 1, a, 1)?, &[n])?))
        .collect()
}

#[pymethods]
impl PyTensor {
    /// PyTorch's ``Tensor.where(condition, other)``: ``remat.where(condition, self, other)``.
    ///
    /// Parameters
    /// ----------
    /// condition : Tensor or array_like
    ///     Where true, this tensor's element is taken.
    /// other : Tensor or scalar
    ///     The values taken elsewhere.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A new tensor of the broadcast shape.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When the three do not broadcast together.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([1.0, -2.0])
    /// >>> x.where(x > 0, 0.0)
    /// tensor([1., 0.])
    #[pyo3(name = "where")]
    fn where_method(
        &self,
        py: Python<'_>,
        condition: &Bound<'_, PyAny>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let c = convert::extract_tensor("where", condition)?;
        let o = convert::operand("where", other, &self.inner)?;
        let a = &self.inner;
        run(py, heavy(&[&c, a, &o]), || ops::where_(&c, a, &o)).map(wrap)
    }
}

/// Einstein summation over `operands` as `equation` describes (PyTorch's ``einsum``).
///
/// For example ``einsum("ij,jk->ik", a, b)`` is a matrix product; the operands may also be
/// given as one list. ``...`` broadcasts, a subscript missing from the output (or, without
/// ``->``, repeated) is summed, and one repeated within a term takes the diagonal. Spaces in
/// the equation are ignored. The operands are contracted pairwise, left to right, as batched
/// matrix products; gradients flow to every operand.
///
/// Parameters
/// ----------
/// equation : str
///     The subscripts: one comma-separated term per operand, optionally ``->`` and the
///     output's subscripts.
/// *operands : Tensor
///     The tensors, one per term (or a single list or tuple of them), all of one dtype.
///
/// Returns
/// -------
/// Tensor
///     The result, with one axis per output subscript (0-d when the output names none).
///
/// Raises
/// ------
/// ShapeError
///     When the number of operands does not match the terms, a term names more or fewer
///     axes than its operand has, a subscript's extents disagree (they must be equal or 1),
///     or an output subscript appears in no input.
/// DTypeError
///     When the operands have different dtypes.
///
/// Examples
/// --------
/// >>> a = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
/// >>> b = remat.tensor([[1.0, 0.0], [0.0, 2.0]])
/// >>> remat.einsum("ij,jk->ik", a, b)
/// tensor([[1., 4.],
///         [3., 8.]])
/// >>> remat.einsum("ii", a)
/// tensor(5.)
/// >>> remat.einsum("ij->ji", [a])
/// tensor([[1., 3.],
///         [2., 4.]])
#[pyfunction]
#[pyo3(signature = (equation, *operands))]
fn einsum(py: Python<'_>, equation: &str, operands: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
    let ts: Vec<Tensor> = match operands.len() {
        1 if operands.get_item(0)?.downcast::<PyTensor>().is_err()
            && (operands
                .get_item(0)?
                .is_instance_of::<pyo3::types::PyList>()
                || operands.get_item(0)?.is_instance_of::<PyTuple>()) =>
        {
            tensor_list("einsum", &operands.get_item(0)?)?
        }
        _ => operands
            .iter()
            .map(|o| convert::extract_tensor("einsum", &o))
            .collect::<PyResult<_>>()?,
    };
    let refs: Vec<&Tensor> = ts.iter().collect();
    run(py, heavy(&refs), || ops::einsum(equation, &ts)).map(wrap)
}

// ---- layers and losses -----------------------------------------------------------------

/// Randomly zero elements with probability `p` and scale the rest by ``1 / (1 - p)``.
///
/// Only when `training` is true; otherwise (or with ``p=0``) `x` itself comes back, not a
/// copy. ``p=1`` zeros everything. The mask is drawn from the global random stream
/// (``remat.manual_seed``); recomputing a checkpoint segment replays the same mask.
/// Gradients flow through the kept elements, with the same scale.
///
/// Parameters
/// ----------
/// x : Tensor
///     The input, float32 or float64.
/// p : float, optional
///     The probability of zeroing each element, in ``[0, 1]``. Default: ``0.5``.
/// training : bool, optional
///     Whether to apply dropout at all. Default: ``True``.
///
/// Returns
/// -------
/// Tensor
///     A tensor of `x`'s shape and dtype.
///
/// Raises
/// ------
/// ValueError
///     When `p` is outside ``[0, 1]``.
/// DTypeError
///     When `x` is not a floating point tensor.
///
/// Examples
/// --------
/// >>> remat.manual_seed(0)
/// >>> remat.dropout(remat.ones(8), p=0.5)
/// tensor([0., 2., 2., 0., 0., 0., 2., 2.])
/// >>> x = remat.tensor([1.0, 2.0])
/// >>> remat.dropout(x, p=0.5, training=False)
/// tensor([1., 2.])
#[pyfunction]
#[pyo3(signature = (x, p=0.5, training=true))]
fn dropout(py: Python<'_>, x: &Bound<'_, PyAny>, p: f64, training: bool) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("dropout", x)?;
    unary(py, &x, |x| ops::dropout(x, p, training))
}

/// Softplus: ``log(1 + exp(beta * x)) / beta``, and `x` itself where ``beta * x > threshold``.
///
/// PyTorch's ``softplus``, a smooth approximation of ``relu``; the linear part above
/// `threshold` keeps it numerically stable. Integer inputs give float32.
///
/// Parameters
/// ----------
/// x : Tensor
///     The input.
/// beta : float, optional
///     The sharpness. Default: ``1.0``.
/// threshold : float, optional
///     Above this value of ``beta * x`` the result is `x`. Default: ``20.0``.
///
/// Returns
/// -------
/// Tensor
///     A tensor of `x`'s shape.
///
/// Raises
/// ------
/// DTypeError
///     When `x` holds no numbers.
///
/// Examples
/// --------
/// >>> remat.softplus(remat.tensor([-1.0, 0.0, 1.0, 30.0]))
/// tensor([ 0.3133,  0.6931,  1.3133, 30.0000])
/// >>> remat.softplus(remat.tensor([-1.0, 0.0, 1.0]), threshold=0.5)
/// tensor([0.3133, 0.6931, 1.0000])
#[pyfunction]
#[pyo3(signature = (x, beta=1.0, threshold=20.0))]
fn softplus(py: Python<'_>, x: &Bound<'_, PyAny>, beta: f64, threshold: f64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("softplus", x)?;
    unary(py, &x, |x| ops::softplus(x, beta, threshold))
}

/// Leaky ReLU: `x` where ``x > 0``, else ``negative_slope * x`` (PyTorch's ``leaky_relu``).
///
/// Integer inputs give float32.
///
/// Parameters
/// ----------
/// x : Tensor
///     The input.
/// negative_slope : float, optional
///     The slope for negative inputs. Default: ``0.01``.
///
/// Returns
/// -------
/// Tensor
///     A tensor of `x`'s shape.
///
/// Raises
/// ------
/// DTypeError
///     When `x` holds no numbers.
///
/// Examples
/// --------
/// >>> remat.leaky_relu(remat.tensor([-2.0, 0.0, 3.0]))
/// tensor([-0.0200,  0.0000,  3.0000])
/// >>> x = remat.tensor([-2.0, 3.0], requires_grad=True)
/// >>> remat.leaky_relu(x, 0.5).sum().backward()
/// >>> x.grad
/// tensor([0.5000, 1.0000])
#[pyfunction]
#[pyo3(signature = (x, negative_slope=0.01))]
fn leaky_relu(py: Python<'_>, x: &Bound<'_, PyAny>, negative_slope: f64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("leaky_relu", x)?;
    unary(py, &x, |x| ops::leaky_relu(x, negative_slope))
}

/// Leaky ReLU written over `x` in place (what ``F.leaky_relu(inplace=True)`` and
/// ``F.leaky_relu_`` call); returns None.
#[pyfunction]
#[pyo3(signature = (x, negative_slope=0.01))]
fn _leaky_relu_(py: Python<'_>, x: PyRef<'_, PyTensor>, negative_slope: f64) -> PyResult<()> {
    let t = x.inner.clone();
    run(py, heavy(&[&t]), || ops::leaky_relu_(&t, negative_slope))
}

/// Layer normalisation over the trailing axes, then an optional scale and shift.
///
/// PyTorch's ``layer_norm(input, normalized_shape, weight, bias, eps)``, with
/// `normalized_shape` optional: each slice over the trailing axes `normalized_shape` (default:
/// the last axis) is normalised to mean 0 and variance 1 (the biased variance, plus `eps`),
/// then multiplied by `weight` and shifted by `bias`, both of shape `normalized_shape`.
///
/// Parameters
/// ----------
/// input : Tensor
///     The input, float32 or float64.
/// normalized_shape : int or tuple of int, optional
///     The trailing extents of `input` to normalise over, together. Default: ``None`` (the
///     last axis).
/// weight : Tensor, optional
///     The scale, of shape `normalized_shape`. Default: ``None`` (no scale).
/// bias : Tensor, optional
///     The shift, of shape `normalized_shape`. Default: ``None`` (no shift).
/// eps : float, optional
///     Added to the variance before its square root. Default: ``1e-5``.
///
/// Returns
/// -------
/// Tensor
///     A tensor of `input`'s shape and dtype.
///
/// Raises
/// ------
/// ShapeError
///     When `normalized_shape` is not the trailing extents of `input` (or is empty), or
///     `weight`/`bias` does not have that shape.
/// TypeError
///     When `normalized_shape` is a Tensor (pass the weight as ``weight=``).
/// DTypeError
///     When `input` is not a floating point tensor.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
/// >>> remat.layer_norm(x)
/// tensor([[-1.2247,  0.0000,  1.2247],
///         [-1.2247,  0.0000,  1.2247]])
/// >>> w = remat.tensor([1.0, 2.0, 3.0])
/// >>> b = remat.tensor([0.0, 0.0, 1.0])
/// >>> remat.layer_norm(x, (3,), weight=w, bias=b)
/// tensor([[-1.2247,  0.0000,  4.6742],
///         [-1.2247,  0.0000,  4.6742]])
/// >>> remat.layer_norm(x, (2, 3)).shape
/// (2, 3)
#[pyfunction]
#[pyo3(signature = (input, normalized_shape=None, weight=None, bias=None, eps=1e-5))]
fn layer_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    normalized_shape: Option<&Bound<'_, PyAny>>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<PyTensor> {
    const OP: &str = "layer_norm";
    let x = convert::extract_tensor(OP, input)?;
    let opt = |o: Option<&Bound<'_, PyAny>>| -> PyResult<Option<Tensor>> {
        match o {
            Some(o) if !o.is_none() => operand(OP, o, &x).map(Some),
            _ => Ok(None),
        }
    };
    let (w, b) = (opt(weight)?, opt(bias)?);
    let norm: Vec<usize> = match normalized_shape {
        Some(s) if !s.is_none() => {
            if s.downcast::<PyTensor>().is_ok() {
                return Err(PyTypeError::new_err(
                    "layer_norm: normalized_shape must be an int or a tuple of ints (PyTorch's \
                     signature: layer_norm(input, normalized_shape, weight, bias, eps)); pass \
                     the weight as weight=",
                ));
            }
            args::shape_of(OP, s)?
        }
        _ => x.shape().last().map(|&n| vec![n]).unwrap_or_default(),
    };
    let k = norm.len();
    if k == 0 || x.ndim() < k || x.shape()[x.ndim() - k..] != norm[..] {
        return Err(crate::errors::to_pyerr(remat_core::Error::shape(
            OP,
            format!(
                "normalized_shape {norm:?} must be the trailing axes of the input of shape {:?}",
                x.shape()
            ),
        )));
    }
    if k == 1 {
        return unary(py, &x, |x| ops::layer_norm(x, w.as_ref(), b.as_ref(), eps));
    }
    // Several trailing axes: normalise them as one.
    let n: usize = norm.iter().product();
    let mut flat: Vec<usize> = x.shape()[..x.ndim() - k].to_vec();
    flat.push(n);
    let shape = x.shape().to_vec();
    run(py, heavy(&[&x]), || {
        let flat_param = |t: &Option<Tensor>| -> remat_core::Result<Option<Tensor>> {
            t.as_ref().map(|t| ops::reshape(t, &[n])).transpose()
        };
        let (fw, fb) = (flat_param(&w)?, flat_param(&b)?);
        let y = ops::layer_norm(&ops::reshape(&x, &flat)?, fw.as_ref(), fb.as_ref(), eps)?;
        ops::reshape(&y, &shape)
    })
    .map(PyTensor::from)
}

/// Affine map ``x @ weight.T + bias``, fused (the bias is added inside the matrix product).
///
/// `x` has shape ``(..., in_features)`` and `weight` ``(out_features, in_features)``; a
/// float32 operand next to a float64 one is promoted.
///
/// Parameters
/// ----------
/// x : Tensor
///     The input, float32 or float64, of shape ``(..., in_features)``.
/// weight : Tensor
///     The weight, of shape ``(out_features, in_features)``.
/// bias : Tensor, optional
///     The bias, of shape ``(out_features,)``. Default: ``None`` (no bias).
///
/// Returns
/// -------
/// Tensor
///     A tensor of shape ``(..., out_features)``.
///
/// Raises
/// ------
/// ShapeError
///     When `weight` is not 2-d with ``in_features`` columns, or `bias` does not have
///     ``out_features`` elements.
/// DTypeError
///     When an operand is not a floating point tensor.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
/// >>> w = remat.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
/// >>> remat.linear(x, w, remat.tensor([10.0, 20.0]))
/// tensor([[14., 22.],
///         [18., 24.]])
/// >>> x = remat.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
/// >>> remat.linear(x, w).sum().backward()
/// >>> x.grad
/// tensor([[1., 1., 1.]])
#[pyfunction]
#[pyo3(signature = (x, weight, bias=None))]
fn linear(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("linear", x)?;
    let w = convert::extract_tensor("linear", weight)?;
    let b = match bias {
        Some(b) if !b.is_none() => Some(convert::extract_tensor("linear", b)?),
        _ => None,
    };
    run(py, heavy(&[&x, &w]), || ops::linear(&x, &w, b.as_ref())).map(PyTensor::from)
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(zeros_like, m)?)?;
    m.add_function(wrap_pyfunction!(ones_like, m)?)?;
    m.add_function(wrap_pyfunction!(linear, m)?)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(concat, m)?)?;
    m.add_function(wrap_pyfunction!(concatenate, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(dropout, m)?)?;
    m.add_function(wrap_pyfunction!(softplus, m)?)?;
    m.add_function(wrap_pyfunction!(leaky_relu, m)?)?;
    m.add_function(wrap_pyfunction!(_leaky_relu_, m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(einsum, m)?)?;
    Ok(())
}
