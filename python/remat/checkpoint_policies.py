"""Selective checkpoint policies (JAX's ``jax.checkpoint_policies``): what a checkpoint keeps
from its forward instead of recomputing. Pass one as ``policy=`` to ``remat.checkpoint``,
``checkpoint_segment``, ``checkpoint_sequential`` or ``Module.activation_checkpointing_policy``.

- ``nothing_saveable`` (the default): keep nothing, recompute the whole function.
- ``everything_saveable``: keep every op output (no recompute; the memory of the plain run).
- ``dots_saveable``: keep the outputs of matrix products, linear layers and convolutions;
  recompute the cheap elementwise ops and norms around them (most of the memory saving at a
  fraction of the recompute time).
- ``save_only_these_names(*names)``: keep only the tensors tagged with
  ``remat.checkpoint_name(x, name)``.
- ``offload_these_names(*names)``: keep the tagged tensors in host memory (device tensors are
  copied to the host and back when the recompute needs them; CPU tensors are kept as they are).

A callable ``policy(op_name, output) -> CheckpointPolicy`` (or a bool) decides per op output;
for a ``checkpoint_name`` tensor ``op_name`` is its tag. A kept output is never recomputed:
the recompute takes it instead of running the op, so gradients stay bit-identical."""

from __future__ import annotations

from ._remat import _SavePolicy

__all__ = [
    "everything_saveable", "nothing_saveable", "dots_saveable", "save_only_these_names",
    "offload_these_names",
]

everything_saveable = _SavePolicy("everything_saveable")
nothing_saveable = _SavePolicy("nothing_saveable")
dots_saveable = _SavePolicy("dots_saveable")


def _names(fn: str, names: tuple) -> list[str]:
    for n in names:
        if not isinstance(n, str) or not n:
            raise TypeError(f"{fn}: names must be non-empty strings, got {n!r}")
    return list(names)


def save_only_these_names(*names: str) -> _SavePolicy:
    """Keep only the tensors tagged with one of ``names`` by ``remat.checkpoint_name``."""
    return _SavePolicy("save_only_these_names", _names("save_only_these_names", names))


def offload_these_names(*names: str) -> _SavePolicy:
    """Keep the tensors tagged with one of ``names`` in host memory."""
    return _SavePolicy("offload_these_names", _names("offload_these_names", names))
