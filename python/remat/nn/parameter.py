"""``remat.nn.Parameter``: a module parameter is a leaf Tensor that requires grad (as
``torch.nn.parameter``)."""

from __future__ import annotations

from typing import Any

import remat

from .._remat import Tensor

__all__ = ["Parameter"]


class _ParameterMeta(type):
    """``isinstance(x, Parameter)`` is True for every leaf Tensor that requires grad."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return _is_parameter(obj)


def _is_parameter(obj: Any) -> bool:
    return isinstance(obj, Tensor) and obj.is_leaf and obj.requires_grad


def _is_leaf_float(obj: Any) -> bool:
    """A leaf float Tensor (that may not require grad): what ``register_parameter``
    accepts."""
    return isinstance(obj, Tensor) and obj.is_leaf and obj.dtype.is_floating_point


class Parameter(metaclass=_ParameterMeta):
    """A module parameter: ``Parameter(data)`` returns a leaf Tensor with ``requires_grad``.

    ``data`` may be a Tensor (its storage is shared, as with ``torch.nn.Parameter``), a NumPy
    array or nested lists. There is no separate Parameter class: any leaf Tensor that requires
    grad is a parameter, and ``isinstance(t, Parameter)`` checks exactly that. Assigning one
    to an attribute of a :class:`Module` registers it. (So, unlike PyTorch, a tensor made
    with ``requires_grad=False`` assigned to a new attribute stays a plain attribute: register
    a frozen parameter with :meth:`Module.register_parameter`; a registered parameter stays
    one after ``requires_grad_(False)``, and re-assigning it to its own name keeps it.)

    Parameters
    ----------
    data : Tensor, numpy.ndarray or nested list of float, optional
        The values. A Tensor is detached and its storage shared (not copied); anything else
        goes through ``remat.tensor`` (Python floats become float32). Default: ``None`` (an
        empty float32 tensor of shape ``(0,)``).
    requires_grad : bool, optional
        Whether the result tracks gradients. Default: ``True``.

    Returns
    -------
    Tensor
        A leaf Tensor (``is_leaf`` is True) with ``requires_grad`` set as asked.

    Raises
    ------
    remat.DTypeError
        When ``requires_grad`` is True and ``data`` is not floating point (only float tensors
        can require gradients), or when ``data`` holds no numbers (e.g. strings).

    Examples
    --------
    >>> w = remat.nn.Parameter(remat.tensor([1.0, 2.0]))
    >>> w
    tensor([1., 2.], requires_grad=True)
    >>> w.is_leaf, isinstance(w, remat.nn.Parameter)
    (True, True)
    >>> isinstance(remat.tensor([1.0, 2.0]), remat.nn.Parameter)
    False
    """

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = remat.zeros(0)
        t = data.detach() if isinstance(data, Tensor) else remat.tensor(data)
        t.requires_grad = requires_grad
        return t
