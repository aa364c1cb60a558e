"""Checkpointed bf16-autocast training steps give bit-identical losses and gradients to the
plain bf16-autocast step, for every checkpoint entry point: the recompute runs under the
autocast state of the forward, whatever the state at backward time, and the parameter-cast
cache changes nothing a policy sees."""

import gc

import numpy as np
import pytest

import remat
import remat.nn as nn

WIDTH, BATCH, SEQ = 32, 4, 8


class Block(nn.Module):
    """A transformer-like block: layer norm, attention, MLP."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.fc = nn.Linear(WIDTH, 2 * WIDTH)
        self.out = nn.Linear(2 * WIDTH, WIDTH)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = self.ln(x)
        q, k, v = self.qkv(h).reshape(BATCH, SEQ, 3, 2, WIDTH // 2).permute(2, 0, 3, 1, 4)
        a = remat.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(BATCH, SEQ, WIDTH))
        return x + self.drop(self.out(remat.nn.functional.gelu(self.fc(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(Block(), Block(), Block(), Block())
        self.head = nn.Linear(WIDTH, 10)

    def forward(self, x):
        return self.head(self.features(x))


def _blocks(policy=None):
    def setup(model):
        for block in model.features:
            block.activation_checkpointing = True
            if policy is not None:
                block.activation_checkpointing_policy = policy
    return setup


def _scope(m, x):
    with remat.checkpoint_scope():
        return m(x)


def _group(m, x):
    return m.head(remat.CheckpointGroup().checkpoint_fn(m.features, x)[0])


def _budget(m, x):
    return m.head(remat.checkpoint_sequential(m.features, None, x, budget_bytes=_BUDGET[0]))


def _offload(m, x):
    h = x
    for block in m.features:
        h = remat.checkpoint_segment(block, h, offload=True)
    return m.head(h)


_BUDGET = [0]

ENTRY_POINTS = {
    "checkpoint(fn)": dict(forward=lambda m, x: m.head(remat.checkpoint(m.features, x))),
    "checkpoint(fn, use_reentrant=True)": dict(
        forward=lambda m, x: m.head(remat.checkpoint(m.features, x, use_reentrant=True))),
    "checkpoint_segment": dict(
        forward=lambda m, x: m.head(remat.checkpoint_segment(m.features, x))),
    "offload": dict(forward=_offload),
    "checkpoint_scope": dict(forward=_scope),
    "CheckpointGroup": dict(forward=_group),
    "Module.activation_checkpointing": dict(setup=_blocks()),
    "dots_saveable policy": dict(setup=_blocks(remat.checkpoint_policies.dots_saveable)),
    "nested checkpoints": dict(setup=_blocks(),
                               forward=lambda m, x: m.head(remat.checkpoint(m.features, x))),
    "checkpoint_sequential(2)": dict(
        forward=lambda m, x: m.head(remat.checkpoint_sequential(m.features, 2, x))),
    "checkpoint_sequential(budget_bytes)": dict(forward=_budget),
}


def _data():
    rng = np.random.default_rng(0)
    return [(remat.tensor(rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)),
             remat.tensor(rng.integers(0, 10, BATCH * SEQ))) for _ in range(2)]


def _train(setup=None, forward=None, backward_state=None, cache_enabled=True, limit=None):
    """Two SGD steps under bf16 autocast; the losses and the gradients of the last step."""
    remat.manual_seed(0)
    model = Net()
    if setup is not None:
        setup(model)
    opt = remat.optim.SGD(model.parameters(), lr=0.1)
    losses, grads = [], {}
    for x, t in _data():
        opt.zero_grad()
        remat.manual_seed(1)
        with remat.autocast("cpu", dtype=remat.bfloat16, cache_enabled=cache_enabled):
            y = forward(model, x) if forward is not None else model(x)
            assert y.dtype == remat.bfloat16
            loss = remat.nn.functional.cross_entropy(y.reshape(-1, 10), t)
            assert loss.dtype == remat.float32
        if backward_state is None:
            loss.backward()
        else:  # the recompute must not follow the state at backward time
            with backward_state():
                loss.backward()
        losses.append(loss.item())
        grads = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
        opt.step()
    for p in model.parameters():
        assert p.dtype == remat.float32 and p.grad.dtype == remat.float32
    return losses, grads


@pytest.fixture(scope="module")
def plain_run():
    return _train()


def _assert_same(got, want, what):
    assert got[0] == want[0], f"{what}: losses {got[0]} != {want[0]}"
    for n, g in want[1].items():
        assert np.array_equal(got[1][n], g), f"{what}: gradient of {n}"


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_checkpointed_autocast_step_is_bit_identical(entry, plain_run):
    if entry == "checkpoint_sequential(budget_bytes)":
        _BUDGET[0] = 150_000  # between the smallest schedule and the plain run
    with remat.CheckpointProfiler() as prof:
        got = _train(**ENTRY_POINTS[entry])
        recomputes = prof.recompute_count()
    if entry != "offload":
        assert recomputes > 0, f"{entry}: nothing was recomputed"
    _assert_same(got, plain_run, entry)
    gc.collect()
    assert remat.live_checkpoint_state() == 0


@pytest.mark.parametrize("state", ["no autocast", "float16 autocast", "autocast disabled"])
def test_recompute_follows_the_forward_not_the_backward(state, plain_run):
    states = {
        "no autocast": lambda: remat.autocast("cpu", enabled=False),
        "float16 autocast": lambda: remat.autocast("cpu", dtype=remat.float16),
        "autocast disabled": lambda: remat.autocast("cpu", enabled=False),
    }
    for entry in ("checkpoint(fn)", "Module.activation_checkpointing", "checkpoint_scope"):
        got = _train(**ENTRY_POINTS[entry], backward_state=states[state])
        _assert_same(got, plain_run, f"{entry}, backward under {state}")


def test_float32_forward_recomputes_in_float32_under_a_backward_autocast():
    """The opposite direction: a float32 checkpointed forward backpropagated inside an
    autocast region recomputes in float32 (its gradients are the plain float32 ones)."""
    def run(wrap, backward_ctx):
        remat.manual_seed(0)
        model = Net()
        x, t = _data()[0]
        remat.manual_seed(1)
        loss = remat.nn.functional.cross_entropy(wrap(model, x).reshape(-1, 10), t)
        with backward_ctx():
            loss.backward()
        return {n: p.grad.numpy().copy() for n, p in model.named_parameters()}

    want = run(lambda m, x: m(x), lambda: remat.autocast("cpu", enabled=False))
    got = run(lambda m, x: m.head(remat.checkpoint(m.features, x)),
              lambda: remat.autocast("cpu", dtype=remat.bfloat16))
    for n in want:
        assert np.array_equal(got[n], want[n]), n


def test_the_cast_cache_changes_nothing(plain_run):
    for entry in ("dots_saveable policy", "checkpoint(fn)"):
        got = _train(**ENTRY_POINTS[entry], cache_enabled=False)
        _assert_same(got, plain_run, f"{entry} without the cast cache")
    _assert_same(_train(cache_enabled=False), plain_run, "plain without the cast cache")


def test_auto_checkpoint_under_autocast(plain_run):
    remat.manual_seed(0)
    model = Net()
    x, _ = _data()[0]
    with remat.autocast("cpu", dtype=remat.bfloat16):
        plain = remat.auto_checkpoint(model, x, budget_bytes=1 << 40).plain_peak_bytes
        plan = remat.auto_checkpoint(Net(), x, budget_bytes=plain * 3 // 4)
    assert plan.modules or plan.chains or plan.memory_cap_bytes

    def setup(m):
        with remat.autocast("cpu", dtype=remat.bfloat16):
            remat.auto_checkpoint(m, x, budget_bytes=plain * 3 // 4)

    _assert_same(_train(setup=setup), plain_run, "auto_checkpoint")


def test_memory_limit_under_autocast(plain_run):
    x, _ = _data()[0]
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    _train()
    peak = remat.max_memory_allocated() - base
    before = remat.memory_stats()
    with remat.memory_limit(base + peak * 97 // 100):
        got = _train()
    after = remat.memory_stats()
    assert after["evictions"] > before["evictions"]
    _assert_same(got, plain_run, "memory_limit")
