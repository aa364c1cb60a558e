//! Python bindings of `rms_norm`, `group_norm` and `batch_norm` with PyTorch's signatures.

use crate::args;
use crate::call::{heavy, run};
use crate::convert;
use crate::losses::optional;
use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use remat_core::{ops, Tensor};

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
/// tensor([[0.8485, 1.1314],
///         [1.0000, 1.0000]])
/// >>> remat.rms_norm(x, 2, weight=remat.tensor([1.0, 2.0]))
/// tensor([[0.8485, 2.2627],
///         [1.0000, 2.0000]])
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

/// A running statistic: a Tensor (written in place) or None. An array would be converted to
/// a new tensor, whose update nobody would see, so it is refused.
fn running_stat(what: &str, o: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    match o {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match o.downcast::<PyTensor>() {
            Ok(t) => Ok(Some(t.get().inner.clone())),
            Err(_) => Err(PyTypeError::new_err(format!(
                "batch_norm: {what} must be a Tensor (updated in place) or None, got {}",
                o.get_type().name()?
            ))),
        },
    }
}

/// Batch normalisation, as PyTorch's ``F.batch_norm``.
///
/// Each channel ``c`` of a ``(N, C, *)`` input is normalised over the batch and every spatial
/// position, ``(x - mean) / sqrt(var + eps)``, then scaled by ``weight[c]`` and shifted by
/// ``bias[c]``. With ``training=True`` the statistics are the batch's (mean and biased
/// variance), and ``running_mean`` / ``running_var``, when given, are updated in place without
/// grad: ``running = (1 - momentum) * running + momentum * stat``, with the unbiased variance
/// (``n / (n - 1)``) for ``running_var``, as PyTorch. With ``training=False`` the running
/// statistics normalise. Gradients flow to ``input``, ``weight`` and ``bias``.
///
/// Unlike PyTorch, a checkpoint's recompute of the same call (any checkpoint entry point, the
/// budget planner's measuring run, a rebuild under a memory limit) does not update the
/// running statistics again: a checkpointed training step leaves them exactly as a plain one.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     ``(N, C, *)``, float32 or float64.
/// running_mean : Tensor or None
///     ``(C,)`` of ``input``'s dtype: normalises when not training, updated in place when
///     training. ``None`` (with ``running_var`` ``None``): batch statistics only.
/// running_var : Tensor or None
///     ``(C,)`` of ``input``'s dtype, as ``running_mean``.
/// weight : Tensor or array_like, optional
///     A per-channel scale of ``C`` elements (converted to ``input``'s dtype). Default: ``None``
///     (no scale).
/// bias : Tensor or array_like, optional
///     A per-channel shift of ``C`` elements. Default: ``None`` (no shift).
/// training : bool, optional
///     Normalise by the batch's statistics (and update the running ones). Default: ``False``.
/// momentum : float, optional
///     The weight of the batch's statistic in the running update. Default: ``0.1``.
/// eps : float, optional
///     Added to the variance; positive when training, non-negative otherwise. Default:
///     ``1e-5``.
///
/// Returns
/// -------
/// Tensor
///     The normalised tensor, of ``input``'s shape and dtype.
///
/// Raises
/// ------
/// ValueError
///     When training with one value per channel (``Expected more than 1 value per channel
///     when training``), when only one of ``running_mean`` / ``running_var`` is given, when not
///     training without them, or when ``eps`` is out of range.
/// ShapeError
///     When ``input`` has fewer than 2 axes, or the running statistics are not ``(C,)``, or
///     ``weight`` / ``bias`` do not hold ``C`` elements.
/// DTypeError
///     When ``input`` is not a float tensor or a running statistic has another dtype.
/// TypeError
///     When a running statistic is neither a Tensor nor ``None``.
/// GraphError
///     When a running statistic requires grad (with grad mode on).
///
/// Examples
/// --------
/// >>> x = remat.tensor([[1.0, 10.0], [3.0, 20.0]])
/// >>> rm, rv = remat.zeros(2), remat.ones(2)
/// >>> remat.batch_norm(x, rm, rv, training=True, eps=1e-3)
/// tensor([[-0.9995, -1.0000],
///         [ 0.9995,  1.0000]])
/// >>> rm, rv
/// (tensor([0.2000, 1.5000]), tensor([1.1000, 5.9000]))
/// >>> remat.batch_norm(x, rm, rv, weight=remat.tensor([1.0, 2.0]))
/// tensor([[ 0.7628,  6.9988],
///         [ 2.6697, 15.2326]])
/// >>> remat.batch_norm(remat.ones(1, 3), None, None, training=True)
/// Traceback (most recent call last):
///     ...
/// ValueError: batch_norm: Expected more than 1 value per channel when training, got input size (1, 3)
#[pyfunction]
#[pyo3(signature = (input, running_mean, running_var, weight=None, bias=None, training=false,
                    momentum=0.1, eps=1e-5))]
#[allow(clippy::too_many_arguments)] // PyTorch's signature.
fn batch_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    running_mean: Option<&Bound<'_, PyAny>>,
    running_var: Option<&Bound<'_, PyAny>>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<PyTensor> {
    const OP: &str = "batch_norm";
    let x = convert::extract_tensor(OP, input)?;
    let (rm, rv) = (
        running_stat("running_mean", running_mean)?,
        running_stat("running_var", running_var)?,
    );
    let (w, b) = (optional(OP, weight, &x)?, optional(OP, bias, &x)?);
    run(py, heavy(&[&x]), || {
        ops::batch_norm(
            &x,
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            b.as_ref(),
            training,
            momentum,
            eps,
        )
    })
    .map(wrap)
}

/// Register the functions of this file on the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rms_norm, m)?)?;
    m.add_function(wrap_pyfunction!(group_norm, m)?)?;
    m.add_function(wrap_pyfunction!(batch_norm, m)?)?;
    Ok(())
}
