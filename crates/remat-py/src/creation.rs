//! The structured constructors, with PyTorch's signatures and dtype rules: `arange`,
//! `linspace`, `eye`, `empty`, `randint`, `as_tensor`, the `*_like` family beyond
//! `zeros_like`/`ones_like` (`empty_like`, `full_like`, `rand_like`, `randn_like`), and
//! `tril` / `triu` (functions and methods).

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::dtype::parse_opt_dtype;
use crate::errors::CoreResultExt;
use crate::functions::{leaf, like};
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyTuple};
use remat_core::{ops, DType, Device, Tensor};

/// Whether a Python number argument is a float (which makes `arange`'s result float32).
fn is_float(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyFloat>()
        || obj
            .downcast::<PyTensor>()
            .is_ok_and(|t| t.get().inner.dtype().is_float())
}

/// A number argument as f64 (Python numbers, NumPy scalars, 0-d tensors).
fn number(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    if let Ok(t) = obj.downcast::<PyTensor>() {
        return t.get().inner.item().py();
    }
    obj.extract::<f64>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{op}: expected a number, got {}",
            convert::type_name(obj)
        ))
    })
}

/// Evenly spaced values in the half-open interval ``[start, end)``, `step` apart.
///
/// Called as ``arange(end)``, ``arange(start, end)`` or ``arange(start, end, step)``, with
/// the bounds positional or as ``start=``/``end=`` keywords (``arange(1, end=4)`` too). The
/// result is int64 when every bound and the step are integers, else float32 (PyTorch's rule),
/// unless `dtype` is given. The bounds may be Python numbers, NumPy scalars or 0-d tensors.
///
/// Parameters
/// ----------
/// *bounds : int or float
///     ``end``, ``start, end`` or ``start, end, step`` (``start`` defaults to 0).
/// start : int or float, optional
///     The first value, as a keyword. Default: ``None`` (0, or the positional bounds).
/// end : int or float, optional
///     The bound, as a keyword. Default: ``None`` (the positional bounds).
/// step : int or float, optional
///     The spacing, used when `bounds` does not give it (a positional step wins).
///     Default: ``None`` (1).
/// dtype : DType, optional
///     The element type. Default: ``None`` (int64 or float32, as above).
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     A new 1-d leaf tensor of ``ceil((end - start) / step)`` values.
///
/// Raises
/// ------
/// TypeError
///     When no or more than three bounds are given, or a bound is not a number.
/// ValueError
///     When `step` is zero, a bound is not finite, or `step` has the wrong sign for
///     `start` and `end`.
/// DTypeError
///     When `dtype` names no supported dtype, or `requires_grad` is set for an integer dtype.
/// DeviceError
///     When `device` is unknown or not available.
/// MemoryError
///     When the storage cannot be allocated.
///
/// Examples
/// --------
/// >>> remat.arange(5)
/// tensor([0, 1, 2, 3, 4])
/// >>> remat.arange(1, 4)
/// tensor([1, 2, 3])
/// >>> remat.arange(0, 1, 0.25)
/// tensor([0.0000, 0.2500, 0.5000, 0.7500])
/// >>> remat.arange(5, 0, -2)
/// tensor([5, 3, 1])
/// >>> remat.arange(3, dtype=remat.float64)
/// tensor([0., 1., 2.], dtype=remat.float64)
#[pyfunction]
#[pyo3(signature = (
    *bounds, start=None, end=None, step=None, dtype=None, device=None, requires_grad=false
))]
#[allow(clippy::too_many_arguments)]
fn arange(
    py: Python<'_>,
    bounds: &Bound<'_, PyTuple>,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let items: Vec<Bound<'_, PyAny>> = bounds.iter().collect();
    let (start_kw, end_kw) = (
        start.filter(|s| !s.is_none()).cloned(),
        end.filter(|e| !e.is_none()).cloned(),
    );
    // PyTorch's forms: positional bounds, `start=`/`end=` keywords, or `arange(1, end=4)`.
    let (start, end, pos_step) =
        match (items.as_slice(), start_kw, end_kw) {
            ([], s, Some(e)) => (s, e, None),
            ([s], None, Some(e)) => (Some(s.clone()), e, None),
            ([e], None, None) => (None, e.clone(), None),
            ([s, e], None, None) => (Some(s.clone()), e.clone(), None),
            ([s, e, st], None, None) => (Some(s.clone()), e.clone(), Some(st.clone())),
            _ => {
                return Err(PyTypeError::new_err(format!(
                "arange: expected (end), (start, end) or (start, end, step), positionally or as \
                 start=/end=, got {} positional arguments{}{}",
                items.len(),
                if start.is_some_and(|s| !s.is_none()) { " and start=" } else { "" },
                if end.is_some_and(|e| !e.is_none()) { " and end=" } else { "" },
            )))
            }
        };
    if pos_step.is_some() && step.is_some_and(|s| !s.is_none()) {
        return Err(PyTypeError::new_err(
            "arange: got multiple values for argument 'step' (the third positional one and \
             step=)",
        ));
    }
    let step = pos_step.or_else(|| step.cloned());
    let any_float = is_float(&end)
        || start.as_ref().is_some_and(is_float)
        || step.as_ref().is_some_and(is_float);
    let dt = parse_opt_dtype(dtype)?.unwrap_or(if any_float {
        DType::default_float()
    } else {
        DType::I64
    });
    let s = start
        .map(|s| number("arange", &s))
        .transpose()?
        .unwrap_or(0.0);
    let e = number("arange", &end)?;
    let st = step
        .map(|s| number("arange", &s))
        .transpose()?
        .unwrap_or(1.0);
    let dev = args::device(device)?;
    let t = run(py, false, || ops::arange(s, e, st, dt, dev))?;
    leaf(t, requires_grad)
}

/// `steps` evenly spaced values from `start` to `end`, both included.
///
/// Parameters
/// ----------
/// start : float
///     The first value (a Python number, NumPy scalar or 0-d tensor).
/// end : float
///     The last value.
/// steps : int
///     How many values; ``1`` gives just `start`, ``0`` an empty tensor.
/// dtype : DType, optional
///     The element type (keyword only). Default: ``None`` (float32).
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     A new 1-d leaf tensor of `steps` values.
///
/// Raises
/// ------
/// TypeError
///     When `start` or `end` is not a number, `steps` is not an int, or `dtype` is passed
///     positionally.
/// OverflowError
///     When `steps` is negative.
/// DTypeError
///     When `dtype` names no supported dtype, or `requires_grad` is set for an integer dtype.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> remat.linspace(0, 1, 5)
/// tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
/// >>> remat.linspace(0, 10, 3, dtype=remat.int64)
/// tensor([ 0,  5, 10])
#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, device=None, requires_grad=false))]
fn linspace(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    steps: usize,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let (s, e) = (number("linspace", start)?, number("linspace", end)?);
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let dev = args::device(device)?;
    let t = run(py, false, || ops::linspace(s, e, steps, dt, dev))?;
    leaf(t, requires_grad)
}

/// A 2-d tensor with ones on the main diagonal and zeros elsewhere.
///
/// Parameters
/// ----------
/// n : int
///     The number of rows.
/// m : int, optional
///     The number of columns. Default: ``None`` (`n`, a square matrix).
/// dtype : DType, optional
///     The element type (keyword only). Default: ``None`` (float32).
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of shape ``(n, m)``.
///
/// Raises
/// ------
/// OverflowError
///     When `n` or `m` is negative.
/// TypeError
///     When `n` or `m` is not an int.
/// DTypeError
///     When `dtype` names no supported dtype, or `requires_grad` is set for an integer or
///     bool dtype.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> remat.eye(2)
/// tensor([[1., 0.],
///         [0., 1.]])
/// >>> remat.eye(2, 3, dtype=remat.int64)
/// tensor([[1, 0, 0],
///         [0, 1, 0]])
#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
fn eye(
    py: Python<'_>,
    n: usize,
    m: Option<usize>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let dev = args::device(device)?;
    let t = run(py, false, || ops::eye(n, m.unwrap_or(n), dt, dev))?;
    leaf(t, requires_grad)
}

/// A new tensor of the given shape; its values are zeros.
///
/// PyTorch leaves ``empty``'s values unspecified; remat fills them with zeros (no
/// uninitialised memory is ever handed out). Code meant to run under PyTorch as well should
/// not rely on that.
///
/// Parameters
/// ----------
/// *shape : int or tuple of int
///     The extents, as separate ints or one tuple or list.
/// dtype : DType, optional
///     The element type. Default: ``None`` (float32).
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of the shape.
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
/// >>> x = remat.empty(2, 3)
/// >>> x.shape, x.dtype
/// ((2, 3), remat.float32)
/// >>> remat.empty((2,), dtype=remat.int32).dtype
/// remat.int32
#[pyfunction]
#[pyo3(signature = (*shape, dtype=None, device=None, requires_grad=false))]
fn empty(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let s = args::shape_from_args("empty", shape)?;
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let dev = args::device(device)?;
    let t = run(py, false, || ops::zeros(&s, dt, dev))?;
    leaf(t, requires_grad)
}

/// A new tensor with the shape, dtype and device of `t`; its values are zeros (see ``empty``).
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
///     A new leaf tensor; it never shares `t`'s graph.
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
/// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
/// >>> y = remat.empty_like(x)
/// >>> y.shape, y.dtype
/// ((2, 2), remat.float32)
#[pyfunction]
#[pyo3(signature = (t, dtype=None, requires_grad=false, device=None))]
fn empty_like(
    py: Python<'_>,
    t: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    like(
        py,
        "empty_like",
        t,
        dtype,
        requires_grad,
        device,
        ops::zeros,
    )
}

/// Uniform samples in ``[0, 1)`` with the shape, dtype and device of `t`.
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
/// generator : Generator, optional
///     The random stream to draw from; the global one is then left alone. Default: ``None``
///     (the global stream).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of independent samples.
///
/// Raises
/// ------
/// DTypeError
///     When the dtype (`t`'s or `dtype`) is not a floating point dtype.
/// TypeError
///     When `generator` is not a ``remat.Generator``.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> x = remat.zeros(2, 3, dtype=remat.float64)
/// >>> y = remat.rand_like(x)
/// >>> y.shape, y.dtype
/// ((2, 3), remat.float64)
/// >>> bool(((y >= 0) & (y < 1)).all())
/// True
#[pyfunction]
#[pyo3(signature = (t, dtype=None, requires_grad=false, device=None, generator=None))]
fn rand_like(
    py: Python<'_>,
    t: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
) -> PyResult<PyTensor> {
    crate::generator::drawing(generator, || {
        like(py, "rand_like", t, dtype, requires_grad, device, ops::rand)
    })
}

/// Standard normal samples with the shape, dtype and device of `t`.
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
/// generator : Generator, optional
///     The random stream to draw from; the global one is then left alone. Default: ``None``
///     (the global stream).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of independent samples (mean 0, variance 1).
///
/// Raises
/// ------
/// DTypeError
///     When the dtype (`t`'s or `dtype`) is not a floating point dtype.
/// TypeError
///     When `generator` is not a ``remat.Generator``.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> x = remat.zeros(2, 3)
/// >>> y = remat.randn_like(x, requires_grad=True)
/// >>> y.shape, y.requires_grad
/// ((2, 3), True)
#[pyfunction]
#[pyo3(signature = (t, dtype=None, requires_grad=false, device=None, generator=None))]
fn randn_like(
    py: Python<'_>,
    t: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
) -> PyResult<PyTensor> {
    crate::generator::drawing(generator, || {
        like(
            py,
            "randn_like",
            t,
            dtype,
            requires_grad,
            device,
            ops::randn,
        )
    })
}

/// A new tensor filled with `fill_value`, with the shape, dtype and device of `t`.
///
/// The value is converted to the dtype (a float is truncated toward zero for an integer
/// tensor), so ``full_like(int_tensor, 2.7)`` holds 2s.
///
/// Parameters
/// ----------
/// t : Tensor or array_like
///     The tensor whose shape (and, by default, dtype and device) the result takes.
/// fill_value : float
///     The value of every element.
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
///     A new leaf tensor; it never shares `t`'s graph.
///
/// Raises
/// ------
/// TypeError
///     When `fill_value` is not a number.
/// DTypeError
///     When `t` holds no numbers, `dtype` names no supported dtype, or `requires_grad` is set
///     for an integer or bool dtype.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
/// >>> remat.full_like(x, 7)
/// tensor([[7., 7.],
///         [7., 7.]])
/// >>> remat.full_like(remat.tensor([1, 2]), 2.7)
/// tensor([2, 2])
#[pyfunction]
#[pyo3(signature = (t, fill_value, dtype=None, requires_grad=false, device=None))]
fn full_like(
    py: Python<'_>,
    t: &Bound<'_, PyAny>,
    fill_value: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let src = convert::extract_tensor("full_like", t)?;
    let dt = parse_opt_dtype(dtype)?.unwrap_or(src.dtype());
    let dev = match device {
        Some(d) if !d.is_none() => args::device(Some(d))?,
        _ => src.device(),
    };
    let out = run(py, heavy(&[&src]), || {
        ops::full(src.shape(), fill_value, dt, dev)
    })?;
    leaf(out, requires_grad)
}

/// Random integers drawn uniformly from ``[low, high)``.
///
/// Called as ``randint(high, size)`` or ``randint(low, high, size)`` (``low`` defaults to 0);
/// `size` may also be given as a keyword. The result is int64 unless `dtype` says otherwise
/// (the integers are then converted to it).
///
/// Parameters
/// ----------
/// *args : int or tuple of int
///     ``high, size`` or ``low, high, size``, or just ``high`` / ``low, high`` with `size`
///     as a keyword.
/// size : int or tuple of int, optional
///     The shape of the result, when not given positionally. Default: ``None``.
/// dtype : DType, optional
///     The element type. Default: ``None`` (int64).
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
/// requires_grad : bool, optional
///     Whether autograd records operations on the result (floating point dtypes only).
///     Default: ``False``.
/// generator : Generator, optional
///     The random stream to draw from; the global one is then left alone. Default: ``None``
///     (the global stream).
///
/// Returns
/// -------
/// Tensor
///     A new leaf tensor of shape `size`.
///
/// Raises
/// ------
/// TypeError
///     When the arguments match neither form, or a bound is not an int.
/// ValueError
///     When ``low >= high``.
/// ShapeError
///     When `size` has a negative extent.
/// DTypeError
///     When `dtype` names no supported dtype, or `requires_grad` is set for an integer dtype.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> x = remat.randint(10, (2, 3))
/// >>> x.shape, x.dtype
/// ((2, 3), remat.int64)
/// >>> bool(((x >= 0) & (x < 10)).all())
/// True
/// >>> remat.randint(3, 4, size=2)
/// tensor([3, 3])
#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, generator=None))]
fn randint(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    generator: Option<&Bound<'_, crate::generator::PyGenerator>>,
) -> PyResult<PyTensor> {
    let items: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let (low, high, size) = match (items.as_slice(), size) {
        ([h], Some(s)) => (0, h.extract::<i64>()?, s.clone()),
        ([h, s], None) => (0, h.extract::<i64>()?, s.clone()),
        ([l, h], Some(s)) => (l.extract::<i64>()?, h.extract::<i64>()?, s.clone()),
        ([l, h, s], None) => (l.extract::<i64>()?, h.extract::<i64>()?, s.clone()),
        _ => {
            return Err(PyTypeError::new_err(
                "randint: expected (high, size) or (low, high, size)",
            ))
        }
    };
    let shape = args::shape_of("randint", &size)?;
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::I64);
    let dev = args::device(device)?;
    let t = crate::generator::drawing(generator, || {
        run(py, false, || ops::randint(low, high, &shape, dt, dev))
    })?;
    leaf(t, requires_grad)
}

/// Convert `data` to a tensor, sharing its memory where possible.
///
/// A Tensor of the requested dtype and device comes back as the same tensor (same storage,
/// graph and ``.grad``; a new Python object, so ``as_tensor(t) is t`` is false); with another
/// dtype or device it is converted by a differentiable cast or move. A NumPy array with no
/// `dtype` given shares its memory where the layout allows, as ``from_numpy``; anything else
/// (or an array with a `dtype`) is converted as ``remat.tensor`` converts it, into a leaf
/// that does not require grad.
///
/// Parameters
/// ----------
/// data : array_like or Tensor
///     The values: a Tensor, a NumPy array, nested sequences of numbers or a Python scalar.
/// dtype : DType, optional
///     The element type. Default: ``None`` (kept, or inferred as ``remat.tensor`` does).
/// device : str or device, optional
///     The device. Default: ``None`` (kept; the CPU for non-tensors).
///
/// Returns
/// -------
/// Tensor
///     A tensor with the values of `data`.
///
/// Raises
/// ------
/// DTypeError
///     When `data` holds no numbers, or `dtype` names no supported dtype.
/// ShapeError
///     When nested sequences are ragged.
/// DeviceError
///     When `device` is unknown or not available.
///
/// Examples
/// --------
/// >>> a = np.array([1.0, 2.0])
/// >>> t = remat.as_tensor(a)
/// >>> a[0] = 9.0
/// >>> t
/// tensor([9., 2.], dtype=remat.float64)
/// >>> remat.as_tensor([1, 2])
/// tensor([1, 2])
/// >>> remat.as_tensor(remat.tensor([1.0, 2.0]), dtype=remat.float64)
/// tensor([1., 2.], dtype=remat.float64)
#[pyfunction]
#[pyo3(signature = (data, dtype=None, device=None))]
fn as_tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dt = parse_opt_dtype(dtype)?;
    let dev: Option<Device> = match device {
        Some(d) if !d.is_none() => Some(args::device(Some(d))?),
        _ => None,
    };
    let t: Tensor = if let Ok(t) = data.downcast::<PyTensor>() {
        t.get().inner.clone()
    } else if data.downcast::<numpy::PyUntypedArray>().is_ok() && dt.is_none() {
        convert::from_numpy(data)?
    } else {
        convert::tensor_from_py("as_tensor", data, dt)?
    };
    let t = match dt {
        Some(d) if d != t.dtype() => ops::to_dtype(&t, d).py()?,
        _ => t,
    };
    let t = match dev {
        Some(d) if d != t.device() => ops::to_device(&t, d).py()?,
        _ => t,
    };
    Ok(wrap(t))
}

/// The docstring of `remat.tril` and `Tensor.tril` (one text, so they cannot
/// drift apart; the method form is `input.tril(...)`).
macro_rules! tril_doc {
    () => {
        r#"The lower triangle of the last two axes; the rest zeroed.

Keeps the elements on and below the `diagonal`-th diagonal of each matrix
(``0`` is the main diagonal, positive values count diagonals above it, negative
values below it) and zeroes the ones above it. Any dtype; gradients flow to the
kept elements.

Parameters
----------
x : Tensor or array_like
    The input, with at least 2 dimensions; leading axes are batch axes.
diagonal : int, optional
    Which diagonal bounds the kept part. Default: ``0``.

Returns
-------
Tensor
    A new tensor of the input's shape and dtype.

Raises
------
ShapeError
    When the input has fewer than 2 dimensions.
TypeError
    When `diagonal` is not an int.

Examples
--------
>>> x = remat.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
>>> remat.tril(x)
tensor([[1., 0., 0.],
        [4., 5., 0.],
        [7., 8., 9.]])
>>> remat.tril(x, diagonal=-1)
tensor([[0., 0., 0.],
        [4., 0., 0.],
        [7., 8., 0.]])"#
    };
}

#[doc = tril_doc!()]
#[pyfunction]
#[pyo3(name = "tril", signature = (x, diagonal=0))]
fn tril_fn(py: Python<'_>, x: &Bound<'_, PyAny>, diagonal: i64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("tril", x)?;
    run(py, heavy(&[&x]), || ops::tril(&x, diagonal)).map(wrap)
}

/// The docstring of `remat.triu` and `Tensor.triu` (one text, so they cannot
/// drift apart; the method form is `input.triu(...)`).
macro_rules! triu_doc {
    () => {
        r#"The upper triangle of the last two axes; the rest zeroed.

Keeps the elements on and above the `diagonal`-th diagonal of each matrix
(``0`` is the main diagonal, positive values count diagonals above it, negative
values below it) and zeroes the ones below it. Any dtype; gradients flow to the
kept elements.

Parameters
----------
x : Tensor or array_like
    The input, with at least 2 dimensions; leading axes are batch axes.
diagonal : int, optional
    Which diagonal bounds the kept part. Default: ``0``.

Returns
-------
Tensor
    A new tensor of the input's shape and dtype.

Raises
------
ShapeError
    When the input has fewer than 2 dimensions.
TypeError
    When `diagonal` is not an int.

Examples
--------
>>> x = remat.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
>>> remat.triu(x)
tensor([[1., 2., 3.],
        [0., 5., 6.],
        [0., 0., 9.]])
>>> remat.triu(x, 1)
tensor([[0., 2., 3.],
        [0., 0., 6.],
        [0., 0., 0.]])"#
    };
}

#[doc = triu_doc!()]
#[pyfunction]
#[pyo3(name = "triu", signature = (x, diagonal=0))]
fn triu_fn(py: Python<'_>, x: &Bound<'_, PyAny>, diagonal: i64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("triu", x)?;
    run(py, heavy(&[&x]), || ops::triu(&x, diagonal)).map(wrap)
}

#[pymethods]
impl PyTensor {
    #[doc = tril_doc!()]
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        run(py, heavy(&[&self.inner]), || {
            ops::tril(&self.inner, diagonal)
        })
        .map(wrap)
    }
    #[doc = triu_doc!()]
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        run(py, heavy(&[&self.inner]), || {
            ops::triu(&self.inner, diagonal)
        })
        .map(wrap)
    }
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(empty_like, m)?)?;
    m.add_function(wrap_pyfunction!(rand_like, m)?)?;
    m.add_function(wrap_pyfunction!(randn_like, m)?)?;
    m.add_function(wrap_pyfunction!(full_like, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(as_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(tril_fn, m)?)?;
    m.add_function(wrap_pyfunction!(triu_fn, m)?)?;
    Ok(())
}
