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
    5/3 for tanh, √2 for relu, √(2/(1+slope²)) for leaky_relu, 3/4 for selu)."""
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
    """Fill ``tensor`` with values drawn from U(a, b)."""
    with remat.no_grad():
        return _tensor("uniform_", tensor).uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill ``tensor`` with values drawn from N(mean, std²)."""
    with remat.no_grad():
        return _tensor("normal_", tensor).normal_(mean, std)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    with remat.no_grad():
        return _tensor("constant_", tensor).fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros."""
    with remat.no_grad():
        return _tensor("zeros_", tensor).zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill the 2-D ``tensor`` with the identity matrix (ones on the diagonal)."""
    t = _tensor("eye_", tensor)
    if t.ndim != 2:
        raise ValueError(f"nn.init.eye_: only 2-D tensors are supported, got shape {t.shape}")
    with remat.no_grad():
        return t.copy_(remat.eye(t.shape[0], t.shape[1], dtype=t.dtype))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain·√(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans("xavier_uniform_", tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std²) with ``std = gain·√(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans("xavier_normal_", tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He uniform: U(-bound, bound) with ``bound = gain·√(3 / fan)``, ``gain =
    calculate_gain(nonlinearity, a)``."""
    fan = _fan("kaiming_uniform_", tensor, mode)
    if fan == 0:
        return tensor  # PyTorch warns and leaves a zero-element tensor alone
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He normal: N(0, std²) with ``std = gain / √fan``."""
    fan = _fan("kaiming_normal_", tensor, mode)
    if fan == 0:
        return tensor
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0
) -> Tensor:
    """Fill ``tensor`` with N(mean, std²) conditioned on ``[a, b]``: values outside the
    interval are redrawn until none is left, so the result follows the truncated normal
    exactly."""
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
