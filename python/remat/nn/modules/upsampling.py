"""Upsampling modules with ``torch.nn``'s names and arguments (``Upsample``,
``UpsamplingNearest2d``, ``UpsamplingBilinear2d``; PyTorch's path
``torch.nn.modules.upsampling``): each calls ``F.interpolate``."""

from __future__ import annotations

from typing import Any

from ..._remat import Tensor
from ..._remat import interpolate as _interpolate
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resizes the spatial axes of its input, as ``torch.nn.Upsample``: ``F.interpolate``
    with the module's ``size`` or ``scale_factor``, ``mode`` and ``align_corners``.

    Parameters
    ----------
    size : int or tuple of int, optional
        The output's spatial size. Default: ``None``.
    scale_factor : float or tuple of float, optional
        The multiplier of each spatial size. Default: ``None``.
    mode : str, optional
        ``"nearest"``, ``"nearest-exact"``, ``"linear"``, ``"bilinear"``, ``"trilinear"`` or
        ``"area"``. Default: ``"nearest"``.
    align_corners : bool, optional
        For the linear modes (see ``F.interpolate``). Default: ``None``.
    recompute_scale_factor : bool, optional
        Compute positions from the output size rather than from ``scale_factor``.
        Default: ``None``.

    Raises
    ------
    ValueError
        At the call, as ``F.interpolate`` (neither or both of ``size`` and
        ``scale_factor``, an unknown mode).

    Examples
    --------
    >>> up = remat.nn.Upsample(scale_factor=2, mode="nearest")
    >>> up(remat.tensor([[[1.0, 2.0]]]))
    tensor([[[1., 1., 2., 2.]]])
    >>> up
    Upsample(scale_factor=2.0, mode='nearest')
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """``F.interpolate`` of ``input`` with the module's settings.

        Parameters
        ----------
        input : Tensor
            ``(N, C, *spatial)`` with 1 to 3 spatial axes.

        Returns
        -------
        Tensor
            The resized tensor.

        Raises
        ------
        ValueError
            As ``F.interpolate``.

        Examples
        --------
        >>> remat.nn.Upsample(size=3, mode="linear", align_corners=True)(
        ...     remat.tensor([[[0.0, 1.0]]]))
        tensor([[[0.0000, 0.5000, 1.0000]]])
        """
        return _interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                            recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        """PyTorch's format: the size or scale factor, then the mode.

        Returns
        -------
        str
            What ``repr`` shows between the parentheses.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Upsample(size=4).extra_repr()
        "size=4, mode='nearest'"
        """
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """2-D nearest-neighbour upsampling, as ``torch.nn.UpsamplingNearest2d``:
    ``Upsample(size, scale_factor, mode="nearest")``.

    Parameters
    ----------
    size : int or tuple of int, optional
        The output's spatial size. Default: ``None``.
    scale_factor : float or tuple of float, optional
        The multiplier of each spatial size. Default: ``None``.

    Raises
    ------
    ValueError
        At the call, as ``F.interpolate``.

    Examples
    --------
    >>> remat.nn.UpsamplingNearest2d(scale_factor=2)(remat.ones(1, 1, 2, 2)).shape
    (1, 1, 4, 4)
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-D bilinear upsampling with ``align_corners=True``, as
    ``torch.nn.UpsamplingBilinear2d``.

    Parameters
    ----------
    size : int or tuple of int, optional
        The output's spatial size. Default: ``None``.
    scale_factor : float or tuple of float, optional
        The multiplier of each spatial size. Default: ``None``.

    Raises
    ------
    ValueError
        At the call, as ``F.interpolate``.

    Examples
    --------
    >>> remat.nn.UpsamplingBilinear2d(size=(3, 3))(remat.ones(1, 1, 2, 2)).shape
    (1, 1, 3, 3)
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
