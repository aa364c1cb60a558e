"""Named tuples returned by ops with several results, as ``torch.return_types``:
``remat.max(t, dim)`` returns a ``return_types.max`` with fields ``values`` and ``indices``
(a tuple: unpackable and indexable)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from remat._remat import Tensor

__all__ = ["max", "min"]


class max(NamedTuple):  # named after the op, as torch.return_types.max
    """``(values, indices)`` of ``remat.max(t, dim)``."""

    values: Tensor
    indices: Tensor


class min(NamedTuple):
    """``(values, indices)`` of ``remat.min(t, dim)``."""

    values: Tensor
    indices: Tensor
