"""Named tuples returned by ops with several results, as ``torch.return_types``:
``remat.max(t, dim)`` returns a ``return_types.max`` with fields ``values`` and ``indices``
(a tuple: unpackable and indexable)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from remat._remat import Tensor

__all__ = ["max", "min", "sort", "topk"]


class max(NamedTuple):  # named after the op, as torch.return_types.max
    """``(values, indices)`` of ``remat.max(t, dim)``.

    A named tuple, as ``torch.return_types.max``: unpackable and indexable.

    Parameters
    ----------
    values : Tensor
        The largest value along the reduced axis.
    indices : Tensor
        Where each one is along that axis (int64).

    Raises
    ------
    TypeError
        When a field is missing.

    Examples
    --------
    >>> r = remat.max(remat.tensor([[1.0, 5.0], [7.0, 2.0]]), 1)
    >>> r
    max(values=tensor([5., 7.]), indices=tensor([1, 0]))
    >>> values, indices = r
    >>> indices
    tensor([1, 0])
    """

    values: Tensor
    indices: Tensor


class min(NamedTuple):
    """``(values, indices)`` of ``remat.min(t, dim)``.

    A named tuple, as ``torch.return_types.min``: unpackable and indexable.

    Parameters
    ----------
    values : Tensor
        The smallest value along the reduced axis.
    indices : Tensor
        Where each one is along that axis (int64).

    Raises
    ------
    TypeError
        When a field is missing.

    Examples
    --------
    >>> r = remat.min(remat.tensor([[1.0, 5.0], [7.0, 2.0]]), dim=0)
    >>> r
    min(values=tensor([1., 2.]), indices=tensor([0, 1]))
    >>> r.values
    tensor([1., 2.])
    """

    values: Tensor
    indices: Tensor


class sort(NamedTuple):
    """``(values, indices)`` of ``remat.sort(t, dim)``.

    A named tuple, as ``torch.return_types.sort``: unpackable and indexable.

    Parameters
    ----------
    values : Tensor
        The sorted tensor.
    indices : Tensor
        Where each value was along the sorted axis (int64).

    Raises
    ------
    TypeError
        When a field is missing.

    Examples
    --------
    >>> values, indices = remat.sort(remat.tensor([2.0, 1.0]))
    >>> indices
    tensor([1, 0])
    """

    values: Tensor
    indices: Tensor


class topk(NamedTuple):
    """``(values, indices)`` of ``remat.topk(t, k)``.

    A named tuple, as ``torch.return_types.topk``: unpackable and indexable.

    Parameters
    ----------
    values : Tensor
        The ``k`` largest (or smallest) values along the axis, in order.
    indices : Tensor
        Where each one was along that axis (int64).

    Raises
    ------
    TypeError
        When a field is missing.

    Examples
    --------
    >>> remat.topk(remat.tensor([1.0, 3.0, 2.0]), 2).indices
    tensor([1, 2])
    """

    values: Tensor
    indices: Tensor
