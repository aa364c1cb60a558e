//! Python bindings of convolution, pooling, padding and im2col/col2im with PyTorch's
//! signatures (`conv1d`/`conv2d`/`conv3d`, `max_pool*`, `avg_pool*`,
//! `adaptive_avg_pool*`, `pad`, and `F.unfold`/`F.fold` as `_im2col`/`_col2im`). Sizes
//! accept an int or a tuple, as in PyTorch; the work is `remat_core::ops`.

use crate::args::int_list;
use crate::call::{heavy, run};
use crate::convert;
use crate::errors::to_pyerr;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use remat_core::ops::{self, ConvPadding, PadMode, Window};
use remat_core::Tensor;

/// `rank` non-negative sizes from an int (repeated) or a tuple/list of `rank` ints.
fn sizes(op: &str, what: &str, obj: &Bound<'_, PyAny>, rank: usize) -> PyResult<Vec<usize>> {
    let v = int_list(op, what, obj)?;
    let v = if v.len() == 1 { vec![v[0]; rank] } else { v };
    if v.len() != rank || v.iter().any(|&x| x < 0) {
        return Err(PyValueError::new_err(format!(
            "{op}: {what} must be a non-negative int or a tuple of {rank} of them, got {}",
            obj.repr()?
        )));
    }
    Ok(v.into_iter().map(|x| x as usize).collect())
}

fn tensor(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    convert::extract_tensor(op, obj)
}

#[allow(clippy::too_many_arguments)]
fn conv_nd(
    py: Python<'_>,
    rank: usize,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
    stride: &Bound<'_, PyAny>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
) -> PyResult<PyTensor> {
    let op = ["conv1d", "conv2d", "conv3d"][rank - 1];
    let x = tensor(op, input)?;
    let w = tensor(op, weight)?;
    let b = match bias {
        Some(b) if !b.is_none() => Some(tensor(op, b)?),
        _ => None,
    };
    let stride = sizes(op, "stride", stride, rank)?;
    let dilation = sizes(op, "dilation", dilation, rank)?;
    let padding = if padding.is_instance_of::<PyString>() {
        match padding.extract::<String>()?.as_str() {
            "same" => ConvPadding::Same,
            "valid" => ConvPadding::Valid,
            other => {
                return Err(PyValueError::new_err(format!(
                    "{op}: padding must be 'same', 'valid', an int or a tuple, got {other:?}"
                )))
            }
        }
    } else {
        ConvPadding::Explicit(sizes(op, "padding", padding, rank)?.into_iter().collect())
    };
    if groups < 1 {
        return Err(PyValueError::new_err(format!(
            "{op}: groups must be a positive int, got {groups}"
        )));
    }
    run(py, heavy(&[&x, &w]), || {
        ops::conv(
            &x,
            &w,
            b.as_ref(),
            &stride,
            &padding,
            &dilation,
            groups as usize,
        )
    })
    .map(wrap)
}

macro_rules! conv_fn {
    ($name:ident, $rank:expr, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1),
               text_signature = "(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)")]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            weight: &Bound<'_, PyAny>,
            bias: Option<&Bound<'_, PyAny>>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            dilation: Option<&Bound<'_, PyAny>>,
            groups: i64,
        ) -> PyResult<PyTensor> {
            let (s, p, d) = conv_defaults(py, stride, padding, dilation);
            conv_nd(py, $rank, input, weight, bias, &s, &p, &d, groups)
        }
    };
}

conv_fn!(
    conv1d,
    1,
    "1-D convolution of `(N, C, L)` (or `(C, L)`) with `weight (O, C/groups, k)`."
);
conv_fn!(
    conv2d,
    2,
    "2-D convolution of `(N, C, H, W)` (or `(C, H, W)`) with `weight (O, C/groups, kh, kw)`."
);
conv_fn!(
    conv3d,
    3,
    "3-D convolution of `(N, C, D, H, W)` (or unbatched) with `weight (O, C/groups, kd, kh, kw)`."
);

type Triple<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);

/// PyTorch's defaults stride 1, padding 0, dilation 1 where an argument is omitted or None.
fn conv_defaults<'py>(
    py: Python<'py>,
    stride: Option<&Bound<'py, PyAny>>,
    padding: Option<&Bound<'py, PyAny>>,
    dilation: Option<&Bound<'py, PyAny>>,
) -> Triple<'py> {
    let or = |o: Option<&Bound<'py, PyAny>>, d: i64| match o {
        Some(v) if !v.is_none() => v.clone(),
        _ => d.into_pyobject(py).expect("int").into_any(),
    };
    (or(stride, 1), or(padding, 0), or(dilation, 1))
}

/// A pooling window: `stride` defaults to the kernel size (None or an empty tuple).
#[allow(clippy::too_many_arguments)]
fn pool_window(
    op: &str,
    rank: usize,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    ceil_mode: bool,
) -> PyResult<Window> {
    let kernel = sizes(op, "kernel_size", kernel_size, rank)?;
    let stride = match stride {
        Some(s) if !s.is_none() && s.len().map_or(true, |n| n > 0) => sizes(op, "stride", s, rank)?,
        _ => kernel.clone(),
    };
    let mut win = Window::new(
        &kernel,
        &stride,
        &sizes(op, "padding", padding, rank)?,
        &sizes(op, "dilation", dilation, rank)?,
    );
    win.ceil_mode = ceil_mode;
    Ok(win)
}

#[allow(clippy::too_many_arguments)]
fn max_pool_nd(
    py: Python<'_>,
    rank: usize,
    input: &Bound<'_, PyAny>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    ceil_mode: bool,
    return_indices: bool,
) -> PyResult<PyObject> {
    let op = ["max_pool1d", "max_pool2d", "max_pool3d"][rank - 1];
    let x = tensor(op, input)?;
    let win = pool_window(op, rank, kernel_size, stride, padding, dilation, ceil_mode)?;
    let (v, i) = run(py, heavy(&[&x]), || ops::max_pool(&x, &win))?;
    if return_indices {
        Ok(PyTuple::new(py, [wrap(v), wrap(i)])?.into_any().unbind())
    } else {
        Ok(Py::new(py, wrap(v))?.into_any())
    }
}

macro_rules! max_pool_fn {
    ($name:ident, $rank:expr, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false, return_indices=false),
               text_signature = "(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)")]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            kernel_size: &Bound<'_, PyAny>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            dilation: Option<&Bound<'_, PyAny>>,
            ceil_mode: bool,
            return_indices: bool,
        ) -> PyResult<PyObject> {
            let (_, p, d) = conv_defaults(py, None, padding, dilation);
            max_pool_nd(py, $rank, input, kernel_size, stride, &p, &d, ceil_mode, return_indices)
        }
    };
}

max_pool_fn!(
    max_pool1d,
    1,
    "1-D max pooling (`return_indices`: also the flat arg-max positions)."
);
max_pool_fn!(
    max_pool2d,
    2,
    "2-D max pooling (`return_indices`: also the flat arg-max positions)."
);
max_pool_fn!(
    max_pool3d,
    3,
    "3-D max pooling (`return_indices`: also the flat arg-max positions)."
);

macro_rules! avg_pool_fn {
    ($name:ident, $rank:expr, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true, divisor_override=None),
               text_signature = "(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)")]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            kernel_size: &Bound<'_, PyAny>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            ceil_mode: bool,
            count_include_pad: bool,
            divisor_override: Option<f64>,
        ) -> PyResult<PyTensor> {
            let op = stringify!($name);
            let (_, p, d) = conv_defaults(py, None, padding, None);
            let x = tensor(op, input)?;
            let win = pool_window(op, $rank, kernel_size, stride, &p, &d, ceil_mode)?;
            run(py, heavy(&[&x]), || {
                ops::avg_pool(&x, &win, count_include_pad, divisor_override)
            })
            .map(wrap)
        }
    };
}

avg_pool_fn!(avg_pool1d, 1, "1-D average pooling.");
avg_pool_fn!(avg_pool2d, 2, "2-D average pooling.");
avg_pool_fn!(avg_pool3d, 3, "3-D average pooling.");

macro_rules! adaptive_avg_pool_fn {
    ($name:ident, $rank:expr, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (input, output_size))]
        fn $name(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            output_size: &Bound<'_, PyAny>,
        ) -> PyResult<PyTensor> {
            let op = stringify!($name);
            let x = tensor(op, input)?;
            let size = adaptive_size(op, output_size, &x, $rank)?;
            run(py, heavy(&[&x]), || ops::adaptive_avg_pool(&x, &size)).map(wrap)
        }
    };
}

/// An adaptive pool's output size: an int, or a tuple whose `None` entries keep the input's
/// size on that axis.
fn adaptive_size(
    op: &str,
    obj: &Bound<'_, PyAny>,
    x: &Tensor,
    rank: usize,
) -> PyResult<Vec<usize>> {
    let spatial = &x.shape()[x.ndim().saturating_sub(rank)..];
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<pyo3::types::PyList>() {
        let items: Vec<Bound<'_, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
        if items.len() != rank || spatial.len() != rank {
            return Err(PyValueError::new_err(format!(
                "{op}: output_size must have {rank} entries, got {}",
                obj.repr()?
            )));
        }
        return items
            .iter()
            .zip(spatial)
            .map(|(v, &n)| {
                if v.is_none() {
                    Ok(n)
                } else {
                    sizes(op, "output_size", v, 1).map(|s| s[0])
                }
            })
            .collect();
    }
    sizes(op, "output_size", obj, rank)
}

adaptive_avg_pool_fn!(adaptive_avg_pool1d, 1, "1-D adaptive average pooling.");
adaptive_avg_pool_fn!(adaptive_avg_pool2d, 2, "2-D adaptive average pooling.");
adaptive_avg_pool_fn!(adaptive_avg_pool3d, 3, "3-D adaptive average pooling.");

/// PyTorch's `F.pad`: `pad` = (before, after) pairs from the last axis backwards; `mode`
/// `"constant"` (filled with `value`, default 0), `"reflect"`, `"replicate"` or `"circular"`.
#[pyfunction]
#[pyo3(signature = (input, pad, mode="constant", value=None))]
fn pad(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    pad: &Bound<'_, PyAny>,
    mode: &str,
    value: Option<f64>,
) -> PyResult<PyTensor> {
    let x = tensor("pad", input)?;
    let amounts = int_list("pad", "pad", pad)?;
    let mode = PadMode::parse(mode).map_err(to_pyerr)?;
    if mode != PadMode::Constant && value.is_some_and(|v| v != 0.0) {
        return Err(PyValueError::new_err(
            "pad: padding mode doesn't take in value argument",
        ));
    }
    run(py, heavy(&[&x]), || {
        ops::pad(&x, &amounts, mode, value.unwrap_or(0.0))
    })
    .map(wrap)
}

/// PyTorch's `F.unfold` (im2col) of `(N, C, H, W)`: `(N, C·kh·kw, L)`.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, dilation=None, padding=None, stride=None),
       text_signature = "(input, kernel_size, dilation=1, padding=0, stride=1)")]
fn _im2col(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    kernel_size: &Bound<'_, PyAny>,
    dilation: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let x = tensor("unfold", input)?;
    let (s, p, d) = conv_defaults(py, stride, padding, dilation);
    let win = Window::new(
        &sizes("unfold", "kernel_size", kernel_size, 2)?,
        &sizes("unfold", "stride", &s, 2)?,
        &sizes("unfold", "padding", &p, 2)?,
        &sizes("unfold", "dilation", &d, 2)?,
    );
    run(py, heavy(&[&x]), || ops::unfold(&x, &win)).map(wrap)
}

/// PyTorch's `F.fold` (col2im) of `(N, C·kh·kw, L)` into `(N, C, *output_size)`.
#[pyfunction]
#[pyo3(signature = (input, output_size, kernel_size, dilation=None, padding=None, stride=None),
       text_signature = "(input, output_size, kernel_size, dilation=1, padding=0, stride=1)")]
fn _col2im(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    output_size: &Bound<'_, PyAny>,
    kernel_size: &Bound<'_, PyAny>,
    dilation: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let x = tensor("fold", input)?;
    let (s, p, d) = conv_defaults(py, stride, padding, dilation);
    let win = Window::new(
        &sizes("fold", "kernel_size", kernel_size, 2)?,
        &sizes("fold", "stride", &s, 2)?,
        &sizes("fold", "padding", &p, 2)?,
        &sizes("fold", "dilation", &d, 2)?,
    );
    let size = sizes("fold", "output_size", output_size, 2)?;
    run(py, heavy(&[&x]), || ops::fold(&x, &size, &win)).map(wrap)
}

/// Register the functions of this file on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conv1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv3d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(pad, m)?)?;
    m.add_function(wrap_pyfunction!(_im2col, m)?)?;
    m.add_function(wrap_pyfunction!(_col2im, m)?)?;
    Ok(())
}
