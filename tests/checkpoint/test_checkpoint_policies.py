"""Selective checkpoint policies on every entry point: gradients (and second-order gradients)
bit-identical to the plain run, the bytes kept between forward and backward exactly the op
outputs the policy keeps (engine byte counters), PyTorch's `CheckpointPolicy` /
`create_selective_checkpoint_contexts`, `checkpoint_name`, and clear errors."""

import numpy as np
import pytest

import remat
from remat import checkpoint_policies as cp
from remat import nn
from remat.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

B, D, H = 8, 16, 32
F32 = 4


def make_block():
    remat.manual_seed(0)
    return nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, D), nn.LayerNorm(D))


def named_block(x, block):
    h = remat.checkpoint_name(block[0](x), "h")
    return block[3](block[2](block[1](h)))


def dots_only(op, out):
    return CheckpointPolicy.MUST_SAVE if op == "linear" else CheckpointPolicy.PREFER_RECOMPUTE


POLICIES = {
    "none": None,
    "nothing_saveable": cp.nothing_saveable,
    "everything_saveable": cp.everything_saveable,
    "dots_saveable": cp.dots_saveable,
    "save_only_these_names": cp.save_only_these_names("h"),
    "offload_these_names": cp.offload_these_names("h"),
    "callable": dots_only,
    "callable_bool": lambda op, out: op == "gelu",
}


def grads_of(run, block, x):
    block.zero_grad()
    xx = x.detach().requires_grad_()
    y = run(xx)
    (y * y).sum().backward()
    return [xx.grad.numpy().copy()] + [p.grad.numpy().copy() for p in block.parameters()]


def assert_same(a, b):
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", list(POLICIES))
def test_every_entry_point_gives_identical_gradients(name):
    policy = POLICIES[name]
    block = make_block()
    x = remat.randn(B, D)
    plain = grads_of(lambda t: named_block(t, block), block, x)
    runs = {
        "checkpoint": lambda t: remat.checkpoint(named_block, t, block, policy=policy),
        "checkpoint_segment": lambda t: remat.checkpoint_segment(named_block, t, block,
                                                                 policy=policy),
        "checkpoint_sequential": lambda t: remat.checkpoint_sequential(
            list(block), 2, t, policy=policy),
    }
    for entry, run in runs.items():
        assert_same(grads_of(run, block, x), plain), entry
    block.activation_checkpointing = True
    block.activation_checkpointing_policy = policy
    assert_same(grads_of(block, block, x), plain)


def kept_bytes(run):
    remat.manual_seed(1)
    block = make_block()
    x = remat.randn(B, D, requires_grad=True)
    base = remat.memory_allocated()
    y = run(x, block)
    kept = remat.memory_allocated() - base
    y.sum().backward()
    return kept


@pytest.mark.parametrize(
    "policy, expected",
    [
        # Only the block's output (B, D) survives the forward.
        (cp.nothing_saveable, B * D * F32),
        # Plus both linear outputs, (B, H) and (B, D).
        (cp.dots_saveable, (B * D + B * H + B * D) * F32),
        (dots_only, (B * D + B * H + B * D) * F32),
        # Plus the tagged (B, H) linear output only.
        (cp.save_only_these_names("h"), (B * D + B * H) * F32),
    ],
)
def test_bytes_kept_are_exactly_the_kept_outputs(policy, expected):
    got = kept_bytes(lambda x, b: remat.checkpoint(named_block, x, b, policy=policy))
    assert got == expected


def test_everything_saveable_keeps_what_the_plain_run_keeps():
    plain = kept_bytes(lambda x, b: named_block(x, b))
    every = kept_bytes(lambda x, b: remat.checkpoint(named_block, x, b,
                                                     policy=cp.everything_saveable))
    nothing = kept_bytes(lambda x, b: remat.checkpoint(named_block, x, b))
    # everything_saveable keeps each op output (the plain run keeps only what backward
    # reads): never less than the plain run, and far more than no policy.
    assert every >= plain > nothing


def test_pytorch_selective_checkpoint_contexts():
    block = make_block()
    x = remat.randn(B, D)
    plain = grads_of(lambda t: named_block(t, block), block, x)
    for spec in (["linear"], lambda ctx, op, out: dots_only(op, out)):
        ctx_fn = create_selective_checkpoint_contexts(spec)
        got = grads_of(lambda t, c=ctx_fn: remat.utils.checkpoint.checkpoint(
            named_block, t, block, use_reentrant=False, context_fn=c), block, x)
        assert_same(got, plain)
    got = kept_bytes(lambda t, b: remat.checkpoint(
        named_block, t, b, context_fn=create_selective_checkpoint_contexts(["linear"])))
    assert got == (B * D + B * H + B * D) * F32


def test_second_order_gradients_identical_under_a_policy():
    block = make_block()
    x0 = remat.randn(B, D)

    def hvp(run):
        x = x0.detach().requires_grad_()
        (g,) = remat.grad((run(x) ** 2).sum(), [x], create_graph=True)
        (h,) = remat.grad((g * g).sum(), [x])
        return h.numpy()

    plain = hvp(lambda t: named_block(t, block))
    for policy in (cp.dots_saveable, cp.everything_saveable, cp.save_only_these_names("h")):
        np.testing.assert_array_equal(
            hvp(lambda t, p=policy: remat.checkpoint(named_block, t, block, policy=p)), plain)


def test_random_ops_replay_under_a_policy():
    remat.manual_seed(3)
    lin = nn.Linear(D, D)
    x = remat.randn(B, D)

    def f(t):
        return remat.dropout(lin(t), 0.5) * 2

    def grads(run):
        lin.zero_grad()
        remat.manual_seed(7)
        run(x).sum().backward()
        return lin.weight.grad.numpy().copy()

    plain = grads(f)
    for policy in (cp.dots_saveable, cp.everything_saveable, cp.nothing_saveable):
        np.testing.assert_array_equal(
            grads(lambda t, p=policy: remat.checkpoint(f, t, policy=p)), plain)


def test_errors():
    x = remat.randn(2, 3, requires_grad=True)
    with pytest.raises(TypeError, match="policy"):
        remat.checkpoint(lambda t: t * 2, x, policy=42)
    with pytest.raises(TypeError, match="CheckpointPolicy"):
        remat.checkpoint(lambda t: t * 2, x, policy=lambda op, out: "yes")
    with pytest.raises(ZeroDivisionError):
        remat.checkpoint(lambda t: t * 2, x, policy=lambda op, out: 1 / 0)
    with pytest.raises(TypeError, match="names"):
        cp.save_only_these_names(3)
    with pytest.raises(ValueError, match="checkpoint_name"):
        remat.checkpoint_name(x, "")
    with pytest.raises(NotImplementedError, match="context_fn"):
        remat.checkpoint(lambda t: t * 2, x, context_fn=lambda: None)
    # The engine is fine afterwards.
    remat.checkpoint(lambda t: t * 2, x, policy=cp.dots_saveable).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0, np.float32))


def test_checkpoint_name_is_an_identity_view():
    x = remat.randn(3, 4, requires_grad=True)
    y = remat.checkpoint_name(x, "x")
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 3.0, np.float32))
