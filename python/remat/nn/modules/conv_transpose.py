"""Transposed convolution modules with ``torch.nn``'s names, constructor arguments,
initialisation and ``forward(input, output_size=None)`` (``ConvTranspose1d``,
``ConvTranspose2d``, ``ConvTranspose3d``): they hold the weight ``(in_channels,
out_channels // groups, *kernel_size)`` and bias and call the engine's
``conv_transpose1d/2d/3d``. PyTorch's module path is ``torch.nn.modules.conv``; remat keeps
these in their own file and re-exports them from ``remat.nn.modules.conv``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import remat

from ..._remat import Tensor
from .conv import _channels, _Size, _tuple
from .linear import _uniform
from .module import Module

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvTransposeNd(Module):
    """The shared body: PyTorch's arguments and initialisation (weight and bias from
    U(-1/√fan_in, 1/√fan_in) with PyTorch's fan_in of the transposed weight,
    ``out_channels // groups * prod(kernel_size)``)."""

    _rank = 0
    _fn = ""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: _Size,
        stride: _Size = 1,
        padding: _Size = 0,
        output_padding: _Size = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: _Size = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        n = self._rank
        in_channels, out_channels, groups = _channels(name, in_channels, out_channels, groups)
        if padding_mode != "zeros":
            raise ValueError(
                f"{name}: only 'zeros' padding mode is supported, got {padding_mode!r}"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple("kernel_size", kernel_size, n)
        self.stride = _tuple("stride", stride, n)
        self.padding = _tuple("padding", padding, n)
        self.output_padding = _tuple("output_padding", output_padding, n)
        self.dilation = _tuple("dilation", dilation, n)
        self.padding_mode = padding_mode
        # PyTorch computes fan_in from the weight's second axis for every convolution,
        # transposed or not.
        fan_in = out_channels // groups * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in)
        shape = (in_channels, out_channels // groups, *self.kernel_size)
        self.weight = _uniform(shape, bound, dtype, device)
        if bias:
            self.bias = _uniform((out_channels,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def _output_padding(self, x: Tensor, output_size: Sequence[int] | None) -> tuple:
        """``output_padding``, or the one that gives ``output_size`` (its last ``rank``
        entries), as PyTorch's ``_output_padding``."""
        if output_size is None:
            return self.output_padding
        n = self._rank
        size = list(output_size)[-n:]
        if len(size) != n:
            raise ValueError(
                f"{type(self).__name__}: output_size must have {n} or {n + 2} entries, got "
                f"{list(output_size)}"
            )
        pads = []
        for i in range(n):
            lo = ((x.shape[x.dim() - n + i] - 1) * self.stride[i] - 2 * self.padding[i]
                  + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            if not lo <= size[i] < lo + self.stride[i]:
                raise ValueError(
                    f"{type(self).__name__}: requested an output size of {size}, but valid "
                    f"sizes range from {lo} to {lo + self.stride[i] - 1} (for an input of "
                    f"{x.shape[x.dim() - n:]})"
                )
            pads.append(size[i] - lo)
        return tuple(pads)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """The transposed convolution of ``input`` with ``weight``, plus ``bias``.

        Parameters
        ----------
        input : Tensor
            ``(N, in_channels, *spatial)`` or unbatched ``(in_channels, *spatial)``.
        output_size : sequence of int, optional
            The spatial size wanted (or the whole shape), which picks ``output_padding``
            among the sizes a strided convolution maps to one. Default: ``None``.

        Returns
        -------
        Tensor
            ``(N, out_channels, *out_spatial)`` (unbatched: without ``N``).

        Raises
        ------
        ValueError
            When ``output_size`` is not reachable with this stride.
        remat.ShapeError
            When the input's rank or channel count does not match.

        Examples
        --------
        >>> up = remat.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
        >>> up(remat.ones(1, 4, 5, 5)).shape
        (1, 2, 9, 9)
        >>> up(remat.ones(1, 4, 5, 5), output_size=(10, 10)).shape
        (1, 2, 10, 10)
        """
        return getattr(remat, self._fn)(
            input, self.weight, self.bias, self.stride, self.padding,
            self._output_padding(input, output_size), self.groups, self.dilation,
        )

    def extra_repr(self) -> str:
        """The channels, ``kernel_size`` and ``stride``, then the settings that differ from
        the defaults (PyTorch's format)."""
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self._rank:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._rank:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._rank:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


_DOC = """{rank}-D transposed convolution over ``(N, C, {spatial})`` (or unbatched) inputs, as
    ``torch.nn.{name}``: the input gradient of a ``Conv{rank}d`` with the same weight, so a
    stride makes the spatial axes larger (decoders, GAN generators, U-Nets).

    The weight has shape ``(in_channels, out_channels // groups, *kernel_size)``; weight and
    bias are drawn as PyTorch draws them, U(-1/√fan_in, 1/√fan_in) with ``fan_in =
    out_channels // groups * prod(kernel_size)``, from remat's seeded generator. Each output
    axis has ``(size - 1)·stride - 2·padding + dilation·(kernel_size - 1) + output_padding + 1``
    positions.

    Parameters
    ----------
    in_channels : int
        Channels of the input, ``>= 1``.
    out_channels : int
        Channels of the output, ``>= 1``.
    kernel_size : int or tuple of int
        Size of the kernel; an int is used for every spatial axis.
    stride : int or tuple of int, optional
        Step between the input positions' windows in the output. Default: ``1``.
    padding : int or tuple of int, optional
        Positions removed from both ends of each output axis. Default: ``0``.
    output_padding : int or tuple of int, optional
        Positions added at the end of each output axis (smaller than ``stride``).
        Default: ``0``.
    groups : int, optional
        Blocked connections; must divide both channel counts. Default: ``1``.
    bias : bool, optional
        Learn a bias of shape ``(out_channels,)``. Default: ``True``.
    dilation : int or tuple of int, optional
        Spacing between kernel elements. Default: ``1``.
    padding_mode : str, optional
        ``"zeros"`` only, as in PyTorch. Default: ``"zeros"``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When a channel count or ``groups`` is not an int.
    ValueError
        When a channel count or ``groups`` is below 1, ``groups`` does not divide both
        channel counts, ``padding_mode`` is not ``"zeros"``, or a size tuple has the wrong
        length.

    Examples
    --------
    >>> m = remat.nn.{name}(4, 2, 2, stride=2)
    >>> m.weight.shape
    {wshape}
    >>> m(remat.ones(1, 4, {ones})).shape
    {oshape}
    """


class ConvTranspose1d(_ConvTransposeNd):
    __doc__ = _DOC.format(rank=1, spatial="L", name="ConvTranspose1d", wshape="(4, 2, 2)",
                          ones="3", oshape="(1, 2, 6)")
    _rank = 1
    _fn = "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    __doc__ = _DOC.format(rank=2, spatial="H, W", name="ConvTranspose2d",
                          wshape="(4, 2, 2, 2)", ones="3, 3", oshape="(1, 2, 6, 6)")
    _rank = 2
    _fn = "conv_transpose2d"


class ConvTranspose3d(_ConvTransposeNd):
    __doc__ = _DOC.format(rank=3, spatial="D, H, W", name="ConvTranspose3d",
                          wshape="(4, 2, 2, 2, 2)", ones="3, 3, 3", oshape="(1, 2, 6, 6, 6)")
    _rank = 3
    _fn = "conv_transpose3d"
