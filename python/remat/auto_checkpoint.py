"""Whole-model checkpoint planning: ``remat.auto_checkpoint(model, *example_inputs,
budget_bytes=N)`` measures one training step of any ``nn.Module`` tree, then picks which
submodules run as checkpoints, with which policy, so that the step's peak fits the budget at
the least time.

What is measured, per submodule call, with the engine's byte counters and a clock: the bytes
the call leaves alive beyond its outputs (what a checkpoint of it would not keep) and its
forward time. Candidate plans come from several searches, and each candidate is *measured*
(a real step under it), so every reported peak is a real figure:

- whole modules, greedily by bytes freed per second of recompute (never a module together
  with one inside it), once per depth of the module tree and once over all modules; when
  even every module is not enough, modules inside the chosen ones become checkpoints too
  (nested checkpoints, so a chosen module's replay keeps less);
- per depth, every module under ``dots_saveable`` (its matmul and attention outputs kept,
  the cheap ops around them recomputed), then modules promoted one by one to full
  checkpoints until the budget is met;
- an ``nn.Sequential`` chain that holds at least the bytes to shed runs under
  ``checkpoint_sequential``'s budget planner (runs of its layers as nested checkpoints),
  which reaches budgets whole modules cannot;
- no static checkpoint at all: the step runs under a memory cap of the budget (dynamic
  rematerialisation), which evicts the cheapest tensors to rebuild per byte (a LayerNorm's or
  a GELU's output rather than a matmul's) and rebuilds them when the backward reads them.
  The cap is set when the model's forward starts, relative to what is live then, and lifted
  when the backward pass ends, so the optimizer's step and evaluation run without it.

Of the candidates that fit, the one with the least measured step time wins: the median of
three steps, taken round-robin over the candidates, and for the candidates within 10% of the
fastest the median of seven (four more rounds among them, so that one noisy step does not
decide between plans a few per cent apart).
"""

from __future__ import annotations

import gc
import re
import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from . import _pytree, _remat
from ._remat import Tensor

__all__ = ["auto_checkpoint", "AutoCheckpointPlan"]


class _Measure:
    """Per qualified name, over one plain step: bytes its calls leave alive beyond their
    outputs, and seconds."""

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


class _Settings:
    """Every module's checkpoint settings (flag, policy, chain budget, memory cap), to
    restore them."""

    def __init__(self, flags: dict[str, bool], policies: dict[str, Any],
                 chains: dict[str, int | None], caps: dict[str, int | None]) -> None:
        self.flags, self.policies, self.chains, self.caps = flags, policies, chains, caps

    @staticmethod
    def of(modules: dict[str, Any]) -> _Settings:
        return _Settings({n: bool(m.activation_checkpointing) for n, m in modules.items()},
                         {n: m.activation_checkpointing_policy for n, m in modules.items()},
                         {n: m.__dict__.get("_chain_budget_bytes") for n, m in modules.items()},
                         {n: m.__dict__.get("_memory_cap_bytes") for n, m in modules.items()})

    def restore(self, modules: dict[str, Any]) -> None:
        for n, m in modules.items():
            m.activation_checkpointing = self.flags.get(n, False)
            m.activation_checkpointing_policy = self.policies.get(n)
            m.__dict__["_chain_budget_bytes"] = self.chains.get(n)
            m.__dict__["_memory_cap_bytes"] = self.caps.get(n)


class AutoCheckpointPlan:
    """What :func:`auto_checkpoint` chose: ``modules`` (qualified names run as checkpoints),
    ``policies`` (the selective policy of those that have one), ``chains``
    (``nn.Sequential`` submodules whose layers run under the budget planner),
    ``memory_cap_bytes`` (when the step runs under dynamic rematerialisation), ``peak_bytes``
    (the measured peak of a step under the plan), ``plain_peak_bytes``, ``budget_bytes``,
    ``step_seconds``, ``plain_step_seconds``, ``report()`` and ``remove()`` (undo it).

    Made by :func:`auto_checkpoint`, which has already applied it (the chosen modules'
    ``activation_checkpointing`` is True and ``activation_checkpointing_policy`` set; a
    chosen chain runs its layers through ``checkpoint_sequential(..., budget_bytes=)`` while
    gradients are enabled; with a memory cap, the model's forward sets it while gradients
    are enabled, and the backward pass lifts it); the constructor's arguments are that
    function's measurements and are not meant to be built by hand.

    Parameters
    ----------
    model : nn.Module
        The planned model (kept as ``model``).
    plan : object
        The chosen checkpoints (name → policy or None), chains (name → budget) and memory
        cap (bytes or None).
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
    previous : object
        Every module's checkpoint settings before planning, for :meth:`remove`.
    modules : dict of str to nn.Module
        The modules by qualified name (``""``: the model itself).
    step_seconds : float
        Median measured step time under the plan (``step_seconds``).
    plain_step_seconds : float
        The same without checkpointing (``plain_step_seconds``).

    Attributes
    ----------
    modules : list of str
        Qualified names of the submodules run as checkpoints.
    policies : dict of str to str
        For checkpointed modules with a selective policy: the policy's name
        (``"dots_saveable"``); the others keep nothing.
    chains : dict of str to int
        Qualified names (``""``: the model itself) of the ``nn.Sequential`` chains run under
        the budget planner, with the budget each is planned for.
    memory_cap_bytes : int or None
        When the plan is dynamic rematerialisation: the cap, in bytes above what is live
        when the model's forward starts, under which each step runs (from that forward to the
        end of its backward pass; softly: what cannot be evicted goes over it). None
        otherwise.
    peak_bytes : int
        Measured peak of one step under the plan.
    plain_peak_bytes : int
        Measured peak of one step without checkpointing.
    budget_bytes : int
        The budget.
    step_seconds, plain_step_seconds : float
        Median of the measured steps under the plan (three, or seven for a candidate within
        10% of the fastest) and of three without checkpointing (the candidates that fit are
        ranked by this).
    candidates : list of tuple of (str, int, float)
        Every candidate plan that fit: what it checkpoints, its measured peak and its
        median step seconds, fastest first (the first is the plan).

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
    >>> bool(plan.modules or plan.chains or plan.memory_cap_bytes)
    True
    >>> plan.remove()
    """

    def __init__(self, model: Any, plan: Any, peak: int, plain_peak: int, budget: int,
                 measure: _Measure, previous: Any, modules: dict[str, Any],
                 step_seconds: float, plain_step_seconds: float) -> None:
        self.model = model
        self.modules = list(plan.checkpoints)
        self.policies = {n: _policy_name(p) for n, p in plan.checkpoints.items()
                         if p is not None}
        self.chains = dict(plan.chains)
        self.memory_cap_bytes = plan.cap
        self.peak_bytes = peak
        self.plain_peak_bytes = plain_peak
        self.budget_bytes = budget
        self.step_seconds = step_seconds
        self.plain_step_seconds = plain_step_seconds
        self.candidates: list[tuple[str, int, float]] = []
        self._measure = measure
        self._previous = previous
        self._by_name = modules
        self._removed = False

    def remove(self) -> None:
        """Restore every module's checkpoint settings as they were before.

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
        >>> plan.remove()
        >>> [m.activation_checkpointing for m in model]
        [False, False, False, False]
        """
        if self._removed:
            return
        self._previous.restore(self._by_name)
        self._removed = True

    def report(self) -> str:
        """A readable table: each measured submodule, what checkpointing it frees, its
        forward time, and whether (and under which policy) the plan checkpoints it; then
        the chains, the step times and the peaks.

        Returns
        -------
        str
            One row per measured submodule (largest bytes freed first), then a line per
            chain, the step times, and a line with the budget, the plain peak and the peak
            under the plan.

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
        0            65,536  ...
        ...
        budget 200,000 B; plain peak 385,288 B; peak under the plan ... B (0... of plain)
        >>> plan.remove()
        """
        m = self._measure
        rows = sorted(m.kept, key=lambda n: -m.kept[n])
        width = max([len("module")] + [len(n) for n in rows])
        lines = [f"{'module':<{width}}  {'bytes freed':>12}  {'forward ms':>10}  checkpointed",
                 "-" * (width + 40)]
        chosen = set(self.modules)
        for n in rows:
            mark = ("yes" + (f" ({self.policies[n]})" if n in self.policies else "")
                    if n in chosen else "")
            lines.append(f"{n:<{width}}  {m.kept[n]:>12,}  {m.seconds[n] * 1e3:>10.3f}  {mark}")
        lines.append("-" * (width + 40))
        for name, chain_budget in self.chains.items():
            lines.append(f"chain {name or '(the model)'}: its layers run under "
                         f"checkpoint_sequential(budget_bytes={chain_budget:,})")
        if self.memory_cap_bytes is not None:
            lines.append(f"memory cap: each step runs under a cap of "
                         f"{self.memory_cap_bytes:,} B above what is live when the forward "
                         "starts (dynamic rematerialisation)")
        lines.append(f"step {self.step_seconds * 1e3:.1f} ms under the plan, "
                     f"{self.plain_step_seconds * 1e3:.1f} ms plain (medians); "
                     f"{len(self.candidates)} candidate plans fit")
        lines.append(f"budget {self.budget_bytes:,} B; plain peak {self.plain_peak_bytes:,} B; "
                     f"peak under the plan {self.peak_bytes:,} B "
                     f"({self.peak_bytes / max(self.plain_peak_bytes, 1):.2f} of plain)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"AutoCheckpointPlan(modules={self.modules!r}, chains={self.chains!r}, "
                f"memory_cap_bytes={self.memory_cap_bytes!r}, peak_bytes={self.peak_bytes}, "
                f"budget_bytes={self.budget_bytes})")


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


class _Plan(NamedTuple):
    """A candidate: checkpointed modules (name → policy, None: keep nothing), chains (name
    of an ``nn.Sequential`` → its budget for ``checkpoint_sequential``), and the memory cap
    each step runs under (bytes above what is live at the forward's start; None: none)."""

    checkpoints: dict[str, Any]
    chains: dict[str, int]
    cap: int | None = None

    def key(self) -> tuple:
        return (tuple(sorted((n, _policy_name(p)) for n, p in self.checkpoints.items())),
                tuple(sorted(self.chains.items())), self.cap)


_NO_PLAN = _Plan({}, {})
#: A step under the plan that is set: (peak bytes above the step's start, seconds).
_Step = Callable[[], "tuple[int, float]"]


def _describe(plan: _Plan) -> str:
    """``blocks.0, blocks.1 (dots_saveable), chain blocks``: what a plan checkpoints."""
    parts = [n + (f" ({_policy_name(p)})" if p is not None else "")
             for n, p in plan.checkpoints.items()]
    parts += [f"chain {n or '(the model)'}" for n in plan.chains]
    if plan.cap is not None:
        parts.append(f"memory cap {plan.cap:,} B (dynamic rematerialisation)")
    return ", ".join(parts) or "nothing"


def _policy_name(policy: Any) -> str:
    """``dots_saveable`` for the engine's policies (``<checkpoint policy dots_saveable>``)."""
    if policy is None:
        return ""
    text = getattr(policy, "__name__", None) or repr(policy)
    return text.removeprefix("<checkpoint policy ").removesuffix(">")


def _greedy(step: _Step, measure: _Measure, order: list[str], everything: list[str],
            plain_peak: int, budget: int,
            set_plan: Callable[[_Plan], None]) -> tuple[int, _Plan]:
    """Take candidates from ``order`` (never one inside another) until the modelled peak
    (plain, less what is not kept, plus the largest replay) fits, measure a step under them,
    and go on while the measured peak does not fit. When every candidate is taken and the
    peak still does not fit, nest: modules inside the chosen ones (from ``everything``, best
    first, in batches of 1, 2, 4, ...) become checkpoints too, so a chosen module's replay
    keeps less. Returns the smallest measured peak and the plan that reached it."""
    chosen: list[str] = []
    peak = plain_peak
    best = (plain_peak, _NO_PLAN)
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
        plan = _Plan(dict.fromkeys(chosen), {})
        set_plan(plan)
        peak = step()[0]
        if peak < best[0]:
            best = (peak, plan)
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
        plan = _Plan(dict.fromkeys(chosen + nested), {})
        set_plan(plan)
        peak = step()[0]
        if peak < best[0]:
            best = (peak, plan)
    return best


def _selective(step: _Step, measure: _Measure, level: list[str], plain_peak: int,
               budget: int, set_plan: Callable[[_Plan], None]) -> tuple[int, _Plan] | None:
    """Every module of ``level`` (one depth of the tree, best first) as a checkpoint under
    ``dots_saveable``; while the measured peak does not fit, promote modules (best first) to
    full checkpoints, as many at a time as the measured bytes predict. Returns the smallest
    measured peak and its plan, or None when the policy frees nothing."""
    from .checkpoint_policies import dots_saveable

    plan = _Plan(dict.fromkeys(level, dots_saveable), {})
    set_plan(plan)
    peak = step()[0]
    if peak >= plain_peak:
        return None
    # What the policy frees per module, on average; a full checkpoint frees `kept`.
    dots_freed = (plain_peak - peak) // len(level)
    best = (peak, plan)
    pending = list(level)
    full: list[str] = []
    while peak > budget and pending:
        predicted = peak
        while pending and predicted > budget:
            n = pending.pop(0)
            full.append(n)
            predicted -= max(measure.kept[n] - dots_freed, 0)
        plan = _Plan({n: (None if n in full else dots_saveable) for n in level}, {})
        set_plan(plan)
        peak = step()[0]
        if peak < best[0]:
            best = (peak, plan)
    return best


def _no_schedule_fits(e: ValueError) -> bool:
    """Whether ``e`` is the budget planner's "no schedule fits" (not the model's own error)."""
    return str(e).startswith("checkpoint_sequential") and "fits budget_bytes=" in str(e)


def _plan_chain(name: str, step: _Step, budget: int,
                set_plan: Callable[[_Plan], None]) -> tuple[int, _Plan] | None:
    """Run the Sequential ``name`` under ``checkpoint_sequential``'s budget planner, with the
    chain's own budget lowered after each measured overshoot of the step's (by the overshoot,
    doubled at every try, at most six tries) until the step fits; a budget below the chain's
    least is replaced by that least once (to measure the smallest peak reachable). Returns
    the smallest measured peak and its plan, or None when the planner finds no schedule."""
    best: tuple[int, _Plan] | None = None
    chain_budget, cut = budget, 0
    for _ in range(6):
        plan = _Plan({}, {name: chain_budget})
        set_plan(plan)
        try:
            step()  # the first step under a new budget plans (it measures the layers once)
            peak = step()[0]
        except ValueError as e:
            if not _no_schedule_fits(e):
                raise
            least = re.search(r"smallest budget that fits is budget_bytes=(\d+)", str(e))
            if best is not None or least is None:
                break
            # Too small for the chain: measure its least budget once, so the error can
            # state the smallest peak reachable.
            chain_budget = int(least.group(1))
            continue
        if best is None or peak < best[0]:
            best = (peak, plan)
        if peak <= budget:
            break
        cut = max(2 * cut, peak - budget)
        chain_budget -= cut
        if chain_budget <= 0:
            break
    return best


# The peak recorded for a measuring step slower than `_SLOW_FACTOR` plain steps (and
# `_SLOW_FLOOR_SECONDS`): larger than any budget, so the candidate never fits.
_TOO_SLOW = 1 << 62
_SLOW_FACTOR = 20.0
_SLOW_FLOOR_SECONDS = 0.5


def _plan_cap(step: _Step, budget: int,
              set_plan: Callable[[_Plan], None]) -> tuple[int, _Plan]:
    """Run each step under a memory cap of ``budget`` (dynamic rematerialisation); when the
    measured peak goes over it (the cap is soft: what cannot be evicted stays), once more
    with the cap lowered by the overshoot. Returns the smaller measured peak and its plan."""
    best: tuple[int, _Plan] | None = None
    cap = budget
    for _ in range(2):
        plan = _Plan({}, {}, cap)
        set_plan(plan)
        peak = step()[0]
        if best is None or peak < best[0]:
            best = (peak, plan)
        if peak <= budget or cap <= peak - budget:
            break
        cap -= peak - budget
    assert best is not None
    return best


def auto_checkpoint(model: Any, *example_inputs: Any, budget_bytes: int,
                    loss_fn: Callable[[Any], Tensor] | None = None,
                    dynamic: bool = True) -> AutoCheckpointPlan:
    """Choose which submodules of ``model`` run as checkpoints, and with which policy, so that
    a training step on inputs like ``example_inputs`` peaks at most ``budget_bytes`` above
    what is live when it starts (``max_memory_allocated() - memory_allocated()`` around
    forward + backward), in the least time.

    One step is measured per submodule call (bytes it leaves alive beyond its outputs, and
    its forward time). Candidate plans come from several searches: whole modules, greedily
    by bytes freed per second of recompute (one search per depth of the module tree and one
    over all modules; nested modules too when even every coarse module is not enough); per
    depth, every module under ``dots_saveable`` with some promoted to full checkpoints; and
    each ``nn.Sequential`` chain holding at least the bytes to shed run under
    ``checkpoint_sequential``'s budget planner; and the whole step under a memory cap of the
    budget (dynamic rematerialisation: the cheapest tensors to rebuild per byte are evicted
    and rebuilt when read; the model's forward sets the cap relative to what is live then,
    and the backward pass lifts it). Every candidate is *measured* with a real
    step, so ``peak_bytes`` is a real figure; of those that fit, the one with the least
    measured step time wins and is applied (``activation_checkpointing`` and
    ``activation_checkpointing_policy`` of the chosen modules; a chosen chain runs its layers
    through the planner while gradients are enabled, re-planning for a new input shape). The
    measuring steps leave parameters' ``.grad`` and the model's buffers (BatchNorm's running
    statistics) as they were; they draw random numbers (dropout) from the global generator.
    A candidate whose measuring step takes more than ``max(20 × the plain step, 0.5 s)`` is
    dropped as if it did not fit (a memory cap too tight for the graph: its rebuilds are
    bounded, see ``remat.set_rebuild_bound``, but such a plan could never be the fastest), so
    an infeasible budget ends in a ``ValueError`` after a few steps.

    Parameters
    ----------
    model : nn.Module
        The model; its submodules' checkpoint settings are set.
    *example_inputs : Any
        The positional inputs of one step (the batch size matters).
    budget_bytes : int
        The peak to fit, in bytes (keyword only, positive).
    loss_fn : callable, optional
        Turns the model's output into a scalar loss. Default: ``None`` (the mean of each
        floating-point tensor in the output, summed).
    dynamic : bool, optional
        Whether running the step under a memory cap (dynamic rematerialisation) is a
        candidate. False keeps to static checkpoints, whose peak is the same every step.
        Default: True.

    Returns
    -------
    AutoCheckpointPlan
        The applied plan: ``modules``, ``policies``, ``chains``, ``memory_cap_bytes``,
        ``peak_bytes`` measured under it, ``plain_peak_bytes``, ``step_seconds``,
        ``report()``, ``remove()``.

    Raises
    ------
    ValueError
        When ``budget_bytes`` is not a positive int, or when no candidate fits (the message
        states the smallest peak reached); the settings are then restored as they were.
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

    The budget holds for a training step under the plan (the budget is a steady state's:
    measured after a first step, which allocates the gradients):

    >>> model(x).mean().backward()
    >>> remat.reset_peak_memory_stats()
    >>> base = remat.memory_allocated()
    >>> model(x).mean().backward()
    >>> remat.max_memory_allocated() - base <= 200_000
    True
    >>> plan.remove()
    >>> any(m.activation_checkpointing for m in model.modules())
    False
    """
    if not isinstance(budget_bytes, int) or isinstance(budget_bytes, bool) or budget_bytes <= 0:
        raise ValueError(f"auto_checkpoint: budget_bytes must be a positive int, "
                         f"got {budget_bytes!r}")
    from .nn import Sequential  # here: remat.nn imports remat

    loss_fn = _default_loss if loss_fn is None else loss_fn
    by_name_all = dict(model.named_modules())
    by_name = {n: mod for n, mod in by_name_all.items() if n}
    previous = _Settings.of(by_name_all)
    params = list(model.parameters())
    original_grads = [p.grad for p in params]
    # The measuring steps are not training steps: buffers they update (BatchNorm's running
    # statistics and batch count) are put back as they were, so the step after planning
    # starts from the same state as without auto_checkpoint.
    original_buffers = [(b, b.detach().clone()) for b in model.buffers()]

    def set_plan(plan: _Plan) -> None:
        for n, mod in by_name_all.items():
            mod.activation_checkpointing = n in plan.checkpoints
            mod.activation_checkpointing_policy = plan.checkpoints.get(n)
            mod.__dict__["_chain_budget_bytes"] = plan.chains.get(n)
            mod.__dict__["_memory_cap_bytes"] = plan.cap if n == "" else None

    # Steps slower than this are candidates that do not fit (set once the plain step ran).
    too_slow = [float("inf")]

    def step() -> tuple[int, float]:
        gc.collect()
        base = _remat.memory_allocated()
        _remat.reset_peak_memory_stats()
        t0 = time.perf_counter()
        loss_fn(model(*example_inputs)).backward()
        seconds = time.perf_counter() - t0
        gc.collect()
        peak = _remat.max_memory_allocated() - base
        for p in params:
            if p.grad is not None:
                p.grad.zero_()
        if seconds > too_slow[0]:
            peak = _TOO_SLOW
        return peak, seconds

    def timed(plans: list[_Plan], rounds: int) -> list[list[float]]:
        """Seconds of `rounds` steps under each plan, taken round-robin (one step of each
        per round), so that drifts of the machine's speed hit them alike."""
        seconds: list[list[float]] = [[] for _ in plans]
        for _ in range(rounds):
            for plan, got in zip(plans, seconds):
                set_plan(plan)
                got.append(step()[1])
        return seconds

    try:
        # A steady-state step: gradients exist before it (as after a first step).
        for p in params:
            p.grad = _remat.zeros_like(p)
        set_plan(_NO_PLAN)
        measure = _measure(model, example_inputs, loss_fn, by_name)
        for p in params:
            p.grad.zero_()
        plain_peak, plain_step_seconds = step()
        too_slow[0] = max(_SLOW_FACTOR * plain_step_seconds, _SLOW_FLOOR_SECONDS)
        found: list[tuple[int, _Plan]] = []
        if plain_peak > budget_bytes:
            # Bytes freed per second of recompute, largest first; modules that free nothing
            # (a Linear keeps only its input, which is not its own) are no candidates.
            order = sorted((n for n in measure.kept if measure.kept[n] > 0),
                           key=lambda n: -measure.kept[n] / max(measure.seconds[n], 1e-9))
            depths = sorted({n.count(".") for n in order})
            levels = [[n for n in order if n.count(".") == d] for d in depths]
            searches = levels + [order] if len(levels) > 1 else levels
            for candidates in searches:
                found.append(_greedy(step, measure, candidates, order, plain_peak,
                                     budget_bytes, set_plan))
            # Selective policies pay where a module mixes matmuls with cheap ops: modules
            # that have submodules (a block, an MLP), not leaves.
            for level in levels:
                if any(next(by_name[n].children(), None) is not None for n in level):
                    got = _selective(step, measure, level, plain_peak, budget_bytes,
                                     set_plan)
                    if got is not None:
                        found.append(got)
            # A chain that keeps at least what must be shed may run under the planner.
            for name, mod in by_name_all.items():
                if (isinstance(mod, Sequential) and len(mod) > 1
                        and (name == "" or measure.kept.get(name, 0)
                             >= plain_peak - budget_bytes)):
                    got = _plan_chain(name, step, budget_bytes, set_plan)
                    if got is not None:
                        found.append(got)
            # Dynamic rematerialisation: no static checkpoint, the step under a cap.
            if dynamic:
                found.append(_plan_cap(step, budget_bytes, set_plan))
        fits = {plan.key(): (peak, plan) for peak, plan in found if peak <= budget_bytes}
        if plain_peak <= budget_bytes:
            fits = {_NO_PLAN.key(): (plain_peak, _NO_PLAN)}
        if not fits:
            measured = [f for f in found if f[0] != _TOO_SLOW]
            peak, plan = min(measured, key=lambda f: f[0], default=(plain_peak, _NO_PLAN))
            what = _describe(plan)
            slow = len(found) - len(measured)
            note = (f"; {slow} candidate(s) dropped for taking over {too_slow[0]:.2f} s a "
                    "step" if slow else "")
            raise ValueError(
                f"auto_checkpoint: no choice of submodules fits budget_bytes={budget_bytes}; "
                f"the smallest peak reached is {peak} bytes (checkpointing {what}; the plain "
                f"step peaks at {plain_peak}{note})")
        fitting = list(fits.values())
        plain_runs, *runs = timed([_NO_PLAN] + [plan for _, plan in fitting], 3)
        plain_seconds = statistics.median(plain_runs)
        # Candidates within 10% of the fastest are told apart by four more rounds among them.
        fastest = min(statistics.median(r) for r in runs)
        close = [i for i, r in enumerate(runs) if statistics.median(r) <= 1.1 * fastest]
        if len(close) > 1:
            for i, extra in zip(close, timed([fitting[i][1] for i in close], 4)):
                runs[i] += extra
        times = [statistics.median(r) for r in runs]
        ranked = sorted(((t, peak, plan) for t, (peak, plan) in zip(times, fitting)),
                        key=lambda r: (r[0], r[1]))
        seconds, peak, plan = ranked[0]
        set_plan(plan)
    except BaseException:
        previous.restore(by_name_all)
        raise
    finally:
        for p, g in zip(params, original_grads):
            p.grad = g
        for b, saved in original_buffers:  # buffers need no grad: no no_grad() needed
            b.copy_(saved)
    result = AutoCheckpointPlan(model, plan, peak, plain_peak, budget_bytes, measure,
                                previous, by_name_all, seconds, plain_seconds)
    result.candidates = [(_describe(c), p, t) for t, p, c in ranked]
    return result
