"""`checkpoint_sequential(..., budget_bytes=N)` with nested (multi-level, Revolve-style)
schedules: budgets a single level cannot meet are met, measured with the byte counters;
an infeasible budget names the smallest one that fits, and that one works; gradients match
the plain run exactly; no planning under no_grad; a new input shape gets a new plan."""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import remat
from remat import nn


def _mlp(depth: int = 32, width: int = 128) -> nn.Sequential:
    remat.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.ReLU())
                           for _ in range(depth)])


def _step_peak(model: nn.Sequential, step) -> int:
    """Bytes the step allocates above what is live when it starts (the budget's measure)."""
    for p in model.parameters():
        p.grad = remat.zeros_like(p)  # gradients exist before, as after a first step
    gc.collect()
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    step()
    gc.collect()
    return remat.max_memory_allocated() - base


def _least_budget(model: nn.Sequential, x: remat.Tensor) -> int:
    """The smallest budget the planner accepts, read from its error on an impossible one."""
    with pytest.raises(ValueError) as info:
        remat.checkpoint_sequential(model, None, x, budget_bytes=1)
    return int(re.search(r"smallest budget that fits is budget_bytes=(\d+)",
                         str(info.value)).group(1))


def _grads(model: nn.Sequential) -> list[np.ndarray]:
    return [p.grad.numpy().copy() for p in model.parameters()]


def test_a_third_of_the_plain_peak_is_met_with_nested_schedules():
    model, x = _mlp(), remat.randn(256, 128)
    plain = _step_peak(model, lambda: model(x).mean().backward())
    want = _grads(model)
    budget = plain // 3
    one_level = min(
        _step_peak(model, lambda k=k: remat.checkpoint_sequential(model, k, x).mean().backward())
        for k in (4, 6, 8, 11)
    )
    assert one_level > budget, "a single level already fits: the test proves nothing"
    peak = _step_peak(
        model, lambda: remat.checkpoint_sequential(model, None, x, budget_bytes=budget)
        .mean().backward())
    assert peak <= budget, (peak, budget, plain)
    for g, w in zip(_grads(model), want):
        np.testing.assert_array_equal(g, w)


def test_an_infeasible_budget_names_the_smallest_that_fits():
    model, x = _mlp(depth=16, width=64), remat.randn(64, 64)
    with pytest.raises(ValueError, match=r"budget_bytes=100\b") as info:
        remat.checkpoint_sequential(model, None, x, budget_bytes=100)
    least = int(re.search(r"smallest budget that fits is budget_bytes=(\d+)",
                          str(info.value)).group(1))
    peak = _step_peak(model, lambda: remat.checkpoint_sequential(
        model, None, x, budget_bytes=least).mean().backward())
    assert peak <= least
    with pytest.raises(ValueError, match="smallest budget"):
        remat.checkpoint_sequential(model, None, x, budget_bytes=least // 2)


def test_budgets_from_plain_down_to_the_floor_fit_and_match():
    model, x = _mlp(depth=24, width=64), remat.randn(128, 64)
    plain = _step_peak(model, lambda: model(x).mean().backward())
    want = _grads(model)
    least = _least_budget(model, x)
    for frac in (1.0, 0.5, 0.3, 0.2):
        budget = max(int(plain * frac), least)
        peak = _step_peak(model, lambda b=budget: remat.checkpoint_sequential(
            model, None, x, budget_bytes=b).mean().backward())
        assert peak <= budget, (frac, peak, budget)
        for g, w in zip(_grads(model), want):
            np.testing.assert_array_equal(g, w)


def test_no_plan_under_no_grad_and_a_new_plan_for_a_new_shape():
    model = _mlp(depth=8, width=32)
    before = remat._remat._plan_cache_stats()
    with remat.no_grad():
        y = remat.checkpoint_sequential(model, None, remat.randn(4, 32), budget_bytes=1)
    assert y.shape == (4, 32)  # no planning: even an impossible budget just runs
    assert remat._remat._plan_cache_stats()["misses"] == before["misses"]
    for batch in (16, 64):
        x = remat.randn(batch, 32)
        plain = _step_peak(model, lambda x=x: model(x).mean().backward())
        budget = max(plain * 3 // 4, _least_budget(model, x))
        misses = remat._remat._plan_cache_stats()["misses"]
        peak = _step_peak(model, lambda x=x, b=budget: remat.checkpoint_sequential(
            model, None, x, budget_bytes=b).mean().backward())
        assert peak <= budget, (batch, peak, budget)
        assert remat._remat._plan_cache_stats()["misses"] == misses + 1  # planned anew


@pytest.mark.parametrize("n", [64, 256])
def test_deeply_nested_plans_stay_within_the_smallest_budget(n):
    """Chains of layers that keep exactly their input, at the smallest budget the planner
    accepts: plans nest several levels deep, and each level's replay frees the inputs of its
    nested segments as soon as they have been re-run (it used to keep them until the outer
    backward ended: 12 activations under a budget of 11 at 64 layers, 21 under 13 at 256)."""
    x = remat.randn(16, 64, requires_grad=True)
    layers = [lambda h: h.sin()] * n
    with pytest.raises(ValueError, match=r"budget_bytes=(\d+)") as e:
        remat.sequential_plan(layers, None, x, budget_bytes=1)
    least = int(re.findall(r"budget_bytes=(\d+)", str(e.value))[-1])
    plan = remat.sequential_plan(layers, None, x, budget_bytes=least)
    assert any(ck for _, _, ck in plan)
    gc.collect()
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    y = remat.checkpoint_sequential(layers, None, x, budget_bytes=least)
    y.sum().backward()
    peak = remat.max_memory_allocated() - base
    assert peak <= least, f"peak {peak} over the budget {least}"
    np.testing.assert_allclose(x.grad.numpy(), np.cos(_sin_chain_inputs(x.detach().numpy(), n))
                               .prod(axis=0), rtol=1e-4, atol=1e-6)


def _sin_chain_inputs(x, n):
    """The input of each of the n sin layers (stacked), for the chain rule."""
    out = []
    h = x.astype(np.float64)
    for _ in range(n):
        out.append(h)
        h = np.sin(h)
    return np.stack(out)
