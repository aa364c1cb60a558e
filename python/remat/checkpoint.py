"""Checkpointing (activation rematerialisation): the Python face of remat-core's checkpoint API.

Every entry point gives the same gradients as the code without it (bit for bit on the CPU) and
keeps less memory alive between forward and backward; the engine's byte counters prove it.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any, Callable
from collections.abc import Sequence

from . import _pytree, _remat, _replay_tape
from ._remat import Tensor
from .autograd import Function

__all__ = [
    "checkpoint",
    "adaptive_checkpoint",
    "checkpoint_segment",
    "CheckpointGroup",
    "checkpoint_scope",
    "checkpoint_sequential",
    "CheckpointProfiler",
    "gradient_checkpoint_forward",
    "gradient_checkpoint_scope",
    "live_checkpoint_state",
]

live_checkpoint_state = _remat.live_checkpoint_state


class _Outputs:
    """The structure of what a checkpointed function returns (any nesting of tuples, lists,
    dicts, namedtuples, Tensors, ``None`` and other values): the engine sees only the Tensor
    leaves, and the caller gets the original structure back with the segment's outputs in
    place of the Tensors.

    The spec is taken from the forward call only and handed over by :meth:`rebuild`, so the
    runner (which the segment keeps until backward, and calls again to recompute) holds
    nothing of the forward's return value."""

    def __init__(self) -> None:
        self._spec: _pytree.TreeSpec | None = None
        self._recorded = False
        # Which outputs of the forward were inputs handed back unchanged.
        self._passthrough: list[bool] = []

    def flatten(self, out: Any, inputs: Sequence[Tensor] = ()) -> list[Tensor]:
        leaves, spec = _pytree.flatten(out)
        if not self._recorded:
            self._spec, self._recorded = spec, True
            self._passthrough = [any(leaf is t for t in inputs) for leaf in leaves]
        return leaves

    def rebuild(self, tensors: list[Tensor], reentrant: bool = False) -> Any:
        spec, self._spec = self._spec, None
        if spec is None:
            raise RuntimeError("checkpoint: the function's result was not recorded")
        if reentrant and any(self._passthrough):
            tensors = [_ReentrantOutput.wrap(t) if through else t
                       for t, through in zip(tensors, self._passthrough)]
        return _pytree.unflatten(spec, tensors)


class _ReentrantOutput(Function):
    """PyTorch's ``use_reentrant=True`` makes every output, an input handed back unchanged
    included, an output of one autograd node that keeps the inputs until its backward has
    run: a second backward through such an output raises, as through any other output of
    the segment. remat's segments return a handed-back input as it is (PyTorch's
    ``use_reentrant=False``); under ``use_reentrant=True`` it goes through this identity,
    which saves it for one backward."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        return x.reshape(x.shape)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        ctx.saved_tensors  # noqa: B018 - read once: freed after this backward
        return grad

    @classmethod
    def wrap(cls, t: Tensor) -> Tensor:
        if not isinstance(t, Tensor) or not t.requires_grad or not _remat.is_grad_enabled():
            return t
        return cls.apply(t)


def _flatten_inputs(args: Sequence[Any], kwargs: dict) -> tuple[list[Tensor], _pytree.TreeSpec]:
    """Every Tensor in the positional and keyword arguments, at any depth of tuples, lists and
    dicts, becomes a segment input (so gradients flow to it); the spec holds the rest."""
    return _pytree.flatten((tuple(args), dict(kwargs)))


def _runner(fn: Callable[..., Any], spec: _pytree.TreeSpec, outputs: _Outputs):
    """The function the engine runs (forward, then once more to recompute): the inputs put
    back into the call's structure, the result flattened to its Tensors. The runs share a
    tape, so a collective inside ``fn`` talks to the other ranks in the forward only and its
    result is replayed in the recompute (``remat._replay_tape``)."""
    tape = _replay_tape.Tape()

    def run(*tensors: Tensor) -> list[Tensor]:
        args, kwargs = _pytree.unflatten(spec, tensors)
        with _replay_tape.running(tape):
            return outputs.flatten(fn(*args, **kwargs), tensors)

    return run


def _apply(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``fn(*args, **kwargs)``: lets callers that forward arbitrary keywords (a module's call,
    ``gradient_checkpoint_forward``) checkpoint without their keywords being taken for
    ``checkpoint_segment``'s own options."""
    return fn(*args, **kwargs)


def _determinism(op: str, value: bool | str) -> bool:
    """PyTorch's ``determinism_check`` ("default" | "none") or a bool."""
    if isinstance(value, bool):
        return value
    if value == "default":
        return True
    if value == "none":
        return False
    raise ValueError(
        f'{op}: determinism_check must be "default", "none" or a bool, got {value!r}'
    )


def checkpoint_segment(
    fn: Callable[..., Any],
    /,
    *inputs: Any,
    preserve_rng_state: bool = True,
    offload: bool = False,
    determinism_check: bool | str = True,
    name: str | None = None,
    early_stop: bool | None = None,
    policy: Any = None,
    **kwargs: Any,
) -> Any:
    """Run ``fn(*inputs, **kwargs)`` keeping only its inputs for backward; backward re-runs
    ``fn`` once.

    Nothing ``fn``'s ops would save for backward is kept between forward and backward: only
    the segment's inputs are. When backward reaches the segment it recomputes ``fn`` from
    them (with the forward's random draws replayed) and back-propagates through it, so the
    gradients are the same as without the checkpoint (bit for bit on the CPU). ``fn`` may
    return any nesting of tuples, lists, dicts and namedtuples holding Tensors, ``None`` and
    other values; it comes back with the same structure, every Tensor in it an output of
    the segment. Tensors among the inputs, also inside lists, tuples and dicts and passed as
    keywords, are the segment's inputs (they receive gradients), as are parameters captured
    by ``fn``; inputs that do not require grad are fine. Hooks and ``retain_grad()`` on
    tensors inside ``fn`` fire once, on the forward's tensors. Under ``no_grad`` it simply
    calls ``fn``.

    Parameters
    ----------
    fn : callable
        The function to checkpoint (positional only). It must do the same work when it is
        re-run on the same inputs.
    *inputs : Any
        Positional arguments of ``fn``; every Tensor in them, at any depth of tuples, lists
        and dicts, is an input of the segment.
    preserve_rng_state : bool, optional
        Replay the forward's random draws (dropout masks, ``randn`` ...) in the recompute
        from a private stream, leaving the global generator alone. False: the recompute
        draws fresh numbers from the global generator (other values than in the forward,
        so gradients through random ops differ from the plain run's). Default: ``True``.
    offload : bool, optional
        Keep the saved inputs of device (CUDA) tensors in host memory until backward; no
        effect on CPU tensors. Default: ``False``.
    determinism_check : bool or {"default", "none"}, optional
        True (or PyTorch's ``"default"``): the recompute must save exactly as many tensors
        as the forward did; False (or ``"none"``): it may save more (the extra ones are
        dropped). In both cases every saved tensor must have the forward's shape and
        dtype. Default: ``True``.
    name : str, optional
        The segment's name in ``CheckpointProfiler`` records and error messages. Default:
        ``None`` (``fn.__name__``).
    early_stop : bool, optional
        Stop the recompute as soon as every tensor backward needs is recomputed (the rest
        of ``fn`` does not run again). Default: ``None`` (the setting of
        :class:`set_checkpoint_early_stop`, on unless changed).
    policy : optional
        What the forward keeps instead of recomputing: one of
        ``remat.checkpoint_policies`` (``dots_saveable``, ``save_only_these_names(...)``
        ...) or a callable ``(op_name, output) -> CheckpointPolicy`` (or a bool).
        Default: ``None`` (keep nothing).
    **kwargs : Any
        Any other keyword goes to ``fn``.

    Returns
    -------
    Any
        What ``fn`` returns, in the same structure, its Tensors replaced by the segment's
        outputs (recorded for autograd when anything they depend on requires grad).

    Raises
    ------
    TypeError
        When ``fn`` is not callable, or ``policy`` is neither a policy nor a callable (a
        callable policy that returns something other than a ``CheckpointPolicy`` or bool
        raises it when asked).
    ValueError
        When ``determinism_check`` is a string other than ``"default"`` or ``"none"``.
    remat.CheckpointError
        In backward, when the recompute does not match the forward: a saved tensor of
        another shape or dtype, fewer saved tensors (or, with ``determinism_check``, a
        different number), or an engine error while recomputing. An exception raised by
        ``fn`` itself propagates unchanged.

    Examples
    --------
    Only the inputs stay alive between forward and backward:

    >>> x = remat.randn(256, 256, requires_grad=True)
    >>> def block(t):
    ...     return t.tanh().tanh().tanh()
    >>> base = remat.memory_allocated()
    >>> y = block(x).sum()  # plain: the three tanh outputs are kept for backward
    >>> remat.memory_allocated() - base
    786436
    >>> del y
    >>> y = remat.checkpoint_segment(block, x).sum()  # only the 4-byte loss is new
    >>> remat.memory_allocated() - base
    4
    >>> y.backward()  # re-runs block, then back-propagates through it
    >>> g = x.grad.clone()
    >>> x.grad = None
    >>> block(x).sum().backward()
    >>> bool((g == x.grad).all())
    True

    Keywords reach ``fn``; nested results come back in their structure:

    >>> a = remat.tensor([1.0, 2.0], requires_grad=True)
    >>> def scaled(t, *, scale):
    ...     return {"y": t * scale, "n": 2}
    >>> remat.checkpoint_segment(scaled, a, scale=3.0, name="scaled")
    {'y': tensor([3., 6.], grad_fn=<mul>), 'n': 2}

    With early stop (the default) the recompute ends after the last op whose result
    backward needs:

    >>> runs = []
    >>> def f(t):
    ...     h = t.sin().exp()
    ...     runs.append("end")
    ...     return h + 1
    >>> remat.checkpoint_segment(f, a).sum().backward()
    >>> runs
    ['end']
    >>> runs.clear()
    >>> remat.checkpoint_segment(f, a, early_stop=False).sum().backward()
    >>> runs
    ['end', 'end']
    """
    return _segment(fn, inputs, kwargs, preserve_rng_state=preserve_rng_state,
                    offload=offload, determinism_check=determinism_check, name=name,
                    early_stop=early_stop, policy=policy)


def _segment(fn: Callable[..., Any], inputs: Sequence[Any], kwargs: dict, *,
             preserve_rng_state: bool = True, offload: bool = False,
             determinism_check: bool | str = True, name: str | None = None,
             early_stop: bool | None = None, policy: Any = None,
             reentrant: bool = False) -> Any:
    """:func:`checkpoint_segment`, and with ``reentrant`` PyTorch's ``use_reentrant=True``
    rule for inputs handed back as outputs (see ``_ReentrantOutput``)."""
    if not callable(fn):
        raise TypeError(f"checkpoint_segment: fn must be callable, got {type(fn).__name__}")
    outputs = _Outputs()
    tensors, spec = _flatten_inputs(inputs, kwargs)
    outs = _remat.checkpoint_segment(
        _runner(fn, spec, outputs),
        tensors,
        name=name or getattr(fn, "__name__", None),
        preserve_rng_state=preserve_rng_state,
        offload=offload,
        determinism_check=_determinism("checkpoint_segment", determinism_check),
        early_stop=early_stop,
        policy=policy,
    )
    return outputs.rebuild(outs, reentrant)


def checkpoint(
    x: Any,
    /,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], Any] | None = None,
    determinism_check: bool | str = "default",
    debug: bool = False,
    preserve_rng_state: bool = True,
    policy: Any = None,
    **kwargs: Any,
) -> Any:
    """Checkpoint a tensor, or run a function as a checkpoint segment (PyTorch's entry point).

    ``checkpoint(tensor)``: a tensor with the same value whose storage is not kept for
    backward; when backward needs it, it is recomputed from the inputs of the op that
    produced it. ``checkpoint(fn, *args, **kwargs)``: the same as
    :func:`checkpoint_segment` ``(fn, *args, **kwargs)`` (only ``fn``'s inputs are kept;
    backward re-runs ``fn``). PyTorch's keywords are consumed here and never reach ``fn``:
    ``use_reentrant``, ``context_fn``, ``determinism_check``, ``debug``,
    ``preserve_rng_state``, and remat's ``policy``. Every other keyword, even one named
    ``x`` or ``fn``, goes to ``fn``. The gradients are the same as without the checkpoint
    (bit for bit on the CPU).

    Parameters
    ----------
    x : Tensor or callable
        The tensor to checkpoint, or the function to run as a segment (positional only).
    *args : Any
        Positional arguments of ``fn`` (only with a callable ``x``).
    use_reentrant : bool, optional
        remat has one, non-reentrant, mechanism, used whatever the value. One difference
        shows: with ``True`` an input that ``fn`` returns unchanged comes back as an output
        that allows one backward (as PyTorch's reentrant outputs do; a second raises
        ``remat.GraphError``), where ``False`` and ``None`` return the input itself.
        Default: ``None``.
    context_fn : callable, optional
        A selective-checkpointing context made by
        ``remat.utils.checkpoint.create_selective_checkpoint_contexts`` (its policy is
        used, as with ``policy=``); no other context function is supported. Default:
        ``None``.
    determinism_check : {"default", "none"} or bool, optional
        ``"default"`` (or True): the recompute must save exactly as many tensors as the
        forward; ``"none"`` (or False): it may save more. Shapes and dtypes of the saved
        tensors are checked either way. Default: ``"default"``.
    debug : bool, optional
        Accepted for PyTorch compatibility and ignored. Default: ``False``.
    preserve_rng_state : bool, optional
        Replay the forward's random draws in the recompute (see
        :func:`checkpoint_segment`). Default: ``True``.
    policy : optional
        Selective checkpointing: what the forward keeps instead of recomputing (one of
        ``remat.checkpoint_policies`` or a callable ``(op_name, output) ->
        CheckpointPolicy``). Default: ``None`` (keep nothing).
    **kwargs : Any
        Keyword arguments of ``fn``.

    Returns
    -------
    Any
        For a tensor: a Tensor with ``x``'s value (and autograd history) whose storage is
        not kept for backward. For a callable: what ``fn`` returns, its Tensors replaced by
        the segment's outputs.

    Raises
    ------
    TypeError
        When ``x`` is a Tensor and further arguments, keywords or a policy are given, or
        when ``x`` is neither a Tensor nor callable.
    NotImplementedError
        When ``context_fn`` does not come from ``create_selective_checkpoint_contexts``.
    ValueError
        When both ``policy`` and ``context_fn`` are given, or ``determinism_check`` is an
        unknown string.
    remat.CheckpointError
        In backward, when the recompute does not match the forward (see
        :func:`checkpoint_segment`).

    Examples
    --------
    A function: only its inputs are kept, the intermediates are recomputed in backward.

    >>> x = remat.randn(256, 256, requires_grad=True)
    >>> def block(t):
    ...     return t.tanh().tanh().tanh()
    >>> base = remat.memory_allocated()
    >>> y = block(x).sum()
    >>> remat.memory_allocated() - base  # plain run: three 256 KiB activations
    786436
    >>> del y
    >>> y = remat.checkpoint(block, x, use_reentrant=False).sum()
    >>> remat.memory_allocated() - base
    4
    >>> y.backward()
    >>> x.grad.shape
    (256, 256)

    A tensor: its storage is dropped once nothing else holds it.

    >>> del y
    >>> base = remat.memory_allocated()
    >>> h = remat.checkpoint(x.tanh())
    >>> y = h.tanh().sum()
    >>> del h
    >>> remat.memory_allocated() - base  # only the second tanh's output (and the loss)
    262148
    >>> y.backward()

    Selective checkpointing keeps the tagged tensor and recomputes the rest:

    >>> w = remat.randn(128, 128, requires_grad=True)
    >>> def mlp(t):
    ...     h = remat.checkpoint_name(t @ w, "proj")
    ...     return (h.tanh() @ w).tanh()
    >>> inp = remat.randn(128, 128)
    >>> base = remat.memory_allocated()
    >>> out = remat.checkpoint(mlp, inp,
    ...                        policy=remat.checkpoint_policies.save_only_these_names("proj"))
    >>> remat.memory_allocated() - base  # the output and "proj", 64 KiB each
    131072
    """
    if context_fn is not None:
        from_context = getattr(context_fn, "_remat_policy", None)
        if from_context is None:
            raise NotImplementedError(
                "checkpoint: context_fn must come from create_selective_checkpoint_contexts "
                "(other context managers are not supported)"
            )
        if policy is not None:
            raise ValueError("checkpoint: pass either policy= or context_fn=, not both")
        policy = from_context
    if isinstance(x, Tensor):
        if args or kwargs or policy is not None:
            raise TypeError("checkpoint(tensor) takes no further arguments")
        return _remat.checkpoint_tensor(x)
    if callable(x):
        return _segment(
            x,
            args,
            kwargs,
            preserve_rng_state=preserve_rng_state,
            determinism_check=_determinism("checkpoint", determinism_check),
            policy=policy,
            reentrant=use_reentrant is True,
        )
    raise TypeError(f"checkpoint: expected a Tensor or a callable, got {type(x).__name__}")


def adaptive_checkpoint(x: Tensor, threshold_bytes: int) -> Tensor:
    """``checkpoint(x)`` when ``x.nbytes >= threshold_bytes``, else ``x`` unchanged.

    Checkpoint only the tensors large enough to be worth a recompute: a big activation's
    storage is dropped and recomputed in backward, a small one is kept as usual.

    Parameters
    ----------
    x : Tensor
        The tensor to checkpoint.
    threshold_bytes : int
        The smallest ``x.nbytes`` that is checkpointed (taken with ``int()``).

    Returns
    -------
    Tensor
        ``checkpoint(x)`` (same value, storage not kept for backward) when
        ``x.nbytes >= threshold_bytes``, else ``x`` unchanged (the same tensor: same storage
        and ``grad_fn``, in a new Python object).

    Raises
    ------
    TypeError
        When ``x`` is not a Tensor.
    ValueError
        When ``threshold_bytes`` is negative.

    Examples
    --------
    >>> x = remat.randn(16, 16, requires_grad=True)  # float32: 1024 bytes
    >>> base = remat.memory_allocated()
    >>> h = remat.adaptive_checkpoint(x.tanh(), threshold_bytes=2048)  # too small: kept
    >>> y = h.tanh().sum()
    >>> del h
    >>> remat.memory_allocated() - base  # both tanh outputs and the loss
    2052
    >>> del y
    >>> h = remat.adaptive_checkpoint(x.tanh(), threshold_bytes=1024)  # checkpointed
    >>> y = h.tanh().sum()
    >>> del h
    >>> remat.memory_allocated() - base  # h is recomputed in backward, not kept
    1028
    >>> y.backward()
    >>> x.grad.shape
    (16, 16)
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"adaptive_checkpoint: expected a Tensor, got {type(x).__name__}")
    if threshold_bytes < 0:
        raise ValueError(
            f"adaptive_checkpoint: threshold_bytes must be >= 0, got {threshold_bytes}"
        )
    return _remat.adaptive_checkpoint(x, int(threshold_bytes))


class CheckpointGroup:
    """Checkpointed calls whose outputs share one recompute per call, with counts of
    checkpoints, recomputes and bytes saved.

    Each :meth:`checkpoint_fn` call runs a function as a checkpoint segment (only its inputs
    are kept); when backward reaches any of the call's outputs, one recompute serves all of
    them. The group counts its checkpoints, its recomputes and the bytes its calls did not
    keep.

    Parameters
    ----------
    name : str, optional
        The group's name, used for its segments in ``CheckpointProfiler`` records. Default:
        ``None``.
    preserve_rng_state : bool, optional
        Replay the forward's random draws in the recompute (see
        :func:`checkpoint_segment`). Default: ``True``.
    offload : bool, optional
        Keep the saved inputs of device tensors in host memory until backward (no effect
        on CPU tensors). Default: ``False``.

    Raises
    ------
    TypeError
        When ``name`` is not a str or None.

    Examples
    --------
    >>> g = remat.CheckpointGroup("pair")
    >>> x = remat.randn(64, 64, requires_grad=True)
    >>> a, b = g.checkpoint_fn(lambda t: (t.tanh().tanh(), t.sin() * 2), x)
    >>> (a * b).sum().backward()  # one recompute serves a and b
    >>> g.checkpoint_count, g.recompute_count
    (1, 1)
    >>> g.memory_saved > 0
    True
    """

    def __init__(self, name: str | None = None, preserve_rng_state: bool = True,
                 offload: bool = False) -> None:
        self._group = _remat._CheckpointGroup(name, preserve_rng_state, offload)
        self.name = name

    def checkpoint_fn(self, fn: Callable[..., Any], *inputs: Any, **kwargs: Any) -> tuple:
        """Run ``fn(*inputs, **kwargs)`` checkpointed; its outputs share one recompute.

        Inputs and results are handled as by :func:`checkpoint_segment` (Tensors at any
        depth of tuples, lists and dicts are the segment's inputs; the result keeps its
        structure). The first output whose backward runs recomputes all of them.

        Parameters
        ----------
        fn : callable
            The function to run checkpointed.
        *inputs : Any
            Positional arguments of ``fn``.
        **kwargs : Any
            Keyword arguments of ``fn``.

        Returns
        -------
        tuple
            ``fn``'s tuple result, the elements of a list result as a tuple, or a 1-tuple
            of any other result, its Tensors replaced by the segment's outputs.

        Raises
        ------
        TypeError
            When ``fn`` is not callable.
        remat.CheckpointError
            In backward, when the recompute does not match the forward.

        Examples
        --------
        >>> g = remat.CheckpointGroup()
        >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
        >>> g.checkpoint_fn(lambda t: t * 2, x)
        (tensor([2., 4.], grad_fn=<mul>),)
        >>> a, b = g.checkpoint_fn(lambda t, k: (t * k, t + k), x, k=3.0)
        >>> (a + b).sum().backward()
        >>> x.grad
        tensor([4., 4.])
        """
        outputs = _Outputs()
        tensors, spec = _flatten_inputs(inputs, kwargs)
        outs = self._group.checkpoint_fn(_runner(fn, spec, outputs), tensors)
        result = outputs.rebuild(outs)
        if isinstance(result, tuple):
            return result
        return tuple(result) if isinstance(result, list) else (result,)

    @property
    def checkpoint_count(self) -> int:
        """Calls checkpointed through this group (``checkpoint_fn`` calls with grad mode on).

        Examples
        --------
        >>> g = remat.CheckpointGroup()
        >>> _ = g.checkpoint_fn(lambda t: t * 2, remat.ones(2, requires_grad=True))
        >>> g.checkpoint_count
        1
        """
        return self._group.checkpoint_count

    @property
    def recompute_count(self) -> int:
        """Recomputes run for this group's calls (one per call whose outputs reached
        backward).

        Examples
        --------
        >>> g = remat.CheckpointGroup()
        >>> y, = g.checkpoint_fn(lambda t: t.sin(), remat.ones(2, requires_grad=True))
        >>> g.recompute_count
        0
        >>> y.sum().backward()
        >>> g.recompute_count
        1
        """
        return self._group.recompute_count

    @property
    def memory_saved(self) -> int:
        """Bytes the group's calls did not keep: what their ops saved for backward that was
        freed once the forward ended.

        Examples
        --------
        >>> g = remat.CheckpointGroup()
        >>> x = remat.randn(16, 16, requires_grad=True)
        >>> y, = g.checkpoint_fn(lambda t: t.tanh().tanh(), x)  # the inner tanh's output
        >>> g.memory_saved
        1024
        """
        return self._group.memory_saved

    def __repr__(self) -> str:
        return (f"CheckpointGroup(name={self.name!r}, checkpoints={self.checkpoint_count}, "
                f"recomputes={self.recompute_count}, memory_saved={self.memory_saved})")


@contextlib.contextmanager
def checkpoint_scope():
    """Tensors created inside are not kept for backward, even when consumed outside the scope;
    backward recomputes them.

    A context manager (also available as ``remat.gradient_checkpoint_scope``): every tensor
    made on this thread inside the block carries a recipe instead of being saved, so ops
    that would keep it for backward (inside or after the block) keep the recipe, and
    backward recomputes it. Random draws inside are replayed with the same numbers.

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager; ``with remat.checkpoint_scope():`` binds ``None``.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> x = remat.randn(256, 256, requires_grad=True)
    >>> base = remat.memory_allocated()
    >>> with remat.checkpoint_scope():
    ...     h = x.tanh().tanh()
    >>> y = h.tanh().sum()
    >>> del h
    >>> remat.memory_allocated() - base  # only the last tanh's output (and the loss)
    262148
    >>> y.backward()
    >>> x.grad.shape
    (256, 256)
    """
    scope = _remat.scope_enter()
    try:
        yield
    finally:
        scope.close()


gradient_checkpoint_scope = checkpoint_scope

def _sequential_of_inputs(functions: list[Any], segments: Any, inputs: tuple,
                          preserve_rng_state: bool, budget_bytes: int | None) -> Any:
    """PyTorch's deprecated ``checkpoint_sequential(functions, segments, *inputs)``: tuples
    are unpacked into the next layer, and every run of ``len // segments`` layers but the
    last is a checkpoint segment, as PyTorch's implementation cut it."""
    warnings.warn(
        "Giving several inputs to checkpoint_sequential is deprecated (as in PyTorch): pass "
        "one input, a tuple if the first layer takes several",
        DeprecationWarning,
        stacklevel=3,
    )
    if budget_bytes is not None or not isinstance(segments, int) or isinstance(segments, bool):
        raise ValueError(
            "checkpoint_sequential with several inputs takes an int number of segments (a "
            "memory budget is planned for one input)"
        )
    n = len(functions)
    if not 1 <= segments <= max(n, 1):
        raise ValueError(
            f"checkpoint_sequential: segments must be between 1 and {n}, got {segments}"
        )

    def run(start: int, stop: int) -> Callable[..., Any]:
        def forward(*xs: Any) -> Any:
            out: Any = xs
            for f in functions[start:stop]:
                out = f(*out) if isinstance(out, tuple) else f(out)
            return out
        return forward

    size = n // segments
    values: Any = inputs
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        values = checkpoint_segment(run(start, end), *values,
                                    preserve_rng_state=preserve_rng_state)
        if not isinstance(values, tuple):
            values = (values,)
    return run(end, n)(*values)


def checkpoint_sequential(functions: Any, segments: Any, input: Tensor, *args: Any,
                          preserve_rng_state: bool = True, use_reentrant: bool | None = None,
                          budget_bytes: int | None = None, offload: bool = False,
                          policy: Any = None) -> Any:
    """Run a chain of callables (a list or an ``nn.Sequential``) on ``input`` in checkpointed
    segments.

    ``functions[i]`` is applied to the previous output, starting from ``input``. With an int
    ``segments`` the chain is cut into that many runs; every run but the last is a checkpoint
    that keeps only its input (the last runs plainly, as in PyTorch). ``"sqrt"`` uses ⌈√n⌉
    segments. ``segments=None`` with ``budget_bytes=N`` picks the plan with the least recompute
    whose modelled activation memory fits ``N`` bytes, nested (multi-level, Revolve-style)
    schedules included; the budget counts the bytes the step allocates above what is live when
    it starts (parameters, existing gradients, inputs), i.e.
    ``max_memory_allocated() - memory_allocated()`` around forward + backward. The layers are
    measured once per model and input shape (one plan cache, in the engine); a new input
    shape gets a new plan. Under ``no_grad`` the layers simply run. Validation, planning and
    running all happen in the engine; this only turns ``functions`` into a list.
    :func:`sequential_plan` shows the plan.

    Parameters
    ----------
    functions : iterable of callable
        The layers (a list, or an ``nn.Sequential``), each taking and returning one Tensor.
    segments : int, "sqrt" or None
        The number of segments (1 to ``len(functions)``), ``"sqrt"``, or None together with
        ``budget_bytes``.
    input : Tensor
        The input of the first layer.
    *args : Any
        ``preserve_rng_state`` and ``use_reentrant`` given positionally; or, PyTorch's
        deprecated form ``checkpoint_sequential(model, segments, a, b, ...)``, further
        inputs: the layers then take and return tuples (a tuple result is unpacked into the
        next layer's arguments), the chain is cut as PyTorch cut it, and a
        ``DeprecationWarning`` says to pass one input.
    preserve_rng_state : bool, optional
        Replay each segment's random draws in its recompute (see
        :func:`checkpoint_segment`). Default: ``True``.
    use_reentrant : bool, optional
        Accepted for PyTorch compatibility and ignored (there is one implementation).
        Default: ``None``.
    budget_bytes : int, optional
        With ``segments=None``: the peak (bytes above what is live at the start) to fit.
        Default: ``None``.
    offload : bool, optional
        Keep each checkpointed segment's input in host memory until backward when it lives
        on a GPU (no effect on CPU tensors). Default: ``False``.
    policy : optional
        The selective policy of every checkpointed segment (see
        ``remat.checkpoint_policies``). Default: ``None`` (keep nothing).

    Returns
    -------
    Tensor
        The output of the last layer (in the deprecated multi-input form, whatever it
        returns).

    Raises
    ------
    ValueError
        When ``segments`` is not an int, ``"sqrt"`` or None, is below 1 or above the number
        of layers; when both or neither of ``segments`` and ``budget_bytes`` are given;
        when ``budget_bytes`` is negative; or when no schedule fits ``budget_bytes`` (the
        message states the smallest budget that fits); with several inputs, when
        ``budget_bytes`` is given (plans take one input).
    TypeError
        When a layer is not callable or ``input`` is not a Tensor.
    remat.CheckpointError
        In backward, when a recompute does not match its forward.

    Examples
    --------
    >>> layers = [remat.tanh] * 8
    >>> x = remat.randn(128, 128, requires_grad=True)  # 64 KiB per activation
    >>> base = remat.memory_allocated()
    >>> y = x
    >>> for f in layers:
    ...     y = f(y)
    >>> loss = y.sum()
    >>> del y
    >>> remat.memory_allocated() - base  # plain: eight activations kept
    524292
    >>> del loss
    >>> loss = remat.checkpoint_sequential(layers, 2, x).sum()
    >>> remat.memory_allocated() - base  # the first half is a checkpoint
    262148
    >>> loss.backward()
    >>> del loss

    Planning for a memory budget instead:

    >>> x.grad = None
    >>> base = remat.memory_allocated()
    >>> remat.reset_peak_memory_stats()
    >>> remat.checkpoint_sequential(layers, None, x, budget_bytes=600_000).sum().backward()
    >>> remat.max_memory_allocated() - base <= 600_000
    True
    """
    del use_reentrant
    extra = list(args)
    if extra and all(isinstance(a, Tensor) for a in extra):
        return _sequential_of_inputs(list(functions), segments, (input, *extra),
                                     preserve_rng_state, budget_bytes)
    if len(extra) > 2:
        raise TypeError(
            f"checkpoint_sequential() takes at most 5 positional arguments ({3 + len(extra)} "
            "given)"
        )
    if extra:  # (preserve_rng_state, use_reentrant) given positionally
        preserve_rng_state = extra[0]
    return _remat.checkpoint_sequential(list(functions), segments, input,
                                        preserve_rng_state=bool(preserve_rng_state),
                                        budget_bytes=budget_bytes, offload=bool(offload),
                                        policy=policy)


def sequential_plan(functions: Any, segments: Any, input: Tensor, *,
                    budget_bytes: int | None = None) -> list[tuple[int, int, bool]]:
    """The runs ``(start, end, checkpointed)`` that ``checkpoint_sequential`` would use.

    Takes the same arguments as :func:`checkpoint_sequential` (and plans the same way, from
    the same plan cache: with ``budget_bytes`` the layers may be run once to measure them)
    but only returns the plan.

    Parameters
    ----------
    functions : iterable of callable
        The layers (a list, or an ``nn.Sequential``).
    segments : int, "sqrt" or None
        As for :func:`checkpoint_sequential`.
    input : Tensor
        The input of the first layer.
    budget_bytes : int, optional
        With ``segments=None``: the peak to fit, in bytes. Default: ``None``.

    Returns
    -------
    list of tuple of (int, int, bool)
        The runs in order: layers ``start`` to ``end - 1``, and whether the run is a
        checkpoint (False: it runs plainly). A nested schedule shows as consecutive
        checkpointed runs.

    Raises
    ------
    ValueError
        For the same bad ``segments``/``budget_bytes`` as :func:`checkpoint_sequential`
        (the messages name ``checkpoint_sequential``), or when no schedule fits the budget.
    TypeError
        When a layer is not callable or ``input`` is not a Tensor.

    Examples
    --------
    >>> layers = [remat.tanh] * 8
    >>> x = remat.randn(128, 128, requires_grad=True)
    >>> remat.sequential_plan(layers, 4, x)
    [(0, 2, True), (2, 4, True), (4, 6, True), (6, 8, False)]
    >>> remat.sequential_plan(layers, "sqrt", x)
    [(0, 2, True), (2, 4, True), (4, 8, False)]
    >>> remat.sequential_plan(layers, None, x, budget_bytes=10**9)  # everything fits
    [(0, 8, False)]
    """
    return _remat.sequential_plan(list(functions), segments, input, budget_bytes=budget_bytes)


def gradient_checkpoint_forward(model: Callable[..., Any], use_gradient_checkpointing: bool,
                                use_gradient_checkpointing_offload: bool, *args: Any,
                                **kwargs: Any) -> Any:
    """Seed-compatible entry point: ``model(*args, **kwargs)``, checkpointed when either flag
    is set (offload also keeps the saved inputs of device tensors in host memory).

    With a flag set the call runs as one :func:`checkpoint_segment` named after ``model``
    (its ``__name__``, or its class name for a module); every keyword reaches ``model``.

    Parameters
    ----------
    model : callable
        The function or module to call.
    use_gradient_checkpointing : bool
        Run the call as a checkpoint segment.
    use_gradient_checkpointing_offload : bool
        Run it as a checkpoint segment whose saved inputs of device tensors live in host
        memory until backward (no effect on CPU tensors).
    *args : Any
        Positional arguments of ``model``.
    **kwargs : Any
        Keyword arguments of ``model``.

    Returns
    -------
    Any
        What ``model`` returns (in its structure, with the segment's outputs when
        checkpointed).

    Raises
    ------
    TypeError
        When ``model`` is not callable.
    remat.CheckpointError
        In backward, when the recompute does not match the forward.

    Examples
    --------
    >>> x = remat.randn(128, 128, requires_grad=True)
    >>> def block(t, scale=1.0):
    ...     return (t.tanh() * scale).tanh()
    >>> base = remat.memory_allocated()
    >>> y = remat.gradient_checkpoint_forward(block, False, False, x, scale=2.0)
    >>> remat.memory_allocated() - base  # plain: tanh outputs kept
    131076
    >>> del y
    >>> y = remat.gradient_checkpoint_forward(block, True, False, x, scale=2.0)
    >>> remat.memory_allocated() - base  # only the output
    65536
    >>> y.sum().backward()
    >>> x.grad.shape
    (128, 128)
    """
    if use_gradient_checkpointing or use_gradient_checkpointing_offload:
        # Through `_apply`, so that every keyword reaches the model.
        name = getattr(model, "__name__", None) or type(model).__name__
        return checkpoint_segment(_apply, model, args, kwargs, name=name,
                                  offload=bool(use_gradient_checkpointing_offload))
    return model(*args, **kwargs)


def _spans(rows: list[tuple[float, int, str]], begin: str, end: str) -> list[tuple[float, float]]:
    """(start, end) seconds of each span whose rows start with ``begin`` and ``end``."""
    open_at: dict[str, list[float]] = {}
    spans = []
    for t, _, ev in rows:
        # The end first: "backward_end" also starts with "backward".
        if ev.startswith(end):
            if open_at.get(ev[len(end):]):
                spans.append((open_at[ev[len(end):]].pop(), t))
        elif ev.startswith(begin):
            open_at.setdefault(ev[len(begin):], []).append(t)
    return spans


def _plot_timeline(rows: list[tuple[float, int, str]], path: str | os.PathLike[str]) -> None:
    try:
        # A bare Figure renders to a file without pyplot, so the user's backend is untouched.
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("CheckpointProfiler.plot needs matplotlib: pip install matplotlib") from e
    fig = Figure(figsize=(10, 4))
    ax = fig.subplots()
    mem = [(t, b) for t, b, ev in rows if ev.startswith("memory")]
    if mem:
        ts, bs = zip(*mem)
        ax.step(ts, [b / 2**20 for b in bs], where="post", lw=1, color="tab:blue",
                label="live bytes")
        k = max(range(len(bs)), key=bs.__getitem__)
        ax.plot([ts[k]], [bs[k] / 2**20], "v", color="tab:red",
                label=f"peak {bs[k] / 2**20:.2f} MiB")
    for i, (a, b) in enumerate(_spans(rows, "backward", "backward_end")):
        ax.axvspan(a, b, color="tab:gray", alpha=0.15, lw=0,
                   label="backward" if i == 0 else None)
    for i, (a, b) in enumerate(_spans(rows, "recompute:", "recompute_end:")):
        ax.axvspan(a, b, color="tab:orange", alpha=0.35, lw=0,
                   label="recompute" if i == 0 else None)
    marks = [t for t, _, ev in rows if ev.startswith("checkpoint:")]
    if marks:
        ax.plot(marks, [0.0] * len(marks), "|", color="tab:green", ms=12,
                label="checkpoint made")
    ax.set_xlabel("seconds since tracking started")
    ax.set_ylabel("live tensor memory (MiB)")
    ax.set_title("remat: memory over time")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path)


class CheckpointProfiler:
    """Real figures from the engine's byte counters: bytes not kept thanks to checkpointing
    (each storage once), checkpoint and recompute counts, recompute seconds, the peak of live
    bytes while tracking, per-checkpoint records, a readable report, the memory timeline
    (``memory_timeline()``, ``export_chrome_trace(path)``, ``plot(path)``).

    ``memory_saved()`` is not the drop in peak: it sums every activation a checkpoint did not
    keep, over the whole tracked run, while the peak only falls by what was not kept *at the
    peak's moment*, less what the recompute allocates during backward. Compare
    ``peak_bytes()`` of a plain and a checkpointed run for the drop in peak. The methods are static
    (``CheckpointProfiler.memory_saved()``) and also work on an instance used as a context
    manager (``with CheckpointProfiler() as prof:`` resets and tracks inside the block).

    The figures are process-wide (one profiler state in the engine): a new context manager,
    or :meth:`reset`, clears them. While tracking it holds a bounded amount of memory.

    Raises
    ------
    TypeError
        When the constructor is given arguments (it takes none).
    ImportError
        From :meth:`plot` when matplotlib is not installed.

    Examples
    --------
    A chain of eight ``tanh`` layers, plain and in four checkpointed segments:

    >>> layers = [remat.tanh] * 8
    >>> x = remat.randn(128, 128, requires_grad=True)  # 64 KiB per activation
    >>> x.grad = remat.zeros_like(x)
    >>> base = remat.memory_allocated()
    >>> def plain(t):
    ...     for f in layers:
    ...         t = f(t)
    ...     return t
    >>> with remat.CheckpointProfiler() as prof:
    ...     plain(x).sum().backward()
    >>> prof.peak_bytes() - base
    589832
    >>> with remat.CheckpointProfiler() as prof:
    ...     remat.checkpoint_sequential(layers, 4, x).sum().backward()
    >>> prof.peak_bytes() - base
    393220
    >>> prof.checkpoint_count(), prof.recompute_count(), prof.memory_saved()
    (3, 3, 196608)
    >>> [(r["name"], r["bytes_saved"]) for r in prof.records()]
    [('layers 0..2', 65536), ('layers 2..4', 65536), ('layers 4..6', 65536)]
    """

    @staticmethod
    def start_tracking() -> None:
        """Start recording checkpoints, recomputes and the peak of live bytes.

        The peak starts from the bytes live now; the timeline starts now unless one is
        already being recorded. Figures recorded earlier are kept (see :meth:`reset`).

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> remat.CheckpointProfiler.reset()
        >>> remat.CheckpointProfiler.start_tracking()
        >>> y = remat.checkpoint(lambda t: t.sin(), remat.ones(4, requires_grad=True))
        >>> remat.CheckpointProfiler.stop_tracking()
        >>> remat.CheckpointProfiler.checkpoint_count()
        1
        """
        _remat.profiler_start_tracking()

    @staticmethod
    def stop_tracking() -> None:
        """Stop recording (the figures so far stay readable).

        Checkpoints made and recomputes run after this are not counted, not even the
        recomputes of checkpoints made while tracking. Calling it when not tracking does
        nothing.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> prof = remat.CheckpointProfiler
        >>> prof.reset()
        >>> prof.start_tracking()
        >>> x = remat.ones(4, requires_grad=True)
        >>> y = remat.checkpoint(lambda t: t.sin(), x)
        >>> prof.stop_tracking()
        >>> z = remat.checkpoint(lambda t: t.cos(), x)  # not counted
        >>> prof.checkpoint_count()
        1
        """
        _remat.profiler_stop_tracking()

    @staticmethod
    def reset() -> None:
        """Clear every figure and record.

        Counts, bytes saved, recompute time and records go back to zero (records of
        checkpoints still alive are forgotten), the peak restarts from the bytes live now and
        the timeline restarts (or is dropped when not tracking). Tracking stays on or off
        as it was.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.ones(4, requires_grad=True)
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.checkpoint(lambda t: t.sin(), x)
        >>> prof.checkpoint_count()
        1
        >>> prof.reset()
        >>> prof.checkpoint_count(), prof.records()
        (0, [])
        """
        _remat.profiler_reset()

    @staticmethod
    def memory_saved() -> int:
        """Bytes that checkpoints did not keep and that were really freed.

        Sums, over every checkpoint made while tracking, the storages its forward would have
        saved for backward and that were freed (each storage counted once). This is not the
        drop in peak (compare :meth:`peak_bytes` of two runs for that).

        Returns
        -------
        int
            Bytes, since tracking started or the last :meth:`reset`.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.randn(64, 64, requires_grad=True)
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.checkpoint(lambda t: t.tanh().tanh().tanh(), x)
        >>> prof.memory_saved()  # two 16 KiB intermediates (the third tanh is the output)
        32768
        """
        return _remat.profiler_memory_saved()

    @staticmethod
    def checkpoint_count() -> int:
        """Checkpoints made while tracking.

        Counts checkpointed segments and checkpointed tensors (a ``checkpoint_sequential``
        run counts one per checkpointed segment).

        Returns
        -------
        int
            The count since tracking started or the last :meth:`reset`.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.ones(4, requires_grad=True)
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.checkpoint(lambda t: t.sin(), x)
        ...     z = remat.checkpoint(lambda t: t.cos(), x)
        >>> prof.checkpoint_count()
        2
        """
        return _remat.profiler_checkpoint_count()

    @staticmethod
    def recompute_count() -> int:
        """Recomputes run while tracking.

        A checkpoint's forward is recomputed when backward needs what it did not keep.

        Returns
        -------
        int
            The count since tracking started or the last :meth:`reset`.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.ones(4, requires_grad=True)
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.checkpoint(lambda t: t.sin().exp(), x)
        ...     before = prof.recompute_count()
        ...     y.sum().backward()  # backward recomputes the segment
        >>> before, prof.recompute_count()
        (0, 1)
        """
        return _remat.profiler_recompute_count()

    @staticmethod
    def recompute_seconds() -> float:
        """Time spent recomputing while tracking.

        Returns
        -------
        float
            Wall-clock seconds summed over every recompute since tracking started or the
            last :meth:`reset`; ``0.0`` when none ran.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.ones(4, requires_grad=True)
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.checkpoint(lambda t: t.sin().exp(), x)
        >>> prof.recompute_seconds()  # nothing recomputed yet
        0.0
        >>> with remat.CheckpointProfiler() as prof:
        ...     remat.checkpoint(lambda t: t.sin().exp(), x).sum().backward()
        >>> prof.recompute_seconds() > 0
        True
        """
        return _remat.profiler_recompute_seconds()

    @staticmethod
    def peak_bytes() -> int:
        """Peak of live tensor bytes while tracking.

        Returns
        -------
        int
            The highest ``memory_allocated()`` seen since tracking started (or the last
            :meth:`reset`), counting every live tensor, not only the tracked run's.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> base = remat.memory_allocated()
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.ones(1024)  # 4 KiB
        ...     del y
        >>> prof.peak_bytes() - base
        4096
        """
        return _remat.profiler_peak_bytes()

    @staticmethod
    def report() -> str:
        """A human-readable summary of the figures.

        Returns
        -------
        str
            A table with one row per record (name, kind, bytes saved, recomputes,
            recompute time), then the totals and the peak of live bytes.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.randn(64, 64, requires_grad=True)
        >>> def block(t):
        ...     return t.tanh().tanh().tanh()
        >>> with remat.CheckpointProfiler() as prof:
        ...     remat.checkpoint(block, x).sum().backward()
        >>> print(prof.report())  # doctest: +ELLIPSIS
        name                     kind          bytes saved recomputes recompute (ms)
        ---...
        block                    segment          32.0 KiB          1 ...
        """
        return _remat.profiler_report()

    @staticmethod
    def records() -> list[dict]:
        """One dict per distinct (name, kind) of checkpointed segment or tensor, with the
        figures of all its checkpoints summed: name, kind, bytes_saved, recompute_seconds,
        recompute_count.

        A segment is named by ``name=`` or its function's name, a module's by its
        qualified name, a ``checkpoint_sequential`` run by its layers (``"layers 0..2"``).

        Returns
        -------
        list of dict
            Keys ``"name"`` (str), ``"kind"`` (str: ``"segment"``, ``"sequential"``,
            ``"group"``, ``"tensor"`` ...), ``"bytes_saved"`` (int),
            ``"recompute_seconds"`` (float) and ``"recompute_count"`` (int).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.randn(64, 64, requires_grad=True)
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.checkpoint_segment(lambda t: t.tanh().tanh(), x, name="mlp")
        ...     y.sum().backward()
        >>> r, = prof.records()
        >>> r["name"], r["kind"], r["bytes_saved"], r["recompute_count"]
        ('mlp', 'segment', 16384, 1)
        """
        return [
            {"name": n, "kind": k, "bytes_saved": b, "recompute_seconds": s, "recompute_count": c}
            for (n, k, b, s, c) in _remat.profiler_records()
        ]

    @staticmethod
    def memory_timeline() -> list[tuple[float, int, str]]:
        """Live bytes over time since tracking started (or the last reset), sorted by time, as
        ``(seconds, live_bytes, event)``. ``event`` is ``"memory"`` for an allocation or free
        on the CPU (``"memory cuda:0"`` on a device), ``"checkpoint:NAME"`` when a checkpoint
        is made, ``"recompute:NAME"`` / ``"recompute_end:NAME"`` around a recompute, and
        ``"backward"`` / ``"backward_end"`` around a backward pass. The timeline is bounded
        (65,536 entries): a long run keeps the curve's shape and peaks at a coarser
        resolution.

        Returns
        -------
        list of tuple of (float, int, str)
            ``(seconds since tracking started, live bytes, event)`` rows, sorted by time.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> x = remat.randn(64, 64, requires_grad=True)
        >>> def block(t):
        ...     return t.tanh().tanh()
        >>> with remat.CheckpointProfiler() as prof:
        ...     remat.checkpoint(block, x).sum().backward()
        >>> [e for _, _, e in prof.memory_timeline() if not e.startswith("memory")]
        ['checkpoint:block', 'backward', 'recompute:block', 'recompute_end:block', 'backward_end']
        """
        return _remat.profiler_memory_timeline()

    @staticmethod
    def export_chrome_trace(path: str | os.PathLike[str]) -> None:
        """Write the timeline as a Trace Event Format JSON file that Perfetto
        (ui.perfetto.dev) and chrome://tracing open: a counter track of live bytes,
        recomputes and backward passes as spans, checkpoints as instant events.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (overwritten).

        Returns
        -------
        None

        Raises
        ------
        OSError
            When the file cannot be written.

        Examples
        --------
        >>> import json
        >>> with remat.CheckpointProfiler() as prof:
        ...     y = remat.checkpoint(lambda t: t.sin(), remat.ones(4, requires_grad=True))
        >>> prof.export_chrome_trace("trace.json")
        >>> sorted(json.load(open("trace.json")))
        ['displayTimeUnit', 'traceEvents']
        """
        with open(path, "w", encoding="utf-8") as f:
            f.write(_remat.profiler_chrome_trace())

    @staticmethod
    def plot(path: str | os.PathLike[str]) -> None:
        """Draw live memory over time with the checkpoint events to an image file (its
        format from the suffix, e.g. ``.png`` or ``.svg``) through matplotlib: backward
        passes and recomputes shaded, checkpoints as ticks, the peak marked.

        The figure is drawn on a bare ``matplotlib.figure.Figure``, so the pyplot backend
        is left alone.

        Parameters
        ----------
        path : str or os.PathLike
            The image file to write; its suffix picks the format.

        Returns
        -------
        None

        Raises
        ------
        ImportError
            When matplotlib is not installed.
        ValueError
            When matplotlib does not know the suffix's format.

        Examples
        --------
        >>> import os
        >>> x = remat.randn(64, 64, requires_grad=True)
        >>> with remat.CheckpointProfiler() as prof:
        ...     remat.checkpoint(lambda t: t.tanh().tanh(), x).sum().backward()
        >>> prof.plot("memory.svg")
        >>> os.path.exists("memory.svg")
        True
        """
        _plot_timeline(_remat.profiler_memory_timeline(), path)

    def __enter__(self) -> CheckpointProfiler:
        _remat.profiler_reset()
        _remat.profiler_start_tracking()
        return self

    def __exit__(self, *exc: object) -> None:
        _remat.profiler_stop_tracking()


class set_checkpoint_early_stop:
    """Whether checkpoint segments made from now on stop their recompute as soon as every
    tensor backward needs is recomputed (on by default), as PyTorch's
    ``torch.utils.checkpoint.set_checkpoint_early_stop``. A plain call sets it
    (``remat.set_checkpoint_early_stop(False)``); as a context manager
    (``with remat.set_checkpoint_early_stop(False): ...``) it restores the previous setting on
    exit. An explicit ``early_stop=`` on ``checkpoint_segment`` takes precedence.

    The setting is read when a segment is made (in the forward), not when it is recomputed.
    It is process-wide.

    Parameters
    ----------
    enable : bool
        True: stop the recompute early; False: always re-run the whole function. Any value
        is taken by its truth.

    Raises
    ------
    TypeError
        When ``enable`` is missing.

    Examples
    --------
    The Python code after the last op backward needs does not run again when the recompute
    stops early:

    >>> x = remat.tensor([0.5, 1.0], requires_grad=True)
    >>> runs = []
    >>> def f(t):
    ...     h = t.sin().exp()
    ...     runs.append("end")
    ...     return h + 1
    >>> remat.checkpoint(f, x).sum().backward()
    >>> runs
    ['end']
    >>> runs.clear()
    >>> with remat.set_checkpoint_early_stop(False):
    ...     y = remat.checkpoint(f, x)
    >>> y.sum().backward()
    >>> runs
    ['end', 'end']
    """

    def __init__(self, enable: bool) -> None:
        self._prev = _remat._set_checkpoint_early_stop(bool(enable))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _remat._set_checkpoint_early_stop(self._prev)
