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
    """The ``norm_type``-norm of the norms of ``tensors`` (as if they were concatenated)."""
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
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``."""
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
    Returns the total norm before clipping, as a 0-d tensor."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(params), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(
    parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with remat.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
