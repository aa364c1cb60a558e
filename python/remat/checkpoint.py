"""Checkpointing (activation rematerialisation): the Python face of remat-core's checkpoint API.

Every entry point gives the same gradients as the code without it (bit for bit on the CPU) and
keeps less memory alive between forward and backward; the engine's byte counters prove it.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable
from collections.abc import Sequence

from . import _pytree, _remat
from ._remat import Tensor

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

    def flatten(self, out: Any) -> list[Tensor]:
        leaves, spec = _pytree.flatten(out)
        if not self._recorded:
            self._spec, self._recorded = spec, True
        return leaves

    def rebuild(self, tensors: list[Tensor]) -> Any:
        spec, self._spec = self._spec, None
        if spec is None:
            raise RuntimeError("checkpoint: the function's result was not recorded")
        return _pytree.unflatten(spec, tensors)


def _flatten_inputs(args: Sequence[Any], kwargs: dict) -> tuple[list[Tensor], _pytree.TreeSpec]:
    """Every Tensor in the positional and keyword arguments, at any depth of tuples, lists and
    dicts, becomes a segment input (so gradients flow to it); the spec holds the rest."""
    return _pytree.flatten((tuple(args), dict(kwargs)))


def _runner(fn: Callable[..., Any], spec: _pytree.TreeSpec, outputs: _Outputs):
    """The function the engine runs (forward, then once more to recompute): the inputs put
    back into the call's structure, the result flattened to its Tensors."""

    def run(*tensors: Tensor) -> list[Tensor]:
        args, kwargs = _pytree.unflatten(spec, tensors)
        return outputs.flatten(fn(*args, **kwargs))

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
    ``fn`` once. ``fn`` may return any nesting of tuples, lists, dicts and namedtuples holding
    Tensors, ``None`` and other values; it comes back with the same structure, every Tensor in
    it an output of the segment. Tensors among the inputs, also inside lists, tuples and dicts
    and passed as keywords, are the segment's inputs (they receive gradients), as are
    parameters captured by ``fn``. ``offload`` keeps saved inputs of device
    tensors in host memory (no effect on CPU tensors). ``determinism_check``: a bool, or
    PyTorch's ``"default"`` (check) / ``"none"`` (do not check) that the recompute saves
    tensors of the forward's shapes and dtypes. ``early_stop``: the recompute stops as soon as
    every tensor backward needs is recomputed (None: ``set_checkpoint_early_stop``'s setting,
    on by default). ``policy``: what the forward keeps instead of recomputing (one of
    ``remat.checkpoint_policies``, or a callable ``(op_name, output) -> CheckpointPolicy``;
    None keeps nothing). Any other keyword goes to ``fn``."""
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
    return outputs.rebuild(outs)


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
    """``checkpoint(tensor)``: a tensor with the same value whose storage is not kept for
    backward (recomputed from the inputs of the op that produced it).
    ``checkpoint(fn, *args, **kwargs)``: the same as ``checkpoint_segment(fn, *args,
    **kwargs)``. PyTorch's keywords are consumed here and never reach ``fn``:
    ``use_reentrant`` (either value: remat has one, non-reentrant, mechanism),
    ``determinism_check`` (``"default"`` | ``"none"``), ``debug``, ``preserve_rng_state``,
    ``policy`` (selective checkpointing, see ``remat.checkpoint_policies``) and ``context_fn``
    (as made by ``remat.utils.checkpoint.create_selective_checkpoint_contexts``). Every other
    keyword, even one named ``x`` or ``fn``, goes to ``fn``."""
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
        return checkpoint_segment(
            x,
            *args,
            preserve_rng_state=preserve_rng_state,
            determinism_check=_determinism("checkpoint", determinism_check),
            policy=policy,
            **kwargs,
        )
    raise TypeError(f"checkpoint: expected a Tensor or a callable, got {type(x).__name__}")


def adaptive_checkpoint(x: Tensor, threshold_bytes: int) -> Tensor:
    """``checkpoint(x)`` when ``x.nbytes >= threshold_bytes``, else ``x`` unchanged."""
    if not isinstance(x, Tensor):
        raise TypeError(f"adaptive_checkpoint: expected a Tensor, got {type(x).__name__}")
    if threshold_bytes < 0:
        raise ValueError(
            f"adaptive_checkpoint: threshold_bytes must be >= 0, got {threshold_bytes}"
        )
    return _remat.adaptive_checkpoint(x, int(threshold_bytes))


class CheckpointGroup:
    """Checkpointed calls whose outputs share one recompute per call, with counts of
    checkpoints, recomputes and bytes saved."""

    def __init__(self, name: str | None = None, preserve_rng_state: bool = True,
                 offload: bool = False) -> None:
        self._group = _remat._CheckpointGroup(name, preserve_rng_state, offload)
        self.name = name

    def checkpoint_fn(self, fn: Callable[..., Any], *inputs: Any, **kwargs: Any) -> tuple:
        """Run ``fn(*inputs, **kwargs)`` checkpointed; returns a tuple of its outputs (its
        tuple result, or a 1-tuple of any other result, in ``checkpoint_segment``'s
        structures), which share one recompute (the first output's backward recomputes all of
        them)."""
        outputs = _Outputs()
        tensors, spec = _flatten_inputs(inputs, kwargs)
        outs = self._group.checkpoint_fn(_runner(fn, spec, outputs), tensors)
        result = outputs.rebuild(outs)
        if isinstance(result, tuple):
            return result
        return tuple(result) if isinstance(result, list) else (result,)

    @property
    def checkpoint_count(self) -> int:
        return self._group.checkpoint_count

    @property
    def recompute_count(self) -> int:
        return self._group.recompute_count

    @property
    def memory_saved(self) -> int:
        return self._group.memory_saved

    def __repr__(self) -> str:
        return (f"CheckpointGroup(name={self.name!r}, checkpoints={self.checkpoint_count}, "
                f"recomputes={self.recompute_count}, memory_saved={self.memory_saved})")


@contextlib.contextmanager
def checkpoint_scope():
    """Tensors created inside are not kept for backward, even when consumed outside the scope;
    backward recomputes them."""
    scope = _remat.scope_enter()
    try:
        yield
    finally:
        scope.close()


gradient_checkpoint_scope = checkpoint_scope

def checkpoint_sequential(functions: Any, segments: Any, input: Tensor,
                          preserve_rng_state: bool = True, use_reentrant: bool | None = None,
                          *, budget_bytes: int | None = None, offload: bool = False,
                          policy: Any = None) -> Tensor:
    """Run a chain of callables (a list or an ``nn.Sequential``) on ``input`` in checkpointed
    segments: ``segments`` an int (the last segment runs plainly, as in PyTorch), ``"sqrt"``
    (⌈√n⌉ segments), or ``None`` with ``budget_bytes=N`` for the least-recompute plan whose
    modelled activation memory fits N bytes (measured once per model and input shape).
    ``offload=True`` keeps each checkpointed segment's input in host memory until backward
    when it lives on a GPU (CPU tensors: no effect). ``use_reentrant`` is accepted for
    PyTorch compatibility and ignored (there is one implementation). ``policy``: the
    selective policy of every checkpointed segment (see ``remat.checkpoint_policies``).

    Validation, planning (one plan cache, in the engine) and running all happen in the
    engine; this only turns ``functions`` into a list."""
    del use_reentrant
    return _remat.checkpoint_sequential(list(functions), segments, input,
                                        preserve_rng_state=bool(preserve_rng_state),
                                        budget_bytes=budget_bytes, offload=bool(offload),
                                        policy=policy)


def sequential_plan(functions: Any, segments: Any, input: Tensor, *,
                    budget_bytes: int | None = None) -> list[tuple[int, int, bool]]:
    """The runs ``(start, end, checkpointed)`` that ``checkpoint_sequential`` would use."""
    return _remat.sequential_plan(list(functions), segments, input, budget_bytes=budget_bytes)


def gradient_checkpoint_forward(model: Callable[..., Any], use_gradient_checkpointing: bool,
                                use_gradient_checkpointing_offload: bool, *args: Any,
                                **kwargs: Any) -> Any:
    """Seed-compatible entry point: ``model(*args, **kwargs)``, checkpointed when either flag
    is set (offload also keeps the saved inputs of device tensors in host memory)."""
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
    manager (``with CheckpointProfiler() as prof:`` resets and tracks inside the block)."""

    @staticmethod
    def start_tracking() -> None:
        """Start recording checkpoints, recomputes and the peak of live bytes."""
        _remat.profiler_start_tracking()

    @staticmethod
    def stop_tracking() -> None:
        """Stop recording (the figures so far stay readable)."""
        _remat.profiler_stop_tracking()

    @staticmethod
    def reset() -> None:
        """Clear every figure and record."""
        _remat.profiler_reset()

    @staticmethod
    def memory_saved() -> int:
        """Bytes that checkpoints did not keep and that were really freed."""
        return _remat.profiler_memory_saved()

    @staticmethod
    def checkpoint_count() -> int:
        """Checkpoints made while tracking."""
        return _remat.profiler_checkpoint_count()

    @staticmethod
    def recompute_count() -> int:
        """Recomputes run while tracking."""
        return _remat.profiler_recompute_count()

    @staticmethod
    def recompute_seconds() -> float:
        """Time spent recomputing while tracking."""
        return _remat.profiler_recompute_seconds()

    @staticmethod
    def peak_bytes() -> int:
        """Peak of live tensor bytes while tracking."""
        return _remat.profiler_peak_bytes()

    @staticmethod
    def report() -> str:
        """A human-readable summary of the figures."""
        return _remat.profiler_report()

    @staticmethod
    def records() -> list[dict]:
        """One dict per distinct (name, kind) of checkpointed segment or tensor, with the
        figures of all its checkpoints summed: name, kind, bytes_saved, recompute_seconds,
        recompute_count."""
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
        resolution."""
        return _remat.profiler_memory_timeline()

    @staticmethod
    def export_chrome_trace(path: str | os.PathLike[str]) -> None:
        """Write the timeline as a Trace Event Format JSON file that Perfetto
        (ui.perfetto.dev) and chrome://tracing open: a counter track of live bytes,
        recomputes and backward passes as spans, checkpoints as instant events."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(_remat.profiler_chrome_trace())

    @staticmethod
    def plot(path: str | os.PathLike[str]) -> None:
        """Draw live memory over time with the checkpoint events to an image file (its
        format from the suffix, e.g. ``.png`` or ``.svg``) through matplotlib: backward
        passes and recomputes shaded, checkpoints as ticks, the peak marked."""
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
    exit. An explicit ``early_stop=`` on ``checkpoint_segment`` takes precedence."""

    def __init__(self, enable: bool) -> None:
        self._prev = _remat._set_checkpoint_early_stop(bool(enable))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _remat._set_checkpoint_early_stop(self._prev)
