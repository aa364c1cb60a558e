"""``Dropout`` (as ``torch.nn.modules.dropout``)."""

from __future__ import annotations



import remat

from ... import _validate
from ..._remat import Tensor
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)`` while
    training; the identity in eval mode. Masks come from remat's seeded generator (and are
    replayed exactly when a checkpointed segment is recomputed).

    Parameters
    ----------
    p : float, optional
        Probability of zeroing an element, in ``[0, 1]`` (``p=1`` zeroes everything).
        Default: ``0.5``.
    inplace : bool, optional
        Write the result into the input where remat allows it (an input that takes no
        part in autograd; see ``F.dropout``), else compute it out of place. Default:
        ``False``.

    Raises
    ------
    TypeError
        When ``p`` is not a number (a bool is not one).
    ValueError
        When ``p`` is outside ``[0, 1]`` (or NaN).

    Examples
    --------
    >>> drop = remat.nn.Dropout(0.5)
    >>> remat.manual_seed(0)
    >>> drop(remat.ones(8))
    tensor([0., 2., 2., 0., 0., 0., 2., 2.])
    >>> drop.eval()(remat.ones(4))
    tensor([1., 1., 1., 1.])
    >>> remat.nn.Dropout(1.5)
    Traceback (most recent call last):
        ...
    ValueError: Dropout: p must be in [0.0, 1.0], got 1.5
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        self.p = _validate.in_range("Dropout", "p", p, 0.0, 1.0)
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        """``F.dropout(x, p, training=self.training, inplace=self.inplace)`` (same shape as
        ``x``).

        In training mode each element is zeroed with probability ``p`` and the others are
        scaled by ``1/(1-p)``; in eval mode (``.eval()``) ``x`` comes back unchanged.

        Parameters
        ----------
        x : Tensor
            Floating-point input of any shape.

        Returns
        -------
        Tensor
            Same shape as ``x``.

        Raises
        ------
        remat.DTypeError
            When ``x`` is not floating point (an integer or bool tensor), or is not a Tensor
            and cannot be made one (e.g. a string).

        Examples
        --------
        >>> drop = remat.nn.Dropout(0.5)
        >>> remat.manual_seed(0)
        >>> drop(remat.ones(2, 4))
        tensor([[0., 2., 2., 0.],
                [0., 0., 2., 2.]])
        >>> drop.eval()(remat.ones(2, 4)).shape
        (2, 4)
        """
        return remat.nn.functional.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        """``"p=..., inplace=..."`` (PyTorch's).

        Returns
        -------
        str
            The text inside ``Dropout(...)`` in the module's repr.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Dropout(0.25).extra_repr()
        'p=0.25, inplace=False'
        """
        return f"p={self.p}, inplace={self.inplace}"
