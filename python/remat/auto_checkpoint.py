"""Whole-model checkpoint planning: ``remat.auto_checkpoint(model, *example_inputs,
budget_bytes=N)`` measures one training step of any ``nn.Module`` tree, then picks which
submodules run as checkpoints so that the step's peak fits the budget at the least recompute.

What is measured, per submodule call, with the engine's byte counters and a clock: the bytes
the call leaves alive beyond its outputs (what a checkpoint of it would not keep) and its
forward time (what a checkpoint costs again in backward). Modules are chosen greedily by bytes
freed per second of recompute, never a module together with one inside it; each candidate
plan is then *measured* (one step under it), so the reported peak is a real figure, and the
greedy choice goes on until the measured peak fits. The greedy search runs once per depth of
the module tree (whole blocks, their parts, ...) and once over all modules, and the plan that
fits with the least forward time replayed wins: fine modules free the most per second but
keep their inputs, so small budgets need coarse ones; when even every coarse module is not
enough, modules inside the chosen ones become checkpoints too (nested checkpoints, so a
chosen module's replay keeps less).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from typing import Any

from . import _pytree, _remat
from ._remat import Tensor

__all__ = ["auto_checkpoint", "AutoCheckpointPlan"]


class _Measure:
    """Per qualified name: bytes a call leaves alive beyond its outputs, and seconds."""

    def __init__(self) -> None:
        self.kept: dict[str, int] = {}
        self.seconds: dict[str, float] = {}


def _tensor_bytes(out: Any) -> int:
    seen: set[int] = set()
    total = 0
    for leaf in _pytree.flatten(out)[0]:
        if id(leaf) not in seen:
            seen.add(id(leaf))
            total += leaf.nbytes
    return total


def _default_loss(out: Any) -> Tensor:
    tensors = [t for t in _pytree.flatten(out)[0] if t.dtype.is_floating_point]
    if not tensors:
        raise TypeError("auto_checkpoint: the model returned no floating-point tensor; pass "
                        "loss_fn= to turn its output into a scalar loss")
    loss = tensors[0].float().mean()
    for t in tensors[1:]:
        loss = loss + t.float().mean()
    return loss


class AutoCheckpointPlan:
    """What :func:`auto_checkpoint` chose: ``modules`` (qualified names run as checkpoints),
    ``peak_bytes`` (the measured peak of a step under the plan), ``plain_peak_bytes``,
    ``budget_bytes``, ``report()`` and ``remove()`` (undo it).

    Made by :func:`auto_checkpoint`, which has already applied it (the chosen modules'
    ``activation_checkpointing`` is True); the constructor's arguments are that function's
    measurements and are not meant to be built by hand.

    Parameters
    ----------
    model : nn.Module
        The planned model (kept as ``model``).
    chosen : list of str
        Qualified names of the submodules run as checkpoints (kept as ``modules``).
    peak : int
        Measured peak of a step under the plan, in bytes above what was live when it
        started (``peak_bytes``).
    plain_peak : int
        The same figure without checkpointing (``plain_peak_bytes``).
    budget : int
        The budget asked for (``budget_bytes``).
    measure : object
        Per-submodule measurements (bytes freed by checkpointing it, forward seconds), for
        :meth:`report`.
    previous : dict of str to bool
        Each module's ``activation_checkpointing`` before planning, for :meth:`remove`.
    modules : dict of str to nn.Module
        The modules by qualified name (``""``: the model itself).

    Attributes
    ----------
    modules : list of str
        Qualified names of the submodules run as checkpoints.
    peak_bytes : int
        Measured peak of one step under the plan.
    plain_peak_bytes : int
        Measured peak of one step without checkpointing.
    budget_bytes : int
        The budget.

    Raises
    ------
    TypeError
        When an argument is missing.

    Examples
    --------
    >>> from remat import nn
    >>> model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 256), nn.GELU(),
    ...                                       nn.Linear(256, 64)) for _ in range(4)])
    >>> plan = remat.auto_checkpoint(model, remat.randn(32, 64), budget_bytes=200_000)
    >>> plan.plain_peak_bytes > plan.budget_bytes >= plan.peak_bytes
    True
    >>> sorted(plan.modules)
    ['0', '1', '2', '3']
    >>> plan.remove()
    """

    def __init__(self, model: Any, chosen: list[str], peak: int, plain_peak: int,
                 budget: int, measure: _Measure, previous: dict[str, bool],
                 modules: dict[str, Any]) -> None:
        self.model = model
        self.modules = list(chosen)
        self.peak_bytes = peak
        self.plain_peak_bytes = plain_peak
        self.budget_bytes = budget
        self._measure = measure
        self._previous = previous
        self._by_name = modules
        self._removed = False

    def remove(self) -> None:
        """Restore every module's ``activation_checkpointing`` as it was before.

        Calling it again does nothing.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> from remat import nn
        >>> model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 256), nn.GELU(),
        ...                                       nn.Linear(256, 64)) for _ in range(4)])
        >>> plan = remat.auto_checkpoint(model, remat.randn(32, 64), budget_bytes=200_000)
        >>> [m.activation_checkpointing for m in model]
        [True, True, True, True]
        >>> plan.remove()
        >>> [m.activation_checkpointing for m in model]
        [False, False, False, False]
        """
        if self._removed:
            return
        for name, flag in self._previous.items():
            self._by_name[name].activation_checkpointing = flag
        self._removed = True

    def report(self) -> str:
        """A readable table: each measured submodule, what checkpointing it frees, its
        forward time, and whether the plan checkpoints it; then the peaks.

        Returns
        -------
        str
            One row per measured submodule (largest bytes freed first), then a line with
            the budget, the plain peak and the peak under the plan.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> from remat import nn
        >>> model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 256), nn.GELU(),
        ...                                       nn.Linear(256, 64)) for _ in range(4)])
        >>> plan = remat.auto_checkpoint(model, remat.randn(32, 64), budget_bytes=200_000)
        >>> print(plan.report())
        module  bytes freed  forward ms  checkpointed
        ----------------------------------------------
        0            65,536  ...  yes
        ...
        budget 200,000 B; plain peak 385,288 B; peak under the plan 188,680 B (0.49 of plain)
        >>> plan.remove()
        """
        m = self._measure
        rows = sorted(m.kept, key=lambda n: -m.kept[n])
        width = max([len("module")] + [len(n) for n in rows])
        lines = [f"{'module':<{width}}  {'bytes freed':>12}  {'forward ms':>10}  checkpointed",
                 "-" * (width + 40)]
        chosen = set(self.modules)
        for n in rows:
            lines.append(f"{n:<{width}}  {m.kept[n]:>12,}  {m.seconds[n] * 1e3:>10.3f}  "
                         f"{'yes' if n in chosen else ''}")
        lines.append("-" * (width + 40))
        lines.append(f"budget {self.budget_bytes:,} B; plain peak {self.plain_peak_bytes:,} B; "
                     f"peak under the plan {self.peak_bytes:,} B "
                     f"({self.peak_bytes / max(self.plain_peak_bytes, 1):.2f} of plain)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"AutoCheckpointPlan(modules={self.modules!r}, peak_bytes={self.peak_bytes}, "
                f"budget_bytes={self.budget_bytes})")


def _step_peak(model: Any, inputs: tuple, loss_fn: Callable[[Any], Tensor],
               params: list[Tensor]) -> int:
    """Bytes one forward + backward allocates above what is live when it starts."""
    gc.collect()
    base = _remat.memory_allocated()
    _remat.reset_peak_memory_stats()
    loss_fn(model(*inputs)).backward()
    gc.collect()
    peak = _remat.max_memory_allocated() - base
    for p in params:
        if p.grad is not None:
            p.grad.zero_()
    return peak


def _measure(model: Any, inputs: tuple, loss_fn: Callable[[Any], Tensor],
             modules: dict[str, Any]) -> _Measure:
    m = _Measure()
    open_calls: list[tuple[int, float]] = []
    handles = []
    for name, mod in modules.items():
        def pre(_mod: Any, _args: Any) -> None:
            open_calls.append((_remat.memory_allocated(), time.perf_counter()))

        def post(_mod: Any, _args: Any, out: Any, name: str = name) -> None:
            before, t0 = open_calls.pop()
            kept = _remat.memory_allocated() - before - _tensor_bytes(out)
            m.kept[name] = m.kept.get(name, 0) + max(kept, 0)
            m.seconds[name] = m.seconds.get(name, 0.0) + time.perf_counter() - t0

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    try:
        loss_fn(model(*inputs)).backward()
    finally:
        for h in handles:
            h.remove()
    return m


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _greedy(model: Any, inputs: tuple, loss_fn: Callable[[Any], Tensor], params: list[Tensor],
            measure: _Measure, order: list[str], everything: list[str], plain_peak: int,
            budget: int, set_plan: Callable[[Iterable[str]], None]) -> tuple[int, list[str]]:
    """Take candidates from ``order`` (never one inside another) until the modelled peak
    (plain, less what is not kept, plus the largest replay) fits, measure a step under them,
    and go on while the measured peak does not fit. When every candidate is taken and the
    peak still does not fit, nest: modules inside the chosen ones (from ``everything``, best
    first, in batches of 1, 2, 4, ...) become checkpoints too, so a chosen module's replay
    keeps less. Returns the smallest measured peak and the modules that reached it (the plain
    peak and nothing when no candidate helps)."""
    chosen: list[str] = []
    peak = plain_peak
    best = (plain_peak, list(chosen))
    pending = list(order)
    while peak > budget and pending:
        predicted = peak
        while pending and predicted > budget:
            n = pending.pop(0)
            if any(_overlaps(n, c) for c in chosen):
                continue
            chosen.append(n)
            freed = sum(measure.kept[c] for c in chosen)
            replay = max(measure.kept[c] for c in chosen)
            predicted = plain_peak - freed + replay
        set_plan(chosen)
        peak = _step_peak(model, inputs, loss_fn, params)
        if peak < best[0]:
            best = (peak, list(chosen))
    inner = [n for n in everything if any(n.startswith(c + ".") for c in chosen)]
    nested: list[str] = []
    batch = 1
    while peak > budget and inner:
        taken = 0
        while inner and taken < batch:
            n = inner.pop(0)
            if not any(_overlaps(n, c) for c in nested):
                nested.append(n)
                taken += 1
        batch *= 2
        set_plan(chosen + nested)
        peak = _step_peak(model, inputs, loss_fn, params)
        if peak < best[0]:
            best = (peak, chosen + nested)
    return best


def auto_checkpoint(model: Any, *example_inputs: Any, budget_bytes: int,
                    loss_fn: Callable[[Any], Tensor] | None = None) -> AutoCheckpointPlan:
    """Choose which submodules of ``model`` run as checkpoints so that a training step on
    inputs like ``example_inputs`` peaks at most ``budget_bytes`` above what is live when it
    starts (``max_memory_allocated() - memory_allocated()`` around forward + backward), at
    the least recompute.

    One step is measured per submodule call (bytes it leaves alive beyond its outputs, and
    its forward time); candidate plans are chosen greedily by bytes freed per second of
    recompute, one search per depth of the module tree and one over all modules, and each
    candidate is *measured* with a real step, so ``peak_bytes`` is a real figure. The plan
    that fits with the least forward time replayed wins and is applied by setting the
    submodules' ``activation_checkpointing`` flags (nested modules too, when even every
    coarse module is not enough). The measuring steps leave parameters' ``.grad`` as they
    were; they draw random numbers (dropout) from the global generator.

    Parameters
    ----------
    model : nn.Module
        The model; its submodules' ``activation_checkpointing`` flags are set.
    *example_inputs : Any
        The positional inputs of one step (the batch size matters).
    budget_bytes : int
        The peak to fit, in bytes (keyword only, positive).
    loss_fn : callable, optional
        Turns the model's output into a scalar loss. Default: ``None`` (the mean of each
        floating-point tensor in the output, summed).

    Returns
    -------
    AutoCheckpointPlan
        The applied plan: ``modules``, ``peak_bytes`` measured under it,
        ``plain_peak_bytes``, ``report()``, ``remove()``.

    Raises
    ------
    ValueError
        When ``budget_bytes`` is not a positive int, or when even checkpointing every
        candidate does not fit (the message states the smallest peak reached); the flags
        are then restored as they were.
    TypeError
        When ``loss_fn`` is not given and the model returns no floating-point tensor.

    Examples
    --------
    >>> from remat import nn
    >>> model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 256), nn.GELU(),
    ...                                       nn.Linear(256, 64)) for _ in range(4)])
    >>> x = remat.randn(32, 64)
    >>> plan = remat.auto_checkpoint(model, x, budget_bytes=200_000)
    >>> plan.plain_peak_bytes > 200_000 >= plan.peak_bytes
    True
    >>> sorted(plan.modules)
    ['0', '1', '2', '3']
    >>> model[0].activation_checkpointing
    True

    The budget holds for a real step under the plan:

    >>> loss = model(x).mean()
    >>> loss.backward()
    >>> plan.remove()
    >>> model[0].activation_checkpointing
    False
    """
    if not isinstance(budget_bytes, int) or isinstance(budget_bytes, bool) or budget_bytes <= 0:
        raise ValueError(f"auto_checkpoint: budget_bytes must be a positive int, "
                         f"got {budget_bytes!r}")
    loss_fn = _default_loss if loss_fn is None else loss_fn
    by_name = {n: mod for n, mod in model.named_modules() if n}
    previous = {n: bool(mod.activation_checkpointing) for n, mod in by_name.items()}
    previous[""] = bool(model.activation_checkpointing)
    by_name_all = dict(by_name, **{"": model})
    params = list(model.parameters())
    original_grads = [p.grad for p in params]

    def set_plan(names: Iterable[str]) -> None:
        wanted = set(names)
        for n, mod in by_name_all.items():
            mod.activation_checkpointing = n in wanted

    try:
        # A steady-state step: gradients exist before it (as after a first step).
        for p in params:
            p.grad = _remat.zeros_like(p)
        set_plan(())
        measure = _measure(model, example_inputs, loss_fn, by_name)
        for p in params:
            p.grad.zero_()
        plain_peak = _step_peak(model, example_inputs, loss_fn, params)
        # Bytes freed per second of recompute, largest first; modules that free nothing
        # (a Linear keeps only its input, which is not its own) are no candidates.
        order = sorted((n for n in measure.kept if measure.kept[n] > 0),
                       key=lambda n: -measure.kept[n] / max(measure.seconds[n], 1e-9))
        # One greedy search per depth of the module tree (whole blocks, their parts, ...),
        # and one over every module: fine modules free the most per second but keep their
        # inputs, so only coarser ones may reach a small budget. The cheapest plan that fits
        # wins (least measured forward time replayed).
        depths = sorted({n.count(".") for n in order})
        searches = [[n for n in order if n.count(".") == d] for d in depths]
        if len(searches) > 1:
            searches.append(order)
        # A plain step that fits needs no checkpoint (and no recompute): an empty plan.
        best_fit: tuple[float, int, list[str]] | None = (
            (0.0, plain_peak, []) if plain_peak <= budget_bytes else None)
        smallest: tuple[int, list[str]] = (plain_peak, [])
        for candidates in searches:
            peak, chosen = _greedy(model, example_inputs, loss_fn, params, measure,
                                   candidates, order, plain_peak, budget_bytes, set_plan)
            if peak < smallest[0]:
                smallest = (peak, chosen)
            if peak <= budget_bytes:
                cost = sum(measure.seconds[c] for c in chosen)
                if best_fit is None or cost < best_fit[0]:
                    best_fit = (cost, peak, chosen)
        if best_fit is None:
            set_plan(n for n, flag in previous.items() if flag)
            raise ValueError(
                f"auto_checkpoint: no choice of submodules fits budget_bytes={budget_bytes}; "
                f"the smallest peak reached is {smallest[0]} bytes (checkpointing "
                f"{', '.join(smallest[1]) or 'nothing'}; the plain step peaks at {plain_peak})")
        _, peak, chosen = best_fit
        set_plan(chosen)
    except BaseException:
        set_plan(n for n, flag in previous.items() if flag)
        raise
    finally:
        for p, g in zip(params, original_grads):
            p.grad = g
    return AutoCheckpointPlan(model, chosen, peak, plain_peak, budget_bytes, measure,
                              previous, by_name_all)
