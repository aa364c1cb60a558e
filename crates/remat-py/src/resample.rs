//! Python bindings of the ops that make spatial axes larger, with PyTorch's signatures:
//! `conv_transpose1d/2d/3d` and `interpolate` (`F.interpolate`). Sizes accept an int or a
//! tuple, as in PyTorch; the work is `remat_core::ops`.

use crate::call::{heavy, run};
use crate::convert;
use crate::errors::to_pyerr;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use remat_core::ops::{self, ConvTransposeArgs, InterpolateMode};
use remat_core::Tensor;

/// [`crate::conv::sizes`] of an optional argument: `default` for every axis when absent.
fn sizes(
    op: &str,
    what: &str,
    obj: Option<&Bound<'_, PyAny>>,
    rank: usize,
    default: usize,
) -> PyResult<Vec<usize>> {
    match obj.filter(|o| !o.is_none()) {
        Some(o) => crate::conv::sizes(op, what, o, rank),
        None => Ok(vec![default; rank]),
    }
}

#[allow(clippy::too_many_arguments)]
fn conv_transpose_nd(
    py: Python<'_>,
    rank: usize,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    output_padding: Option<&Bound<'_, PyAny>>,
    groups: i64,
    dilation: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let op = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"][rank - 1];
    let x = convert::extract_tensor(op, input)?;
    let w = convert::extract_tensor(op, weight)?;
    let b: Option<Tensor> = match bias {
        Some(b) if !b.is_none() => Some(convert::extract_tensor(op, b)?),
        _ => None,
    };
    let stride = sizes(op, "stride", stride, rank, 1)?;
    let padding = sizes(op, "padding", padding, rank, 0)?;
    let output_padding = sizes(op, "output_padding", output_padding, rank, 0)?;
    let dilation = sizes(op, "dilation", dilation, rank, 1)?;
    if groups < 1 {
        return Err(PyValueError::new_err(format!(
            "{op}: groups must be a positive int, got {groups}"
        )));
    }
    let args = ConvTransposeArgs {
        stride: &stride,
        padding: &padding,
        output_padding: &output_padding,
        dilation: &dilation,
        groups: groups as usize,
    };
    run(py, heavy(&[&x, &w]), || {
        ops::conv_transpose(rank, &x, &w, b.as_ref(), &args)
    })
    .map(wrap)
}

macro_rules! conv_transpose_fn {
    ($name:ident, $rank:expr, $spatial:literal, $k:literal, $example:literal) => {
        #[doc = concat!("A ", stringify!($rank), "-D transposed convolution (PyTorch's ``", stringify!($name), "``): the input")]
        /// gradient of a convolution with the same weight, so a strided one makes the spatial
        /// axes larger (decoders, GAN generators, U-Nets).
        ///
        /// Along each spatial axis the output has ``(size - 1) * stride - 2 * padding +
        /// dilation * (k - 1) + output_padding + 1`` positions. Float32 or float64, every tensor
        /// of one dtype; gradients flow to ``input``, ``weight`` and ``bias``. The op keeps only
        /// ``input`` and ``weight`` for backward.
        ///
        /// Parameters
        /// ----------
        /// input : Tensor or array_like
        #[doc = concat!("    ``(N, C_in, ", $spatial, ")`` or unbatched ``(C_in, ", $spatial, ")``.")]
        /// weight : Tensor or array_like
        #[doc = concat!("    ``(C_in, C_out / groups, ", $k, ")``, of ``input``'s dtype.")]
        /// bias : Tensor or array_like, optional
        ///     ``(C_out,)``. Default: ``None``.
        /// stride : int or tuple of int, optional
        ///     The step between the input positions' windows in the output. Default: ``1``.
        /// padding : int or tuple of int, optional
        ///     ``dilation * (k - 1) - padding`` zeros of implicit padding (positions removed
        ///     from both ends of each output axis). Default: ``0``.
        /// output_padding : int or tuple of int, optional
        ///     Positions added at the end of each output axis (smaller than ``stride``), to
        ///     pick among the sizes a strided convolution maps to one. Default: ``0``.
        /// groups : int, optional
        ///     Blocked connections; ``C_in`` must be divisible by it. Default: ``1``.
        /// dilation : int or tuple of int, optional
        ///     The spacing between kernel taps. Default: ``1``.
        ///
        /// Returns
        /// -------
        /// Tensor
        #[doc = concat!("    ``(N, C_out, ", $spatial, "_out)`` (unbatched without ``N``).")]
        ///
        /// Raises
        /// ------
        /// ShapeError
        ///     When the ranks or channel counts do not fit, or the output would be empty.
        /// ValueError
        ///     When a size argument is negative or has the wrong length, ``groups`` is not
        ///     positive, or ``output_padding`` is not smaller than ``stride``.
        /// DTypeError
        ///     When the tensors' dtypes differ.
        ///
        /// Examples
        /// --------
        #[doc = $example]
        #[pyfunction]
        #[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, output_padding=None, groups=1, dilation=None),
               text_signature = "(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)")]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            input: &Bound<'_, PyAny>,
            weight: &Bound<'_, PyAny>,
            bias: Option<&Bound<'_, PyAny>>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            output_padding: Option<&Bound<'_, PyAny>>,
            groups: i64,
            dilation: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyTensor> {
            conv_transpose_nd(
                py, $rank, input, weight, bias, stride, padding, output_padding, groups, dilation,
            )
        }
    };
}

conv_transpose_fn!(
    conv_transpose1d,
    1,
    "L",
    "k",
    "    >>> remat.conv_transpose1d(remat.ones(1, 1, 3), remat.ones(1, 1, 2), stride=2)\n    tensor([[[1., 1., 1., 1., 1., 1.]]])"
);
conv_transpose_fn!(
    conv_transpose2d,
    2,
    "H, W",
    "kH, kW",
    "    >>> remat.conv_transpose2d(remat.ones(2, 4, 5, 5), remat.ones(4, 3, 4, 4), stride=2, padding=1).shape\n    (2, 3, 10, 10)"
);
conv_transpose_fn!(
    conv_transpose3d,
    3,
    "D, H, W",
    "kD, kH, kW",
    "    >>> remat.conv_transpose3d(remat.ones(1, 2, 2, 2, 2), remat.ones(2, 1, 2, 2, 2), stride=2).shape\n    (1, 1, 4, 4, 4)"
);

/// Resizes the spatial axes of ``input``, as PyTorch's ``F.interpolate``.
///
/// Give the output ``size`` or a ``scale_factor`` (the output size is then
/// ``floor(size * scale_factor)``). ``"nearest"`` repeats the input position
/// ``floor(out * in / out_size)``, ``"nearest-exact"`` the one whose centre is nearest,
/// ``"linear"`` / ``"bilinear"`` / ``"trilinear"`` (for 3-D / 4-D / 5-D inputs) blend the two
/// nearest positions along each axis, and ``"area"`` averages each output position's window
/// (``adaptive_avg_pool``). Gradients flow to ``input``.
///
/// Parameters
/// ----------
/// input : Tensor
///     ``(N, C, *spatial)`` with 1 to 3 spatial axes, a float dtype.
/// size : int or tuple of int, optional
///     The output's spatial size. Default: ``None``.
/// scale_factor : float or tuple of float, optional
///     The multiplier of each spatial size. Default: ``None``.
/// mode : str, optional
///     ``"nearest"``, ``"nearest-exact"``, ``"linear"``, ``"bilinear"``, ``"trilinear"`` or
///     ``"area"``. Default: ``"nearest"``.
/// align_corners : bool, optional
///     For the linear modes: map the corner positions of input and output onto each other
///     (``True``) or their corner pixels' edges (``False``). Default: ``None`` (``False``).
/// recompute_scale_factor : bool, optional
///     Compute the positions from the output size rather than from ``scale_factor``.
///     Default: ``None``.
/// antialias : bool, optional
///     Not supported (must be ``False``). Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     ``(N, C, *size)``.
///
/// Raises
/// ------
/// ValueError
///     When neither or both of ``size`` and ``scale_factor`` are given, the mode is unknown or
///     does not fit the input's rank, or ``align_corners`` is given for a mode without it.
/// ShapeError
///     When the input is not 3-D to 5-D or a size has the wrong length or is zero.
/// NotImplementedError
///     When ``antialias=True``.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[[1.0, 2.0]]])
/// >>> remat.nn.functional.interpolate(x, scale_factor=2)
/// tensor([[[1., 1., 2., 2.]]])
/// >>> remat.nn.functional.interpolate(x, size=3, mode="linear", align_corners=True)
/// tensor([[[1.0000, 1.5000, 2.0000]]])
#[pyfunction]
#[pyo3(signature = (input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=false))]
#[allow(clippy::too_many_arguments)]
fn interpolate(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    size: Option<&Bound<'_, PyAny>>,
    scale_factor: Option<&Bound<'_, PyAny>>,
    mode: &str,
    align_corners: Option<bool>,
    recompute_scale_factor: Option<bool>,
    antialias: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "interpolate";
    let x = convert::extract_tensor(OP, input)?;
    let rank = x.ndim().saturating_sub(2);
    if !(1..=3).contains(&rank) {
        return Err(to_pyerr(remat_core::Error::shape(
            OP,
            format!(
                "expected a 3-D, 4-D or 5-D input (N, C, *spatial), got shape {:?}",
                x.shape()
            ),
        )));
    }
    if antialias {
        return Err(PyNotImplementedError::new_err(
            "interpolate: antialias=True is not supported",
        ));
    }
    let m = InterpolateMode::parse(mode, rank).map_err(to_pyerr)?;
    if align_corners.is_some() && m != InterpolateMode::Linear {
        return Err(PyValueError::new_err(
            "interpolate: align_corners option can only be set with the interpolating modes: \
             linear | bilinear | trilinear",
        ));
    }
    let size = size.filter(|s| !s.is_none());
    let scale_factor = scale_factor.filter(|s| !s.is_none());
    let spatial = &x.shape()[2..];
    let (out, scales) = match (size, scale_factor) {
        (Some(s), None) => (sizes(OP, "size", Some(s), rank, 0)?, None),
        (None, Some(f)) => {
            let fs: Vec<f64> = match f.extract::<f64>() {
                Ok(v) => vec![v; rank],
                Err(_) => f.extract::<Vec<f64>>()?,
            };
            if fs.len() != rank || fs.iter().any(|&v| !(v > 0.0 && v.is_finite())) {
                return Err(PyValueError::new_err(format!(
                    "interpolate: scale_factor must be a positive number or a tuple of {rank} of \
                     them, got {}",
                    f.repr()?
                )));
            }
            let out: Vec<usize> = spatial
                .iter()
                .zip(&fs)
                .map(|(&s, &f)| (s as f64 * f).floor() as usize)
                .collect();
            let keep = recompute_scale_factor != Some(true);
            (out, keep.then_some(fs))
        }
        (None, None) => {
            return Err(PyValueError::new_err(
                "interpolate: either size or scale_factor should be defined",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "interpolate: only one of size or scale_factor should be defined",
            ))
        }
    };
    let ac = align_corners.unwrap_or(false);
    run(py, heavy(&[&x]), || {
        ops::interpolate(&x, &out, scales.as_deref(), m, ac)
    })
    .map(wrap)
}

/// Add the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conv_transpose1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose3d, m)?)?;
    m.add_function(wrap_pyfunction!(interpolate, m)?)?;
    Ok(())
}
