//! Python bindings of the losses (PyTorch's signatures: `reduction`, `weight`,
//! `ignore_index`, `label_smoothing`, `pos_weight`) and of `scaled_dot_product_attention`.
//! The plain mean cross-entropy of `(N, C)` logits against class indices keeps the fused
//! kernel; every other form is `ops::cross_entropy_with`.

use crate::call::{heavy, run, unary};
use crate::convert::{self, operand, operand_pair};
use crate::tensor::{wrap, PyTensor};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use remat_core::ops::{self, Reduction};
use remat_core::Tensor;

fn reduction_of(
    op: &str,
    r: &str,
    size_average: Option<bool>,
    reduce: Option<bool>,
) -> PyResult<Reduction> {
    // PyTorch's legacy arguments, when given, decide.
    if size_average.is_some() || reduce.is_some() {
        let (avg, red) = (size_average.unwrap_or(true), reduce.unwrap_or(true));
        return Ok(if !red {
            Reduction::None
        } else if avg {
            Reduction::Mean
        } else {
            Reduction::Sum
        });
    }
    Reduction::parse(op, r).map_err(crate::errors::to_pyerr)
}

/// An optional tensor argument (None or absent: None) in `like`'s dtype.
pub(crate) fn optional(
    op: &str,
    o: Option<&Bound<'_, PyAny>>,
    like: &Tensor,
) -> PyResult<Option<Tensor>> {
    match o {
        Some(o) if !o.is_none() => operand(op, o, like).map(Some),
        _ => Ok(None),
    }
}

/// Mean squared error, as PyTorch's ``F.mse_loss``.
///
/// The elementwise ``(input - target)^2``, reduced. Unlike PyTorch, ``input`` and ``target`` must
/// have the same shape (no broadcasting). Gradients flow to both.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     The prediction, float32 or float64.
/// target : Tensor or array_like
///     The target, of ``input``'s shape and a float dtype.
/// size_average : bool, optional
///     PyTorch's deprecated spelling of ``reduction``: when it or ``reduce`` is given, the two
///     decide (``reduce=False``: ``"none"``; else ``size_average=False``: ``"sum"``; else
///     ``"mean"``) and ``reduction`` is ignored. Default: ``None``.
/// reduce : bool, optional
///     See ``size_average``. Default: ``None``.
/// reduction : str, optional
///     ``"mean"`` (the mean of the elementwise losses), ``"sum"`` or ``"none"`` (the elementwise
///     losses). Default: ``"mean"``.
///
/// Returns
/// -------
/// Tensor
///     A 0-d tensor for ``"mean"`` and ``"sum"``, the elementwise losses (``input``'s shape) for
///     ``"none"``; of the operands' (promoted) float dtype.
///
/// Raises
/// ------
/// ShapeError
///     When ``input`` and ``target`` differ in shape.
/// DTypeError
///     When ``input`` or ``target`` is not a float tensor.
/// ValueError
///     When ``reduction`` is not ``"mean"``, ``"sum"`` or ``"none"``.
///
/// Examples
/// --------
/// >>> a = remat.tensor([1.0, 2.0, 3.0])
/// >>> b = remat.tensor([1.0, 0.0, 5.0])
/// >>> remat.mse_loss(a, b)
/// tensor(2.6667)
/// >>> remat.mse_loss(a, b, reduction="none")
/// tensor([0., 4., 4.])
/// >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
/// >>> remat.mse_loss(x, remat.tensor([0.0, 0.0])).backward()
/// >>> x.grad
/// tensor([1., 2.])
#[pyfunction]
#[pyo3(signature = (input, target, size_average=None, reduce=None, reduction="mean"))]
fn mse_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let r = reduction_of("mse_loss", reduction, size_average, reduce)?;
    let (a, b) = operand_pair("mse_loss", input, target)?;
    run(py, heavy(&[&a, &b]), || ops::mse_loss_with(&a, &b, r)).map(wrap)
}

/// Mean absolute error, as PyTorch's ``F.l1_loss``.
///
/// The elementwise ``|input - target|``, reduced. Unlike PyTorch, ``input`` and ``target`` must
/// have the same shape (no broadcasting). The gradient is ``sign(input - target)`` (0 where they
/// are equal).
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     The prediction, float32 or float64.
/// target : Tensor or array_like
///     The target, of ``input``'s shape.
/// size_average : bool, optional
///     PyTorch's deprecated spelling of ``reduction``: when it or ``reduce`` is given, the two
///     decide (``reduce=False``: ``"none"``; else ``size_average=False``: ``"sum"``; else
///     ``"mean"``) and ``reduction`` is ignored. Default: ``None``.
/// reduce : bool, optional
///     See ``size_average``. Default: ``None``.
/// reduction : str, optional
///     ``"mean"`` (the mean of the elementwise losses), ``"sum"`` or ``"none"`` (the elementwise
///     losses). Default: ``"mean"``.
///
/// Returns
/// -------
/// Tensor
///     A 0-d tensor for ``"mean"`` and ``"sum"``, the elementwise losses (``input``'s shape) for
///     ``"none"``; of the operands' (promoted) float dtype.
///
/// Raises
/// ------
/// ShapeError
///     When ``input`` and ``target`` differ in shape.
/// DTypeError
///     When ``input`` is not a float tensor.
/// ValueError
///     When ``reduction`` is not ``"mean"``, ``"sum"`` or ``"none"``.
///
/// Examples
/// --------
/// >>> a = remat.tensor([1.0, 2.0, 3.0])
/// >>> b = remat.tensor([1.0, 0.0, 5.0])
/// >>> remat.l1_loss(a, b)
/// tensor(1.3333)
/// >>> remat.l1_loss(a, b, reduction="sum")
/// tensor(4.)
#[pyfunction]
#[pyo3(signature = (input, target, size_average=None, reduce=None, reduction="mean"))]
fn l1_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let r = reduction_of("l1_loss", reduction, size_average, reduce)?;
    let (a, b) = operand_pair("l1_loss", input, target)?;
    run(py, heavy(&[&a, &b]), || ops::l1_loss(&a, &b, r)).map(wrap)
}

/// Binary cross-entropy of logits, as PyTorch's ``F.binary_cross_entropy_with_logits``.
///
/// For a logit ``x`` and a target probability ``t``, the elementwise loss is
/// ``-weight * (pos_weight * t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x)))``, computed from
/// ``x`` without overflow for large ``|x|``, then reduced. Gradients flow to ``input``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     The logits, float32 or float64 (an integer tensor is converted to float).
/// target : Tensor or array_like
///     Target probabilities in ``[0, 1]``, of ``input``'s shape; a float tensor (a list or array is
///     converted to ``input``'s dtype).
/// weight : Tensor or array_like, optional
///     A rescaling weight of each element, broadcast to ``input``'s shape. Default: ``None``.
/// size_average : bool, optional
///     PyTorch's deprecated spelling of ``reduction``: when it or ``reduce`` is given, the two
///     decide (``reduce=False``: ``"none"``; else ``size_average=False``: ``"sum"``; else
///     ``"mean"``) and ``reduction`` is ignored. Default: ``None``.
/// reduce : bool, optional
///     See ``size_average``. Default: ``None``.
/// reduction : str, optional
///     ``"mean"`` (the mean of the elementwise losses), ``"sum"`` or ``"none"`` (the elementwise
///     losses). Default: ``"mean"``.
/// pos_weight : Tensor or array_like, optional
///     A weight of the positive term, broadcast along the last axis (one per class). Default:
///     ``None``.
///
/// Returns
/// -------
/// Tensor
///     A 0-d tensor for ``"mean"`` and ``"sum"``, the elementwise losses (``input``'s shape) for
///     ``"none"``; of the operands' (promoted) float dtype.
///
/// Raises
/// ------
/// ShapeError
///     When ``input`` and ``target`` differ in shape, or ``weight`` or ``pos_weight`` does not
///     broadcast to it.
/// DTypeError
///     When ``target`` is a tensor that is not float (int or bool).
/// ValueError
///     When ``reduction`` is not ``"mean"``, ``"sum"`` or ``"none"``.
///
/// Examples
/// --------
/// >>> x = remat.tensor([0.0, 2.0, -1.0])
/// >>> t = remat.tensor([1.0, 1.0, 0.0])
/// >>> remat.binary_cross_entropy_with_logits(x, t, reduction="none")
/// tensor([0.6931, 0.1269, 0.3133])
/// >>> pw = remat.tensor([2.0])
/// >>> remat.binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction="none")
/// tensor([1.3863, 0.2539, 0.3133])
/// >>> remat.binary_cross_entropy_with_logits(remat.tensor([100.0]), remat.tensor([0.0]))
/// tensor(100.)
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None))]
#[allow(clippy::too_many_arguments)]
fn binary_cross_entropy_with_logits(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
    pos_weight: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    const OP: &str = "binary_cross_entropy_with_logits";
    let r = reduction_of(OP, reduction, size_average, reduce)?;
    let x = convert::extract_tensor(OP, input)?;
    let t = operand(OP, target, &x)?;
    let (w, pw) = (optional(OP, weight, &x)?, optional(OP, pos_weight, &x)?);
    run(py, heavy(&[&x]), || {
        ops::binary_cross_entropy_with_logits(&x, &t, w.as_ref(), pw.as_ref(), r)
    })
    .map(wrap)
}

/// Binary cross-entropy of probabilities, as PyTorch's ``F.binary_cross_entropy``.
///
/// For a probability ``x`` and a target ``t``, the elementwise loss is
/// ``-weight * (t * log(x) + (1 - t) * log(1 - x))``, each logarithm clamped at ``-100`` as
/// PyTorch clamps it (a probability of exactly 0 or 1 costs 100, not infinity), then reduced.
/// The gradient of ``input`` is PyTorch's ``(x - t) / max(x (1 - x), 1e-12)``, finite at 0 and
/// 1. Gradients flow to ``input`` and ``target``. ``binary_cross_entropy_with_logits`` is the
/// numerically stabler form for logits.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     Probabilities in ``[0, 1]`` (for example a ``sigmoid``'s output), float32 or float64.
/// target : Tensor or array_like
///     Targets in ``[0, 1]``, of ``input``'s shape (a list or array is converted to ``input``'s
///     dtype).
/// weight : Tensor or array_like, optional
///     A rescaling weight of each element, broadcast to ``input``'s shape. Default: ``None``.
/// size_average : bool, optional
///     PyTorch's deprecated spelling of ``reduction`` (see ``mse_loss``). Default: ``None``.
/// reduce : bool, optional
///     See ``size_average``. Default: ``None``.
/// reduction : str, optional
///     ``"mean"``, ``"sum"`` or ``"none"`` (the elementwise losses). Default: ``"mean"``.
///
/// Returns
/// -------
/// Tensor
///     A 0-d tensor for ``"mean"`` and ``"sum"``, the elementwise losses for ``"none"``.
///
/// Raises
/// ------
/// ShapeError
///     When ``input`` and ``target`` differ in shape, or ``weight`` does not broadcast to it.
/// ValueError
///     When an element of ``input`` is outside ``[0, 1]``, or ``reduction`` is unknown.
/// DTypeError
///     When ``input`` or ``target`` is not a float tensor.
///
/// Examples
/// --------
/// >>> x = remat.tensor([0.5, 0.9, 0.0])
/// >>> t = remat.tensor([1.0, 1.0, 0.0])
/// >>> remat.binary_cross_entropy(x, t, reduction="none")
/// tensor([0.6931, 0.1054, 0.0000])
/// >>> remat.binary_cross_entropy(remat.tensor([0.0]), remat.tensor([1.0]))
/// tensor(100.)
#[pyfunction]
#[pyo3(signature = (input, target, weight=None, size_average=None, reduce=None, reduction="mean"))]
fn binary_cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    size_average: Option<bool>,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<PyTensor> {
    const OP: &str = "binary_cross_entropy";
    let r = reduction_of(OP, reduction, size_average, reduce)?;
    let x = convert::extract_tensor(OP, input)?;
    let t = operand(OP, target, &x)?;
    let w = optional(OP, weight, &x)?;
    run(py, heavy(&[&x]), || {
        ops::binary_cross_entropy(&x, &t, w.as_ref(), r)
    })
    .map(wrap)
}

/// An int64 class-index tensor, or a float tensor of class probabilities.
fn target_tensor(op: &str, target: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = target.downcast::<PyTensor>() {
        return Ok(t.get().inner.clone());
    }
    convert::tensor_from_py(op, target, None)
}

/// Negative log-likelihood loss, as PyTorch's ``F.nll_loss``.
///
/// ``input`` holds log-probabilities (e.g. from ``log_softmax``); the loss at each position is
/// ``-weight[t] * input[t]`` for its target class ``t``, reduced. The ``"mean"`` divides by the sum
/// of ``weight[t]`` over the positions not ignored (NaN if every position is ignored). Gradients
/// flow to ``input``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     Log-probabilities ``(N, C)``, ``(N, C, d1, ...)`` or unbatched ``(C,)``.
/// target : Tensor or array_like
///     Integer class indices in ``[0, C)`` of shape ``(N,)``, ``(N, d1, ...)`` or ``()`` (int64 or
///     int32 tensor, list or array).
/// weight : Tensor or array_like, optional
///     A weight per class, of shape ``(C,)``. Default: ``None`` (all 1).
/// size_average : bool, optional
///     PyTorch's deprecated spelling of ``reduction``: when it or ``reduce`` is given, the two
///     decide (``reduce=False``: ``"none"``; else ``size_average=False``: ``"sum"``; else
///     ``"mean"``) and ``reduction`` is ignored. Default: ``None``.
/// ignore_index : int, optional
///     Positions whose target is this class index contribute 0 and are left out of the mean.
///     Default: ``-100``.
/// reduce : bool, optional
///     See ``size_average``. Default: ``None``.
/// reduction : str, optional
///     ``"mean"`` (the weighted mean), ``"sum"`` or ``"none"`` (the elementwise losses). Default:
///     ``"mean"``.
///
/// Returns
/// -------
/// Tensor
///     A 0-d tensor for ``"mean"`` and ``"sum"``, the per-position losses (``target``'s shape) for
///     ``"none"``.
///
/// Raises
/// ------
/// ValueError
///     When a target (other than ``ignore_index``) is outside ``[0, C)``, or ``reduction`` is not
///     ``"mean"``, ``"sum"`` or ``"none"``.
/// ShapeError
///     When ``target``'s shape does not match ``input``'s without the class axis, or ``weight`` is
///     not ``(C,)``.
/// DTypeError
///     When ``target`` is a float tensor or list.
///
/// Examples
/// --------
/// >>> logp = remat.log(remat.tensor([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]))
/// >>> remat.nll_loss(logp, remat.tensor([0, 1]), reduction="none")
/// tensor([0.6931, 0.2231])
/// >>> remat.nll_loss(logp, remat.tensor([0, -100]))
/// tensor(0.6931)
#[pyfunction]
#[pyo3(
    signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"),
    text_signature = "(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean')"
)]
#[allow(clippy::too_many_arguments)]
fn nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    size_average: Option<bool>,
    ignore_index: i64,
    reduce: Option<bool>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let r = reduction_of("nll_loss", reduction, size_average, reduce)?;
    let x = convert::extract_tensor("nll_loss", input)?;
    let t = target_tensor("nll_loss", target)?;
    let w = optional("nll_loss", weight, &x)?;
    run(py, heavy(&[&x]), || {
        ops::nll_loss(&x, &t, w.as_ref(), ignore_index, r)
    })
    .map(wrap)
}

/// Class indices from a NumPy int array, a list or a Tensor; non-integer values raise
/// ValueError.
/// The class indices of `target` in C order, with its shape (the fused path takes only a
/// target of the logits' batch shape; any other goes to the checked general path).
fn class_indices(target: &Bound<'_, PyAny>) -> PyResult<(Vec<i64>, Vec<usize>)> {
    let py = target.py();
    let np = convert::numpy(py)?;
    let arr = match target.downcast::<PyTensor>() {
        Ok(t) => crate::numpy_bridge::to_numpy(py, &crate::tensor::host(&t.get().inner)?)?,
        Err(_) => np.getattr("asarray")?.call1((target,))?,
    };
    let arr = arr.downcast_into::<PyUntypedArray>()?;
    let kind = arr.dtype().getattr("kind")?.extract::<String>()?;
    let ints = match kind.as_str() {
        "i" | "u" | "b" => arr.call_method1("astype", ("int64",))?,
        "f" => {
            let all_int: bool = np
                .getattr("all")?
                .call1((np
                    .getattr("equal")?
                    .call1((&arr, np.getattr("floor")?.call1((&arr,))?))?,))?
                .extract()?;
            if !all_int {
                return Err(PyValueError::new_err(
                    "cross_entropy: target must hold integer class indices, got non-integer values",
                ));
            }
            arr.call_method1("astype", ("int64",))?
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "cross_entropy: target must hold integer class indices, got dtype {}",
                arr.dtype()
            )))
        }
    };
    let shape: Vec<usize> = arr.shape().to_vec();
    let values = ints
        .call_method0("ravel")?
        .call_method0("tolist")?
        .extract()?;
    Ok((values, shape))
}

/// Cross-entropy of logits, as PyTorch's ``F.cross_entropy``.
///
/// ``nll_loss(log_softmax(input, class axis), target)`` in one op, where ``target`` holds class
/// indices, or the cross-entropy against class probabilities when ``target`` is a float tensor of
/// ``input``'s shape. ``label_smoothing`` mixes the target with the uniform distribution. The plain
/// form (class indices, ``"mean"``, no ``weight``, no smoothing, 2-D or 1-D logits) runs one fused
/// kernel. Gradients flow to ``input``.
///
/// Parameters
/// ----------
/// input : Tensor or array_like
///     Logits ``(N, C)``, ``(N, C, d1, ...)`` or unbatched ``(C,)``, float32 or float64.
/// target : Tensor or array_like
///     Class indices in ``[0, C)`` (an integer tensor, a list or an array of whole numbers) of
///     ``input``'s shape without the class axis, or class probabilities: a float tensor of
///     ``input``'s shape.
/// weight : Tensor or array_like, optional
///     A weight per class, of shape ``(C,)``. Default: ``None`` (all 1).
/// size_average : bool, optional
///     PyTorch's deprecated spelling of ``reduction``: when it or ``reduce`` is given, the two
///     decide (``reduce=False``: ``"none"``; else ``size_average=False``: ``"sum"``; else
///     ``"mean"``) and ``reduction`` is ignored. Default: ``None``.
/// ignore_index : int, optional
///     Positions whose target is this class index contribute 0 and are left out of the mean.
///     Default: ``-100``.
/// reduce : bool, optional
///     See ``size_average``. Default: ``None``.
/// reduction : str, optional
///     ``"mean"`` (the weighted mean over positions not ignored), ``"sum"`` or ``"none"`` (the
///     elementwise losses). Default: ``"mean"``.
/// label_smoothing : float, optional
///     In ``[0, 1]``: the share of the target mass spread uniformly over the classes. Default:
///     ``0.0``.
///
/// Returns
/// -------
/// Tensor
///     A 0-d tensor for ``"mean"`` and ``"sum"``, the per-position losses for ``"none"``; of
///     ``input``'s dtype.
///
/// Raises
/// ------
/// ValueError
///     When a class index (other than ``ignore_index``) is outside ``[0, C)``, a list or array
///     target holds non-integer values, ``label_smoothing`` is outside ``[0, 1]``, or ``reduction``
///     is not ``"mean"``, ``"sum"`` or ``"none"``.
/// ShapeError
///     When ``input`` is 0-d, or ``target``'s shape does not fit ``input``'s.
/// DTypeError
///     When ``input`` is not a float tensor.
///
/// Examples
/// --------
/// >>> logits = remat.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]])
/// >>> remat.cross_entropy(logits, remat.tensor([0, 1]))
/// tensor(0.3185)
/// >>> remat.cross_entropy(logits, [0, 1], reduction="none")
/// tensor([0.4170, 0.2200])
/// >>> probs = remat.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
/// >>> remat.cross_entropy(logits, probs)
/// tensor(0.3185)
/// >>> x = remat.zeros(2, 2, requires_grad=True)
/// >>> remat.cross_entropy(x, remat.tensor([0, 1])).backward()
/// >>> x.grad
/// tensor([[-0.2500,  0.2500],
///         [ 0.2500, -0.2500]])
#[pyfunction]
#[pyo3(
    signature = (input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0),
    text_signature = "(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', label_smoothing=0.0)"
)]
#[allow(clippy::too_many_arguments)]
fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    size_average: Option<bool>,
    ignore_index: i64,
    reduce: Option<bool>,
    reduction: &str,
    label_smoothing: f64,
) -> PyResult<PyTensor> {
    let r = reduction_of("cross_entropy", reduction, size_average, reduce)?;
    let x = convert::extract_tensor("cross_entropy", input)?;
    let w = optional("cross_entropy", weight, &x)?;
    let float_target = target
        .downcast::<PyTensor>()
        .is_ok_and(|t| t.get().inner.dtype().is_float());
    let plain = w.is_none()
        && r == Reduction::Mean
        && label_smoothing == 0.0
        && x.ndim() <= 2
        && !float_target;
    if plain {
        // The fused kernel (ignore_index only matters when a target equals it).
        let (t, shape) = class_indices(target)?;
        let batch = &x.shape()[..x.ndim().saturating_sub(1)];
        if shape == batch && !t.contains(&ignore_index) {
            return unary(py, &x, |x| ops::cross_entropy(x, &t));
        }
    }
    let t = target_tensor("cross_entropy", target)?;
    run(py, heavy(&[&x]), || {
        ops::cross_entropy_with(&x, &t, w.as_ref(), ignore_index, r, label_smoothing)
    })
    .map(wrap)
}

/// Scaled dot-product attention, as PyTorch's ``F.scaled_dot_product_attention``.
///
/// ``softmax(query @ key.mT * scale + mask) @ value`` over the last two axes, with optional dropout
/// on the attention weights; the leading (batch, head) axes broadcast. A query row whose keys are
/// all masked out (all False, or all ``-inf`` after adding a float mask) gives zeros and passes
/// no gradient, as PyTorch's. Gradients flow to ``query``, ``key`` and ``value`` (and a float
/// mask that requires grad).
///
/// Float inputs of one dtype run a tiled kernel (FlashAttention-2's structure) that keeps only
/// ``query``, ``key``, ``value``, the output and one log-sum-exp per query row for backward,
/// never the ``L × S`` weights; the backward recomputes them block by block (dropout's mask
/// from the generator key it drew, never stored). Mixed dtypes take PyTorch's math path.
///
/// Parameters
/// ----------
/// query : Tensor or array_like
///     ``(..., L, E)``, float32 or float64.
/// key : Tensor or array_like
///     ``(..., S, E)``.
/// value : Tensor or array_like
///     ``(..., S, Ev)``.
/// attn_mask : Tensor or array_like, optional
///     Broadcast to ``(..., L, S)``: a bool mask (``True``: the key takes part) or a float mask
///     added to the scores. Default: ``None``.
/// dropout_p : float, optional
///     In ``[0, 1]``: the probability of zeroing each attention weight (the others are scaled by
///     ``1 / (1 - dropout_p)``), drawn from the global generator. It applies whenever it is above
///     0; pass ``0.0`` for evaluation. Default: ``0.0``.
/// is_causal : bool, optional
///     Apply a top-left causal mask (query ``i`` sees keys ``0..i``). Default: ``False``.
/// scale : float, optional
///     The factor of the scores. Default: ``None`` (``1 / sqrt(E)``).
/// enable_gqa : bool, optional
///     Grouped-query attention: ``key`` and ``value`` may have fewer heads (axis -3) than
///     ``query``, each serving ``Hq / Hkv`` query heads. Default: ``False``.
///
/// Returns
/// -------
/// Tensor
///     ``(..., L, Ev)``, the broadcast leading axes followed by ``L`` and ``Ev``.
///
/// Raises
/// ------
/// ShapeError
///     When an input has fewer than 2 axes, ``query`` and ``key`` differ in ``E``, ``key`` and
///     ``value`` differ in ``S``, or ``attn_mask`` does not broadcast to the scores.
/// DTypeError
///     When an input is not a float tensor.
/// ValueError
///     When ``attn_mask`` is given with ``is_causal=True``, or ``dropout_p`` is outside ``[0, 1]``.
///     With ``enable_gqa``, a ``ShapeError`` when the key/value heads do not divide the query's.
///
/// Examples
/// --------
/// >>> q = k = remat.tensor([[1.0, 0.0], [0.0, 1.0]])
/// >>> v = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
/// >>> remat.scaled_dot_product_attention(q, k, v, scale=0.0)
/// tensor([[2., 3.],
///         [2., 3.]])
/// >>> remat.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.0)
/// tensor([[1., 2.],
///         [2., 3.]])
/// >>> remat.scaled_dot_product_attention(remat.ones(2, 4, 5, 8), remat.ones(2, 4, 7, 8),
/// ...                                    remat.ones(2, 4, 7, 3)).shape
/// (2, 4, 5, 3)
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask=None, dropout_p=0.0, is_causal=false, scale=None, enable_gqa=false))]
#[allow(clippy::too_many_arguments)]
fn scaled_dot_product_attention(
    py: Python<'_>,
    query: &Bound<'_, PyAny>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    attn_mask: Option<&Bound<'_, PyAny>>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> PyResult<PyTensor> {
    const OP: &str = "scaled_dot_product_attention";
    let q = convert::extract_tensor(OP, query)?;
    let k = convert::extract_tensor(OP, key)?;
    let v = convert::extract_tensor(OP, value)?;
    let mask = match attn_mask {
        Some(m) if !m.is_none() => Some(match m.downcast::<PyTensor>() {
            Ok(t) => t.get().inner.clone(),
            Err(_) => convert::tensor_from_py(OP, m, None)?,
        }),
        _ => None,
    };
    let opts = ops::SdpaOptions {
        is_causal,
        dropout_p,
        scale,
        enable_gqa,
    };
    run(py, heavy(&[&q, &k, &v]), || {
        ops::scaled_dot_product_attention_with(&q, &k, &v, mask.as_ref(), &opts)
    })
    .map(wrap)
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mse_loss, m)?)?;
    m.add_function(wrap_pyfunction!(l1_loss, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy_with_logits, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(scaled_dot_product_attention, m)?)?;
    Ok(())
}
