"""Leak test: many training steps through every checkpoint entry point, with the profiler
tracking throughout. After every step's backward no checkpoint state is left
(``live_checkpoint_state() == 0``), and once the step's tensors are dropped the live tensor
bytes are exactly what they were before it (parameters, inputs and their accumulated
gradients, which backward updates in place).

Tensors are tiny: the test counts what stays alive, not how much.
"""

from __future__ import annotations

import collections
import gc
import resource
from typing import Any, Callable

import pytest

import remat

STEPS = 1000
FEATURES = 8


def _params(n: int, seed: int = 0) -> list[remat.Tensor]:
    remat.manual_seed(seed)
    return [(remat.randn(FEATURES, FEATURES) * 0.3).requires_grad_() for _ in range(n)]


def _layer(w: remat.Tensor) -> Callable[[remat.Tensor], remat.Tensor]:
    return lambda t: (t @ w).tanh()


def _run(loss_of: Callable[[], remat.Tensor], steps: int = STEPS) -> None:
    """``steps`` forward/backward steps of ``loss_of`` with the profiler tracking: no
    checkpoint state after any backward, and the live bytes back at the baseline after
    every step."""
    remat.CheckpointProfiler.reset()
    remat.CheckpointProfiler.start_tracking()
    try:
        def step() -> None:
            loss = loss_of()
            loss.backward()
            del loss  # the step's last tensor: everything it made can go now
            assert remat.live_checkpoint_state() == 0, "checkpoint state outlived backward"

        step()  # warm-up: gradients are allocated once, plans are cached
        gc.collect()
        baseline = remat.memory_allocated()
        for i in range(steps):
            step()
            now = remat.memory_allocated()
            assert now == baseline, f"step {i}: {now - baseline} bytes more than the baseline"
        assert "checkpoint" in remat.CheckpointProfiler.report().lower()
    finally:
        remat.CheckpointProfiler.stop_tracking()
        remat.CheckpointProfiler.reset()


@pytest.fixture
def x() -> remat.Tensor:
    remat.manual_seed(1)
    return remat.randn(4, FEATURES, requires_grad=True)


def test_checkpoint_tensor(x):
    (w,) = _params(1)
    _run(lambda: (remat.checkpoint((x @ w).tanh()) ** 2).sum())


def test_adaptive_checkpoint(x):
    (w,) = _params(1)
    _run(lambda: (remat.adaptive_checkpoint((x @ w).tanh(), 0) ** 2).sum())


def test_checkpoint_fn(x):
    w1, w2 = _params(2)
    _run(lambda: remat.checkpoint(lambda t: _layer(w2)(_layer(w1)(t)), x).sum())


def test_checkpoint_segment(x):
    w1, w2 = _params(2)
    _run(lambda: remat.checkpoint_segment(lambda t: _layer(w2)(_layer(w1)(t)), x).sum())


def test_checkpoint_segment_with_non_tensor_outputs(x):
    (w,) = _params(1)

    def fn(t: remat.Tensor, scale: float) -> tuple:
        h = _layer(w)(t) * scale
        return h, "tag", 7, h.exp()

    def loss() -> remat.Tensor:
        a, tag, seven, b = remat.checkpoint_segment(fn, x, 2.0)
        assert (tag, seven) == ("tag", 7)
        return (a * b).sum()

    _run(loss)


def test_checkpoint_group(x):
    w1, w2 = _params(2)
    group = remat.CheckpointGroup("leaks")

    def loss() -> remat.Tensor:
        a, b = group.checkpoint_fn(lambda t: (_layer(w1)(t), _layer(w2)(t)), x)
        return (a * b).sum()

    _run(loss)


def test_checkpoint_scope(x):
    w1, w2 = _params(2)

    def loss() -> remat.Tensor:
        with remat.checkpoint_scope():
            h = _layer(w2)(_layer(w1)(x))
        return (h * h).sum()

    _run(loss)


@pytest.mark.parametrize("segments", [2, "sqrt", None], ids=["int", "sqrt", "budget_bytes"])
def test_checkpoint_sequential(x, segments):
    layers = [_layer(w) for w in _params(6)]
    budget = 4096 if segments is None else None
    _run(lambda: remat.checkpoint_sequential(layers, segments, x, budget_bytes=budget).sum())


def test_module_activation_checkpointing(x):
    remat.manual_seed(2)
    blocks = [remat.nn.Sequential(remat.nn.Linear(FEATURES, FEATURES), remat.nn.Tanh())
              for _ in range(3)]
    for b in blocks:
        b.activation_checkpointing = True
    model = remat.nn.Sequential(*blocks)
    _run(lambda: model(x).sum())


def test_gradient_checkpoint_forward(x):
    remat.manual_seed(3)
    model = remat.nn.Sequential(remat.nn.Linear(FEATURES, FEATURES), remat.nn.GELU())
    _run(lambda: remat.gradient_checkpoint_forward(model, True, False, x).sum())


def test_nested_entry_points(x):
    w1, w2, w3 = _params(3)

    def inner(t: remat.Tensor) -> remat.Tensor:
        c = remat.checkpoint(_layer(w1)(t))
        return remat.checkpoint_segment(_layer(w2), c)

    def loss() -> remat.Tensor:
        with remat.checkpoint_scope():
            h = _layer(w3)(x)
        return remat.checkpoint_segment(inner, h).sum()

    _run(loss)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def test_process_memory_stays_bounded_while_the_profiler_tracks(x):
    layers = [_layer(w) for w in _params(4)]

    def loss() -> remat.Tensor:
        with remat.checkpoint_scope():
            h = remat.checkpoint_sequential(layers, 2, x)
        return remat.checkpoint_segment(lambda t: t.exp(), h).sum()

    _run(loss, steps=500)  # warm up caches and allocator pools
    before = _rss_bytes()
    _run(loss, steps=3 * STEPS)
    grown = _rss_bytes() - before
    assert grown < 32 << 20, f"resident memory grew by {grown >> 20} MiB"


def test_checkpoint_segment_nested_outputs(x):
    w1, w2 = _params(2)

    def fn(t: remat.Tensor) -> Any:
        a, b = _layer(w1)(t), _layer(w2)(t)
        return (a, [b, (a * b, "tag", None)])

    def loss() -> remat.Tensor:
        a, (b, (ab, tag, none)) = remat.checkpoint_segment(fn, x)
        assert tag == "tag" and none is None
        return (a + b + ab).sum()

    _run(loss)


def test_checkpoint_segment_dict_outputs(x):
    w1, w2 = _params(2)
    Pair = collections.namedtuple("Pair", "first second")

    def fn(t: remat.Tensor) -> Any:
        return {"a": _layer(w1)(t), "pair": Pair(_layer(w2)(t), 3)}

    def loss() -> remat.Tensor:
        out = remat.checkpoint_segment(fn, x)
        return (out["a"] * out["pair"].first).sum()

    _run(loss)
