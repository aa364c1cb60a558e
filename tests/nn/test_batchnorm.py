"""BatchNorm1d/2d/3d and ``F.batch_norm``: values against NumPy in training and eval mode, the
running statistics (momentum and cumulative average, unbiased variance), ``num_batches_tracked``,
buffers and ``state_dict`` keys as PyTorch's, loading a PyTorch-style state dict, PyTorch's
error messages, and a small CNN trained plain and under every checkpoint entry point with
identical losses, gradients and running statistics (a recompute never updates them again).
The op itself (forward, gradients, second order, checkpoints) is also a row of the op registry."""

from __future__ import annotations

import numpy as np
import pytest

import remat
import remat.nn.functional as F
from remat import nn


def _np_bn_train(x, w, b, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    mean, var = x.mean(axes), x.var(axes)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    n = x.size // x.shape[1]
    return y * w.reshape(shape) + b.reshape(shape), mean, var * n / (n - 1)


def _np_bn_eval(x, rm, rv, w, b, eps):
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    y = (x - rm.reshape(shape)) / np.sqrt(rv.reshape(shape) + eps)
    return y * w.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (4, 3, 2, 5)),
                                       (nn.BatchNorm3d, (2, 3, 2, 3, 2))])
def test_training_steps_and_eval_match_numpy(cls, shape):
    rng = np.random.default_rng(0)
    bn = cls(3, eps=1e-3, momentum=0.2).double()
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    bn.load_state_dict({"weight": w, "bias": b}, strict=False)
    rm, rv = np.zeros(3), np.ones(3)
    for step in range(3):
        x = rng.standard_normal(shape) * 2 + 1
        y = bn(remat.tensor(x))
        want, mean, unbiased = _np_bn_train(x, w, b, 1e-3)
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-10, atol=1e-12)
        rm, rv = 0.8 * rm + 0.2 * mean, 0.8 * rv + 0.2 * unbiased
        np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-12, atol=1e-14)
        assert bn.num_batches_tracked.item() == step + 1
    assert bn.eval() is bn and not bn.training
    x = rng.standard_normal(shape)
    y = bn(remat.tensor(x)).detach().numpy()
    np.testing.assert_allclose(y, _np_bn_eval(x, rm, rv, w, b, 1e-3), rtol=1e-10, atol=1e-12)
    # Eval mode neither updates nor counts.
    seen = bn.running_mean.numpy().copy()
    bn(remat.tensor(x))
    np.testing.assert_array_equal(bn.running_mean.numpy(), seen)
    assert bn.num_batches_tracked.item() == 3
    bn.train()
    bn(remat.tensor(x))
    assert bn.num_batches_tracked.item() == 4


def test_float32_module_matches_numpy_and_gradients_flow():
    rng = np.random.default_rng(1)
    bn = nn.BatchNorm2d(4)
    x = remat.tensor(rng.standard_normal((3, 4, 5, 5)).astype(np.float32), requires_grad=True)
    y = bn(x)
    want, _, _ = _np_bn_train(x.detach().numpy().astype(np.float64), np.ones(4), np.zeros(4),
                              1e-5)
    assert y.dtype == remat.float32
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-5)
    (y * y).sum().backward()
    assert x.grad.shape == x.shape and bn.weight.grad.shape == (4,) and bn.bias.grad.shape == (4,)
    # d/dbias sum(y²) = 2 sum(y) per channel = 0 (a normalised channel sums to zero).
    np.testing.assert_allclose(bn.bias.grad.numpy(), 0.0, atol=1e-3)
    assert bn.running_mean.grad is None and not bn.running_mean.requires_grad


def test_momentum_none_is_the_cumulative_average():
    rng = np.random.default_rng(2)
    bn = nn.BatchNorm1d(2, momentum=None).double()
    means, variances = [], []
    for _ in range(4):
        x = rng.standard_normal((5, 2)) * 3
        bn(remat.tensor(x))
        means.append(x.mean(0))
        variances.append(x.var(0, ddof=1))
    assert bn.num_batches_tracked.item() == 4
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean(means, 0), rtol=1e-12)
    # The running variance starts at 1 but the first factor (1/1) replaces it entirely.
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean(variances, 0), rtol=1e-12)


def test_track_running_stats_false_uses_batch_statistics_in_eval_too():
    bn = nn.BatchNorm1d(3, track_running_stats=False).double()
    assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
    assert list(bn.state_dict()) == ["weight", "bias"]
    x = np.random.default_rng(3).standard_normal((4, 3))
    want, _, _ = _np_bn_train(x, np.ones(3), np.zeros(3), 1e-5)
    bn.eval()
    np.testing.assert_allclose(bn(remat.tensor(x)).detach().numpy(), want, rtol=1e-10)


def test_affine_and_bias_flags():
    bn = nn.BatchNorm2d(3, affine=False)
    assert bn.weight is None and bn.bias is None and list(bn.parameters()) == []
    assert list(bn.state_dict()) == ["running_mean", "running_var", "num_batches_tracked"]
    bn = nn.BatchNorm2d(3, bias=False)
    assert bn.weight is not None and bn.bias is None
    assert "bias=False" in repr(bn)
    y = bn(remat.randn(2, 3, 2, 2))
    assert y.shape == (2, 3, 2, 2)


def test_state_dict_buffers_and_repr_are_pytorchs():
    bn = nn.BatchNorm2d(5)
    sd = bn.state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var",
                                                  "num_batches_tracked"]
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    nbt = sd["num_batches_tracked"]
    assert nbt.dtype == np.int64 and nbt.shape == () and nbt == 0
    np.testing.assert_array_equal(sd["running_mean"], np.zeros(5, np.float32))
    np.testing.assert_array_equal(sd["running_var"], np.ones(5, np.float32))
    np.testing.assert_array_equal(sd["weight"], np.ones(5, np.float32))
    np.testing.assert_array_equal(sd["bias"], np.zeros(5, np.float32))
    assert repr(bn) == ("BatchNorm2d(5, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                        "track_running_stats=True)")
    assert repr(nn.BatchNorm1d(2, eps=1e-3, momentum=None, affine=False,
                               track_running_stats=False)) == (
        "BatchNorm1d(2, eps=0.001, momentum=None, affine=False, bias=False, "
        "track_running_stats=False)")
    # .double() casts the float buffers; the batch count stays int64.
    bn.double()
    assert bn.running_mean.dtype == remat.float64 and bn.num_batches_tracked.dtype == remat.int64


def test_loading_a_pytorch_state_dict_through_safetensors_and_npz(tmp_path):
    """A PyTorch BatchNorm2d state dict as ``safetensors.torch.save_file`` writes it (same
    keys, float32 vectors, an int64 0-d count), read with ``remat.load``."""
    st = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(4)
    torch_sd = {
        "weight": rng.standard_normal(3).astype(np.float32),
        "bias": rng.standard_normal(3).astype(np.float32),
        "running_mean": rng.standard_normal(3).astype(np.float32),
        "running_var": rng.uniform(0.5, 2.0, 3).astype(np.float32),
        "num_batches_tracked": np.array(17, dtype=np.int64),
    }
    path = tmp_path / "bn.safetensors"
    st.save_file(torch_sd, str(path))
    bn = nn.BatchNorm2d(3)
    bn.load_state_dict(remat.load(str(path)))
    for k, v in torch_sd.items():
        np.testing.assert_array_equal(bn.state_dict()[k], v)
    assert bn.num_batches_tracked.item() == 17
    bn.eval()
    x = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    want = _np_bn_eval(x.astype(np.float64), *(torch_sd[k].astype(np.float64) for k in
                       ("running_mean", "running_var", "weight", "bias")), 1e-5)
    np.testing.assert_allclose(bn(remat.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    # And back: remat.save / remat.load round trip (npz).
    remat.save(bn.state_dict(), str(tmp_path / "bn.npz"))
    other = nn.BatchNorm2d(3)
    other.load_state_dict(remat.load(str(tmp_path / "bn.npz")))
    assert other.num_batches_tracked.item() == 17
    np.testing.assert_array_equal(other.running_var.numpy(), torch_sd["running_var"])


def test_reset_running_stats_and_parameters():
    bn = nn.BatchNorm1d(2)
    bn(remat.tensor([[1.0, 2.0], [3.0, 7.0]]))
    with remat.no_grad():
        bn.weight.mul_(3.0)
        bn.bias.add_(1.0)
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(bn.running_mean.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(bn.running_var.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(bn.weight.detach().numpy(), [3.0, 3.0])
    bn.reset_parameters()
    np.testing.assert_array_equal(bn.weight.detach().numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(bn.bias.detach().numpy(), [0.0, 0.0])
    assert bn.weight.requires_grad and bn.weight.is_leaf


@pytest.mark.parametrize("cls,bad,message", [
    (nn.BatchNorm1d, (2, 3, 4, 5), "expected 2D or 3D input (got 4D input)"),
    (nn.BatchNorm1d, (3,), "expected 2D or 3D input (got 1D input)"),
    (nn.BatchNorm2d, (2, 3, 4), "expected 4D input (got 3D input)"),
    (nn.BatchNorm3d, (2, 3, 4, 4), "expected 5D input (got 4D input)"),
])
def test_input_rank_errors_are_pytorchs(cls, bad, message):
    with pytest.raises(ValueError) as e:
        cls(3)(remat.ones(*bad))
    assert str(e.value) == message


def test_other_errors_name_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when "
                                         r"training, got input size \(1, 3\)"):
        nn.BatchNorm1d(3)(remat.ones(1, 3))
    nn.BatchNorm1d(3).eval()(remat.ones(1, 3))  # fine in eval mode
    with pytest.raises(remat.ShapeError, match=r"batch_norm.*running_mean.*\(4,\).*\(2, 3\)"):
        F.batch_norm(remat.ones(2, 3), remat.zeros(4), remat.ones(3), training=True)
    # PyTorch's order: the running statistics are checked first.
    with pytest.raises(remat.ShapeError, match="running_mean should contain 3 elements"):
        nn.BatchNorm2d(4)(remat.ones(2, 3, 2, 2))
    with pytest.raises(remat.ShapeError, match=r"weight should contain 3 elements.*\(4,\)"):
        F.batch_norm(remat.ones(2, 3), remat.zeros(3), remat.ones(3), remat.ones(4))
    with pytest.raises(ValueError, match="both be None or neither"):
        F.batch_norm(remat.ones(2, 3), remat.zeros(3), None, training=True)
    with pytest.raises(ValueError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(remat.ones(2, 3), None, None)
    with pytest.raises(ValueError, match="eps must be positive during training"):
        F.batch_norm(remat.ones(2, 3), None, None, training=True, eps=0.0)
    with pytest.raises(remat.DTypeError, match="batch_norm.*float64.*float32"):
        F.batch_norm(remat.ones(2, 3, dtype=remat.float64), remat.zeros(3), remat.ones(3))
    with pytest.raises(TypeError, match="batch_norm: running_mean must be a Tensor"):
        F.batch_norm(remat.ones(2, 3), np.zeros(3), remat.ones(3))
    with pytest.raises(remat.GraphError, match="running_mean"):
        F.batch_norm(remat.ones(2, 3), remat.zeros(3, requires_grad=True), remat.ones(3))
    with pytest.raises(ValueError, match="BatchNorm2d: num_features"):
        nn.BatchNorm2d(0)
    with pytest.raises(TypeError, match="BatchNorm2d: momentum"):
        nn.BatchNorm2d(3, momentum="fast")


def test_functional_signature_defaults_and_update():
    x = remat.tensor([[1.0, 10.0], [3.0, 20.0]])
    rm, rv = remat.zeros(2), remat.ones(2)
    y = F.batch_norm(x, rm, rv)  # PyTorch's default: eval mode, by the running statistics
    np.testing.assert_allclose(y.numpy(), x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-6)
    np.testing.assert_array_equal(rm.numpy(), [0.0, 0.0])
    F.batch_norm(x, rm, rv, None, None, True, 0.5, 1e-5)
    np.testing.assert_allclose(rm.numpy(), [1.0, 7.5])
    np.testing.assert_allclose(rv.numpy(), [0.5 + 0.5 * 2.0, 0.5 + 0.5 * 50.0])
    assert F.batch_norm is remat.batch_norm


# ------------------------------------------------------------------- checkpointed training


class _Net(nn.Module):
    """conv-BN-ReLU ×3, pooled, a linear head (the shape of a small ResNet stem)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
            nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
            nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                          nn.ReLU()),
        )
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))

    def forward(self, x):
        return self.head(self.features(x))


def _batches():
    rng = np.random.default_rng(5)
    return [(remat.tensor(rng.standard_normal((6, 3, 8, 8)).astype(np.float32)),
             remat.tensor(rng.integers(0, 4, 6))) for _ in range(3)]


def _train(setup=None, forward=None, steps=3):
    """Train a fresh (seeded) net ``steps`` SGD steps; ``setup(model, x)`` may switch
    checkpointing on, ``forward(model, x)`` replaces the plain call. Returns the losses, the
    last step's gradients and the final buffers."""
    remat.manual_seed(0)
    model = _Net()
    opt = remat.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = _batches()
    if setup is not None:
        setup(model, data[0][0])
    losses, grads = [], {}
    for x, t in data[:steps]:
        opt.zero_grad()
        out = model(x) if forward is None else forward(model, x)
        loss = F.cross_entropy(out, t)
        loss.backward()
        losses.append(loss.item())
        grads = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
        opt.step()
    buffers = {n: b.numpy().copy() for n, b in model.named_buffers()}
    return losses, grads, buffers


def _blocks(model):
    return list(model.features)


def _checkpoint_blocks(policy=None):
    def setup(model, x):
        for block in _blocks(model):
            block.activation_checkpointing = True
            block.activation_checkpointing_policy = policy
    return setup


def _budget_forward(model, x):
    # A budget below the chain's plain activations, so the planner (which measures each
    # layer once more) checkpoints some of it.
    plan = remat.sequential_plan(model.features, None, x, budget_bytes=_BUDGET[0])
    assert any(ck for _, _, ck in plan), plan
    return model.head(remat.checkpoint_sequential(model.features, None, x,
                                                  budget_bytes=_BUDGET[0]))


_BUDGET = [0]


def _scope_forward(model, x):
    with remat.checkpoint_scope():
        return model(x)


ENTRY_POINTS = {
    "Module.activation_checkpointing": dict(setup=_checkpoint_blocks()),
    "dots_saveable policy": dict(setup=_checkpoint_blocks(remat.checkpoint_policies.dots_saveable)),
    "checkpoint(fn)": dict(forward=lambda m, x: m.head(remat.checkpoint(m.features, x))),
    "checkpoint_segment": dict(
        forward=lambda m, x: m.head(remat.checkpoint_segment(m.features, x))),
    "nested checkpoints": dict(
        setup=_checkpoint_blocks(),
        forward=lambda m, x: m.head(remat.checkpoint(m.features, x))),
    "checkpoint_sequential(2)": dict(
        forward=lambda m, x: m.head(remat.checkpoint_sequential(m.features, 2, x))),
    "checkpoint_sequential(budget_bytes)": dict(forward=_budget_forward),
    "checkpoint_scope": dict(forward=_scope_forward),
}


@pytest.fixture(scope="module")
def plain_run():
    return _train()


def _assert_same(got, want, what):
    losses, grads, buffers = got
    assert losses == want[0], f"{what}: losses {losses} != {want[0]}"
    for n in want[1]:
        assert np.array_equal(grads[n], want[1][n]), f"{what}: gradient of {n}"
    assert list(buffers) == list(want[2])
    for n in want[2]:
        assert np.array_equal(buffers[n], want[2][n]), f"{what}: buffer {n}"


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_checkpointed_training_matches_the_plain_run(entry, plain_run):
    if entry == "checkpoint_sequential(budget_bytes)":
        act = 6 * 8 * 8 * 8 * 4  # one (6, 8, 8, 8) float32 activation
        _BUDGET[0] = 8 * act  # the planner takes 7 at least and keeps everything at 12
    assert plain_run[2]["features.0.1.num_batches_tracked"] == 3
    assert not np.array_equal(plain_run[2]["features.0.1.running_mean"], np.zeros(8))
    with remat.CheckpointProfiler() as prof:
        got = _train(**ENTRY_POINTS[entry])
        recomputes = prof.recompute_count()
    assert recomputes > 0, f"{entry}: nothing was recomputed"
    _assert_same(got, plain_run, entry)


def test_without_early_stop_too(plain_run):
    with remat.set_checkpoint_early_stop(False):
        got = _train(**ENTRY_POINTS["Module.activation_checkpointing"])
    _assert_same(got, plain_run, "early stop off")


def test_training_under_a_memory_limit_matches_the_plain_run(plain_run):
    """Steps 2 and 3 under a limit a quarter of the activations below the peak: evicted
    tensors are rebuilt by replaying their ops, never by running BatchNorm's update again."""
    remat.manual_seed(0)
    model = _Net()
    opt = remat.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses, grads = [], {}

    def step(x, t):
        opt.zero_grad()
        before = remat.memory_allocated()
        remat.reset_peak_memory_stats()
        loss = F.cross_entropy(model(x), t)
        kept = remat.memory_allocated() - before
        loss.backward()
        peak = remat.max_memory_allocated() - before
        losses.append(loss.item())
        grads.update({n: p.grad.numpy().copy() for n, p in model.named_parameters()})
        opt.step()
        return kept, peak

    data = _batches()
    kept, peak = step(*data[0])
    # The step's peak less a quarter of its activations (the convolutions' im2col workspace
    # is part of the peak and cannot be evicted).
    limit = remat.memory_allocated() + peak - kept // 4
    before = remat.memory_stats()
    with remat.memory_limit(limit):
        for x, t in data[1:]:
            step(x, t)
    after = remat.memory_stats()
    assert after["evictions"] > before["evictions"]
    assert after["rematerializations"] > before["rematerializations"]
    buffers = {n: b.numpy().copy() for n, b in model.named_buffers()}
    _assert_same((losses, grads, buffers), plain_run, "memory limit")


def test_auto_checkpoint_plans_without_touching_the_running_statistics(plain_run):
    """auto_checkpoint measures several training steps; the buffers are put back, so training
    after planning gives the plain run's statistics."""
    remat.manual_seed(0)
    probe = remat.auto_checkpoint(_Net(), _batches()[0][0], budget_bytes=1 << 30)
    budget = probe.plain_peak_bytes * 17 // 20  # the chain planner reaches about 3/4
    plans = []

    def setup(model, x):
        before = {n: b.numpy().copy() for n, b in model.named_buffers()}
        plans.append(remat.auto_checkpoint(model, x, budget_bytes=budget))
        for n, b in model.named_buffers():
            assert np.array_equal(b.numpy(), before[n]), n

    got = _train(setup=setup)
    plan = plans[0]
    assert plan.peak_bytes <= budget < plan.plain_peak_bytes
    _assert_same(got, plain_run, f"auto_checkpoint ({plan.report()})")
