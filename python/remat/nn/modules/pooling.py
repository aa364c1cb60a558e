"""Pooling modules with ``torch.nn``'s names and arguments (``MaxPool1d/2d/3d``,
``AvgPool1d/2d/3d``, ``AdaptiveAvgPool1d/2d/3d``; as ``torch.nn.modules.pooling``): each calls
the engine's function."""

from __future__ import annotations

from typing import Any

import remat

from ..._remat import Tensor
from .module import Module

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
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
        """Max-pool ``x`` (``remat.max_pool1d/2d/3d``).

        Parameters
        ----------
        x : Tensor
            Input ``(N, C, *spatial)`` or unbatched ``(C, *spatial)``.

        Returns
        -------
        Tensor or tuple of (Tensor, Tensor)
            The pooled tensor, or ``(output, indices)`` with ``return_indices``.

        Raises
        ------
        remat.ShapeError
            When the input rank is wrong or the padded input is smaller than the kernel.
        ValueError
            When a size is not positive or ``padding`` exceeds half the kernel.
        TypeError
            When a size is not an int or a tuple of ints.

        Examples
        --------
        >>> remat.nn.MaxPool2d(5)(remat.ones(1, 1, 4, 4))
        Traceback (most recent call last):
            ...
        remat.ShapeError: max_pool2d: the padded input of spatial size (4, 4) is smaller ...
        """
        return getattr(remat, self._fn)(
            x, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        """``"kernel_size=..., stride=..., padding=..., dilation=..., ceil_mode=..."``."""
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over ``(N, C, L)`` (or unbatched ``(C, L)``) inputs.

    Each output element is the maximum of a window of ``kernel_size`` elements (spaced by
    ``dilation``); windows move by ``stride`` over the input padded with ``-inf`` by
    ``padding`` on both sides. Each output size is ``(size + 2·padding - dilation·(k-1) - 1)
    // stride + 1`` (rounded up instead with ``ceil_mode``). The arguments are stored as
    given and checked by ``remat.max_pool1d`` when the module is called.

    Parameters
    ----------
    kernel_size : int or tuple of 1 int
        Size of the window.
    stride : int or tuple of 1 int or None, optional
        Step of the window. Default: ``None`` (``kernel_size``).
    padding : int or tuple of 1 int, optional
        Implicit ``-inf`` padding on both sides, at most half the (dilated) kernel size.
        Default: ``0``.
    dilation : int or tuple of 1 int, optional
        Spacing between the elements of a window. Default: ``1``.
    return_indices : bool, optional
        Also return the positions of the maxima (int64, flat within each channel's
        spatial plane), as ``(output, indices)``. Default: ``False``.
    ceil_mode : bool, optional
        Round the output size up, so a partial window at the end counts. Default: ``False``.

    Raises
    ------
    TypeError
        At call time, when a size is not an int or a tuple of ints (the constructor checks
        nothing).
    ValueError
        At call time, when a size is not positive, a tuple has the wrong length, or
        ``padding`` exceeds half the kernel.
    remat.ShapeError
        At call time, when the input is not 2-D or 3-D, or is smaller than the
        kernel.

    Examples
    --------
    >>> x = remat.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])
    >>> remat.nn.MaxPool1d(2)(x)
    tensor([[[3., 5., 4.]]])
    >>> out, idx = remat.nn.MaxPool1d(3, stride=1, return_indices=True)(x)
    >>> out, idx
    (tensor([[[3., 5., 5., 5.]]]), tensor([[[1, 3, 3, 3]]]))
    """

    _fn = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) inputs.

    Each output element is the maximum of a window of ``kernel_size`` elements (spaced by
    ``dilation``); windows move by ``stride`` over the input padded with ``-inf`` by
    ``padding`` on both sides. Each output size is ``(size + 2·padding - dilation·(k-1) - 1)
    // stride + 1`` (rounded up instead with ``ceil_mode``). The arguments are stored as
    given and checked by ``remat.max_pool2d`` when the module is called.

    Parameters
    ----------
    kernel_size : int or tuple of 2 int
        Size of the window.
    stride : int or tuple of 2 int or None, optional
        Step of the window. Default: ``None`` (``kernel_size``).
    padding : int or tuple of 2 int, optional
        Implicit ``-inf`` padding on both sides, at most half the (dilated) kernel size.
        Default: ``0``.
    dilation : int or tuple of 2 int, optional
        Spacing between the elements of a window. Default: ``1``.
    return_indices : bool, optional
        Also return the positions of the maxima (int64, flat within each channel's
        spatial plane), as ``(output, indices)``. Default: ``False``.
    ceil_mode : bool, optional
        Round the output size up, so a partial window at the end counts. Default: ``False``.

    Raises
    ------
    TypeError
        At call time, when a size is not an int or a tuple of ints (the constructor checks
        nothing).
    ValueError
        At call time, when a size is not positive, a tuple has the wrong length, or
        ``padding`` exceeds half the kernel.
    remat.ShapeError
        At call time, when the input is not 3-D or 4-D, or is smaller than the
        kernel.

    Examples
    --------
    >>> pool = remat.nn.MaxPool2d(2)
    >>> pool
    MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    >>> pool(remat.arange(16.0).reshape(1, 1, 4, 4))
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    >>> remat.nn.MaxPool2d(3, stride=2, padding=1)(remat.ones(1, 3, 32, 32)).shape
    (1, 3, 16, 16)
    """

    _fn = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) inputs.

    Each output element is the maximum of a window of ``kernel_size`` elements (spaced by
    ``dilation``); windows move by ``stride`` over the input padded with ``-inf`` by
    ``padding`` on both sides. Each output size is ``(size + 2·padding - dilation·(k-1) - 1)
    // stride + 1`` (rounded up instead with ``ceil_mode``). The arguments are stored as
    given and checked by ``remat.max_pool3d`` when the module is called.

    Parameters
    ----------
    kernel_size : int or tuple of 3 int
        Size of the window.
    stride : int or tuple of 3 int or None, optional
        Step of the window. Default: ``None`` (``kernel_size``).
    padding : int or tuple of 3 int, optional
        Implicit ``-inf`` padding on both sides, at most half the (dilated) kernel size.
        Default: ``0``.
    dilation : int or tuple of 3 int, optional
        Spacing between the elements of a window. Default: ``1``.
    return_indices : bool, optional
        Also return the positions of the maxima (int64, flat within each channel's
        spatial plane), as ``(output, indices)``. Default: ``False``.
    ceil_mode : bool, optional
        Round the output size up, so a partial window at the end counts. Default: ``False``.

    Raises
    ------
    TypeError
        At call time, when a size is not an int or a tuple of ints (the constructor checks
        nothing).
    ValueError
        At call time, when a size is not positive, a tuple has the wrong length, or
        ``padding`` exceeds half the kernel.
    remat.ShapeError
        At call time, when the input is not 4-D or 5-D, or is smaller than the
        kernel.

    Examples
    --------
    >>> remat.nn.MaxPool3d(2)(remat.ones(1, 2, 4, 4, 4)).shape
    (1, 2, 2, 2, 2)
    """

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
        """Average-pool ``x`` (``remat.avg_pool1d/2d/3d``).

        Parameters
        ----------
        x : Tensor
            Input ``(N, C, *spatial)`` or unbatched ``(C, *spatial)``.

        Returns
        -------
        Tensor
            The pooled tensor.

        Raises
        ------
        remat.ShapeError
            When the input rank is wrong or the padded input is smaller than the kernel.
        ValueError
            When a size is not positive, ``padding`` exceeds half the kernel or
            ``divisor_override`` is 0.
        TypeError
            When a size is not an int or a tuple of ints.

        Examples
        --------
        >>> remat.nn.AvgPool2d(2, divisor_override=1)(remat.arange(16.0).reshape(1, 1, 4, 4))
        tensor([[[[10., 18.],
                  [42., 50.]]]])
        """
        return getattr(remat, self._fn)(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )

    def extra_repr(self) -> str:
        """``"kernel_size=..., stride=..., padding=..."``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling over ``(N, C, L)`` (or unbatched ``(C, L)``) inputs.

    Each output element is the mean of a window of ``kernel_size`` elements; windows move by
    ``stride`` over the input zero-padded by ``padding`` on both sides. Each output size is
    ``(size + 2·padding - k) // stride + 1`` (rounded up instead with ``ceil_mode``). The
    arguments are stored as given and checked by ``remat.avg_pool1d`` when the module is
    called.

    Parameters
    ----------
    kernel_size : int or tuple of 1 int
        Size of the window.
    stride : int or tuple of 1 int or None, optional
        Step of the window. Default: ``None`` (``kernel_size``).
    padding : int or tuple of 1 int, optional
        Implicit zero padding on both sides, at most half the kernel size. Default: ``0``.
    ceil_mode : bool, optional
        Round the output size up, so a partial window at the end counts. Default: ``False``.
    count_include_pad : bool, optional
        Count the padded zeros in the divisor; with ``False`` a window is divided by the
        number of real elements in it. Default: ``True``.
    divisor_override : int or None, optional
        Divide every window sum by this instead. Default: ``None``.

    Raises
    ------
    TypeError
        At call time, when a size is not an int or a tuple of ints (the constructor checks
        nothing).
    ValueError
        At call time, when a size is not positive, a tuple has the wrong length, ``padding``
        exceeds half the kernel, or ``divisor_override`` is 0.
    remat.ShapeError
        At call time, when the input is not 2-D or 3-D, or is smaller than the
        kernel.

    Examples
    --------
    >>> x = remat.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])
    >>> remat.nn.AvgPool1d(2)(x)
    tensor([[[2.0000, 3.5000, 2.0000]]])
    """

    _fn = "avg_pool1d"


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling over ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) inputs.

    Each output element is the mean of a window of ``kernel_size`` elements; windows move by
    ``stride`` over the input zero-padded by ``padding`` on both sides. Each output size is
    ``(size + 2·padding - k) // stride + 1`` (rounded up instead with ``ceil_mode``). The
    arguments are stored as given and checked by ``remat.avg_pool2d`` when the module is
    called.

    Parameters
    ----------
    kernel_size : int or tuple of 2 int
        Size of the window.
    stride : int or tuple of 2 int or None, optional
        Step of the window. Default: ``None`` (``kernel_size``).
    padding : int or tuple of 2 int, optional
        Implicit zero padding on both sides, at most half the kernel size. Default: ``0``.
    ceil_mode : bool, optional
        Round the output size up, so a partial window at the end counts. Default: ``False``.
    count_include_pad : bool, optional
        Count the padded zeros in the divisor; with ``False`` a window is divided by the
        number of real elements in it. Default: ``True``.
    divisor_override : int or None, optional
        Divide every window sum by this instead. Default: ``None``.

    Raises
    ------
    TypeError
        At call time, when a size is not an int or a tuple of ints (the constructor checks
        nothing).
    ValueError
        At call time, when a size is not positive, a tuple has the wrong length, ``padding``
        exceeds half the kernel, or ``divisor_override`` is 0.
    remat.ShapeError
        At call time, when the input is not 3-D or 4-D, or is smaller than the
        kernel.

    Examples
    --------
    >>> remat.nn.AvgPool2d(2)(remat.arange(16.0).reshape(1, 1, 4, 4))
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
    >>> pool = remat.nn.AvgPool2d(3, stride=1, padding=1)
    >>> pool(remat.ones(1, 1, 3, 3))[0, 0, 0]
    tensor([0.4444, 0.6667, 0.4444])
    >>> pool.count_include_pad = False
    >>> pool(remat.ones(1, 1, 3, 3))[0, 0, 0]
    tensor([1., 1., 1.])
    """

    _fn = "avg_pool2d"


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) inputs.

    Each output element is the mean of a window of ``kernel_size`` elements; windows move by
    ``stride`` over the input zero-padded by ``padding`` on both sides. Each output size is
    ``(size + 2·padding - k) // stride + 1`` (rounded up instead with ``ceil_mode``). The
    arguments are stored as given and checked by ``remat.avg_pool3d`` when the module is
    called.

    Parameters
    ----------
    kernel_size : int or tuple of 3 int
        Size of the window.
    stride : int or tuple of 3 int or None, optional
        Step of the window. Default: ``None`` (``kernel_size``).
    padding : int or tuple of 3 int, optional
        Implicit zero padding on both sides, at most half the kernel size. Default: ``0``.
    ceil_mode : bool, optional
        Round the output size up, so a partial window at the end counts. Default: ``False``.
    count_include_pad : bool, optional
        Count the padded zeros in the divisor; with ``False`` a window is divided by the
        number of real elements in it. Default: ``True``.
    divisor_override : int or None, optional
        Divide every window sum by this instead. Default: ``None``.

    Raises
    ------
    TypeError
        At call time, when a size is not an int or a tuple of ints (the constructor checks
        nothing).
    ValueError
        At call time, when a size is not positive, a tuple has the wrong length, ``padding``
        exceeds half the kernel, or ``divisor_override`` is 0.
    remat.ShapeError
        At call time, when the input is not 4-D or 5-D, or is smaller than the
        kernel.

    Examples
    --------
    >>> remat.nn.AvgPool3d(2)(remat.ones(2, 4, 4, 4)).shape
    (2, 2, 2, 2)
    """

    _fn = "avg_pool3d"


class _AdaptiveAvgPoolNd(Module):
    _fn = ""  # the remat function each subclass calls

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        """Average-pool ``x`` to ``output_size`` (``remat.adaptive_avg_pool1d/2d/3d``).

        Parameters
        ----------
        x : Tensor
            Input ``(N, C, *spatial)`` or unbatched ``(C, *spatial)``.

        Returns
        -------
        Tensor
            ``(N, C, *output_size)`` (unbatched: without ``N``).

        Raises
        ------
        remat.ShapeError
            When the input rank is wrong or an input or output size is 0.
        ValueError
            When a tuple ``output_size`` has the wrong length.
        TypeError
            When ``output_size`` is not an int or a tuple of ints.

        Examples
        --------
        >>> remat.nn.AdaptiveAvgPool2d(1)(remat.arange(16.0).reshape(1, 1, 4, 4))
        tensor([[[[7.5]]]])
        """
        return getattr(remat, self._fn)(x, self.output_size)

    def extra_repr(self) -> str:
        """``"output_size=..."``."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """1-D adaptive average pooling to ``output_size``.

    The input ``(N, C, L)`` (or unbatched ``(C, L)``) is averaged over windows
    chosen so that the output has exactly ``output_size`` positions per spatial axis: output
    ``i`` of an axis of size ``S`` averages input positions ``floor(i·S/out)`` to
    ``ceil((i+1)·S/out)`` (exclusive), as PyTorch.

    Parameters
    ----------
    output_size : int or tuple of 1 int
        The length of the output. Checked when the module is called.

    Raises
    ------
    TypeError
        At call time, when ``output_size`` is not an int or a tuple of ints.
    ValueError
        At call time, when a tuple ``output_size`` has the wrong length.
    remat.ShapeError
        At call time, when the input has the wrong rank, or an input or output size is 0.

    Examples
    --------
    >>> x = remat.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]])
    >>> remat.nn.AdaptiveAvgPool1d(2)(x)
    tensor([[[2., 3.]]])
    """

    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """2-D adaptive average pooling to ``output_size`` (``None`` entries keep the size).

    The input ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) is averaged over windows
    chosen so that the output has exactly ``output_size`` positions per spatial axis: output
    ``i`` of an axis of size ``S`` averages input positions ``floor(i·S/out)`` to
    ``ceil((i+1)·S/out)`` (exclusive), as PyTorch. A ``None`` entry keeps that input size.

    Parameters
    ----------
    output_size : int or tuple of 2 int (entries may be None)
        The spatial size of the output; an int is used for every spatial axis. Checked
        when the module is called.

    Raises
    ------
    TypeError
        At call time, when ``output_size`` is not an int or a tuple of ints.
    ValueError
        At call time, when a tuple ``output_size`` has the wrong length.
    remat.ShapeError
        At call time, when the input has the wrong rank, or an input or output size is 0.

    Examples
    --------
    >>> gap = remat.nn.AdaptiveAvgPool2d((1, 1))
    >>> gap
    AdaptiveAvgPool2d(output_size=(1, 1))
    >>> gap(remat.ones(8, 16, 7, 7)).shape
    (8, 16, 1, 1)
    >>> remat.nn.AdaptiveAvgPool2d((None, 2))(remat.ones(1, 3, 5, 6)).shape
    (1, 3, 5, 2)
    """

    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-D adaptive average pooling to ``output_size``.

    The input ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) is averaged over windows
    chosen so that the output has exactly ``output_size`` positions per spatial axis: output
    ``i`` of an axis of size ``S`` averages input positions ``floor(i·S/out)`` to
    ``ceil((i+1)·S/out)`` (exclusive), as PyTorch. A ``None`` entry keeps that input size.

    Parameters
    ----------
    output_size : int or tuple of 3 int (entries may be None)
        The spatial size of the output; an int is used for every spatial axis. Checked
        when the module is called.

    Raises
    ------
    TypeError
        At call time, when ``output_size`` is not an int or a tuple of ints.
    ValueError
        At call time, when a tuple ``output_size`` has the wrong length.
    remat.ShapeError
        At call time, when the input has the wrong rank, or an input or output size is 0.

    Examples
    --------
    >>> remat.nn.AdaptiveAvgPool3d((2, 1, 1))(remat.ones(1, 2, 4, 4, 4)).shape
    (1, 2, 2, 1, 1)
    """

    _fn = "adaptive_avg_pool3d"
