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

/// `arange(end)`, `arange(start, end, step=1)`: int64 when every bound is an integer, else
/// float32 (PyTorch's rule), unless `dtype` is given.
#[pyfunction]
#[pyo3(signature = (*bounds, step=None, dtype=None, device=None, requires_grad=false))]
fn arange(
    py: Python<'_>,
    bounds: &Bound<'_, PyTuple>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    let items: Vec<Bound<'_, PyAny>> = bounds.iter().collect();
    let (start, end, pos_step) = match items.as_slice() {
        [e] => (None, e.clone(), None),
        [s, e] => (Some(s.clone()), e.clone(), None),
        [s, e, st] => (Some(s.clone()), e.clone(), Some(st.clone())),
        _ => {
            return Err(PyTypeError::new_err(format!(
                "arange: expected (end), (start, end) or (start, end, step), got {} arguments",
                items.len()
            )))
        }
    };
    let step = pos_step.or_else(|| step.cloned());
    let any_float = is_float(&end)
        || start.as_ref().is_some_and(is_float)
        || step.as_ref().is_some_and(is_float);
    let dt = parse_opt_dtype(dtype)?.unwrap_or(if any_float { DType::F32 } else { DType::I64 });
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

/// `linspace(start, end, steps)`: `steps` evenly spaced values from `start` to `end`.
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
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::F32);
    let dev = args::device(device)?;
    let t = run(py, false, || ops::linspace(s, e, steps, dt, dev))?;
    leaf(t, requires_grad)
}

/// `eye(n, m=None)`: an `n x m` (default square) matrix with ones on the diagonal.
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
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::F32);
    let dev = args::device(device)?;
    let t = run(py, false, || ops::eye(n, m.unwrap_or(n), dt, dev))?;
    leaf(t, requires_grad)
}

/// `empty(*shape)`: a new tensor of the shape. Its values are unspecified in PyTorch;
/// remat's are zeros (no uninitialised memory is ever handed out).
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
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::F32);
    let dev = args::device(device)?;
    let t = run(py, false, || ops::zeros(&s, dt, dev))?;
    leaf(t, requires_grad)
}

/// `empty_like(t)`: a new tensor of `t`'s shape (zeros, see `empty`).
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

/// `rand_like(t)`: uniform samples in [0, 1) of `t`'s shape, dtype and device.
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

/// `randn_like(t)`: standard normal samples of `t`'s shape, dtype and device.
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

/// `full_like(t, fill_value)`: `fill_value` everywhere, `t`'s shape, dtype and device.
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

/// `randint(high, size)` or `randint(low, high, size)`: integers uniform in `[low, high)`
/// (int64 unless `dtype` says otherwise).
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

/// `as_tensor(data, dtype=None, device=None)`: `data` itself when it is a tensor of that
/// dtype and device; a NumPy array shares its memory where the layout allows (as
/// `from_numpy`); anything else is converted like `remat.tensor`.
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

/// The lower triangle (on and below `diagonal`) of the last two axes; the rest zero.
#[pyfunction]
#[pyo3(name = "tril", signature = (x, diagonal=0))]
fn tril_fn(py: Python<'_>, x: &Bound<'_, PyAny>, diagonal: i64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("tril", x)?;
    run(py, heavy(&[&x]), || ops::tril(&x, diagonal)).map(wrap)
}

/// The upper triangle (on and above `diagonal`) of the last two axes; the rest zero.
#[pyfunction]
#[pyo3(name = "triu", signature = (x, diagonal=0))]
fn triu_fn(py: Python<'_>, x: &Bound<'_, PyAny>, diagonal: i64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("triu", x)?;
    run(py, heavy(&[&x]), || ops::triu(&x, diagonal)).map(wrap)
}

#[pymethods]
impl PyTensor {
    /// The lower triangle (on and below `diagonal`) of the last two axes; the rest zero.
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        run(py, heavy(&[&self.inner]), || {
            ops::tril(&self.inner, diagonal)
        })
        .map(wrap)
    }
    /// The upper triangle (on and above `diagonal`) of the last two axes; the rest zero.
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
