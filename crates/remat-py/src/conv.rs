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
pub(crate) fn sizes(
    op: &str,
    what: &str,
    obj: &Bound<'_, PyAny>,
    rank: usize,
) -> PyResult<Vec<usize>> {
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
        ops::conv_nd(
            rank,
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
    ($(#[doc = $doc:literal])* $name:ident, $rank:expr) => {
        $(#[doc = $doc])*
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

conv_fn! {
    /// 1-D convolution (cross-correlation, as PyTorch's ``conv1d``).
    ///
    /// ``input`` is ``(N, C_in, L)`` or unbatched ``(C_in, L)``; ``weight`` is
    /// ``(C_out, C_in / groups, k)``. Along each spatial axis the output size is
    /// ``(size + 2 * padding - dilation * (k - 1) - 1) // stride + 1``. Float32 or float64 only,
    /// every tensor of one dtype; gradients flow to ``input``, ``weight`` and ``bias``.
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C_in, L)`` or unbatched ``(C_in, L)``.
    /// weight : Tensor or array_like
    ///     The filters, ``(C_out, C_in / groups, k)``, of ``input``'s dtype.
    /// bias : Tensor or array_like, optional
    ///     ``(C_out,)``, added to every output position. Default: ``None`` (no bias).
    /// stride : int or tuple of int, optional
    ///     The step between windows (an int or a 1-tuple). Default: ``1``.
    /// padding : int, tuple of int or str, optional
    ///     Zeros added on both sides of each spatial axis, or ``"valid"`` (none) or ``"same"`` (the
    ///     output as large as the input; stride 1 only; an odd total is padded one more at the end,
    ///     as PyTorch). Default: ``0``.
    /// dilation : int or tuple of int, optional
    ///     The spacing between kernel taps. Default: ``1``.
    /// groups : int, optional
    ///     The number of blocked connections: ``C_in`` and ``C_out`` must be divisible by it.
    ///     Default: ``1``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``(N, C_out, L_out)`` (without ``N`` for an unbatched input), of ``input``'s dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 2-D or 3-D, its channels are not ``weight.shape[1] * groups``,
    ///     ``C_out`` is not divisible by ``groups``, ``bias`` is not ``(C_out,)``, or the padded
    ///     input is smaller than the dilated kernel.
    /// DTypeError
    ///     When the tensors are not all of one float dtype.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``stride`` or ``dilation`` is 0,
    ///     ``padding`` is an unknown string, ``padding="same"`` comes with a stride above 1, or
    ///     ``groups < 1``.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.arange(6.0).reshape(1, 1, 6)
    /// >>> w = remat.tensor([[[1.0, 0.0, -1.0]]])
    /// >>> remat.conv1d(x, w)
    /// tensor([[[-2., -2., -2., -2.]]])
    /// >>> remat.conv1d(x, w, padding=1)
    /// tensor([[[-1., -2., -2., -2., -2.,  4.]]])
    /// >>> remat.conv1d(remat.ones(2, 3, 10), remat.ones(4, 3, 3), stride=2).shape
    /// (2, 4, 4)
    /// >>> remat.conv1d(remat.ones(1, 10), remat.ones(4, 1, 3), dilation=2).shape
    /// (4, 6)
    conv1d, 1
}

conv_fn! {
    /// 2-D convolution (cross-correlation, as PyTorch's ``conv2d``).
    ///
    /// ``input`` is ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)``; ``weight`` is
    /// ``(C_out, C_in / groups, kh, kw)``. Along each spatial axis the output size is
    /// ``(size + 2 * padding - dilation * (k - 1) - 1) // stride + 1``. Float32 or float64 only,
    /// every tensor of one dtype; gradients flow to ``input``, ``weight`` and ``bias``.
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)``.
    /// weight : Tensor or array_like
    ///     The filters, ``(C_out, C_in / groups, kh, kw)``, of ``input``'s dtype.
    /// bias : Tensor or array_like, optional
    ///     ``(C_out,)``, added to every output position. Default: ``None`` (no bias).
    /// stride : int or tuple of int, optional
    ///     The step between windows (an int for both axes or a pair). Default: ``1``.
    /// padding : int, tuple of int or str, optional
    ///     Zeros added on both sides of each spatial axis, or ``"valid"`` (none) or ``"same"`` (the
    ///     output as large as the input; stride 1 only; an odd total is padded one more at the end,
    ///     as PyTorch). Default: ``0``.
    /// dilation : int or tuple of int, optional
    ///     The spacing between kernel taps. Default: ``1``.
    /// groups : int, optional
    ///     The number of blocked connections: ``C_in`` and ``C_out`` must be divisible by it.
    ///     Default: ``1``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``(N, C_out, H_out, W_out)`` (without ``N`` for an unbatched input), of ``input``'s
    ///     dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 3-D or 4-D, its channels are not ``weight.shape[1] * groups``,
    ///     ``C_out`` is not divisible by ``groups``, ``bias`` is not ``(C_out,)``, or the padded
    ///     input is smaller than the dilated kernel.
    /// DTypeError
    ///     When the tensors are not all of one float dtype.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``stride`` or ``dilation`` is 0,
    ///     ``padding`` is an unknown string, ``padding="same"`` comes with a stride above 1, or
    ///     ``groups < 1``.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.arange(16.0).reshape(1, 1, 4, 4)
    /// >>> remat.conv2d(x, remat.ones(1, 1, 2, 2), stride=2)
    /// tensor([[[[10., 18.],
    ///           [42., 50.]]]])
    /// >>> remat.conv2d(remat.ones(2, 3, 8, 8), remat.ones(4, 3, 3, 3), padding="same").shape
    /// (2, 4, 8, 8)
    /// >>> remat.conv2d(remat.ones(1, 4, 5, 5), remat.ones(4, 1, 3, 3), groups=4).shape
    /// (1, 4, 3, 3)
    conv2d, 2
}

conv_fn! {
    /// 3-D convolution (cross-correlation, as PyTorch's ``conv3d``).
    ///
    /// ``input`` is ``(N, C_in, D, H, W)`` or unbatched ``(C_in, D, H, W)``; ``weight`` is
    /// ``(C_out, C_in / groups, kd, kh, kw)``. Along each spatial axis the output size is
    /// ``(size + 2 * padding - dilation * (k - 1) - 1) // stride + 1``. Float32 or float64 only,
    /// every tensor of one dtype; gradients flow to ``input``, ``weight`` and ``bias``.
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C_in, D, H, W)`` or unbatched ``(C_in, D, H, W)``.
    /// weight : Tensor or array_like
    ///     The filters, ``(C_out, C_in / groups, kd, kh, kw)``, of ``input``'s dtype.
    /// bias : Tensor or array_like, optional
    ///     ``(C_out,)``, added to every output position. Default: ``None`` (no bias).
    /// stride : int or tuple of int, optional
    ///     The step between windows (an int for all three axes or a triple). Default: ``1``.
    /// padding : int, tuple of int or str, optional
    ///     Zeros added on both sides of each spatial axis, or ``"valid"`` (none) or ``"same"`` (the
    ///     output as large as the input; stride 1 only; an odd total is padded one more at the end,
    ///     as PyTorch). Default: ``0``.
    /// dilation : int or tuple of int, optional
    ///     The spacing between kernel taps. Default: ``1``.
    /// groups : int, optional
    ///     The number of blocked connections: ``C_in`` and ``C_out`` must be divisible by it.
    ///     Default: ``1``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``(N, C_out, D_out, H_out, W_out)`` (without ``N`` for an unbatched input), of
    ///     ``input``'s dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 4-D or 5-D, its channels are not ``weight.shape[1] * groups``,
    ///     ``C_out`` is not divisible by ``groups``, ``bias`` is not ``(C_out,)``, or the padded
    ///     input is smaller than the dilated kernel.
    /// DTypeError
    ///     When the tensors are not all of one float dtype.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``stride`` or ``dilation`` is 0,
    ///     ``padding`` is an unknown string, ``padding="same"`` comes with a stride above 1, or
    ///     ``groups < 1``.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> w = remat.ones(1, 1, 2, 2, 2)
    /// >>> remat.conv3d(remat.ones(1, 1, 2, 2, 2), w, bias=remat.tensor([0.5]))
    /// tensor([[[[[8.5000]]]]])
    /// >>> remat.conv3d(remat.ones(1, 2, 4, 4, 4), remat.ones(3, 2, 2, 2, 2), stride=2).shape
    /// (1, 3, 2, 2, 2)
    conv3d, 3
}

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
    ($(#[doc = $doc:literal])* $name:ident, $rank:expr) => {
        $(#[doc = $doc])*
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

max_pool_fn! {
    /// 1-D max pooling, as PyTorch's ``max_pool1d``.
    ///
    /// The maximum of each window of ``input`` (``(N, C, L)`` or unbatched ``(C, L)``); padding
    /// counts as ``-inf``, and a NaN in a window makes its maximum NaN. The gradient goes to the
    /// element that was picked (the first one among ties).
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, L)`` or unbatched ``(C, L)``, float32 or float64.
    /// kernel_size : int or tuple of int
    ///     The window size (an int or a 1-tuple).
    /// stride : int or tuple of int, optional
    ///     The step between windows. Default: ``None`` (``kernel_size``).
    /// padding : int or tuple of int, optional
    ///     Implicit ``-inf`` added on both sides, at most half the (dilated) kernel. Default:
    ///     ``0``.
    /// dilation : int or tuple of int, optional
    ///     The spacing between window elements. Default: ``1``.
    /// ceil_mode : bool, optional
    ///     Round the output size up instead of down (a last, partial window, as PyTorch). Default:
    ///     ``False``.
    /// return_indices : bool, optional
    ///     Also return where each maximum came from. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor or tuple of Tensor
    ///     The pooled values, ``input``'s shape with the spatial axes reduced, of ``input``'s
    ///     dtype; with ``return_indices``, the tuple ``(values, indices)`` where ``indices``
    ///     (int64) are flat positions in each channel's unpadded spatial plane ``(L,)``.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 2-D or 3-D or the padded input is smaller than the window.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``kernel_size``, ``stride`` or
    ///     ``dilation`` is 0, or ``padding`` is more than half the (dilated) kernel.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]])
    /// >>> remat.max_pool1d(x, 2)
    /// tensor([[[3., 5.]]])
    /// >>> remat.max_pool1d(x, 2, ceil_mode=True)
    /// tensor([[[3., 5., 4.]]])
    /// >>> remat.max_pool1d(x, 2, return_indices=True)
    /// (tensor([[[3., 5.]]]), tensor([[[1, 3]]]))
    max_pool1d, 1
}

max_pool_fn! {
    /// 2-D max pooling, as PyTorch's ``max_pool2d``.
    ///
    /// The maximum of each window of ``input`` (``(N, C, H, W)`` or unbatched ``(C, H, W)``);
    /// padding counts as ``-inf``, and a NaN in a window makes its maximum NaN. The gradient goes
    /// to the element that was picked (the first one among ties).
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, H, W)`` or unbatched ``(C, H, W)``, float32 or float64.
    /// kernel_size : int or tuple of int
    ///     The window size (an int for both axes or a pair).
    /// stride : int or tuple of int, optional
    ///     The step between windows. Default: ``None`` (``kernel_size``).
    /// padding : int or tuple of int, optional
    ///     Implicit ``-inf`` added on both sides, at most half the (dilated) kernel. Default:
    ///     ``0``.
    /// dilation : int or tuple of int, optional
    ///     The spacing between window elements. Default: ``1``.
    /// ceil_mode : bool, optional
    ///     Round the output size up instead of down (a last, partial window, as PyTorch). Default:
    ///     ``False``.
    /// return_indices : bool, optional
    ///     Also return where each maximum came from. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor or tuple of Tensor
    ///     The pooled values, ``input``'s shape with the spatial axes reduced, of ``input``'s
    ///     dtype; with ``return_indices``, the tuple ``(values, indices)`` where ``indices``
    ///     (int64) are flat positions in each channel's unpadded spatial plane ``(H, W)``.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 3-D or 4-D or the padded input is smaller than the window.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``kernel_size``, ``stride`` or
    ///     ``dilation`` is 0, or ``padding`` is more than half the (dilated) kernel.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.arange(16.0).reshape(1, 1, 4, 4)
    /// >>> values, indices = remat.max_pool2d(x, 2, return_indices=True)
    /// >>> values
    /// tensor([[[[ 5.,  7.],
    ///           [13., 15.]]]])
    /// >>> indices
    /// tensor([[[[ 5,  7],
    ///           [13, 15]]]])
    /// >>> remat.max_pool2d(remat.ones(2, 3, 8, 8), 3, stride=2, padding=1).shape
    /// (2, 3, 4, 4)
    max_pool2d, 2
}

max_pool_fn! {
    /// 3-D max pooling, as PyTorch's ``max_pool3d``.
    ///
    /// The maximum of each window of ``input`` (``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``);
    /// padding counts as ``-inf``, and a NaN in a window makes its maximum NaN. The gradient goes
    /// to the element that was picked (the first one among ties).
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``, float32 or float64.
    /// kernel_size : int or tuple of int
    ///     The window size (an int for all three axes or a triple).
    /// stride : int or tuple of int, optional
    ///     The step between windows. Default: ``None`` (``kernel_size``).
    /// padding : int or tuple of int, optional
    ///     Implicit ``-inf`` added on both sides, at most half the (dilated) kernel. Default:
    ///     ``0``.
    /// dilation : int or tuple of int, optional
    ///     The spacing between window elements. Default: ``1``.
    /// ceil_mode : bool, optional
    ///     Round the output size up instead of down (a last, partial window, as PyTorch). Default:
    ///     ``False``.
    /// return_indices : bool, optional
    ///     Also return where each maximum came from. Default: ``False``.
    ///
    /// Returns
    /// -------
    /// Tensor or tuple of Tensor
    ///     The pooled values, ``input``'s shape with the spatial axes reduced, of ``input``'s
    ///     dtype; with ``return_indices``, the tuple ``(values, indices)`` where ``indices``
    ///     (int64) are flat positions in each channel's unpadded spatial plane ``(D, H, W)``.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 4-D or 5-D or the padded input is smaller than the window.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``kernel_size``, ``stride`` or
    ///     ``dilation`` is 0, or ``padding`` is more than half the (dilated) kernel.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> remat.max_pool3d(remat.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    /// tensor([[[[[7.]]]]])
    /// >>> remat.max_pool3d(remat.ones(1, 2, 4, 4, 4), (2, 2, 1)).shape
    /// (1, 2, 2, 2, 4)
    max_pool3d, 3
}

macro_rules! avg_pool_fn {
    ($(#[doc = $doc:literal])* $name:ident, $rank:expr) => {
        $(#[doc = $doc])*
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

avg_pool_fn! {
    /// 1-D average pooling, as PyTorch's ``avg_pool1d``.
    ///
    /// The mean of each window of ``input`` (``(N, C, L)`` or unbatched ``(C, L)``); padding counts
    /// as zeros.
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, L)`` or unbatched ``(C, L)``, float32 or float64.
    /// kernel_size : int or tuple of int
    ///     The window size (an int or a 1-tuple).
    /// stride : int or tuple of int, optional
    ///     The step between windows. Default: ``None`` (``kernel_size``).
    /// padding : int or tuple of int, optional
    ///     Implicit zeros added on both sides, at most half the kernel. Default: ``0``.
    /// ceil_mode : bool, optional
    ///     Round the output size up instead of down (a last, partial window, as PyTorch). Default:
    ///     ``False``.
    /// count_include_pad : bool, optional
    ///     Count the padded zeros in the divisor; ``False`` divides by the number of input elements
    ///     in the window. Default: ``True``.
    /// divisor_override : float, optional
    ///     Divide every window's sum by this instead. Default: ``None``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The pooled values, ``input``'s shape with the spatial axes reduced, of ``input``'s
    ///     dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 2-D or 3-D or the padded input is smaller than the window.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``kernel_size`` or ``stride`` is 0,
    ///     ``padding`` is more than half the kernel, or ``divisor_override`` is 0.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> x = remat.tensor([[[1.0, 3.0, 2.0, 5.0]]])
    /// >>> remat.avg_pool1d(x, 2)
    /// tensor([[[2.0000, 3.5000]]])
    /// >>> remat.avg_pool1d(x, 2, padding=1)
    /// tensor([[[0.5000, 2.5000, 2.5000]]])
    /// >>> remat.avg_pool1d(x, 2, padding=1, count_include_pad=False)
    /// tensor([[[1.0000, 2.5000, 5.0000]]])
    avg_pool1d, 1
}

avg_pool_fn! {
    /// 2-D average pooling, as PyTorch's ``avg_pool2d``.
    ///
    /// The mean of each window of ``input`` (``(N, C, H, W)`` or unbatched ``(C, H, W)``); padding
    /// counts as zeros.
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, H, W)`` or unbatched ``(C, H, W)``, float32 or float64.
    /// kernel_size : int or tuple of int
    ///     The window size (an int for both axes or a pair).
    /// stride : int or tuple of int, optional
    ///     The step between windows. Default: ``None`` (``kernel_size``).
    /// padding : int or tuple of int, optional
    ///     Implicit zeros added on both sides, at most half the kernel. Default: ``0``.
    /// ceil_mode : bool, optional
    ///     Round the output size up instead of down (a last, partial window, as PyTorch). Default:
    ///     ``False``.
    /// count_include_pad : bool, optional
    ///     Count the padded zeros in the divisor; ``False`` divides by the number of input elements
    ///     in the window. Default: ``True``.
    /// divisor_override : float, optional
    ///     Divide every window's sum by this instead. Default: ``None``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The pooled values, ``input``'s shape with the spatial axes reduced, of ``input``'s
    ///     dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 3-D or 4-D or the padded input is smaller than the window.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``kernel_size`` or ``stride`` is 0,
    ///     ``padding`` is more than half the kernel, or ``divisor_override`` is 0.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> remat.avg_pool2d(remat.arange(16.0).reshape(1, 1, 4, 4), 2)
    /// tensor([[[[ 2.5000,  4.5000],
    ///           [10.5000, 12.5000]]]])
    /// >>> remat.avg_pool2d(remat.ones(2, 3, 8, 8), 3, stride=2, padding=1).shape
    /// (2, 3, 4, 4)
    avg_pool2d, 2
}

avg_pool_fn! {
    /// 3-D average pooling, as PyTorch's ``avg_pool3d``.
    ///
    /// The mean of each window of ``input`` (``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``);
    /// padding counts as zeros.
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``, float32 or float64.
    /// kernel_size : int or tuple of int
    ///     The window size (an int for all three axes or a triple).
    /// stride : int or tuple of int, optional
    ///     The step between windows. Default: ``None`` (``kernel_size``).
    /// padding : int or tuple of int, optional
    ///     Implicit zeros added on both sides, at most half the kernel. Default: ``0``.
    /// ceil_mode : bool, optional
    ///     Round the output size up instead of down (a last, partial window, as PyTorch). Default:
    ///     ``False``.
    /// count_include_pad : bool, optional
    ///     Count the padded zeros in the divisor; ``False`` divides by the number of input elements
    ///     in the window. Default: ``True``.
    /// divisor_override : float, optional
    ///     Divide every window's sum by this instead. Default: ``None``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The pooled values, ``input``'s shape with the spatial axes reduced, of ``input``'s
    ///     dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 4-D or 5-D or the padded input is smaller than the window.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When a size is negative or has the wrong length, ``kernel_size`` or ``stride`` is 0,
    ///     ``padding`` is more than half the kernel, or ``divisor_override`` is 0.
    /// TypeError
    ///     When a size is not an int or a tuple of ints.
    ///
    /// Examples
    /// --------
    /// >>> remat.avg_pool3d(remat.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    /// tensor([[[[[3.5000]]]]])
    /// >>> remat.avg_pool3d(remat.ones(1, 2, 4, 4, 4), 2, divisor_override=1)[0, 0, 0, 0, 0].item()
    /// 8.0
    avg_pool3d, 3
}

macro_rules! adaptive_avg_pool_fn {
    ($(#[doc = $doc:literal])* $name:ident, $rank:expr) => {
        $(#[doc = $doc])*
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

adaptive_avg_pool_fn! {
    /// 1-D adaptive average pooling, as PyTorch's ``adaptive_avg_pool1d``.
    ///
    /// Average pooling of ``input`` (``(N, C, L)`` or unbatched ``(C, L)``) to a fixed output size:
    /// output position ``i`` of an axis of size ``n`` pooled to ``m`` averages the input from
    /// ``floor(i * n / m)`` to ``ceil((i + 1) * n / m)`` (windows may overlap, and ``m`` may exceed
    /// ``n``).
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, L)`` or unbatched ``(C, L)``, float32 or float64.
    /// output_size : int or tuple of int
    ///     The spatial output size (an int or a 1-tuple); a ``None`` entry keeps that axis's input
    ///     size.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``input``'s leading axes followed by ``output_size``, of ``input``'s dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 2-D or 3-D, or an axis or an output size is 0.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When ``output_size`` is negative or has the wrong number of entries.
    /// TypeError
    ///     When ``output_size`` holds something other than ints (and ``None``).
    ///
    /// Examples
    /// --------
    /// >>> x = remat.arange(6.0).reshape(1, 1, 6)
    /// >>> remat.adaptive_avg_pool1d(x, 3)
    /// tensor([[[0.5000, 2.5000, 4.5000]]])
    /// >>> remat.adaptive_avg_pool1d(x, 4)
    /// tensor([[[0.5000, 1.5000, 3.5000, 4.5000]]])
    adaptive_avg_pool1d, 1
}

adaptive_avg_pool_fn! {
    /// 2-D adaptive average pooling, as PyTorch's ``adaptive_avg_pool2d``.
    ///
    /// Average pooling of ``input`` (``(N, C, H, W)`` or unbatched ``(C, H, W)``) to a fixed output
    /// size: output position ``i`` of an axis of size ``n`` pooled to ``m`` averages the input from
    /// ``floor(i * n / m)`` to ``ceil((i + 1) * n / m)`` (windows may overlap, and ``m`` may exceed
    /// ``n``).
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, H, W)`` or unbatched ``(C, H, W)``, float32 or float64.
    /// output_size : int or tuple of (int or None)
    ///     The spatial output size (an int for both axes or a pair); a ``None`` entry keeps that
    ///     axis's input size.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``input``'s leading axes followed by ``output_size``, of ``input``'s dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 3-D or 4-D, or an axis or an output size is 0.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When ``output_size`` is negative or has the wrong number of entries.
    /// TypeError
    ///     When ``output_size`` holds something other than ints (and ``None``).
    ///
    /// Examples
    /// --------
    /// >>> remat.adaptive_avg_pool2d(remat.arange(16.0).reshape(1, 1, 4, 4), 1)
    /// tensor([[[[7.5000]]]])
    /// >>> remat.adaptive_avg_pool2d(remat.ones(2, 3, 7, 9), (2, None)).shape
    /// (2, 3, 2, 9)
    adaptive_avg_pool2d, 2
}

adaptive_avg_pool_fn! {
    /// 3-D adaptive average pooling, as PyTorch's ``adaptive_avg_pool3d``.
    ///
    /// Average pooling of ``input`` (``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``) to a fixed
    /// output size: output position ``i`` of an axis of size ``n`` pooled to ``m`` averages the
    /// input from ``floor(i * n / m)`` to ``ceil((i + 1) * n / m)`` (windows may overlap, and ``m``
    /// may exceed ``n``).
    ///
    /// Parameters
    /// ----------
    /// input : Tensor or array_like
    ///     The input, ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)``, float32 or float64.
    /// output_size : int or tuple of (int or None)
    ///     The spatial output size (an int for all three axes or a triple); a ``None`` entry keeps
    ///     that axis's input size.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``input``'s leading axes followed by ``output_size``, of ``input``'s dtype.
    ///
    /// Raises
    /// ------
    /// ShapeError
    ///     When ``input`` is not 4-D or 5-D, or an axis or an output size is 0.
    /// DTypeError
    ///     When ``input`` is not a float tensor.
    /// ValueError
    ///     When ``output_size`` is negative or has the wrong number of entries.
    /// TypeError
    ///     When ``output_size`` holds something other than ints (and ``None``).
    ///
    /// Examples
    /// --------
    /// >>> remat.adaptive_avg_pool3d(remat.arange(8.0).reshape(1, 1, 2, 2, 2), 1)
    /// tensor([[[[[3.5000]]]]])
    /// >>> remat.adaptive_avg_pool3d(remat.ones(1, 2, 4, 4, 4), (2, 1, 2)).shape
    /// (1, 2, 2, 1, 2)
    adaptive_avg_pool3d, 3
}

/// Pad a tensor, as PyTorch's ``F.pad``.
///
/// ``pad`` gives ``(before, after)`` amounts from the last axis backwards: ``(1, 2)`` pads the last
/// axis with 1 element before and 2 after, ``(1, 2, 0, 3)`` also the second-to-last axis with 0
/// before and 3 after. In ``"constant"`` mode a negative amount crops. Any axis may be padded in
/// any mode. Gradients flow to ``input``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     The tensor to pad, of any dtype.
/// pad : tuple of int
///     ``(before, after)`` pairs, last axis first; at most two entries per axis of ``input``.
/// mode : str, optional
///     ``"constant"`` (fill with ``value``), ``"reflect"`` (mirror, without repeating the edge
///     element), ``"replicate"`` (repeat the edge element) or ``"circular"`` (wrap around).
///     Default: ``"constant"``.
/// value : float, optional
///     The fill value of ``"constant"`` mode, cast to ``input``'s dtype. Default: ``None`` (0).
///
/// Returns
/// -------
/// Tensor
///     ``input`` padded, of its dtype; each padded axis grows by ``before + after``.
///
/// Raises
/// ------
/// ValueError
///     When ``pad`` has an odd length or more than two entries per axis, ``mode`` is unknown, a
///     non-zero ``value`` comes with a mode other than ``"constant"``, or a ``"reflect"``,
///     ``"replicate"`` or ``"circular"`` amount is negative or too large for its axis
///     (``"reflect"``: smaller than the axis; ``"circular"``: at most the axis).
/// ShapeError
///     When negative ``"constant"`` padding removes more than the whole axis.
/// TypeError
///     When ``pad`` holds something other than ints.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1.0, 2.0, 3.0]])
/// >>> remat.pad(x, (1, 2))
/// tensor([[0., 1., 2., 3., 0., 0.]])
/// >>> remat.pad(x, (1, 1), value=9.0)
/// tensor([[9., 1., 2., 3., 9.]])
/// >>> remat.pad(x, (2, 1), mode="reflect")
/// tensor([[3., 2., 1., 2., 3., 2.]])
/// >>> remat.pad(x, (2, 1), mode="replicate")
/// tensor([[1., 1., 1., 2., 3., 3.]])
/// >>> remat.pad(x, (2, 1), mode="circular")
/// tensor([[2., 3., 1., 2., 3., 1.]])
/// >>> remat.pad(x, (-1, 0, 1, 0))
/// tensor([[0., 0.],
///         [2., 3.]])
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

/// Extract sliding local blocks (im2col), as PyTorch's ``F.unfold``.
///
/// Each ``(kh, kw)`` window of a ``(N, C, H, W)`` input becomes one column of ``C * kh * kw``
/// values (channel first, then kernel row, then kernel column), one column per window position,
/// ``L`` positions in all (row-major). ``fold`` is its adjoint. Gradients flow to ``input``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     ``(N, C, H, W)``, float32 or float64 (unlike PyTorch, no unbatched ``(C, H, W)`` form).
/// kernel_size : int or tuple of int
///     The block size ``(kh, kw)`` (an int for both).
/// dilation : int or tuple of int, optional
///     The spacing between block elements. Default: ``1``.
/// padding : int or tuple of int, optional
///     Zeros added on both sides of each spatial axis. Default: ``0``.
/// stride : int or tuple of int, optional
///     The step between blocks. Default: ``1``.
///
/// Returns
/// -------
/// Tensor
///     ``(N, C * kh * kw, L)``, of ``input``'s dtype.
///
/// Raises
/// ------
/// ShapeError
///     When ``input`` is not 4-D, or the padded input is smaller than the dilated kernel.
/// DTypeError
///     When ``input`` is not a float tensor.
/// ValueError
///     When a size is negative or not one int or a pair, or ``kernel_size``, ``stride`` or
///     ``dilation`` is 0.
/// TypeError
///     When a size is not an int or a tuple of ints.
///
/// Examples
/// --------
/// >>> x = remat.arange(9.0).reshape(1, 1, 3, 3)
/// >>> remat.nn.functional.unfold(x, 2)
/// tensor([[[0., 1., 3., 4.],
///          [1., 2., 4., 5.],
///          [3., 4., 6., 7.],
///          [4., 5., 7., 8.]]])
/// >>> remat.nn.functional.unfold(remat.ones(2, 3, 4, 5), (2, 3), padding=1).shape
/// (2, 18, 25)
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

/// Combine sliding local blocks into a tensor (col2im), as PyTorch's ``F.fold``.
///
/// The adjoint of ``unfold``: each column of ``C * kh * kw`` values goes back to its window
/// position in an ``output_size`` image, and values that land on the same element are summed (so
/// ``fold(unfold(x))`` multiplies each element by the number of windows covering it). Gradients
/// flow to ``input``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     ``(N, C * kh * kw, L)``, ``L`` the number of window positions in the padded ``output_size``;
///     float32 or float64 (unlike PyTorch, no unbatched 2-D form).
/// output_size : int or tuple of int
///     The spatial size ``(H, W)`` of the result (an int for both).
/// kernel_size : int or tuple of int
///     The block size ``(kh, kw)`` (an int for both).
/// dilation : int or tuple of int, optional
///     The spacing between block elements. Default: ``1``.
/// padding : int or tuple of int, optional
///     The padding that ``unfold`` added on both sides (cropped off here). Default: ``0``.
/// stride : int or tuple of int, optional
///     The step between blocks. Default: ``1``.
///
/// Returns
/// -------
/// Tensor
///     ``(N, C, H, W)``, of ``input``'s dtype.
///
/// Raises
/// ------
/// ShapeError
///     When ``input`` is not ``(N, C * kh * kw, L)`` with the ``L`` that ``output_size``,
///     ``kernel_size``, ``dilation``, ``padding`` and ``stride`` give.
/// DTypeError
///     When ``input`` is not a float tensor.
/// ValueError
///     When a size is negative or not one int or a pair, or ``kernel_size``, ``stride`` or
///     ``dilation`` is 0.
/// TypeError
///     When a size is not an int or a tuple of ints.
///
/// Examples
/// --------
/// >>> F = remat.nn.functional
/// >>> F.fold(F.unfold(remat.ones(1, 1, 3, 3), 2), (3, 3), 2)
/// tensor([[[[1., 2., 1.],
///           [2., 4., 2.],
///           [1., 2., 1.]]]])
/// >>> x = remat.arange(9.0).reshape(1, 1, 3, 3)
/// >>> cols = F.unfold(x, 2, padding=1, stride=2)
/// >>> bool((F.fold(cols, (3, 3), 2, padding=1, stride=2) == x).all())
/// True
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
