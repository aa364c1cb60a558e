//! Python bindings of `rms_norm` and `group_norm` with PyTorch's signatures.

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::losses::optional;
use crate::tensor::{wrap, PyTensor};
use pyo3::prelude::*;
use remat_core::ops;

/// Root-mean-square normalisation over the trailing axes, as PyTorch's ``F.rms_norm``.
///
/// ``y = x / sqrt(mean(x^2) + eps) * weight``, the mean taken over the last
/// ``len(normalized_shape)`` axes. Gradients flow to ``input`` and ``weight``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     The input, float32 or float64, whose trailing axes are ``normalized_shape``.
/// normalized_shape : int or tuple of int
///     The shape of the trailing axes to normalise over.
/// weight : Tensor or array_like, optional
///     A scale of shape ``normalized_shape`` (converted to ``input``'s dtype). Default: ``None``
///     (no scale).
/// eps : float, optional
///     Added to the mean square. Default: ``None``, the machine epsilon of ``input``'s dtype
///     (PyTorch's default).
///
/// Returns
/// -------
/// Tensor
///     The normalised tensor, of ``input``'s shape and dtype.
///
/// Raises
/// ------
/// ShapeError
///     When ``normalized_shape`` is not the trailing shape of ``input`` (or holds a negative size),
///     or ``weight`` is not of shape ``normalized_shape``.
/// DTypeError
///     When ``input`` is not a float tensor.
/// TypeError
///     When ``normalized_shape`` holds something other than ints.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[3.0, 4.0], [1.0, 1.0]])
/// >>> remat.rms_norm(x, (2,))
/// tensor([[0.84852815, 1.1313709 ],
///         [1.        , 1.        ]])
/// >>> remat.rms_norm(x, 2, weight=remat.tensor([1.0, 2.0]))
/// tensor([[0.84852815, 2.2627418 ],
///         [1.        , 2.        ]])
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight=None, eps=None))]
fn rms_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    normalized_shape: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    eps: Option<f64>,
) -> PyResult<PyTensor> {
    const OP: &str = "rms_norm";
    let x = convert::extract_tensor(OP, input)?;
    let shape = args::shape_of(OP, normalized_shape)?;
    let w = optional(OP, weight, &x)?;
    run(py, heavy(&[&x]), || {
        ops::rms_norm(&x, &shape, w.as_ref(), eps)
    })
    .map(wrap)
}

/// Group normalisation, as PyTorch's ``F.group_norm``.
///
/// The channels of a ``(N, C, *)`` input are split into ``num_groups`` groups of ``C / num_groups``
/// consecutive channels; each group of each sample is normalised by its own mean and (biased)
/// variance over its channels and spatial positions, ``(x - mean) / sqrt(var + eps)``, then scaled
/// by ``weight`` and shifted by ``bias`` per channel. Gradients flow to ``input``, ``weight`` and
/// ``bias``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     ``(N, C, *)``, float32 or float64.
/// num_groups : int
///     The number of groups; ``C`` must be divisible by it.
/// weight : Tensor or array_like, optional
///     A per-channel scale of shape ``(C,)`` (converted to ``input``'s dtype). Default: ``None``
///     (no scale).
/// bias : Tensor or array_like, optional
///     A per-channel shift of shape ``(C,)``. Default: ``None`` (no shift).
/// eps : float, optional
///     Added to the variance. Default: ``1e-5``.
///
/// Returns
/// -------
/// Tensor
///     The normalised tensor, of ``input``'s shape and dtype.
///
/// Raises
/// ------
/// ShapeError
///     When ``input`` has fewer than 2 axes, ``C`` is not divisible by ``num_groups``, or
///     ``weight`` or ``bias`` is not of shape ``(C,)``.
/// ValueError
///     When ``num_groups < 1``.
/// DTypeError
///     When ``input`` is not a float tensor.
///
/// Examples
/// --------
/// >>> x = remat.tensor([[[1.0], [3.0], [2.0], [6.0]]])
/// >>> remat.group_norm(x, 2, eps=0.0)
/// tensor([[[-1.],
///          [ 1.],
///          [-1.],
///          [ 1.]]])
/// >>> w, b = remat.tensor([1.0, 1.0, 2.0, 2.0]), remat.tensor([0.0, 0.0, 1.0, 1.0])
/// >>> remat.group_norm(x, 2, weight=w, bias=b, eps=0.0)
/// tensor([[[-1.],
///          [ 1.],
///          [-1.],
///          [ 3.]]])
/// >>> remat.group_norm(remat.ones(2, 6, 3, 3), 3).shape
/// (2, 6, 3, 3)
#[pyfunction]
#[pyo3(signature = (input, num_groups, weight=None, bias=None, eps=1e-5))]
fn group_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    num_groups: i64,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<PyTensor> {
    const OP: &str = "group_norm";
    let x = convert::extract_tensor(OP, input)?;
    if num_groups < 1 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{OP}: num_groups must be a positive int, got {num_groups}"
        )));
    }
    let (w, b) = (optional(OP, weight, &x)?, optional(OP, bias, &x)?);
    run(py, heavy(&[&x]), || {
        ops::group_norm(&x, num_groups as usize, w.as_ref(), b.as_ref(), eps)
    })
    .map(wrap)
}

/// Register the functions of this file on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rms_norm, m)?)?;
    m.add_function(wrap_pyfunction!(group_norm, m)?)?;
    Ok(())
}
