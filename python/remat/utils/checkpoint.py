"""``torch.utils.checkpoint``'s names over remat's checkpointing: the same objects as
``remat.checkpoint``, ``remat.checkpoint_sequential`` and ``remat.set_checkpoint_early_stop``
(PyTorch's keywords such as ``use_reentrant`` and ``preserve_rng_state`` are accepted there),
plus selective checkpointing: ``CheckpointPolicy`` and
``create_selective_checkpoint_contexts``, whose result is passed as ``context_fn=``, and
``GraphExecGroup`` (several backward calls sharing one recompute per checkpoint)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from .._remat import _graph_exec_group_enter, _SavePolicy
from ..checkpoint import checkpoint, checkpoint_sequential, set_checkpoint_early_stop

__all__ = [
    "checkpoint", "checkpoint_sequential", "set_checkpoint_early_stop", "CheckpointPolicy",
    "create_selective_checkpoint_contexts", "GraphExecGroup",
]


class GraphExecGroup:
    """Backward calls inside one ``with GraphExecGroup():`` block recompute each checkpointed
    region at most once (PyTorch's ``torch.utils.checkpoint.GraphExecGroup``).

    Without a group, every backward (or ``grad``) that reaches a checkpoint recomputes it,
    and the recomputed tensors are dropped when that backward ends. Inside a group they are
    kept until the block ends, so backward calls over different parts of one graph (for
    example ``grad`` of a later output with respect to an earlier one, then of that one with
    respect to the input) share one recompute. The backward calls must cover disjoint parts
    of the graph: a saved tensor one of them used is freed and not recomputed for another
    (``remat.GraphError``, as without a group). Groups do not nest, and a group belongs to
    the thread that entered it.

    Raises
    ------
    remat.CheckpointError
        On entering a group inside another (a ``RuntimeError``, as PyTorch's), or exiting it
        on another thread.

    Examples
    --------
    >>> from remat.utils.checkpoint import GraphExecGroup, checkpoint
    >>> runs = []
    >>> def fn(x):
    ...     runs.append(1)
    ...     y = x.sin().cos()
    ...     return y, y.sin().cos()
    >>> x = remat.randn(3, requires_grad=True)
    >>> y, z = checkpoint(fn, x, use_reentrant=False)
    >>> with GraphExecGroup():
    ...     (gy,) = remat.autograd.grad(z, y, grad_outputs=remat.ones(3))
    ...     (gx,) = remat.autograd.grad(y, x, grad_outputs=gy)
    >>> len(runs)  # the forward and one recompute
    2
    """

    def __init__(self) -> None:
        self._open: Any = None

    def __enter__(self) -> GraphExecGroup:
        self._open = _graph_exec_group_enter()
        return self

    def __exit__(self, *exc: object) -> None:
        opened, self._open = self._open, None
        if opened is not None:
            opened.close()


class CheckpointPolicy(enum.Enum):
    """What a selective checkpoint does with one op output (PyTorch's names).

    A policy callable returns one of these for each op output of a checkpointed function:
    ``MUST_SAVE`` and ``PREFER_SAVE`` keep it (the recompute takes it instead of running the
    op; remat treats both alike, PyTorch lets a compiler override the ``PREFER`` ones),
    ``MUST_RECOMPUTE`` and ``PREFER_RECOMPUTE`` drop it (the recompute runs the op again),
    ``MUST_OFFLOAD`` keeps it in host memory (a device output is copied to the host and
    back; a CPU output is kept as it is). A policy may also return a bool: True is
    ``MUST_SAVE``, False ``PREFER_RECOMPUTE``.

    Parameters
    ----------
    value : int or CheckpointPolicy
        Looks a member up by its value (0 to 4), as any ``enum.Enum``.
    names, module, qualname, type, start, boundary : optional
        ``enum.Enum``'s functional API for creating a new enum; they do not apply here
        (a member lookup ignores all but ``names``, and ``names`` raises ``TypeError``,
        since this enum cannot be extended). Default: ``None`` (``start``: 1).

    Raises
    ------
    ValueError
        When ``value`` is not one of the members' values.
    TypeError
        When ``names`` is given (an enum with members cannot be extended).

    Examples
    --------
    >>> from remat.utils.checkpoint import CheckpointPolicy
    >>> CheckpointPolicy(0)
    <CheckpointPolicy.MUST_SAVE: 0>
    >>> [p.name for p in CheckpointPolicy]
    ['MUST_SAVE', 'PREFER_SAVE', 'MUST_RECOMPUTE', 'PREFER_RECOMPUTE', 'MUST_OFFLOAD']
    >>> w = remat.randn(128, 128, requires_grad=True)
    >>> def mlp(t):
    ...     return ((t @ w).tanh() @ w).tanh()
    >>> def keep_matmuls(op_name, output):
    ...     if op_name == "matmul":
    ...         return CheckpointPolicy.MUST_SAVE
    ...     return CheckpointPolicy.PREFER_RECOMPUTE
    >>> x = remat.randn(128, 128)
    >>> base = remat.memory_allocated()
    >>> y = remat.checkpoint(mlp, x, policy=keep_matmuls)
    >>> remat.memory_allocated() - base  # the output and two matmul outputs, 64 KiB each
    196608
    """

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
    ``checkpoint_name`` tags) or ``policy_fn(ctx, op_name, output) -> CheckpointPolicy``.

    Unlike PyTorch, ``policy_fn`` receives remat's op name (a str), not an ``OpOverload``;
    functions in the list stand for their ``__name__`` (``remat.matmul`` is
    ``"matmul"``). The policy is asked during the forward only (the recompute reuses its
    answers), so ``ctx.is_recompute`` is always False. The returned function is read by
    ``checkpoint``, never called.

    Parameters
    ----------
    policy_fn_or_list : list of str or callable
        The op names (or functions) whose outputs are kept (everything else is
        recomputed), or ``policy_fn(ctx, op_name, output)`` returning a
        :class:`CheckpointPolicy` (or a bool) per op output.
    allow_cache_entry_mutation : bool, optional
        Accepted for PyTorch compatibility and ignored. Default: ``False``.

    Returns
    -------
    callable
        A ``context_fn`` for ``checkpoint(..., context_fn=...)`` carrying the policy;
        calling it raises ``NotImplementedError``.

    Raises
    ------
    TypeError
        When the argument is neither a list (tuple, set) nor a callable, or a list entry
        has no name.

    Examples
    --------
    >>> from remat.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts
    >>> w = remat.randn(128, 128, requires_grad=True)
    >>> def mlp(t):
    ...     return ((t @ w).tanh() @ w).tanh()
    >>> x = remat.randn(128, 128)
    >>> base = remat.memory_allocated()
    >>> y = checkpoint(mlp, x, use_reentrant=False)
    >>> remat.memory_allocated() - base  # only the output
    65536
    >>> ctx = create_selective_checkpoint_contexts(["matmul"])
    >>> y = checkpoint(mlp, x, use_reentrant=False, context_fn=ctx)
    >>> remat.memory_allocated() - base  # the output and both matmul outputs
    196608
    >>> seen = []
    >>> def policy_fn(ctx, op_name, output):
    ...     seen.append(op_name)
    ...     return False
    >>> y = checkpoint(mlp, x, context_fn=create_selective_checkpoint_contexts(policy_fn))
    >>> seen
    ['matmul', 'tanh', 'matmul', 'tanh']
    """
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
