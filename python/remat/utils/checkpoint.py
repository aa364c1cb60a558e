"""``torch.utils.checkpoint``'s names over remat's checkpointing: the same objects as
``remat.checkpoint``, ``remat.checkpoint_sequential`` and ``remat.set_checkpoint_early_stop``
(PyTorch's keywords such as ``use_reentrant`` and ``preserve_rng_state`` are accepted there),
plus selective checkpointing: ``CheckpointPolicy`` and
``create_selective_checkpoint_contexts``, whose result is passed as ``context_fn=``."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from .._remat import _SavePolicy
from ..checkpoint import checkpoint, checkpoint_sequential, set_checkpoint_early_stop

__all__ = [
    "checkpoint", "checkpoint_sequential", "set_checkpoint_early_stop", "CheckpointPolicy",
    "create_selective_checkpoint_contexts",
]


class CheckpointPolicy(enum.Enum):
    """What a selective checkpoint does with one op output (PyTorch's names)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_OFFLOAD = 4


class SelectiveCheckpointContext:
    """The ``ctx`` a PyTorch-style ``policy_fn(ctx, op, ...)`` receives. remat asks the policy
    only during the forward (the recompute reuses its answers), so ``is_recompute`` is
    False."""

    is_recompute = False


def create_selective_checkpoint_contexts(
    policy_fn_or_list: Callable[..., Any] | list, allow_cache_entry_mutation: bool = False
) -> Callable[[], Any]:
    """PyTorch's selective activation checkpointing: ``checkpoint(fn, x,
    context_fn=create_selective_checkpoint_contexts(policy))``. ``policy`` is a list of op
    names to keep (remat's names: ``"matmul"``, ``"linear"``, ``"conv2d"``, ... or
    ``checkpoint_name`` tags) or ``policy_fn(ctx, op_name, output) -> CheckpointPolicy``."""
    del allow_cache_entry_mutation
    if isinstance(policy_fn_or_list, (list, tuple, set)):
        names = set()
        for op in policy_fn_or_list:
            name = op if isinstance(op, str) else getattr(op, "__name__", None)
            if not name:
                raise TypeError(
                    "create_selective_checkpoint_contexts: list entries must be op names "
                    f"(str), got {op!r}"
                )
            names.add(name)

        def policy(op: str, output: Any) -> Any:
            keep = op in names
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    elif callable(policy_fn_or_list):
        fn = policy_fn_or_list
        ctx = SelectiveCheckpointContext()

        def policy(op: str, output: Any) -> Any:
            return fn(ctx, op, output)

    else:
        raise TypeError(
            "create_selective_checkpoint_contexts: expected a list of op names or a callable, "
            f"got {type(policy_fn_or_list).__name__}"
        )

    def context_fn() -> Any:
        raise NotImplementedError(
            "this context_fn is read by remat.checkpoint(..., context_fn=...), not called"
        )

    context_fn._remat_policy = _SavePolicy.from_callable(policy)  # type: ignore[attr-defined]
    return context_fn
