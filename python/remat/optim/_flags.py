"""PyTorch's implementation switches (``foreach``, ``fused``, ``capturable``,
``differentiable``), which its optimizers take and scripts pass.

remat has one implementation per optimizer, so the switches select no code path: they are
kept in the param groups (as PyTorch keeps them, so state dicts carry the same keys) and
checked as PyTorch checks them. ``differentiable=True`` asks for a step that autograd can
differentiate through; remat's steps update in place without recording a graph, so it is
refused rather than silently ignored.
"""

from __future__ import annotations

from typing import Any


def check(owner: str, group: dict) -> None:
    """Check a param group's switches as PyTorch does, and refuse ``differentiable=True``.

    Parameters
    ----------
    owner : str
        The optimizer's class name, for the messages.
    group : dict
        The param group (switches it lacks are not checked).

    Raises
    ------
    RuntimeError
        When ``fused`` is combined with ``differentiable`` or ``foreach`` (PyTorch's
        messages).
    NotImplementedError
        When ``differentiable`` is true.
    """
    fused: Any = group.get("fused")
    if fused and group.get("differentiable"):
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and group.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if group.get("differentiable"):
        raise NotImplementedError(
            f"{owner}: differentiable=True is not supported: remat's optimizers update the "
            "parameters in place without recording a graph, so autograd cannot differentiate "
            "through a step"
        )
