"""``remat.nn.init``: in-place initialisers with ``torch.nn.init``'s names, signatures and
formulas (fans, gains, bounds). Each fills its tensor under ``no_grad`` with remat's seeded
generator (so ``remat.manual_seed`` makes it reproducible), bumps the tensor's version
counter like any in-place write, and returns the tensor."""

from __future__ import annotations

import math
from typing import Any

import remat

from .._remat import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
    "trunc_normal_",
]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def _tensor(fn: str, tensor: Any) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn}: expected a Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in (remat.float32, remat.float64):
        raise remat.DTypeError(
            f"nn.init.{fn}: expected a float tensor, got dtype {tensor.dtype} of shape "
            f"{tuple(tensor.shape)}"
        )
    return tensor


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity`` (PyTorch's table: 1 for linear/conv/sigmoid,
    5/3 for tanh, √2 for relu, √(2/(1+slope²)) for leaky_relu, 3/4 for selu).

    The gain scales the standard deviation of the Xavier/Kaiming initialisers so that
    activations keep their magnitude through layers of that nonlinearity.

    Parameters
    ----------
    nonlinearity : str
        ``"linear"``, ``"conv1d"``, ``"conv2d"``, ``"conv3d"``, ``"conv_transpose1d"``,
        ``"conv_transpose2d"``, ``"conv_transpose3d"``, ``"sigmoid"``, ``"tanh"``,
        ``"relu"``, ``"leaky_relu"`` or ``"selu"``.
    param : float or None, optional
        The negative slope of ``"leaky_relu"`` (ignored otherwise). Default: ``None``
        (0.01).

    Returns
    -------
    float
        The gain.

    Raises
    ------
    ValueError
        When ``nonlinearity`` is not in the table, or ``param`` is not an int or float (a
        bool is not one) for ``"leaky_relu"``.

    Examples
    --------
    >>> remat.nn.init.calculate_gain("relu")
    1.4142135623730951
    >>> remat.nn.init.calculate_gain("tanh")
    1.6666666666666667
    >>> remat.nn.init.calculate_gain("leaky_relu", 0.2)
    1.3867504905630728
    >>> remat.nn.init.calculate_gain("gelu")
    Traceback (most recent call last):
        ...
    ValueError: Unsupported nonlinearity gelu
    """
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(fn: str, tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` as PyTorch computes them: dim 1 and dim 0, times the receptive
    field (the product of the dims after the first two)."""
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError(
            f"nn.init.{fn}: fan in and fan out can not be computed for a tensor with fewer "
            f"than 2 dimensions (shape {shape})"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(fn: str, tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"nn.init.{fn}: mode {mode!r} not supported, use 'fan_in' or 'fan_out'")
    fan_in, fan_out = _fans(fn, tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill ``tensor`` with values drawn from U(a, b).

    Parameters
    ----------
    tensor : Tensor
        The float tensor to fill in place (a parameter is fine: the fill runs under
        ``no_grad``).
    a : float, optional
        Lower bound. Default: ``0.0``.
    b : float, optional
        Upper bound. Default: ``1.0``.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor.
    remat.DTypeError
        When ``tensor`` is not float32 or float64.

    Examples
    --------
    >>> w = remat.empty(2, 3)
    >>> remat.nn.init.uniform_(w, -1.0, 1.0) is w
    True
    >>> bool(((w >= -1.0) & (w <= 1.0)).all())
    True
    """
    with remat.no_grad():
        return _tensor("uniform_", tensor).uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill ``tensor`` with values drawn from N(mean, std²).

    Parameters
    ----------
    tensor : Tensor
        The float tensor to fill in place.
    mean : float, optional
        Mean of the normal distribution. Default: ``0.0``.
    std : float, optional
        Standard deviation. Default: ``1.0``.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor.
    remat.DTypeError
        When ``tensor`` is not float32 or float64.

    Examples
    --------
    >>> remat.manual_seed(0)
    >>> a = remat.nn.init.normal_(remat.empty(3), std=0.02)
    >>> remat.manual_seed(0)
    >>> b = remat.nn.init.normal_(remat.empty(3), std=0.02)
    >>> (a == b).all().item()
    True
    """
    with remat.no_grad():
        return _tensor("normal_", tensor).normal_(mean, std)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``.

    Parameters
    ----------
    tensor : Tensor
        The float tensor to fill in place.
    val : float
        The value.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor.
    remat.DTypeError
        When ``tensor`` is not float32 or float64.

    Examples
    --------
    >>> lin = remat.nn.Linear(4, 2)
    >>> remat.nn.init.constant_(lin.bias, 0.1)
    tensor([0.1000, 0.1000], requires_grad=True)
    """
    with remat.no_grad():
        return _tensor("constant_", tensor).fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones.

    Parameters
    ----------
    tensor : Tensor
        The float tensor to fill in place.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor.
    remat.DTypeError
        When ``tensor`` is not float32 or float64.

    Examples
    --------
    >>> remat.nn.init.ones_(remat.empty(2, 2))
    tensor([[1., 1.],
            [1., 1.]])
    """
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros.

    Parameters
    ----------
    tensor : Tensor
        The float tensor to fill in place.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor.
    remat.DTypeError
        When ``tensor`` is not float32 or float64.

    Examples
    --------
    >>> w = remat.nn.Parameter(remat.ones(2, 2))
    >>> remat.nn.init.zeros_(w)
    tensor([[0., 0.],
            [0., 0.]], requires_grad=True)
    >>> remat.nn.init.zeros_(remat.tensor([1, 2]))
    Traceback (most recent call last):
        ...
    remat.DTypeError: nn.init.zeros_: expected a float tensor, got dtype int64 of shape (2,)
    """
    with remat.no_grad():
        return _tensor("zeros_", tensor).zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill the 2-D ``tensor`` with the identity matrix (ones on the diagonal).

    A non-square tensor gets ones at ``[i, i]`` and zeros elsewhere.

    Parameters
    ----------
    tensor : Tensor
        The 2-D float tensor to fill in place.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor.
    remat.DTypeError
        When ``tensor`` is not float32 or float64.
    ValueError
        When ``tensor`` is not 2-D.

    Examples
    --------
    >>> remat.nn.init.eye_(remat.empty(2, 3))
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    t = _tensor("eye_", tensor)
    if t.ndim != 2:
        raise ValueError(f"nn.init.eye_: only 2-D tensors are supported, got shape {t.shape}")
    with remat.no_grad():
        return t.copy_(remat.eye(t.shape[0], t.shape[1], dtype=t.dtype))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain·√(6 / (fan_in + fan_out))``.

    ``fan_in`` is ``tensor.shape[1]`` and ``fan_out`` is ``tensor.shape[0]``, each times the
    product of the remaining axes (the receptive field of a convolution weight).

    Parameters
    ----------
    tensor : Tensor
        The float tensor (at least 2-D) to fill in place.
    gain : float, optional
        Scale factor, e.g. ``calculate_gain("tanh")``. Default: ``1.0``.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    ValueError
        When ``tensor`` has fewer than 2 dimensions (the fans are undefined).
    AttributeError
        When ``tensor`` is not a Tensor (it has no ``shape``).
    remat.DTypeError
        When ``tensor`` is not float32 or float64 (the message names the ``uniform_`` it
        calls).

    Examples
    --------
    >>> w = remat.nn.init.xavier_uniform_(remat.empty(64, 128))
    >>> bool(w.abs().max() <= (6.0 / (64 + 128)) ** 0.5)
    True
    """
    fan_in, fan_out = _fans("xavier_uniform_", tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std²) with ``std = gain·√(2 / (fan_in + fan_out))``.

    The fans are computed as in :func:`xavier_uniform_`.

    Parameters
    ----------
    tensor : Tensor
        The float tensor (at least 2-D) to fill in place.
    gain : float, optional
        Scale factor. Default: ``1.0``.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    ValueError
        When ``tensor`` has fewer than 2 dimensions (the fans are undefined).
    AttributeError
        When ``tensor`` is not a Tensor (it has no ``shape``).
    remat.DTypeError
        When ``tensor`` is not float32 or float64 (the message names the ``normal_`` it
        calls).

    Examples
    --------
    >>> gain = remat.nn.init.calculate_gain("tanh")
    >>> remat.nn.init.xavier_normal_(remat.empty(3, 5), gain=gain).shape
    (3, 5)
    >>> remat.nn.init.xavier_normal_(remat.empty(5))
    Traceback (most recent call last):
        ...
    ValueError: nn.init.xavier_normal_: fan in and fan out can not be computed for a tensor ...
    """
    fan_in, fan_out = _fans("xavier_normal_", tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He uniform: U(-bound, bound) with ``bound = gain·√(3 / fan)``, ``gain =
    calculate_gain(nonlinearity, a)``.

    A tensor whose chosen fan is 0 is returned unchanged (PyTorch warns instead).

    Parameters
    ----------
    tensor : Tensor
        The float tensor (at least 2-D) to fill in place.
    a : float, optional
        The negative slope of the leaky ReLU that follows (used only with
        ``nonlinearity="leaky_relu"``). Default: ``0.0``.
    mode : str, optional
        ``"fan_in"`` keeps the variance of the forward activations, ``"fan_out"`` that of
        the backward gradients. Default: ``"fan_in"``.
    nonlinearity : str, optional
        The activation that follows, as for :func:`calculate_gain`; ``"relu"`` or
        ``"leaky_relu"`` are the intended ones. Default: ``"leaky_relu"``.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    ValueError
        When ``mode`` is neither ``"fan_in"`` nor ``"fan_out"``, ``tensor`` has fewer than
        2 dimensions, or ``nonlinearity``/``a`` is not accepted by :func:`calculate_gain`.
    AttributeError
        When ``tensor`` is not a Tensor (it has no ``shape``).
    remat.DTypeError
        When ``tensor`` is not float32 or float64 (the message names the ``uniform_`` it
        calls).

    Examples
    --------
    >>> w = remat.nn.init.kaiming_uniform_(remat.empty(8, 6), nonlinearity="relu")
    >>> bool(w.abs().max() <= 2.0 ** 0.5 * (3.0 / 6) ** 0.5)
    True
    """
    fan = _fan("kaiming_uniform_", tensor, mode)
    if fan == 0:
        return tensor  # PyTorch warns and leaves a zero-element tensor alone
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He normal: N(0, std²) with ``std = gain / √fan``.

    ``gain = calculate_gain(nonlinearity, a)``; a tensor whose chosen fan is 0 is returned
    unchanged.

    Parameters
    ----------
    tensor : Tensor
        The float tensor (at least 2-D) to fill in place.
    a : float, optional
        The negative slope of the leaky ReLU that follows (used only with
        ``nonlinearity="leaky_relu"``). Default: ``0.0``.
    mode : str, optional
        ``"fan_in"`` or ``"fan_out"``. Default: ``"fan_in"``.
    nonlinearity : str, optional
        The activation that follows, as for :func:`calculate_gain`. Default:
        ``"leaky_relu"``.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    ValueError
        When ``mode`` is neither ``"fan_in"`` nor ``"fan_out"``, ``tensor`` has fewer than
        2 dimensions, or ``nonlinearity``/``a`` is not accepted by :func:`calculate_gain`.
    AttributeError
        When ``tensor`` is not a Tensor (it has no ``shape``).
    remat.DTypeError
        When ``tensor`` is not float32 or float64 (the message names the ``normal_`` it
        calls).

    Examples
    --------
    >>> remat.nn.init.kaiming_normal_(remat.empty(8, 6), mode="fan_out").shape
    (8, 6)
    >>> remat.nn.init.kaiming_normal_(remat.empty(8, 6), mode="fan")
    Traceback (most recent call last):
        ...
    ValueError: nn.init.kaiming_normal_: mode 'fan' not supported, use 'fan_in' or 'fan_out'
    """
    fan = _fan("kaiming_normal_", tensor, mode)
    if fan == 0:
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0
) -> Tensor:
    """Fill ``tensor`` with N(mean, std²) conditioned on ``[a, b]``: values outside the
    interval are redrawn until none is left, so the result follows the truncated normal
    exactly.

    ``a`` and ``b`` are absolute bounds (not in units of ``std``), as in PyTorch. After
    1000 rounds (only for an interval far in a tail) the values still outside are clamped
    into it.

    Parameters
    ----------
    tensor : Tensor
        The float tensor to fill in place.
    mean : float, optional
        Mean of the underlying normal. Default: ``0.0``.
    std : float, optional
        Standard deviation of the underlying normal. Default: ``1.0``.
    a : float, optional
        Lower bound. Default: ``-2.0``.
    b : float, optional
        Upper bound. Default: ``2.0``.

    Returns
    -------
    Tensor
        ``tensor`` itself.

    Raises
    ------
    ValueError
        When ``a >= b``.
    TypeError
        When ``tensor`` is not a Tensor.
    remat.DTypeError
        When ``tensor`` is not float32 or float64.

    Examples
    --------
    >>> t = remat.nn.init.trunc_normal_(remat.empty(100), std=0.02, a=-0.04, b=0.04)
    >>> bool((t.abs() <= 0.04).all())
    True
    """
    t = _tensor("trunc_normal_", tensor)
    if not a < b:
        raise ValueError(f"nn.init.trunc_normal_: need a < b, got a={a}, b={b}")
    with remat.no_grad():
        t.normal_(mean, std)
        for _ in range(1000):
            outside = (t < a) | (t > b)
            if not bool(outside.any()):
                return t
            fresh = remat.randn_like(t) * std + mean
            t.copy_(remat.where(outside, fresh, t))
    # An interval far in a tail (probability ~0 per draw): clamp what is left, as a bound.
    return t.clamp_(a, b)
