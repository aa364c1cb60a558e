"""Convolution modules with ``torch.nn``'s names, constructor arguments and initialisation
(``Conv1d``, ``Conv2d``, ``Conv3d``): they hold the weight and bias and call the engine's
``conv1d``/``conv2d``/``conv3d``."""

from __future__ import annotations

import math
from typing import Any, Union

import remat

from .. import _validate
from .._remat import Tensor
from .modules import Module, _uniform

__all__ = ["Conv1d", "Conv2d", "Conv3d"]

_Size = Union[int, tuple]


def _tuple(name: str, v: Any, n: int) -> tuple:
    t = (v,) * n if isinstance(v, int) else tuple(v)
    if len(t) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {v!r}")
    return t


class _ConvNd(Module):
    """The shared body: PyTorch's arguments, kaiming-uniform(a=√5) initialisation (weight and
    bias from U(-1/√fan_in, 1/√fan_in), fan_in = in_channels/groups · prod(kernel)) and
    ``padding_mode`` (``"zeros"``, or ``"reflect"``/``"replicate"``/``"circular"`` applied with
    ``remat.pad`` before an unpadded convolution)."""

    _rank = 0
    _fn = ""  # the remat function each subclass calls

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: _Size,
        stride: _Size = 1,
        padding: _Size | str = 0,
        dilation: _Size = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        n = self._rank
        in_channels = _validate.integer(name, "in_channels", in_channels, minimum=1)
        out_channels = _validate.integer(name, "out_channels", out_channels, minimum=1)
        groups = _validate.integer(name, "groups", groups, minimum=1)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"be divisible by groups ({groups})"
            )
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(
                f"{name}: padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', "
                f"got {padding_mode!r}"
            )
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: padding must be 'same', 'valid' or ints, got {padding!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple("kernel_size", kernel_size, n)
        self.stride = _tuple("stride", stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple("padding", padding, n)
        self.dilation = _tuple("dilation", dilation, n)
        self.padding_mode = padding_mode
        fan_in = in_channels // groups * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in)
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = _uniform(shape, bound, dtype, device)
        if bias:
            self.bias = _uniform((out_channels,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def _explicit_padding(self) -> tuple:
        """``padding`` as (before, after) pairs from the last axis back, for ``remat.pad``."""
        if self.padding == "valid":
            return (0,) * (2 * self._rank)
        if self.padding == "same":
            pairs = []
            for k, d in zip(reversed(self.kernel_size), reversed(self.dilation)):
                total = d * (k - 1)
                pairs += [total // 2, total - total // 2]
            return tuple(pairs)
        return tuple(p for q in reversed(self.padding) for p in (q, q))

    def forward(self, x: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            x = remat.pad(x, self._explicit_padding(), mode=self.padding_mode)
            padding: Any = 0
        else:
            padding = self.padding
        return getattr(remat, self._fn)(
            x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self._rank:
            s += f", padding={self.padding!r}"
        if self.dilation != (1,) * self._rank:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C, L)`` (or ``(C, L)``) inputs."""

    _rank = 1
    _fn = "conv1d"


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C, H, W)`` (or ``(C, H, W)``) inputs."""

    _rank = 2
    _fn = "conv2d"


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C, D, H, W)`` (or unbatched) inputs."""

    _rank = 3
    _fn = "conv3d"
