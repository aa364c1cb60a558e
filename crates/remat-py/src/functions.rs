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

/// `remat.tensor(data, dtype=None, requires_grad=False, device="cpu")`: a new leaf with a copy
/// of `data`.
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

/// `remat.from_numpy(array)`: shares memory with C-contiguous float32/float64 arrays.
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
    let dt = parse_opt_dtype(dtype)?.unwrap_or(DType::F32);
    let dev = args::device(device)?;
    let big = numel_saturating(&shape) >= crate::call::GIL_RELEASE_MIN;
    let t = run(py, big, || f(&shape, dt, dev))?;
    leaf(t, requires_grad)
}

/// `remat.zeros(*shape, dtype=None, requires_grad=False, device="cpu")`.
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

/// `remat.ones(*shape, dtype=None, requires_grad=False, device="cpu")`.
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

/// `remat.randn(*shape, ...)`: standard normal samples.
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

/// `remat.rand(*shape, ...)`: uniform samples in [0, 1).
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

/// `remat.full(shape, value, dtype=None, requires_grad=False, device="cpu")`.
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
        DType::F32
    };
    let value: f64 = value.extract()?;
    let dt = parse_opt_dtype(dtype)?.unwrap_or(inferred);
    let dev = args::device(device)?;
    let big = numel_saturating(&s) >= crate::call::GIL_RELEASE_MIN;
    let t = run(py, big, || ops::full(&s, value, dt, dev))?;
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

/// `remat.zeros_like(t, dtype=None, requires_grad=False)`.
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

/// `remat.ones_like(t, dtype=None, requires_grad=False)`.
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

/// Join tensors along an existing axis `dim` (`axis=` accepted).
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

/// Join tensors along an existing axis `dim` (`axis=` accepted); the same as `cat`.
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

/// Join tensors along an existing axis `dim` (`axis=` accepted); the same as `cat`.
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

/// Join tensors along a new axis.
#[pyfunction]
#[pyo3(signature = (tensors, axis=0))]
fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, axis: isize) -> PyResult<PyTensor> {
    let ts = tensor_list("stack", tensors)?;
    let big = ts.iter().map(|t| t.numel()).sum::<usize>() >= crate::call::GIL_RELEASE_MIN;
    run(py, big, || ops::stack(&ts, axis)).map(wrap)
}

/// Elements of `a` where `cond` is nonzero, else of `b` (broadcast).
#[pyfunction(name = "where")]
fn where_(
    py: Python<'_>,
    cond: &Bound<'_, PyAny>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let c = convert::extract_tensor("where", cond)?;
    let (a, b) = operand_pair("where", a, b)?;
    run(py, heavy(&[&c, &a, &b]), || ops::where_(&c, &a, &b)).map(wrap)
}

/// Einstein summation over `operands` as `equation` describes (PyTorch's `einsum`): e.g.
/// `einsum("ij,jk->ik", a, b)`; the operands may also be given as one list. `...` broadcasts,
/// a subscript missing from the output (or, without `->`, repeated) is summed, one repeated
/// within a term takes the diagonal. Contracted pairwise, left to right, as batched GEMMs.
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

/// Zero elements with probability `p` and scale the rest by `1 / (1 - p)` when `training`.
#[pyfunction]
#[pyo3(signature = (x, p=0.5, training=true))]
fn dropout(py: Python<'_>, x: &Bound<'_, PyAny>, p: f64, training: bool) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("dropout", x)?;
    unary(py, &x, |x| ops::dropout(x, p, training))
}

/// `log(1 + exp(beta * x)) / beta`, and `x` where `beta * x > threshold` (PyTorch's
/// `softplus`).
#[pyfunction]
#[pyo3(signature = (x, beta=1.0, threshold=20.0))]
fn softplus(py: Python<'_>, x: &Bound<'_, PyAny>, beta: f64, threshold: f64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("softplus", x)?;
    unary(py, &x, |x| ops::softplus(x, beta, threshold))
}

/// `x` where `x > 0`, else `negative_slope * x` (PyTorch's `leaky_relu`).
#[pyfunction]
#[pyo3(signature = (x, negative_slope=0.01))]
fn leaky_relu(py: Python<'_>, x: &Bound<'_, PyAny>, negative_slope: f64) -> PyResult<PyTensor> {
    let x = convert::extract_tensor("leaky_relu", x)?;
    unary(py, &x, |x| ops::leaky_relu(x, negative_slope))
}

/// PyTorch's `layer_norm(input, normalized_shape=None, weight=None, bias=None, eps=1e-5)`:
/// normalise over the trailing axes `normalized_shape` (default: the last axis), then scale
/// by `weight` and shift by `bias` (both of that shape).
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

/// `x @ weight.T + bias`, fused (the bias is added inside the matrix product).
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
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(einsum, m)?)?;
    Ok(())
}
