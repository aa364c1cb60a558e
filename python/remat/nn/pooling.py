"""Pooling and padding modules with ``torch.nn``'s names and arguments (``MaxPool1d/2d/3d``,
``AvgPool1d/2d/3d``, ``AdaptiveAvgPool1d/2d/3d``, ``ZeroPad1d/2d``, ``ConstantPad1d/2d``,
``ReflectionPad1d/2d``, ``ReplicationPad1d/2d``): each calls the engine's function."""

from __future__ import annotations

from typing import Any

import remat

from .._remat import Tensor
from .modules import Module

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "ZeroPad1d", "ZeroPad2d",
    "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d",
]


class _MaxPoolNd(Module):
    _fn = ""  # the remat function each subclass calls

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x: Tensor) -> Any:
        return getattr(remat, self._fn)(
            x, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling."""

    _fn = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling."""

    _fn = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling."""

    _fn = "max_pool3d"


class _AvgPoolNd(Module):
    _fn = ""  # the remat function each subclass calls

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: Any = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return getattr(remat, self._fn)(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling."""

    _fn = "avg_pool1d"


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling."""

    _fn = "avg_pool2d"


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling."""

    _fn = "avg_pool3d"


class _AdaptiveAvgPoolNd(Module):
    _fn = ""  # the remat function each subclass calls

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return getattr(remat, self._fn)(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """1-D adaptive average pooling to ``output_size``."""

    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """2-D adaptive average pooling to ``output_size`` (``None`` entries keep the size)."""

    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-D adaptive average pooling to ``output_size``."""

    _fn = "adaptive_avg_pool3d"


class _PadNd(Module):
    _rank = 1
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self._rank) if isinstance(padding, int) else tuple(
            padding)
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        if self._mode == "constant":
            return remat.pad(x, self.padding, mode="constant", value=self.value)
        return remat.pad(x, self.padding, mode=self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


class ConstantPad1d(_PadNd):
    """Pad the last axis with a constant: ``ConstantPad1d(padding, value)``."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """Pad the last two axes with a constant."""

    _rank = 2


class ZeroPad1d(_PadNd):
    """Pad the last axis with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    """Pad the last two axes with zeros."""

    _rank = 2


class ReflectionPad1d(ZeroPad1d):
    """Pad the last axis with its mirror image."""

    _mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pad the last two axes with their mirror image."""

    _rank = 2


class ReplicationPad1d(ZeroPad1d):
    """Pad the last axis by repeating its edge."""

    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pad the last two axes by repeating their edges."""

    _rank = 2
