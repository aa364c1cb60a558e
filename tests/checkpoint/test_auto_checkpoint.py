"""`remat.auto_checkpoint`: one measured step of any module tree, then the submodules to run
as checkpoints so that the step's measured peak fits the budget; gradients identical to the
plain run; `remove()` undoes it; an unreachable budget names the smallest peak reached."""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import remat
from remat import nn


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.act = nn.GELU()

    def forward(self, x: remat.Tensor) -> remat.Tensor:
        return x + self.fc2(self.act(self.fc1(x)))


class Net(nn.Module):
    def __init__(self, d: int = 64, depth: int = 8) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])
        self.head = nn.Linear(d, 1)

    def forward(self, x: remat.Tensor) -> remat.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def _net() -> Net:
    remat.manual_seed(0)
    return Net()


def _grads(model: nn.Module, x: remat.Tensor) -> tuple[list[np.ndarray], int]:
    for p in model.parameters():
        p.grad = remat.zeros_like(p)
    gc.collect()
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    model(x).float().mean().backward()
    gc.collect()
    peak = remat.max_memory_allocated() - base
    return [p.grad.numpy().copy() for p in model.parameters()], peak


def test_a_generous_budget_checkpoints_nothing():
    model, x = _net(), remat.randn(128, 64)
    plan = remat.auto_checkpoint(model, x, budget_bytes=1 << 40)
    assert plan.modules == [] and plan.peak_bytes == plan.plain_peak_bytes
    assert not any(m.activation_checkpointing for m in model.modules())


@pytest.mark.parametrize("fraction", [0.75, 0.5])
def test_the_budget_is_met_with_identical_gradients(fraction):
    model, x = _net(), remat.randn(128, 64)
    want, plain = _grads(model, x)
    budget = int(plain * fraction)
    plan = remat.auto_checkpoint(model, x, budget_bytes=budget)
    assert plan.plain_peak_bytes == plain
    assert (plan.modules or plan.chains or plan.memory_cap_bytes) and plan.peak_bytes <= budget
    names = {n for n, _ in model.named_modules()}
    assert set(plan.modules) <= names and set(plan.chains) <= names, plan.report()
    got, peak = _grads(model, x)
    if plan.memory_cap_bytes is None:
        assert peak == plan.peak_bytes <= budget  # the plan's figure is the measured one
    else:  # which tensors go depends on sampling; the cap holds
        assert peak <= plan.memory_cap_bytes <= budget
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    checkpointed = {n for n, m in model.named_modules() if m.activation_checkpointing}
    assert checkpointed == set(plan.modules)
    report = plan.report()
    for n in plan.modules:
        assert re.search(rf"^{re.escape(n)}\s.*yes( \(\w+\))?$", report, re.M), report
    plan.remove()
    assert not any(m.activation_checkpointing for m in model.modules())
    assert _grads(model, x)[1] == plain


def test_measuring_leaves_gradients_and_flags_as_they_were():
    model, x = _net(), remat.randn(16, 64)
    model.blocks[0].activation_checkpointing = True
    grads = [remat.full(p.shape, 3.0) for p in model.parameters()]
    for p, g in zip(model.parameters(), grads):
        p.grad = g
    plan = remat.auto_checkpoint(model, x, budget_bytes=1 << 40)
    for p in model.parameters():
        np.testing.assert_array_equal(p.grad.numpy(), 3.0)
    assert not model.blocks[0].activation_checkpointing  # the plan's choice: none needed
    plan.remove()
    assert model.blocks[0].activation_checkpointing


def test_an_unreachable_budget_names_the_smallest_peak():
    model, x = _net(), remat.randn(32, 64)
    model.blocks[2].activation_checkpointing = True
    with pytest.raises(ValueError, match=r"budget_bytes=1000;.*smallest peak reached is \d+"):
        remat.auto_checkpoint(model, x, budget_bytes=1000)
    # The flags are as they were.
    assert [b.activation_checkpointing for b in model.blocks] == [i == 2 for i in range(8)]
    with pytest.raises(ValueError, match="positive int"):
        remat.auto_checkpoint(model, x, budget_bytes=0)


def test_a_custom_loss_and_several_inputs():
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = Block(32), Block(32)

        def forward(self, x: remat.Tensor, y: remat.Tensor) -> tuple:
            return self.a(x), self.b(y)

    remat.manual_seed(1)
    model = Two()
    x, y = remat.randn(64, 32), remat.randn(64, 32)
    plain = remat.auto_checkpoint(model, x, y, budget_bytes=1 << 40,
                                  loss_fn=lambda out: (out[0] * out[1]).sum()).plain_peak_bytes
    plan = remat.auto_checkpoint(model, x, y, budget_bytes=plain * 3 // 4,
                                 loss_fn=lambda out: (out[0] * out[1]).sum(), dynamic=False)
    assert plan.peak_bytes <= plain * 3 // 4 and plan.modules


def test_small_budgets_take_whole_blocks_and_the_cheapest_fitting_plan_wins():
    """Fine modules free the most per second of recompute but keep their inputs; a budget
    only whole blocks can meet is met by the per-depth search, with identical gradients. The
    GPT example's blocks at a third of the plain peak."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "gpt.py"
    spec = importlib.util.spec_from_file_location("gpt_example", path)
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    remat.manual_seed(0)
    model = nn.Sequential(*[gpt.Block(32, 4, 0.0) for _ in range(6)])
    x = remat.randn(4, 32, 32)
    ref, plain = _grads(model, x)
    for divisor in (2, 3):
        plan = remat.auto_checkpoint(model, x, budget_bytes=plain // divisor, dynamic=False)
        assert plan.peak_bytes <= plain // divisor, plan.report()
        got, peak = _grads(model, x)
        assert peak <= plain // divisor
        for a, b in zip(ref, got):
            assert np.array_equal(a, b)
        plan.remove()
    # A third needs whole blocks (names without a dot) or runs of them, not only their parts.
    assert any("." not in m for m in plan.modules) or plan.chains, plan.report()


def test_a_budget_the_plain_step_meets_gives_an_empty_plan():
    model = nn.Sequential(nn.Linear(8, 8))  # nothing in it frees memory when checkpointed
    plan = remat.auto_checkpoint(model, remat.randn(2, 8), budget_bytes=10**9)
    assert plan.modules == [] and plan.peak_bytes <= 10**9
    plan.remove()


def _mlp(depth: int = 16, width: int = 64) -> nn.Sequential:
    remat.manual_seed(3)
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.GELU())
                           for _ in range(depth)])


def test_a_chain_meets_budgets_whole_modules_cannot():
    """Each block of a deep MLP keeps its input, so checkpointing blocks stops near half the
    plain peak; the budget planner on the chain (runs of blocks, nested) reaches a fifth,
    with identical gradients, and the plan lists the chain."""
    model, x = _mlp(), remat.randn(64, 64)
    ref, plain = _grads(model, x)
    with remat.no_grad():
        want = model(x).numpy()
    plan = remat.auto_checkpoint(model, x, budget_bytes=plain // 5, dynamic=False)
    assert plan.chains and plan.peak_bytes <= plain // 5, plan.report()
    got, peak = _grads(model, x)
    assert peak == plan.peak_bytes
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)
    assert "chain (the model)" in plan.report()
    # Without gradients the chain simply runs (nothing to plan), with the same output.
    with remat.no_grad():
        np.testing.assert_array_equal(model(x).numpy(), want)
    plan.remove()
    assert model.__dict__.get("_chain_budget_bytes") is None
    assert _grads(model, x)[1] == plain


def test_the_candidates_that_fit_are_ranked_by_measured_time():
    model, x = _mlp(8), remat.randn(64, 64)
    plain = _grads(model, x)[1]
    plan = remat.auto_checkpoint(model, x, budget_bytes=plain // 2)
    assert plan.candidates, plan.report()
    times = [t for _, _, t in plan.candidates]
    assert times == sorted(times)
    assert all(peak <= plain // 2 for _, peak, _ in plan.candidates)
    assert plan.candidates[0][1] == plan.peak_bytes
    assert plan.step_seconds == plan.candidates[0][2] and plan.plain_step_seconds > 0
    plan.remove()


def test_remove_restores_policies_and_chains_set_before():
    from remat import checkpoint_policies as cp

    model, x = _mlp(8), remat.randn(64, 64)
    model[1].activation_checkpointing = True
    model[1].activation_checkpointing_policy = cp.dots_saveable
    first = remat.auto_checkpoint(model, x, budget_bytes=1 << 40)
    first.remove()
    plan = remat.auto_checkpoint(model, x, budget_bytes=first.plain_peak_bytes // 2)
    plan.remove()
    assert model[1].activation_checkpointing
    assert model[1].activation_checkpointing_policy is cp.dots_saveable
    assert not any(m.activation_checkpointing for i, m in enumerate(model) if i != 1)


class FlatChain(nn.Module):
    """No submodule and no chain: only dynamic rematerialisation can shed its activations."""

    def __init__(self, d: int = 64, depth: int = 24) -> None:
        super().__init__()
        self.w = nn.Parameter(remat.randn(d, d) * d**-0.5)
        self.depth = depth

    def forward(self, x: remat.Tensor) -> remat.Tensor:
        for _ in range(self.depth):
            x = (x @ self.w).tanh()
        return x


def test_a_memory_cap_meets_budgets_no_checkpoint_can():
    remat.manual_seed(0)
    model, x = FlatChain(), remat.randn(256, 64)
    want, plain = _grads(model, x)
    budget = plain // 3
    plan = remat.auto_checkpoint(model, x, budget_bytes=budget)
    assert plan.modules == [] and plan.chains == {}
    assert plan.memory_cap_bytes is not None and plan.peak_bytes <= budget
    assert "memory cap" in plan.report() and "memory_cap_bytes" in repr(plan)
    # Training steps under the plan: the cap holds from the forward to the end of backward,
    # and gradients are the plain run's bits.
    for _ in range(2):
        got, peak = _grads(model, x)
        assert peak <= budget
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert remat.get_memory_limit() is None

    def evictions_outside_the_model() -> int:
        """Evictions by a chain as large as the model's forward, run outside it."""
        before = remat.memory_stats()["evictions"]
        h = x.requires_grad_(True)
        for _ in range(model.depth):
            h = (h @ model.w).tanh()
        del h
        x.requires_grad_(False)
        return remat.memory_stats()["evictions"] - before

    # After the backward, and after a forward under no_grad, nothing is capped.
    assert evictions_outside_the_model() == 0
    with remat.no_grad():
        model(x)
    assert evictions_outside_the_model() == 0
    # A forward under grad arms the cap until a backward (or the next forward) replaces it.
    out = model(x)
    assert evictions_outside_the_model() > 0
    out.float().mean().backward()
    del out
    assert evictions_outside_the_model() == 0
    # A limit the user set wins over the plan's cap.
    remat.set_memory_limit(1 << 40)
    try:
        assert _grads(model, x)[1] == plain
        assert remat.get_memory_limit() == 1 << 40
    finally:
        remat.set_memory_limit(None)
    plan.remove()
    assert model.__dict__.get("_memory_cap_bytes") is None
    assert _grads(model, x)[1] == plain


def test_a_memory_cap_that_cannot_hold_goes_over_instead_of_failing():
    remat.manual_seed(0)
    model, x = FlatChain(depth=4), remat.randn(64, 64)
    want, plain = _grads(model, x)
    model.__dict__["_memory_cap_bytes"] = 1  # far below what cannot be evicted
    try:
        got, peak = _grads(model, x)
    finally:
        model.__dict__["_memory_cap_bytes"] = None
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert remat.get_memory_limit() is None
