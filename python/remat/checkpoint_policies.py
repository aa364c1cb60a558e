"""Selective checkpoint policies (JAX's ``jax.checkpoint_policies``): what a checkpoint keeps
from its forward instead of recomputing. Pass one as ``policy=`` to ``remat.checkpoint``,
``checkpoint_segment``, ``checkpoint_sequential`` or ``Module.activation_checkpointing_policy``.

- ``nothing_saveable`` (the default): keep nothing, recompute the whole function.
- ``everything_saveable``: keep every op output (no op is run again; at least the memory of
  the plain run, more where an op output that backward does not need is kept too).
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
    """Keep only the tensors tagged with one of ``names`` by ``remat.checkpoint_name``.

    A selective checkpoint policy (JAX's ``save_only_these_names``): the forward keeps the
    tagged tensors, and the recompute takes them instead of running the ops that made them;
    everything else is recomputed.

    Parameters
    ----------
    *names : str
        The tags to keep (non-empty strings, as given to ``remat.checkpoint_name``). With
        none, nothing is kept.

    Returns
    -------
    policy
        A policy object for ``policy=`` of ``remat.checkpoint``, ``checkpoint_segment``,
        ``checkpoint_sequential`` or ``Module.activation_checkpointing_policy``.

    Raises
    ------
    TypeError
        When a name is not a non-empty str.

    Examples
    --------
    >>> from remat.checkpoint_policies import save_only_these_names
    >>> save_only_these_names("proj")
    <checkpoint policy save_only_these_names["proj"]>
    >>> w = remat.randn(128, 128, requires_grad=True)
    >>> def mlp(t):
    ...     h = remat.checkpoint_name(t @ w, "proj")
    ...     return (h.tanh() @ w).tanh()
    >>> x = remat.randn(128, 128)
    >>> base = remat.memory_allocated()
    >>> y = remat.checkpoint(mlp, x)  # default policy: only the output (64 KiB) is new
    >>> remat.memory_allocated() - base
    65536
    >>> y = remat.checkpoint(mlp, x, policy=save_only_these_names("proj"))
    >>> remat.memory_allocated() - base  # the output and the kept "proj"
    131072
    >>> y.sum().backward()
    >>> w.grad.shape
    (128, 128)
    """
    return _SavePolicy("save_only_these_names", _names("save_only_these_names", names))


def offload_these_names(*names: str) -> _SavePolicy:
    """Keep the tensors tagged with one of ``names`` in host memory.

    A selective checkpoint policy (JAX's ``offload_these_names``): a tagged tensor on a
    device is copied to the host after the forward and back when the recompute needs it,
    instead of being recomputed; tagged CPU tensors are kept as they are (the same as
    :func:`save_only_these_names`). Everything else is recomputed.

    Parameters
    ----------
    *names : str
        The tags to offload (non-empty strings, as given to ``remat.checkpoint_name``).

    Returns
    -------
    policy
        A policy object for ``policy=`` of ``remat.checkpoint``, ``checkpoint_segment``,
        ``checkpoint_sequential`` or ``Module.activation_checkpointing_policy``.

    Raises
    ------
    TypeError
        When a name is not a non-empty str.

    Examples
    --------
    >>> from remat.checkpoint_policies import offload_these_names
    >>> offload_these_names("proj", "attn")
    <checkpoint policy offload_these_names["proj", "attn"]>
    >>> x = remat.tensor([0.5, 1.0], requires_grad=True)
    >>> def f(t):
    ...     return remat.checkpoint_name(t.sin(), "proj").exp()
    >>> y = remat.checkpoint(f, x, policy=offload_these_names("proj"))
    >>> y.sum().backward()
    >>> x.grad
    tensor([1.4174, 1.2534])
    """
    return _SavePolicy("offload_these_names", _names("offload_these_names", names))
