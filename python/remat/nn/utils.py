"""``remat.nn.utils``: gradient clipping with ``torch.nn.utils``'s names and formulas."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import remat

from .._remat import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _grads(parameters: Any) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(
    tensors: Iterable[Tensor] | Tensor,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """The ``norm_type``-norm of the norms of ``tensors`` (as if they were concatenated).

    Computed under ``no_grad`` on detached float32 copies; the tensors are not changed.

    Parameters
    ----------
    tensors : Tensor or iterable of Tensor
        The tensors (typically gradients, e.g. ``[p.grad for p in params]``).
    norm_type : float, optional
        The p of the p-norm; ``float("inf")`` for the max-abs norm. Default: ``2.0``.
    error_if_nonfinite : bool, optional
        Raise when the total is NaN or infinite. Default: ``False``.

    Returns
    -------
    Tensor
        A 0-d float32 tensor; ``tensor(0.)`` when ``tensors`` is empty.

    Raises
    ------
    RuntimeError
        With ``error_if_nonfinite``, when the total norm is not finite.
    AttributeError
        When an element is not a Tensor.

    Examples
    --------
    >>> grads = [remat.tensor([3.0, 4.0]), remat.tensor([12.0])]
    >>> remat.nn.utils.get_total_norm(grads)
    tensor(13.)
    >>> remat.nn.utils.get_total_norm(grads, norm_type=1)
    tensor(19.)
    """
    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not ts:
        return remat.tensor(0.0)
    with remat.no_grad():
        norms = remat.stack([remat.norm(t.detach().float(), norm_type) for t in ts])
        total = remat.norm(norms, norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(
    parameters: Iterable[Tensor] | Tensor, max_norm: float, total_norm: Tensor
) -> None:
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``.

    The second half of :func:`clip_grad_norm_`, for when the total norm was computed
    separately (e.g. with :func:`get_total_norm`). Parameters without a gradient are
    skipped; nothing is scaled when the coefficient is not below 1 (also when it is NaN).

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
        The parameters whose ``.grad`` to scale.
    max_norm : float
        The largest total norm allowed.
    total_norm : Tensor
        The total norm of the gradients (a one-element tensor).

    Returns
    -------
    None

    Raises
    ------
    AttributeError
        When ``total_norm`` is not a Tensor (it has no ``item``).
    TypeError
        When ``parameters`` is neither a Tensor nor iterable.

    Examples
    --------
    >>> w = remat.nn.Parameter(remat.tensor([0.0, 0.0]))
    >>> w.grad = remat.tensor([3.0, 4.0])
    >>> total = remat.nn.utils.get_total_norm([w.grad])
    >>> remat.nn.utils.clip_grads_with_norm_([w], 2.5, total)
    >>> [round(g, 4) for g in w.grad.tolist()]
    [1.5, 2.0]
    """
    coef = float(max_norm) / (float(total_norm.item()) + 1e-6)
    if coef < 1.0:
        with remat.no_grad():
            for g in _grads(parameters):
                g.mul_(coef)


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale all gradients together so their total ``norm_type``-norm is at most
    ``max_norm`` (PyTorch's ``coef = max_norm / (total + 1e-6)``, applied when below 1).
    Returns the total norm before clipping, as a 0-d tensor.

    Call it between ``loss.backward()`` and ``optimizer.step()``. The total is the norm of
    all gradients as if concatenated (:func:`get_total_norm`); parameters without a gradient
    are skipped. With a NaN total the gradients are left unchanged (PyTorch would scale them
    by NaN); with an infinite one they are multiplied by 0 (so an infinite element becomes
    NaN).

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
        The parameters whose ``.grad`` to clip (e.g. ``model.parameters()``).
    max_norm : float
        The largest total norm allowed.
    norm_type : float, optional
        The p of the p-norm; ``float("inf")`` for the max-abs norm. Default: ``2.0``.
    error_if_nonfinite : bool, optional
        Raise instead of clipping when the total norm is NaN or infinite. Default:
        ``False``.
    foreach : bool or None, optional
        Accepted for PyTorch compatibility and ignored. Default: ``None``.

    Returns
    -------
    Tensor
        The total norm before clipping, a 0-d float32 tensor.

    Raises
    ------
    RuntimeError
        With ``error_if_nonfinite``, when the total norm is not finite.
    TypeError
        When ``parameters`` is neither a Tensor nor iterable.

    Examples
    --------
    >>> w = remat.nn.Parameter(remat.tensor([0.0, 0.0]))
    >>> w.grad = remat.tensor([3.0, 4.0])
    >>> remat.nn.utils.clip_grad_norm_([w], max_norm=1.0)
    tensor(5.)
    >>> [round(g, 4) for g in w.grad.tolist()]
    [0.6, 0.8]
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(params), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(
    parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` in place.

    Parameters without a gradient are skipped.

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
        The parameters whose ``.grad`` to clamp.
    clip_value : float
        The largest absolute value allowed (should be positive).
    foreach : bool or None, optional
        Accepted for PyTorch compatibility and ignored. Default: ``None``.

    Returns
    -------
    None

    Raises
    ------
    TypeError
        When ``parameters`` is neither a Tensor nor iterable, or ``clip_value`` is not a
        number (e.g. ``None``).
    ValueError
        When ``clip_value`` is a string that is not a number.

    Examples
    --------
    >>> w = remat.nn.Parameter(remat.tensor([0.0, 0.0]))
    >>> w.grad = remat.tensor([3.0, -0.5])
    >>> remat.nn.utils.clip_grad_value_(w, 1.0)
    >>> w.grad
    tensor([ 1. , -0.5])
    """
    clip_value = float(clip_value)
    with remat.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
