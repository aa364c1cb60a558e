"""``Linear`` and ``Identity`` (as ``torch.nn.modules.linear``), and the parameter-filling helpers
the layers share."""

from __future__ import annotations

import math
from typing import Any


import remat

from ... import _validate
from ..._remat import Tensor
from .module import Module

__all__ = ["Identity", "Linear"]


def _filled(fill: float, shape: tuple, device: Any, dtype: Any) -> Tensor:
    """A leaf parameter of ``shape`` filled with ``fill`` (ones/zeros init of norms, attention)."""
    kw: dict = {} if dtype is None else {"dtype": dtype}
    t = remat.full(shape, fill, **kw)
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    t.requires_grad = True
    return t


def _uniform(shape: tuple, bound: float, dtype: Any, device: Any) -> Tensor:
    """A leaf tensor drawn from U(-bound, bound) with remat's seeded generator."""
    with remat.no_grad():
        u = remat.rand(*shape, dtype=dtype)
        t = (u * (2.0 * bound) - bound).detach()
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    t.requires_grad = True
    return t


class Linear(Module):
    """``y = x @ W.T + b`` with ``W`` of shape ``(out_features, in_features)``.

    Initialised as PyTorch does (kaiming_uniform with a=√5): weight and bias drawn from
    U(-1/√in_features, 1/√in_features) with remat's seeded generator, so ``remat.manual_seed``
    makes the initialisation reproducible. The input is ``(*, in_features)`` (any number of
    leading axes) and the output ``(*, out_features)``.

    Parameters
    ----------
    in_features : int
        Size of the last axis of the input (0 is allowed: weight and bias are then zeros).
    out_features : int
        Size of the last axis of the output.
    bias : bool, optional
        Learn an additive bias ``b`` of shape ``(out_features,)``; with ``False`` the
        ``bias`` attribute is ``None``. Default: ``True``.
    device : str or remat.device, optional
        Where the parameters live. Default: ``None`` (the CPU).
    dtype : remat.dtype, optional
        The parameters' floating dtype. Default: ``None`` (float32).

    Raises
    ------
    TypeError
        When ``in_features`` or ``out_features`` is not an int (a bool or a float is not).
    ValueError
        When ``in_features`` or ``out_features`` is negative.

    Examples
    --------
    >>> lin = remat.nn.Linear(3, 2)
    >>> lin
    Linear(in_features=3, out_features=2, bias=True)
    >>> lin.weight.shape, lin.bias.shape
    ((2, 3), (2,))
    >>> lin(remat.ones(5, 4, 3)).shape
    (5, 4, 2)
    >>> remat.nn.Linear(-1, 2)
    Traceback (most recent call last):
        ...
    ValueError: Linear: in_features must be >= 0, got -1
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        in_features = _validate.integer("Linear", "in_features", in_features, minimum=0)
        out_features = _validate.integer("Linear", "out_features", out_features, minimum=0)
        self.in_features = in_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = _uniform((out_features, in_features), bound, dtype, device)
        if bias:
            self.bias = _uniform((out_features,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        """``x @ weight.T + bias`` (``remat.linear``).

        Parameters
        ----------
        x : Tensor
            Input of shape ``(*, in_features)``.

        Returns
        -------
        Tensor
            Output of shape ``(*, out_features)``.

        Raises
        ------
        remat.ShapeError
            When the last axis of ``x`` is not ``in_features``.

        Examples
        --------
        >>> lin = remat.nn.Linear(2, 1)
        >>> with remat.no_grad():
        ...     _ = lin.weight.copy_(remat.tensor([[1.0, 2.0]]))
        ...     _ = lin.bias.fill_(0.5)
        >>> lin(remat.tensor([[1.0, 1.0], [0.0, 3.0]]))
        tensor([[3.5000],
                [6.5000]], grad_fn=<linear>)
        """
        return remat.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        """``"in_features=..., out_features=..., bias=..."``.

        Returns
        -------
        str
            The text inside ``Linear(...)`` in the module's repr; ``bias`` says whether a
            bias is learned.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> remat.nn.Linear(3, 2, bias=False).extra_repr()
        'in_features=3, out_features=2, bias=False'
        """
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Identity(Module):
    """Returns its input unchanged.

    A placeholder where a layer is optional (e.g. a projection that is only needed when the
    sizes differ). The constructor takes no arguments (unlike PyTorch's, which ignores any).

    Raises
    ------
    TypeError
        When the constructor is given any argument.

    Examples
    --------
    >>> x = remat.tensor([1.0, 2.0])
    >>> remat.nn.Identity()(x) is x
    True
    """

    def forward(self, x: Any) -> Any:
        """Return ``x`` itself (the same object).

        Parameters
        ----------
        x : Any
            Anything (it is not inspected).

        Returns
        -------
        Any
            ``x`` unchanged.

        Raises
        ------
        TypeError
            When called with other than one argument.

        Examples
        --------
        >>> x = remat.ones(2, 3)
        >>> remat.nn.Identity()(x) is x
        True
        """
        return x
