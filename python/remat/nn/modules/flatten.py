"""``Flatten`` (as ``torch.nn.modules.flatten``)."""

from __future__ import annotations


import numpy as np

import remat

from ... import _validate
from ..._remat import Tensor
from .module import Module, _fmt_shape

__all__ = ["Flatten"]


class Flatten(Module):
    """Flattens axes ``start_dim..end_dim`` (inclusive) into one.

    With the defaults, ``(N, *)`` becomes ``(N, prod(*))``: the usual step between
    convolutional and linear layers. A 0-d input becomes shape ``(1,)``.

    Parameters
    ----------
    start_dim : int, optional
        First axis to flatten (negative counts from the end). Default: ``1``.
    end_dim : int, optional
        Last axis to flatten, inclusive (negative counts from the end). Default: ``-1``.

    Raises
    ------
    TypeError
        When ``start_dim`` or ``end_dim`` is not an int.

    Examples
    --------
    >>> flat = remat.nn.Flatten()
    >>> flat
    Flatten(start_dim=1, end_dim=-1)
    >>> flat(remat.ones(2, 3, 4)).shape
    (2, 12)
    >>> remat.nn.Flatten(0, 1)(remat.ones(2, 3, 4)).shape
    (6, 4)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = _validate.integer("Flatten", "start_dim", start_dim)
        self.end_dim = _validate.integer("Flatten", "end_dim", end_dim)

    def forward(self, x: Tensor) -> Tensor:
        """``x`` reshaped with axes ``start_dim..end_dim`` merged.

        Parameters
        ----------
        x : Tensor
            Input of any shape.

        Returns
        -------
        Tensor
            ``x.reshape(...)`` with the merged axis (a view where possible).

        Raises
        ------
        remat.ShapeError
            When the axes are out of range for ``x`` or ``start_dim`` comes after
            ``end_dim`` (e.g. the default ``start_dim=1`` on a 1-D input).

        Examples
        --------
        >>> remat.nn.Flatten()(remat.ones(5))
        Traceback (most recent call last):
            ...
        remat.ShapeError: Flatten: start_dim=1, end_dim=-1 out of range for shape (5,)
        """
        shape = tuple(x.shape)
        nd = len(shape)
        s = self.start_dim + nd if self.start_dim < 0 else self.start_dim
        e = self.end_dim + nd if self.end_dim < 0 else self.end_dim
        if nd == 0:
            return x.reshape(1)
        if not 0 <= s <= e < nd:
            raise remat.ShapeError(
                f"Flatten: start_dim={self.start_dim}, end_dim={self.end_dim} out of range "
                f"for shape {_fmt_shape(shape)}"
            )
        merged = int(np.prod(shape[s : e + 1], dtype=np.int64))
        return x.reshape(*(shape[:s] + (merged,) + shape[e + 1 :]))

    def extra_repr(self) -> str:
        """``"start_dim=..., end_dim=..."``.

        Returns
        -------
        str
            The text inside ``Flatten(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Flatten(0, 1).extra_repr()
        'start_dim=0, end_dim=1'
        """
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
