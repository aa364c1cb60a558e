"""``remat.nn.utils``: gradient clipping with ``torch.nn.utils``'s names and formulas."""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable
from typing import Any

import remat

from .._remat import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_float(t: Tensor) -> Tensor:
    return t if t.dtype.is_floating_point else t.float()


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

    Computed under ``no_grad``, each tensor's norm in its own dtype; the total has the
    promoted dtype of the tensors (float64 if any is float64, as PyTorch's), and the tensors
    are not changed.

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
        A 0-d tensor of the tensors' (promoted) float dtype; ``tensor(0.)`` (float32) when
        ``tensors`` is empty.

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
        norms = [remat.norm(_as_float(t.detach()), norm_type) for t in ts]
        # PyTorch stacks the norms with type promotion: float64 if any tensor is float64.
        dtype = remat.float64 if any(n.dtype == remat.float64 for n in norms) else None
        if dtype is not None:
            norms = [n.to(dtype) for n in norms]
        device = norms[0].device
        total = remat.norm(remat.stack([n.to(device) for n in norms]), norm_type)
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
    separately (e.g. with :func:`get_total_norm`). As in PyTorch, the coefficient is
    computed in ``total_norm``'s dtype and each gradient is multiplied by it (cast to the
    gradient's dtype); a NaN total gives a NaN coefficient, which every gradient is then
    multiplied by, and an infinite one gives 0. Parameters without a gradient are skipped.

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
    grads = _grads(parameters)
    if not grads:
        return
    max_norm = float(max_norm)
    with remat.no_grad():
        coef = remat.clamp(max_norm / (total_norm.detach() + 1e-6), max=1.0)
        if coef.item() == 1.0:  # multiplying by one changes nothing
            return
        cast: dict = {}
        for g in grads:
            key = (g.dtype, str(g.device))
            if key not in cast:
                cast[key] = coef.to(g.device).to(g.dtype)
            g.mul_(cast[key])


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale all gradients together so their total ``norm_type``-norm is at most
    ``max_norm`` (PyTorch's ``coef = min(1, max_norm / (total + 1e-6))``, computed in the
    total's dtype). Returns the total norm before clipping, as a 0-d tensor.

    Call it between ``loss.backward()`` and ``optimizer.step()``. The total is the norm of
    all gradients as if concatenated (:func:`get_total_norm`), in their dtype (float64
    gradients give a float64 total and are clipped in float64); parameters without a
    gradient are skipped. As in PyTorch (with ``error_if_nonfinite=False``), a NaN total
    makes every gradient NaN, and an infinite one multiplies them by 0 (so an infinite
    element becomes NaN).

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
        The total norm before clipping, a 0-d tensor of the gradients' (promoted) dtype.

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
    if isinstance(parameters, Tensor):
        params = [parameters]
    else:
        params = list(parameters)
        if isinstance(parameters, types.GeneratorType) and not params:
            warnings.warn(
                "`parameters` is an empty generator, no gradient clipping will occur.",
                stacklevel=2,
            )
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
    tensor([ 1.0000, -0.5000])
    """
    clip_value = float(clip_value)
    with remat.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
