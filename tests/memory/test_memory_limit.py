"""Training under a hard memory limit (dynamic rematerialisation, API.md "Memory cap"):
``set_memory_limit`` / ``get_memory_limit`` / ``memory_limit`` / ``memory_stats``.

The limit caps ``memory_allocated()``; ops evict tensors that can be recomputed and rebuild
them when read. Every test compares against the unlimited run bit for bit and checks the
peak byte counter against the limit. Per-op coverage is generated from the op registry in
``test_op_registry.py``.
"""

from __future__ import annotations

import gc
import importlib.util
import pathlib
import threading

import numpy as np
import pytest
from _subprocess import assert_clean_exit, run_python

import remat
from remat import nn, optim

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_limit_left():
    yield
    remat.set_memory_limit(None)
    gc.collect()
    assert remat.memory_stats()["evictable_cells"] == 0


def _mlp(depth: int = 64, width: int = 128) -> nn.Module:
    remat.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers)


def _limit_above(model: nn.Module, headroom: int | None, device: str = "cpu") -> int | None:
    """A limit of what is live now, plus the model's gradients, plus ``headroom`` bytes of
    activations (None: no limit)."""
    if headroom is None:
        return None
    grads = sum(p.numel() * 4 for p in model.parameters())
    return remat.memory_allocated(device) + grads + headroom


def _load_gpt():
    spec = importlib.util.spec_from_file_location("gpt_example", ROOT / "examples" / "gpt.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Trainer:
    """A model, an optimizer and fixed batches; ``step()`` trains one step and returns the
    loss; ``activation_bytes`` is what a plain forward keeps for its backward."""

    def __init__(self, kind: str):
        if kind == "mlp":
            self.model = _mlp()
            rng = np.random.default_rng(1)
            self.batches = [(remat.tensor(rng.standard_normal((128, 128)).astype(np.float32)),
                             None) for _ in range(3)]
            self.loss = lambda out, _: (out * out).mean()
        else:
            gpt = _load_gpt()
            remat.manual_seed(0)
            self.model = gpt.GPT(vocab=40, d=32, heads=4, layers=4, context=32, dropout=0.1,
                                 checkpoint=False)
            rng = np.random.default_rng(1)
            self.batches = [tuple(remat.tensor(rng.integers(0, 40, (8, 32))) for _ in "xy")
                            for _ in range(3)]
            self.loss = lambda logits, y: remat.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        self.opt = optim.AdamW(self.model.parameters(), lr=1e-3)
        self.k = 0

    def step(self) -> tuple[float, int]:
        x, y = self.batches[self.k % len(self.batches)]
        self.k += 1
        remat.manual_seed(100 + self.k)
        before = remat.memory_allocated()
        loss = self.loss(self.model(x), y)
        kept = remat.memory_allocated() - before
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item(), kept

    def params(self) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.model.parameters()]


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_models_train_under_a_half_a_third_and_a_quarter_of_their_activation_peak(kind):
    """The 64-layer MLP and the GPT example train under limits of 1/2, 1/3 and 1/4 of their
    plain activation peak on top of parameters, gradients and optimizer state:
    ``max_memory_allocated()`` never passes the limit, and losses and parameters after every
    step equal the unlimited run's bit for bit."""
    plain = _Trainer(kind)
    plain.step()  # optimizer state and gradients exist from here on
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    ref_losses, activations = [], 0
    for _ in range(2):
        loss, kept = plain.step()
        ref_losses.append(loss)
        activations = max(activations, kept)
    plain_peak = remat.max_memory_allocated()
    ref_params = plain.params()
    grads = sum(p.numel() * 4 for p in plain.model.parameters())
    del plain
    gc.collect()
    for divisor in (2, 3, 4):
        t = _Trainer(kind)
        t.step()
        limit = base + grads + activations // divisor
        assert limit < plain_peak
        before = remat.memory_stats()
        remat.reset_peak_memory_stats()
        with remat.memory_limit(limit):
            losses = [t.step()[0] for _ in range(2)]
        stats = remat.memory_stats()
        assert remat.max_memory_allocated() <= limit, f"1/{divisor}"
        assert stats["evictions"] > before["evictions"], f"1/{divisor}"
        assert stats["rematerializations"] > before["rematerializations"], f"1/{divisor}"
        assert losses == ref_losses, f"1/{divisor}"
        for a, b in zip(ref_params, t.params()):
            assert np.array_equal(a, b), f"1/{divisor}: parameters differ"
        del t
        gc.collect()


def test_limit_api_accepts_bytes_strings_and_none_and_restores():
    assert remat.get_memory_limit() is None
    remat.set_memory_limit("8MB")
    assert remat.get_memory_limit() == 8 << 20
    remat.set_memory_limit(1_000_000, device="cpu")
    assert remat.get_memory_limit("cpu") == 1_000_000
    with remat.memory_limit("1.5 KiB"):
        assert remat.get_memory_limit() == 1536
        with remat.memory_limit(None):
            assert remat.get_memory_limit() is None
        assert remat.get_memory_limit() == 1536
    assert remat.get_memory_limit() == 1_000_000
    remat.set_memory_limit(None)
    assert remat.get_memory_limit() is None
    stats = remat.memory_stats()
    assert set(stats) >= {"allocated", "peak", "limit", "evictions", "rematerializations",
                          "remat_seconds"}
    assert stats["limit"] is None and stats["allocated"] == remat.memory_allocated()
    assert stats["peak"] == remat.max_memory_allocated()
    assert isinstance(stats["remat_seconds"], float)


@pytest.mark.parametrize("bad, exc", [("8 parsecs", ValueError), ("", ValueError),
                                      (-1, ValueError), (True, TypeError),
                                      ([8], TypeError), ("-5MB", ValueError)])
def test_bad_limits_raise_clear_errors(bad, exc):
    with pytest.raises(exc, match="set_memory_limit"):
        remat.set_memory_limit(bad)
    assert remat.get_memory_limit() is None


def test_a_limit_that_cannot_be_met_raises_memory_error_with_the_smallest_working_set():
    model = _mlp(depth=8)
    x = remat.randn(64, 128)
    ref = model(x).sum()
    ref.backward()
    ref_grads = [p.grad.detach().numpy().copy() for p in model.parameters()]
    model.zero_grad()
    limit = remat.memory_allocated() + 1000
    with pytest.raises(MemoryError, match=r"smallest working set here is (\d+) bytes") as e:
        with remat.memory_limit(limit):
            model(x).sum().backward()
    assert "linear" in str(e.value) or "gelu" in str(e.value), str(e.value)
    # The engine still works, with the same gradients.
    model.zero_grad()
    model(x).sum().backward()
    for a, p in zip(ref_grads, model.parameters()):
        assert np.array_equal(a, p.grad.detach().numpy())


def test_tensors_the_user_holds_and_numpy_views_are_never_evicted():
    """An activation the user keeps (and its NumPy view) keeps its values under a limit that
    evicts everything else it can."""
    model = _mlp(depth=16)
    x = remat.randn(512, 128)  # 8 MB of activations against 1 MB of gradients
    kept = {}

    def hook(module, inputs, output):
        kept["h"] = output
        kept["view"] = output.detach().numpy()
        kept["copy"] = output.detach().numpy().copy()

    model[9].register_forward_hook(hook)
    before = remat.memory_stats()["evictions"]
    # Room for the gradients and 2 MB of the 8 MB of activations: this run must evict (the
    # counter is cumulative, so the test counts its own evictions).
    with remat.memory_limit(_limit_above(model, 2_000_000)):
        out = model(x).sum()
        out.backward()
    assert remat.memory_stats()["evictions"] > before
    assert np.array_equal(kept["view"], kept["copy"])
    assert np.array_equal(kept["h"].detach().numpy(), kept["copy"])


def test_in_place_write_to_a_saved_tensor_is_an_error_not_a_wrong_gradient():
    """A saved input written in place is caught at backward, with or without a limit."""
    for limit in (None, remat.memory_allocated() + 10_000_000):
        w = remat.randn(32, 32, requires_grad=True)
        with remat.memory_limit(limit):
            h = (w * 2).tanh()
            y = (h * h).sum()
            with remat.no_grad():
                h.add_(1.0)
            with pytest.raises(remat.GraphError, match="modified by an inplace operation"):
                y.backward()


def test_checkpoints_compose_with_the_limit():
    """A model whose first half runs as checkpoint segments and whose second half is plain,
    trained under a limit: the limit evicts in the plain half, and the gradients are the
    unlimited run's."""
    def run(headroom, ck):
        remat.manual_seed(3)
        model = _mlp(depth=32)
        x = remat.randn(384, 128)
        blocks = list(model.children())
        limit = _limit_above(model, headroom)
        with remat.memory_limit(limit):
            h = remat.checkpoint_sequential(blocks[:32], 4, x) if ck else x
            for b in blocks[32 if ck else 0:]:
                h = b(h)
            (h * h).mean().backward()
        return [p.grad.detach().numpy().copy() for p in model.parameters()]

    ref = run(None, False)
    for ck in (False, True):
        assert [np.array_equal(a, b) for a, b in zip(ref, run(None, ck))]
        before = remat.memory_stats()["evictions"]
        got = run(2_500_000, ck)
        assert remat.memory_stats()["evictions"] > before, ck
        for a, b in zip(ref, got):
            assert np.array_equal(a, b), ck


def test_views_of_evicted_tensors_are_rebuilt_together():
    """A transpose and a reshape of an activation, both saved: evicted with it and rebuilt
    with the right layout."""
    def run(limit):
        remat.manual_seed(5)
        w = remat.randn(64, 64, requires_grad=True)
        h = remat.randn(64, 64)
        with remat.memory_limit(limit):
            for _ in range(12):
                a = (h @ w).tanh()
                h = (a.T @ a.reshape(64, 64)).sigmoid() + a.transpose(0, 1)
            (h * h).sum().backward()
        return w.grad.detach().numpy().copy()

    ref = run(None)
    before = remat.memory_stats()["evictions"]
    got = run(remat.memory_allocated() + 300_000)
    assert remat.memory_stats()["evictions"] > before
    assert np.array_equal(ref, got)


def test_one_limit_shared_by_threads():
    """Two threads train their own models at once under one engine-wide limit: each gets
    the single-threaded gradients, and the peak stays under the limit."""
    def setup(seed):
        remat.manual_seed(seed)
        model = _mlp(depth=24)
        x = remat.tensor(np.random.default_rng(seed).standard_normal((256, 128))
                         .astype(np.float32))
        return model, x

    def train(model, x):
        (model(x) ** 2).mean().backward()
        return [p.grad.detach().numpy().copy() for p in model.parameters()]

    ref = {s: train(*setup(s)) for s in (1, 2)}
    runs = {s: setup(s) for s in (1, 2)}
    got: dict = {}
    errors: list = []

    def worker(seed):
        try:
            got[seed] = train(*runs[seed])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    grads = 2 * sum(p.numel() * 4 for p in runs[1][0].parameters())
    limit = remat.memory_allocated() + grads + 4_000_000
    remat.reset_peak_memory_stats()
    before = remat.memory_stats()["evictions"]
    remat.set_memory_limit(limit)
    threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    remat.set_memory_limit(None)
    assert not errors, errors
    assert remat.max_memory_allocated() <= limit
    assert remat.memory_stats()["evictions"] > before
    for s in (1, 2):
        for a, b in zip(ref[s], got[s]):
            assert np.array_equal(a, b)


def test_hostile_limits_never_crash():
    """Limits of zero bytes, one byte and everything, switched mid-step: exceptions only."""
    code = """
import remat, numpy as np
from remat import nn
m = nn.Sequential(*[nn.Linear(64, 64) for _ in range(8)])
x = remat.randn(32, 64)
for limit in (0, 1, remat.memory_allocated(), 10**18, "1B", None):
    try:
        with remat.memory_limit(limit):
            y = m(x).sum()
        remat.set_memory_limit(0)
        y.backward()
    except MemoryError as e:
        assert "smallest working set" in str(e), e
    finally:
        remat.set_memory_limit(None)
m.zero_grad()
m(x).sum().backward()
print("ok")
"""
    run = run_python(code)
    assert_clean_exit("hostile memory limits", run)
    assert run.stdout.strip().endswith("ok"), run.stdout


def test_selective_policies_compose_with_the_limit():
    """Blocks checkpointed with ``dots_saveable`` (linear outputs kept, GELU recomputed), the
    rest plain, under a limit that evicts: the unlimited run's gradients."""
    from remat import checkpoint_policies as cp

    def run(headroom):
        remat.manual_seed(4)
        model = _mlp(depth=16)
        x = remat.randn(384, 128)
        layers = list(model.children())
        limit = _limit_above(model, headroom)
        with remat.memory_limit(limit):
            h = x
            for k in range(0, 16, 2):
                pair = nn.Sequential(*layers[k:k + 2])
                h = remat.checkpoint(pair, h, policy=cp.dots_saveable)
            for layer in layers[16:]:
                h = layer(h)
            (h * h).mean().backward()
        return [p.grad.detach().numpy().copy() for p in model.parameters()]

    ref = run(None)
    before = remat.memory_stats()["evictions"]
    got = run(3_600_000)
    assert remat.memory_stats()["evictions"] > before
    for a, b in zip(ref, got):
        assert np.array_equal(a, b)


needs_gpu = pytest.mark.skipif(not remat.cuda.is_available(),
                               reason="CUDA not available (remat.cuda.is_available() is False)")


@needs_gpu
def test_cuda_training_under_a_device_limit_matches_the_cpu():
    """The limit on ``cuda``: device bytes stay under it, evictions happen, and gradients
    equal the unlimited device run's; the CPU limit is untouched. With ``offload=True``
    segments as well."""
    def run(limit, offload):
        remat.manual_seed(6)
        model = _mlp(depth=24).to("cuda")
        x = remat.randn(512, 128, device="cuda")
        layers = list(model.children())
        lim = _limit_above(model, limit, "cuda")
        remat.reset_peak_memory_stats("cuda")
        with remat.memory_limit(lim, device="cuda"):
            h = remat.checkpoint_segment(nn.Sequential(*layers[:8]), x, offload=True) \
                if offload else x
            for layer in layers[8 if offload else 0:]:
                h = layer(h)
            (h * h).mean().backward()
            remat.cuda.synchronize()
        assert lim is None or remat.max_memory_allocated("cuda") <= lim
        return [p.grad.detach().numpy().copy() for p in model.parameters()]

    for offload in (False, True):
        ref = run(None, offload)
        before = remat.memory_stats("cuda")["evictions"]
        got = run(3_000_000, offload)
        assert remat.memory_stats("cuda")["evictions"] > before
        assert remat.get_memory_limit() is None
        for a, b in zip(ref, got):
            assert np.array_equal(a, b), offload
