"""``remat.nn.functional``: the engine's functions under ``torch.nn.functional``'s names and
signatures, so ``import remat.nn.functional as F`` ports ``F.relu(x)``, ``F.cross_entropy(...)``
and the rest unchanged. Each name is the same object as the top-level ``remat.X``, except a few
thin wrappers (``softmax``, ``log_softmax``, ``dropout``, ``relu``, ``leaky_relu``, ``silu``,
``linear``, ``mse_loss``, ``l1_loss``) that add the parts of ``torch.nn.functional``'s
signatures and behaviour the engine's functions leave out (``dtype=``, ``inplace=``, a 1-d
linear weight, loss targets that broadcast)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import remat

from .._remat import Tensor
from .._remat import (
    _col2im,
    _im2col,
    conv1d,
    conv2d,
    conv3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    pad,
    rms_norm,
    group_norm,
    batch_norm,
    binary_cross_entropy,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    interpolate,
    binary_cross_entropy_with_logits,
    cross_entropy,
    embedding,
    gelu,
    layer_norm,
    nll_loss,
    one_hot,
    scaled_dot_product_attention,
    sigmoid,
    softplus,
    tanh,
)

# The engine's functions that the wrappers below extend to PyTorch's signatures.
from .._remat import dropout as _dropout
from .._remat import l1_loss as _l1_loss
from .._remat import _leaky_relu_
from .._remat import leaky_relu as _leaky_relu
from .._remat import linear as _linear
from .._remat import relu as _relu
from .._remat import silu as _silu
from .._remat import log_softmax as _log_softmax
from .._remat import mse_loss as _mse_loss
from .._remat import softmax as _softmax


def _maybe_in_place(f: Any, input: Any, inplace: bool, reads_input: bool) -> Tensor:
    """``f(input)``, or with ``inplace`` written into ``input`` (returned), as PyTorch's
    ``inplace=True``. With grad mode on and ``input`` in a graph the write is recorded (the
    engine rebases ``input`` onto it); an ``f`` whose backward reads its input then computes
    from a clone, which the write does not overwrite."""
    if not inplace or not isinstance(input, Tensor):
        return f(input)
    recorded = reads_input and input.requires_grad and remat.is_grad_enabled()
    out = f(input.clone() if recorded else input)
    if out is not input:
        input.copy_(out)
    return input


def relu(input: Any, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` elementwise, as ``torch.nn.functional.relu``.

    Parameters
    ----------
    input : Tensor
        The input (anything ``remat.tensor`` accepts).
    inplace : bool, optional
        Write the result into ``input`` and return ``input`` (a tensor that is part of a
        graph is rebased onto the write, as in PyTorch). Default: ``False``.

    Returns
    -------
    Tensor
        The result, of ``input``'s shape and dtype (``input`` itself with ``inplace``).

    Raises
    ------
    remat.GraphError
        With ``inplace``, when ``input`` is a leaf that requires grad (grad mode on).

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> x = remat.tensor([-1.0, 2.0])
    >>> F.relu(x, inplace=True) is x, x
    (True, tensor([0., 2.]))
    """
    if inplace and isinstance(input, Tensor):
        return input.relu_()
    return _relu(input)


def relu_(input: Tensor) -> Tensor:
    """``relu(input, inplace=True)``: ``max(x, 0)`` written into ``input``.

    Parameters
    ----------
    input : Tensor
        The tensor to write.

    Returns
    -------
    Tensor
        ``input`` itself.

    Raises
    ------
    remat.GraphError
        When ``input`` is a leaf that requires grad (grad mode on).

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> F.relu_(remat.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """
    return relu(input, inplace=True)


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``negative_slope * x`` elsewhere, as
    ``torch.nn.functional.leaky_relu``.

    Parameters
    ----------
    input : Tensor
        The input (anything ``remat.tensor`` accepts).
    negative_slope : float, optional
        The slope for negative inputs. Default: ``0.01``.
    inplace : bool, optional
        Write the result into ``input`` and return ``input``. Default: ``False``.

    Returns
    -------
    Tensor
        The result, of ``input``'s shape (``input`` itself with ``inplace``).

    Raises
    ------
    remat.GraphError
        With ``inplace``, when ``input`` is a leaf that requires grad (grad mode on).

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> F.leaky_relu(remat.tensor([-1.0, 2.0]), 0.1)
    tensor([-0.1000,  2.0000])
    """
    if inplace and isinstance(input, Tensor):
        _leaky_relu_(input, negative_slope)
        return input
    return _leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu(input, negative_slope, inplace=True)``.

    Parameters
    ----------
    input : Tensor
        The tensor to write.
    negative_slope : float, optional
        The slope for negative inputs. Default: ``0.01``.

    Returns
    -------
    Tensor
        ``input`` itself.

    Raises
    ------
    remat.GraphError
        When ``input`` is a leaf that requires grad (grad mode on).

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> F.leaky_relu_(remat.tensor([-1.0, 2.0]), 0.5)
    tensor([-0.5000,  2.0000])
    """
    return leaky_relu(input, negative_slope, inplace=True)


def silu(input: Any, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` elementwise, as ``torch.nn.functional.silu``.

    Parameters
    ----------
    input : Tensor
        The input (anything ``remat.tensor`` accepts).
    inplace : bool, optional
        Write the result into ``input`` and return ``input``. Default: ``False``.

    Returns
    -------
    Tensor
        The result, of ``input``'s shape (``input`` itself with ``inplace``).

    Raises
    ------
    remat.GraphError
        With ``inplace``, when ``input`` is a leaf that requires grad (grad mode on).

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> F.silu(remat.tensor([0.0, 2.0]))
    tensor([0.0000, 1.7616])
    """
    return _maybe_in_place(_silu, input, inplace, reads_input=True)


def _softmax_input(input: Any, dtype: Any) -> Tensor:
    x = input if isinstance(input, Tensor) else remat.tensor(input)
    return x if dtype is None else x.to(dtype)


def softmax(input: Any, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None, *,
            axis: int | None = None) -> Tensor:
    """Softmax along ``dim``, as ``torch.nn.functional.softmax``: ``exp(x) / sum(exp(x))``,
    computed without overflow.

    ``remat.softmax`` with PyTorch's functional signature: ``dtype`` casts the input first
    (e.g. a float32 input softmaxed in float64). Without ``dim`` the last axis is used (remat's
    documented default; PyTorch's deprecated implicit choice differs for 0-, 1- and 3-d inputs:
    pass ``dim`` explicitly when porting).

    Parameters
    ----------
    input : Tensor
        The input, float32 or float64 (anything ``remat.tensor`` accepts).
    dim : int, optional
        The axis to normalize over. Default: ``None`` (the last axis).
    _stacklevel : int, optional
        Accepted for PyTorch's signature; unused. Default: ``3``.
    dtype : remat.dtype, optional
        Cast the input to this dtype before the softmax. Default: ``None``.
    axis : int, optional
        NumPy's spelling of ``dim``. Default: ``None``.

    Returns
    -------
    Tensor
        A tensor of the input's shape, of dtype ``dtype`` (or the input's).

    Raises
    ------
    remat.DTypeError
        When the input (after the cast) is not floating point.
    remat.ShapeError
        When ``dim`` is out of range.
    TypeError
        When both ``dim`` and ``axis`` are given.

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> F.softmax(remat.tensor([[0.0, 0.0]]), dim=1, dtype=remat.float64)
    tensor([[0.5000, 0.5000]], dtype=remat.float64)
    """
    x = _softmax_input(input, dtype)
    if dim is None and axis is None:
        dim = -1  # API.md's default (PyTorch's deprecated implicit axis is not followed)
    return _softmax(x, dim, axis=axis)


def log_softmax(input: Any, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None,
                *, axis: int | None = None) -> Tensor:
    """Log of the softmax along ``dim``, as ``torch.nn.functional.log_softmax``: ``x -
    logsumexp(x)``, computed stably.

    ``remat.log_softmax`` with PyTorch's functional signature: ``dtype`` casts the input
    first. Without ``dim`` the last axis is used (remat's documented default; PyTorch's
    deprecated implicit choice differs for 0-, 1- and 3-d inputs).

    Parameters
    ----------
    input : Tensor
        The input, float32 or float64 (anything ``remat.tensor`` accepts).
    dim : int, optional
        The axis to normalize over. Default: ``None`` (the last axis).
    _stacklevel : int, optional
        Accepted for PyTorch's signature; unused. Default: ``3``.
    dtype : remat.dtype, optional
        Cast the input to this dtype first. Default: ``None``.
    axis : int, optional
        NumPy's spelling of ``dim``. Default: ``None``.

    Returns
    -------
    Tensor
        A tensor of the input's shape, of dtype ``dtype`` (or the input's).

    Raises
    ------
    remat.DTypeError
        When the input (after the cast) is not floating point.
    remat.ShapeError
        When ``dim`` is out of range.
    TypeError
        When both ``dim`` and ``axis`` are given.

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> F.log_softmax(remat.tensor([[0.0, 0.0]]), dim=-1, dtype=remat.float64).dtype
    remat.float64
    """
    x = _softmax_input(input, dtype)
    if dim is None and axis is None:
        dim = -1  # API.md's default (PyTorch's deprecated implicit axis is not followed)
    return _log_softmax(x, dim, axis=axis)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero elements with probability ``p`` and scale the rest by ``1 / (1 - p)``, as
    ``torch.nn.functional.dropout`` (only when ``training``).

    ``inplace=True`` writes the result into ``input`` and returns ``input``; a tensor that is
    part of a graph is rebased onto the write, as in PyTorch.

    Parameters
    ----------
    input : Tensor
        The input, float32 or float64.
    p : float, optional
        The probability of zeroing each element, in ``[0, 1]``. Default: ``0.5``.
    training : bool, optional
        Whether to apply dropout at all (otherwise ``input`` itself comes back). Default:
        ``True``.
    inplace : bool, optional
        Write the result into ``input`` (see above). Default: ``False``.

    Returns
    -------
    Tensor
        The result, of ``input``'s shape and dtype (``input`` itself when written in place
        or when not training).

    Raises
    ------
    ValueError
        When ``p`` is outside ``[0, 1]``.
    remat.DTypeError
        When ``input`` is not floating point.
    remat.GraphError
        With ``inplace``, when ``input`` is a leaf that requires grad (grad mode on).

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> x = remat.ones(6)
    >>> remat.manual_seed(0)
    >>> F.dropout(x, 0.5, inplace=True) is x, x
    (True, tensor([0., 2., 2., 0., 0., 0.]))
    """
    return _maybe_in_place(lambda x: _dropout(x, p, training), input, inplace,
                           reads_input=False)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Affine map ``input @ weight.T + bias``, as ``torch.nn.functional.linear``.

    ``remat.linear`` (fused) for the usual shapes; as in PyTorch a 1-d ``weight`` of shape
    ``(in_features,)`` gives an output of shape ``(...,)`` (``input @ weight``), and
    ``bias`` may be any tensor that broadcasts with the output (a 0-d one, say).

    Parameters
    ----------
    input : Tensor
        The input, float32 or float64, of shape ``(..., in_features)``.
    weight : Tensor
        The weight, ``(out_features, in_features)`` or ``(in_features,)``.
    bias : Tensor, optional
        Added to the output: ``(out_features,)`` or anything that broadcasts with it.
        Default: ``None`` (no bias).

    Returns
    -------
    Tensor
        ``(..., out_features)``, or ``(...,)`` for a 1-d ``weight``.

    Raises
    ------
    remat.ShapeError
        When the shapes do not match (``in_features``, or a bias that does not broadcast).
    remat.DTypeError
        When an operand is not a floating point tensor.

    Examples
    --------
    >>> import remat.nn.functional as F
    >>> x = remat.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
    >>> F.linear(x, remat.tensor([1.0, 0.0, 1.0]), remat.tensor(0.5))
    tensor([4.5000, 8.5000])
    """
    if isinstance(weight, Tensor) and weight.ndim == 1:
        out = remat.matmul(input, weight)
        return out if bias is None else out + bias
    if isinstance(bias, Tensor) and bias.ndim != 1:
        return _linear(input, weight) + bias
    return _linear(input, weight, bias)


def _broadcast_target(name: str, input: Any, target: Any) -> tuple[Any, Any]:
    """PyTorch's loss rule: a target of another shape warns and is broadcast with the input
    (both are expanded, so gradients sum back over the broadcast axes). Mixed float dtypes
    are the engine's to promote (differentiably, so both operands get gradients)."""
    if not (isinstance(input, Tensor) and isinstance(target, Tensor)):
        return input, target
    if input.shape == target.shape:
        return input, target
    warnings.warn(
        f"Using a target size ({target.shape}) that is different to the input size "
        f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.",
        stacklevel=3,
    )
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(target.shape))
    except ValueError as e:
        raise remat.ShapeError(
            f"{name}: input of shape {tuple(input.shape)} and target of shape "
            f"{tuple(target.shape)} do not broadcast"
        ) from e
    return remat.broadcast_to(input, shape), remat.broadcast_to(target, shape)


def _weighted(name: str, errors: Tensor, weight: Any, input: Any, reduction: str) -> Tensor:
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = errors * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum()
    raise ValueError(
        f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'."
    )


def _legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def mse_loss(input: Any, target: Any, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error, as ``torch.nn.functional.mse_loss``: ``(input - target)^2``,
    reduced.

    ``remat.mse_loss`` with PyTorch's rules for shapes: a ``target`` whose shape differs
    from ``input``'s warns (``UserWarning``, PyTorch's message) and is broadcast with it.
    ``weight`` (same shape as ``input``) weighs the elementwise losses; the weighted mean
    divides by ``weight.sum()``. Gradients flow to both operands.

    Parameters
    ----------
    input : Tensor or array_like
        The prediction, float32 or float64.
    target : Tensor or array_like
        The target, of ``input``'s shape or one that broadcasts with it.
    size_average : bool, optional
        PyTorch's deprecated spelling of ``reduction`` (with ``reduce``). Default: ``None``.
    reduce : bool, optional
        PyTorch's deprecated spelling of ``reduction`` (with ``size_average``). Default:
        ``None``.
    reduction : str, optional
        ``"mean"``, ``"sum"`` or ``"none"``. Default: ``"mean"``.
    weight : Tensor, optional
        Per-element weights of ``input``'s shape. Default: ``None``.

    Returns
    -------
    Tensor
        A 0-d tensor for ``"mean"`` and ``"sum"``, the elementwise losses (the broadcast
        shape) for ``"none"``.

    Raises
    ------
    remat.ShapeError
        When ``input`` and ``target`` do not broadcast.
    remat.DTypeError
        When an operand is not a float tensor.
    ValueError
        When ``reduction`` is unknown, or ``weight``'s shape is not ``input``'s.

    Examples
    --------
    >>> import warnings
    >>> import remat.nn.functional as F
    >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the target (2,) broadcasts: PyTorch warns
    ...     F.mse_loss(x, remat.tensor([1.0, 2.0]))
    tensor(2.)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = _broadcast_target("mse_loss", input, target)
    if weight is not None:
        return _weighted("mse_loss", (input - target) ** 2, weight, input, reduction)
    return _mse_loss(input, target, reduction=reduction)


def l1_loss(input: Any, target: Any, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean absolute error, as ``torch.nn.functional.l1_loss``: ``|input - target|``,
    reduced.

    ``remat.l1_loss`` with PyTorch's rules for shapes: a ``target`` whose shape differs from
    ``input``'s warns (``UserWarning``, PyTorch's message) and is broadcast with it.
    ``weight`` (same shape as ``input``) weighs the elementwise losses; the weighted mean
    divides by ``weight.sum()``.

    Parameters
    ----------
    input : Tensor or array_like
        The prediction, float32 or float64.
    target : Tensor or array_like
        The target, of ``input``'s shape or one that broadcasts with it.
    size_average : bool, optional
        PyTorch's deprecated spelling of ``reduction`` (with ``reduce``). Default: ``None``.
    reduce : bool, optional
        PyTorch's deprecated spelling of ``reduction`` (with ``size_average``). Default:
        ``None``.
    reduction : str, optional
        ``"mean"``, ``"sum"`` or ``"none"``. Default: ``"mean"``.
    weight : Tensor, optional
        Per-element weights of ``input``'s shape. Default: ``None``.

    Returns
    -------
    Tensor
        A 0-d tensor for ``"mean"`` and ``"sum"``, the elementwise losses (the broadcast
        shape) for ``"none"``.

    Raises
    ------
    remat.ShapeError
        When ``input`` and ``target`` do not broadcast.
    remat.DTypeError
        When an operand is not a float tensor.
    ValueError
        When ``reduction`` is unknown, or ``weight``'s shape is not ``input``'s.

    Examples
    --------
    >>> import warnings
    >>> import remat.nn.functional as F
    >>> x = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the target (2,) broadcasts: PyTorch warns
    ...     F.l1_loss(x, remat.tensor([1.0, 2.0]), reduction="sum")
    tensor(4.)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = _broadcast_target("l1_loss", input, target)
    if weight is not None:
        return _weighted("l1_loss", (input - target).abs(), weight, input, reduction)
    return _l1_loss(input, target, reduction=reduction)


# PyTorch's `F.unfold` / `F.fold` (im2col / col2im of 4-D inputs); not top-level names, as
# `torch.unfold` does not exist and `Tensor.unfold` is another op.
unfold = _im2col
fold = _col2im

__all__ = [
    "conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "pad", "unfold", "fold", "rms_norm", "group_norm", "batch_norm",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "interpolate", "nll_loss",
    "scaled_dot_product_attention",
    "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "leaky_relu", "leaky_relu_",
    "linear", "log_softmax", "mse_loss", "one_hot", "relu", "relu_", "sigmoid", "silu",
    "softmax", "softplus",
    "tanh",
]
