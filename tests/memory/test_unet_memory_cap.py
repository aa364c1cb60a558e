"""Convnets reach small memory caps: a U-Net (``benches/unet_model.py``: skip connections,
pooling, upsampling, concatenation) trains under a memory cap of half its plain peak and
under an ``auto_checkpoint`` plan for that budget, with gradients identical to the plain
step, the peak within the cap from the engine's counters; and a planner that models each
layer's backward from measurement."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import remat
from remat import nn

BENCHES = Path(__file__).resolve().parents[2] / "benches"


def unet_class():
    spec = importlib.util.spec_from_file_location("unet_model", BENCHES / "unet_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.unet_class(nn, remat.cat)


def step(model, x, limit=None):
    """(peak above the start, gradients) of one step under ``limit`` bytes above it
    (the gradients allocated before, as in a training loop after its first step)."""
    for p in model.parameters():
        p.grad = remat.zeros_like(p)
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    with remat.memory_limit(None if limit is None else base + limit):
        model(x).mean().backward()
    peak = remat.max_memory_allocated() - base
    return peak, [p.grad.clone() for p in model.parameters()]


def test_a_unet_trains_under_a_cap_of_half_its_plain_peak():
    remat.manual_seed(0)
    model = unet_class()(3, 16, 2)
    x = remat.randn(4, 3, 32, 32)
    plain_peak, plain = step(model, x)
    peak, grads = step(model, x, plain_peak // 2)
    assert peak <= plain_peak // 2
    assert all(remat.equal(g, h) for g, h in zip(grads, plain))
    stats = remat.memory_stats()
    assert stats["evictions"] > 0 and stats["rematerializations"] > 0


def test_auto_checkpoint_fits_a_unet_in_half_its_plain_peak():
    remat.manual_seed(0)
    model = unet_class()(3, 16, 2)
    x = remat.randn(4, 3, 32, 32)
    plain_peak, plain = step(model, x)
    plan = remat.auto_checkpoint(model, x, budget_bytes=plain_peak // 2)
    try:
        peak, grads = step(model, x)
    finally:
        plan.remove()
    assert peak <= plain_peak // 2
    assert all(remat.equal(g, h) for g, h in zip(grads, plain))


def test_budget_bytes_plans_a_conv_chain_from_its_measured_backward():
    # The strategy CNN in small. Each layer's backward is measured (the gradient of the
    # convolution's output, its input's and weight's gradients, the bounded workspace), not
    # modelled as four activations: the smallest budget the planner accepts is under 0.62 of
    # the plain peak (0.56 on the full-size CNN, where it was 0.61), and the planned step
    # keeps to it with its output held by the caller, as training loops hold their logits.
    remat.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
                            for _ in range(8)])
    x = remat.randn(8, 16, 16, 16)
    plain_peak, plain = step(model, x)
    with pytest.raises(ValueError, match=r"smallest budget that fits is budget_bytes=(\d+)") as e:
        remat.sequential_plan(model, None, x, budget_bytes=1)
    least = int(re.search(r"smallest budget that fits is budget_bytes=(\d+)",
                          str(e.value)).group(1))
    assert least < 0.62 * plain_peak

    class Planned(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, x):
            return remat.checkpoint_sequential(model, None, x, budget_bytes=least)

    planned = Planned()
    step(planned, x)  # plans (measuring the layers) and caches the plan
    for p in model.parameters():
        p.grad.zero_()
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    out = planned(x)
    out.mean().backward()
    peak = remat.max_memory_allocated() - base
    del out
    assert peak <= least
    assert all(remat.equal(p.grad, h) for p, h in zip(model.parameters(), plain))
