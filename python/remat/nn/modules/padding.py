"""Padding modules with ``torch.nn``'s names and arguments (``ZeroPad1d/2d``,
``ConstantPad1d/2d``, ``ReflectionPad1d/2d``, ``ReplicationPad1d/2d``; as
``torch.nn.modules.padding``): each calls the engine's ``pad``."""

from __future__ import annotations

from typing import Any

import remat

from ..._remat import Tensor
from .module import Module

__all__ = [
    "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
    "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
]



class _PadNd(Module):
    _rank = 1
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self._rank) if isinstance(padding, int) else tuple(
            padding)
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        """Pad ``x`` with ``remat.pad`` (this class's mode, ``padding`` and ``value``).

        Parameters
        ----------
        x : Tensor
            The input; its trailing axes are padded.

        Returns
        -------
        Tensor
            The padded tensor.

        Raises
        ------
        ValueError
            When ``padding`` does not fit the input's rank, or a reflection is not smaller
            than its axis.

        Examples
        --------
        >>> remat.nn.ZeroPad1d((1, 2, 3))(remat.ones(1, 3))
        Traceback (most recent call last):
            ...
        ValueError: pad: padding length must be even and at most twice the number of dims ...
        """
        if self._mode == "constant":
            return remat.pad(x, self.padding, mode="constant", value=self.value)
        return remat.pad(x, self.padding, mode=self._mode)

    def extra_repr(self) -> str:
        """The padding tuple, and ``value`` for the constant and zero paddings."""
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


class ConstantPad1d(_PadNd):
    """Pad the last axis with a constant: ``ConstantPad1d(padding, value)``.

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"constant"``) on each
    call: an int pads the last axis by that amount on both sides, a tuple gives ``(left,
    right)`` (negative entries crop). The tuple's length is not checked against the module's
    dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 2 int
        The padding sizes, ``(left, right)``.
    value : float
        The fill value (required, as in PyTorch).

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> x = remat.tensor([[1.0, 2.0, 3.0]])
    >>> remat.nn.ConstantPad1d(2, 9.0)(x)
    tensor([[9., 9., 1., 2., 3., 9., 9.]])
    >>> remat.nn.ConstantPad1d((0, 1), -1.0)(x)
    tensor([[ 1.,  2.,  3., -1.]])
    """

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """Pad the last two axes with a constant: ``ConstantPad2d(padding, value)``.

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"constant"``) on each
    call: an int pads the last two axes by that amount on both sides, a tuple gives ``(left,
    right, top, bottom)`` (negative entries crop). The tuple's length is not checked against the
    module's dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 4 int
        The padding sizes, ``(left, right, top, bottom)``.
    value : float
        The fill value (required, as in PyTorch).

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> pad = remat.nn.ConstantPad2d(1, 0.5)
    >>> pad
    ConstantPad2d((1, 1, 1, 1), value=0.5)
    >>> pad(remat.ones(1, 1, 1))
    tensor([[[0.5000, 0.5000, 0.5000],
             [0.5000, 1.0000, 0.5000],
             [0.5000, 0.5000, 0.5000]]])
    """

    _rank = 2


class ZeroPad1d(_PadNd):
    """Pad the last axis with zeros.

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"constant"``) on each
    call: an int pads the last axis by that amount on both sides, a tuple gives ``(left,
    right)`` (negative entries crop). The tuple's length is not checked against the module's
    dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 2 int
        The padding sizes, ``(left, right)``.

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> x = remat.tensor([[1.0, 2.0, 3.0]])
    >>> remat.nn.ZeroPad1d(1)(x)
    tensor([[0., 1., 2., 3., 0.]])
    >>> remat.nn.ZeroPad1d((2, 0))(x)
    tensor([[0., 0., 1., 2., 3.]])
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    """Pad the last two axes with zeros.

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"constant"``) on each
    call: an int pads the last two axes by that amount on both sides, a tuple gives ``(left,
    right, top, bottom)`` (negative entries crop). The tuple's length is not checked against the
    module's dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 4 int
        The padding sizes, ``(left, right, top, bottom)``.

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> remat.nn.ZeroPad2d((1, 1, 0, 1))(remat.ones(1, 2, 2))
    tensor([[[0., 1., 1., 0.],
             [0., 1., 1., 0.],
             [0., 0., 0., 0.]]])
    >>> remat.nn.ZeroPad2d(1)(remat.ones(1, 1, 2, 2)).shape
    (1, 1, 4, 4)
    """

    _rank = 2


class ReflectionPad1d(ZeroPad1d):
    """Pad the last axis with its mirror image (the edge itself is not repeated).

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"reflect"``) on each
    call: an int pads the last axis by that amount on both sides, a tuple gives ``(left,
    right)`` (negative entries crop). The tuple's length is not checked against the module's
    dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 2 int
        The padding sizes, ``(left, right)``.

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> x = remat.tensor([[1.0, 2.0, 3.0]])
    >>> remat.nn.ReflectionPad1d(2)(x)
    tensor([[3., 2., 1., 2., 3., 2., 1.]])
    >>> remat.nn.ReflectionPad1d(3)(x)
    Traceback (most recent call last):
        ...
    ValueError: pad: reflect padding (3, 3) on axis 1 of size 3 (input (1, 3)) must be ...
    """

    _mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pad the last two axes with their mirror image (the edges are not repeated).

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"reflect"``) on each
    call: an int pads the last two axes by that amount on both sides, a tuple gives ``(left,
    right, top, bottom)`` (negative entries crop). The tuple's length is not checked against the
    module's dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 4 int
        The padding sizes, ``(left, right, top, bottom)``.

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> remat.nn.ReflectionPad2d(1)(remat.arange(4.0).reshape(1, 1, 2, 2))
    tensor([[[[3., 2., 3., 2.],
              [1., 0., 1., 0.],
              [3., 2., 3., 2.],
              [1., 0., 1., 0.]]]])
    """

    _rank = 2


class ReplicationPad1d(ZeroPad1d):
    """Pad the last axis by repeating its edge.

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"replicate"``) on each
    call: an int pads the last axis by that amount on both sides, a tuple gives ``(left,
    right)`` (negative entries crop). The tuple's length is not checked against the module's
    dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 2 int
        The padding sizes, ``(left, right)``.

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> remat.nn.ReplicationPad1d((1, 2))(remat.tensor([[1.0, 2.0, 3.0]]))
    tensor([[1., 1., 2., 3., 3., 3.]])
    """

    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pad the last two axes by repeating their edges.

    ``padding`` is stored as a tuple and passed to ``remat.pad`` (mode ``"replicate"``) on each
    call: an int pads the last two axes by that amount on both sides, a tuple gives ``(left,
    right, top, bottom)`` (negative entries crop). The tuple's length is not checked against the
    module's dimensionality: ``remat.pad`` pads as many trailing axes as it has pairs.

    Parameters
    ----------
    padding : int or tuple of 4 int
        The padding sizes, ``(left, right, top, bottom)``.

    Raises
    ------
    TypeError
        When ``padding`` is neither an int nor iterable (the message does not name the
        class).
    ValueError
        At call time, when ``padding`` has more entries than twice the input's rank (or an
        odd number), or (reflection only) a padding is not smaller than its axis.

    Examples
    --------
    >>> remat.nn.ReplicationPad2d(1)(remat.arange(4.0).reshape(1, 2, 2))
    tensor([[[0., 0., 1., 1.],
             [0., 0., 1., 1.],
             [2., 2., 3., 3.],
             [2., 2., 3., 3.]]])
    """

    _rank = 2
