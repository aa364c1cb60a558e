"""Convolution modules with ``torch.nn``'s names, constructor arguments and initialisation
(``Conv1d``, ``Conv2d``, ``Conv3d``): they hold the weight and bias and call the engine's
``conv1d``/``conv2d``/``conv3d``."""

from __future__ import annotations

import math
from typing import Any, Union

import remat

from ... import _validate
from ..._remat import Tensor
from .linear import _uniform
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d"]

_Size = Union[int, tuple]


def _tuple(name: str, v: Any, n: int) -> tuple:
    t = (v,) * n if isinstance(v, int) else tuple(v)
    if len(t) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {v!r}")
    return t


def _channels(name: str, in_channels: Any, out_channels: Any, groups: Any) -> tuple:
    """The channel counts and ``groups`` as ints, checked as PyTorch checks them (positive,
    ``groups`` dividing both), for the convolutions and the transposed ones."""
    in_channels = _validate.integer(name, "in_channels", in_channels, minimum=1)
    out_channels = _validate.integer(name, "out_channels", out_channels, minimum=1)
    groups = _validate.integer(name, "groups", groups, minimum=1)
    if in_channels % groups or out_channels % groups:
        raise ValueError(
            f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
            f"be divisible by groups ({groups})"
        )
    return in_channels, out_channels, groups


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
        in_channels, out_channels, groups = _channels(name, in_channels, out_channels, groups)
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
        """Convolve ``x`` with ``weight`` and add ``bias`` (``remat.conv1d/2d/3d``).

        Parameters
        ----------
        x : Tensor
            Input of shape ``(N, in_channels, *spatial)`` or unbatched
            ``(in_channels, *spatial)``.

        Returns
        -------
        Tensor
            ``(N, out_channels, *out_spatial)`` (unbatched: without ``N``).

        Raises
        ------
        remat.ShapeError
            When the input's rank or channel count does not match, or the (padded) input is
            smaller than the dilated kernel.
        ValueError
            When ``padding="same"`` is combined with a stride other than 1, or ``stride`` is
            not positive.

        Examples
        --------
        >>> conv = remat.nn.Conv2d(3, 4, 3)
        >>> conv(remat.ones(3, 8, 8)).shape
        (4, 6, 6)
        >>> conv(remat.ones(1, 2, 8, 8))
        Traceback (most recent call last):
            ...
        remat.ShapeError: conv2d: the input has 2 channels but weight expects 3 × groups (1) = 3 ...
        """
        if self.padding_mode != "zeros":
            x = remat.pad(x, self._explicit_padding(), mode=self.padding_mode)
            padding: Any = 0
        else:
            padding = self.padding
        return getattr(remat, self._fn)(
            x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        """The channels, ``kernel_size`` and ``stride``, then the settings that differ from
        the defaults."""
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
    """1-D convolution over ``(N, C, L)`` (or ``(C, L)``) inputs.

    The weight has shape ``(out_channels, in_channels // groups, kernel_size)``; weight and
    bias are drawn as PyTorch does (kaiming-uniform with a=√5: U(-1/√fan_in, 1/√fan_in),
    ``fan_in = in_channels // groups * kernel_size``) from remat's seeded generator. The
    output length is ``(L + 2·padding - dilation·(kernel_size-1) - 1) // stride + 1``.

    Parameters
    ----------
    in_channels : int
        Channels of the input, ``>= 1``.
    out_channels : int
        Channels of the output (number of filters), ``>= 1``.
    kernel_size : int or tuple of 1 int
        Size of the kernel; an int is used for every spatial axis.
    stride : int or tuple of 1 int, optional
        Step of the kernel. Default: ``1``.
    padding : int, tuple of 1 int, "same" or "valid", optional
        Implicit padding on both sides of each spatial axis; ``"valid"`` is none, ``"same"``
        keeps the spatial size (only with stride 1; an odd total goes on the far side).
        Default: ``0``.
    dilation : int or tuple of 1 int, optional
        Spacing between kernel elements. Default: ``1``.
    groups : int, optional
        Split the channels into ``groups`` independent convolutions (``groups ==
        in_channels`` is a depthwise convolution); must divide both channel counts.
        Default: ``1``.
    bias : bool, optional
        Learn a bias of shape ``(out_channels,)``; with ``False`` it is ``None``.
        Default: ``True``.
    padding_mode : str, optional
        ``"zeros"``, or ``"reflect"``, ``"replicate"`` or ``"circular"`` (applied with
        ``remat.pad`` before an unpadded convolution). Default: ``"zeros"``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``in_channels``, ``out_channels`` or ``groups`` is not an int, or
        ``kernel_size``/``stride``/``padding``/``dilation`` is neither an int nor a sequence
        (the message then does not name the class).
    ValueError
        When a channel count or ``groups`` is below 1, ``groups`` does not divide both
        channel counts, ``padding_mode`` or a string ``padding`` is unknown, or a size tuple
        has the wrong length.

    Examples
    --------
    >>> conv = remat.nn.Conv1d(2, 4, 3)
    >>> conv
    Conv1d(2, 4, kernel_size=(3,), stride=(1,))
    >>> conv.weight.shape
    (4, 2, 3)
    >>> conv(remat.ones(8, 2, 10)).shape
    (8, 4, 8)
    >>> remat.nn.Conv1d(2, 4, 3, padding="same", padding_mode="circular")(remat.ones(2, 10)).shape
    (4, 10)
    """

    _rank = 1
    _fn = "conv1d"


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C, H, W)`` (or ``(C, H, W)``) inputs.

    The weight has shape ``(out_channels, in_channels // groups, kH, kW)``; weight and bias
    are drawn as PyTorch does (kaiming-uniform with a=√5: U(-1/√fan_in, 1/√fan_in),
    ``fan_in = in_channels // groups * kH * kW``) from remat's seeded generator. Each output
    size is ``(size + 2·padding - dilation·(k-1) - 1) // stride + 1``.

    Parameters
    ----------
    in_channels : int
        Channels of the input, ``>= 1``.
    out_channels : int
        Channels of the output (number of filters), ``>= 1``.
    kernel_size : int or tuple of 2 int
        Size of the kernel; an int is used for every spatial axis.
    stride : int or tuple of 2 int, optional
        Step of the kernel. Default: ``1``.
    padding : int, tuple of 2 int, "same" or "valid", optional
        Implicit padding on both sides of each spatial axis; ``"valid"`` is none, ``"same"``
        keeps the spatial size (only with stride 1; an odd total goes on the far side).
        Default: ``0``.
    dilation : int or tuple of 2 int, optional
        Spacing between kernel elements. Default: ``1``.
    groups : int, optional
        Split the channels into ``groups`` independent convolutions (``groups ==
        in_channels`` is a depthwise convolution); must divide both channel counts.
        Default: ``1``.
    bias : bool, optional
        Learn a bias of shape ``(out_channels,)``; with ``False`` it is ``None``.
        Default: ``True``.
    padding_mode : str, optional
        ``"zeros"``, or ``"reflect"``, ``"replicate"`` or ``"circular"`` (applied with
        ``remat.pad`` before an unpadded convolution). Default: ``"zeros"``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``in_channels``, ``out_channels`` or ``groups`` is not an int, or
        ``kernel_size``/``stride``/``padding``/``dilation`` is neither an int nor a sequence
        (the message then does not name the class).
    ValueError
        When a channel count or ``groups`` is below 1, ``groups`` does not divide both
        channel counts, ``padding_mode`` or a string ``padding`` is unknown, or a size tuple
        has the wrong length.

    Examples
    --------
    >>> conv = remat.nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1)
    >>> conv
    Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
    >>> conv.weight.shape, conv.bias.shape
    ((16, 3, 3, 3), (16,))
    >>> conv(remat.ones(1, 3, 32, 32)).shape
    (1, 16, 16, 16)
    >>> remat.nn.Conv2d(3, 4, 3, groups=2)
    Traceback (most recent call last):
        ...
    ValueError: Conv2d: in_channels (3) and out_channels (4) must be divisible by groups (2)
    """

    _rank = 2
    _fn = "conv2d"


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) inputs.

    The weight has shape ``(out_channels, in_channels // groups, kD, kH, kW)``; weight and
    bias are drawn as PyTorch does (kaiming-uniform with a=√5: U(-1/√fan_in, 1/√fan_in),
    ``fan_in = in_channels // groups * kD * kH * kW``) from remat's seeded generator. Each
    output size is ``(size + 2·padding - dilation·(k-1) - 1) // stride + 1``.

    Parameters
    ----------
    in_channels : int
        Channels of the input, ``>= 1``.
    out_channels : int
        Channels of the output (number of filters), ``>= 1``.
    kernel_size : int or tuple of 3 int
        Size of the kernel; an int is used for every spatial axis.
    stride : int or tuple of 3 int, optional
        Step of the kernel. Default: ``1``.
    padding : int, tuple of 3 int, "same" or "valid", optional
        Implicit padding on both sides of each spatial axis; ``"valid"`` is none, ``"same"``
        keeps the spatial size (only with stride 1; an odd total goes on the far side).
        Default: ``0``.
    dilation : int or tuple of 3 int, optional
        Spacing between kernel elements. Default: ``1``.
    groups : int, optional
        Split the channels into ``groups`` independent convolutions (``groups ==
        in_channels`` is a depthwise convolution); must divide both channel counts.
        Default: ``1``.
    bias : bool, optional
        Learn a bias of shape ``(out_channels,)``; with ``False`` it is ``None``.
        Default: ``True``.
    padding_mode : str, optional
        ``"zeros"``, or ``"reflect"``, ``"replicate"`` or ``"circular"`` (applied with
        ``remat.pad`` before an unpadded convolution). Default: ``"zeros"``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``in_channels``, ``out_channels`` or ``groups`` is not an int, or
        ``kernel_size``/``stride``/``padding``/``dilation`` is neither an int nor a sequence
        (the message then does not name the class).
    ValueError
        When a channel count or ``groups`` is below 1, ``groups`` does not divide both
        channel counts, ``padding_mode`` or a string ``padding`` is unknown, or a size tuple
        has the wrong length.

    Examples
    --------
    >>> conv = remat.nn.Conv3d(1, 2, (1, 3, 3))
    >>> conv
    Conv3d(1, 2, kernel_size=(1, 3, 3), stride=(1, 1, 1))
    >>> conv(remat.ones(1, 1, 4, 8, 8)).shape
    (1, 2, 4, 6, 6)
    """

    _rank = 3
    _fn = "conv3d"


# PyTorch's `torch.nn.modules.conv` also holds the transposed convolutions; they live in their
# own file here (imported last: it builds on the helpers above).
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402, F401
