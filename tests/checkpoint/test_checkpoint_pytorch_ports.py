"""PyTorch's checkpoint tests (``test/test_utils.py``, ``test/test_autograd.py``) written as
PyTorch writes them, with only the import changed: ``GraphExecGroup``, the deprecated
multi-input ``checkpoint_sequential``, non-tensor inputs and outputs mixed with tensors, and the
early-free statistics of a non-reentrant checkpoint (on the CPU byte counters, where PyTorch's
test reads CUDA's)."""

from __future__ import annotations

import contextlib
import random
import warnings

import pytest

import remat as torch
import remat.nn as nn
from remat.utils.checkpoint import GraphExecGroup, checkpoint, checkpoint_sequential


# ---------------------------------------------------------------------------------------------
# GraphExecGroup: backward calls in one group recompute a checkpoint at most once


def _graph_execution_group_run(use_graph_execution_group):
    counter = [0]

    def fn(x):
        counter[0] += 1
        y = x.sin().cos()
        z = y.sin().cos()
        return y, z

    x = torch.randn(3, 3, requires_grad=True)
    y, z = checkpoint(fn, x, use_reentrant=False)
    ctx = GraphExecGroup() if use_graph_execution_group else contextlib.nullcontext()
    with ctx:
        (grad_y,) = torch.autograd.grad(z, inputs=(y,), grad_outputs=(torch.ones(3, 3),))
        (grad_x,) = torch.autograd.grad(y, inputs=(x,), grad_outputs=(grad_y,))
    # The same gradient as without the checkpoint.
    xp = x.detach().requires_grad_()
    yp = xp.sin().cos()
    zp = yp.sin().cos()
    (gyp,) = torch.autograd.grad(zp, yp, grad_outputs=torch.ones(3, 3))
    (gxp,) = torch.autograd.grad(yp, xp, grad_outputs=gyp)
    assert torch.equal(grad_x, gxp)
    return counter[0]


def test_checkpoint_graph_execution_group_with_group():
    assert _graph_execution_group_run(True) == 2  # the forward and one recompute
    assert torch.live_checkpoint_state() == 0


def test_checkpoint_graph_execution_group_without_group():
    assert _graph_execution_group_run(False) == 3  # each grad recomputes


def test_graph_execution_groups_do_not_nest():
    with GraphExecGroup():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with GraphExecGroup():
                pass
    with GraphExecGroup():  # usable again once the first ended
        pass


def test_graph_execution_group_frees_its_recompute_when_it_ends():
    def fn(x):
        y = x.exp()
        return y, y.exp()

    x = torch.randn(1024, requires_grad=True)
    y, z = checkpoint(fn, x, use_reentrant=False)
    base = torch.memory_allocated()
    with GraphExecGroup():
        (gy,) = torch.autograd.grad(z.sum(), y)
        held = torch.memory_allocated() - base
    assert held > 0  # the recomputed y-part is kept for the next backward of the group
    assert torch.memory_allocated() - base == gy.nbytes
    del gy


# ---------------------------------------------------------------------------------------------
# checkpoint_sequential with several inputs: deprecated, accepted with a warning


def test_checkpoint_sequential_deprecated_multiple_args():
    class Two(nn.Module):
        def forward(self, a, b):
            return a, b

    model = nn.Sequential(Two())
    a = torch.randn(1, 100, requires_grad=True)
    b = torch.randn(1, 100, requires_grad=True)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        out = checkpoint_sequential(model, 1, a, b)
    assert out[0] is a and out[1] is b


def test_checkpoint_sequential_several_inputs_match_the_plain_run():
    class Mix(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, a, b):
            return self.lin(a).tanh() + b, b * 2

    torch.manual_seed(0)
    model = nn.Sequential(*[Mix() for _ in range(4)])
    a, b = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out = checkpoint_sequential(model, 2, a, b)
    (out[0].sum() + out[1].sum()).backward()
    got = [p.grad.clone() for p in model.parameters()] + [a.grad.clone(), b.grad.clone()]
    model.zero_grad()
    a.grad = b.grad = None
    plain = (a, b)
    for m in model:
        plain = m(*plain)
    (plain[0].sum() + plain[1].sum()).backward()
    want = [p.grad for p in model.parameters()] + [a.grad, b.grad]
    assert all(torch.equal(g, w) for g, w in zip(got, want))


def test_checkpoint_sequential_positional_preserve_rng_state_still_works():
    x = torch.randn(4, requires_grad=True)
    y = checkpoint_sequential([torch.tanh] * 4, 2, x, False)
    assert y.shape == (4,)
    with pytest.raises(ValueError, match="segments"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            checkpoint_sequential([torch.tanh], None, x, x, budget_bytes=10)


# ---------------------------------------------------------------------------------------------
# Non-tensor inputs and outputs


def _foo(t1, t2, scale, t3):
    t4 = t1 + t2 * t3
    t5 = t1 * t2 + t3
    t4 *= scale
    t5 *= scale
    return scale, t4, None, True, t5, "bar", t1


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_non_tensor_inputs_outputs(use_reentrant):
    t1 = torch.rand(10, requires_grad=True)
    t2 = torch.rand(10, requires_grad=True)
    t3 = torch.rand(10)
    scale = random.randint(0, 10)
    res = checkpoint(_foo, t1, t2, scale, t3, use_reentrant=use_reentrant)
    assert scale == res[0]
    assert torch.allclose((t1 + t2 * t3) * scale, res[1])
    assert res[2] is None
    assert res[3] is True
    assert torch.allclose((t1 * t2 + t3) * scale, res[4])
    assert res[5] == "bar"
    assert torch.equal(t1, res[6])

    # Validate running backward.
    res[1].sum().backward(retain_graph=True)
    res[4].sum().backward(retain_graph=True)
    res[6].sum().backward()
    if use_reentrant:
        # Every output of a reentrant checkpoint, the handed-back input included, belongs to
        # one node whose saved tensors the first backward freed.
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            res[6].sum().backward()
    t1_grad = t1.grad
    t2_grad = t2.grad

    # Reset grads, run without checkpoint and validate we receive same grads.
    t1.grad = None
    t2.grad = None
    res = _foo(t1, t2, scale, t3)
    torch.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
    assert torch.allclose(t1.grad, t1_grad)
    assert torch.allclose(t2.grad, t2_grad)


def test_checkpoint_non_tensor_outputs_only():
    def fn(x, n):
        return n * 2, "ok"

    x = torch.ones(2, requires_grad=True)
    assert checkpoint(fn, x, 3, use_reentrant=False) == (6, "ok")


# ---------------------------------------------------------------------------------------------
# Early free: in a non-reentrant checkpoint the recomputed tensors are freed at each stage


def _early_free_stats(fn, should_free):
    stats = []

    def track(x, idx):
        # At each step of the backward some tensors are freed (the checkpoint's storage of
        # recomputed tensors emptied as each is used), unless the graph is retained.
        def hook(_unused):
            assert len(stats) == idx
            stats.append(torch.memory_allocated())
            if idx > 0:
                if should_free:
                    assert stats[idx] < stats[idx - 1]
                else:
                    assert stats[idx] == stats[idx - 1]

        x.register_hook(hook)

    def test_fn(x):
        # Several ops that save tensors, in a chain.
        x = x**2
        track(x, 2)
        x = x**2
        track(x, 1)
        x = x**2
        track(x, 0)
        x = x**2
        return x.sum()

    fn(test_fn)
    return stats


def test_checkpointing_without_reentrant_early_free():
    x = torch.zeros(10, requires_grad=True)

    def fresh(step):
        def run(fn):
            x.grad = None  # each run starts from the same live memory
            step(fn)
        return run

    ref = _early_free_stats(fresh(lambda fn: fn(x).backward()), True)
    non_retain = _early_free_stats(fresh(lambda fn: fn(x).backward(retain_graph=True)), False)
    # In a checkpoint, the memory is freed at each stage, exactly as without it.
    res = _early_free_stats(
        fresh(lambda fn: checkpoint(fn, x, use_reentrant=False).backward()), True
    )
    assert ref == res
    res_retain = _early_free_stats(
        fresh(lambda fn: checkpoint(fn, x, use_reentrant=False).backward(retain_graph=True)),
        False,
    )
    assert non_retain == res_retain
