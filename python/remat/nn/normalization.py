"""Normalisation modules with ``torch.nn``'s names, arguments and initialisation
(``RMSNorm``, ``GroupNorm``; ``LayerNorm`` lives in ``modules.py``): they hold the affine
parameters and call the engine's ``rms_norm`` / ``group_norm``."""

from __future__ import annotations

from typing import Any

import remat

from .. import _validate
from .._remat import Tensor
from .modules import Module, _filled

__all__ = ["RMSNorm", "GroupNorm"]


class RMSNorm(Module):
    """``x / sqrt(mean(x², trailing axes) + eps) * weight`` over the trailing axes of
    ``normalized_shape``; ``eps=None`` uses the input dtype's machine epsilon, as PyTorch."""

    def __init__(
        self,
        normalized_shape: int | tuple,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        dims = normalized_shape if isinstance(normalized_shape, (tuple, list)) else (
            normalized_shape,)
        if len(dims) == 0:
            raise ValueError("RMSNorm: normalized_shape must name at least one axis")
        self.normalized_shape = tuple(
            _validate.integer("RMSNorm", "normalized_shape", d, minimum=0) for d in dims
        )
        self.eps = None if eps is None else _validate.nonnegative("RMSNorm", "eps", eps)
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = _filled(1.0, self.normalized_shape, device, dtype)
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Tensor) -> Tensor:
        return remat.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Normalises ``(N, C, *)`` inputs over ``num_groups`` groups of channels, then applies a
    per-channel ``weight`` (ones) and ``bias`` (zeros)."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        num_groups = _validate.integer("GroupNorm", "num_groups", num_groups, minimum=1)
        num_channels = _validate.integer("GroupNorm", "num_channels", num_channels, minimum=1)
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                f"({num_groups})"
            )
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps = _validate.nonnegative("GroupNorm", "eps", eps)
        self.affine = affine
        if affine:
            self.weight = _filled(1.0, (num_channels,), device, dtype)
            self.bias = _filled(0.0, (num_channels,), device, dtype)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return remat.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
