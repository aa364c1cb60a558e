"""Memory statistics count exactly the bytes of live tensor storage; training does not leak."""

import gc

import numpy as np
import pytest

import remat


def mem():
    return remat.memory_allocated()


@pytest.fixture(autouse=True)
def _settle():
    gc.collect()
    yield
    gc.collect()


def test_memory_functions_return_ints():
    for f in (remat.memory_allocated, remat.max_memory_allocated):
        assert isinstance(f(), int) and f() >= 0
        assert f("cpu") == f()
        assert f(device="cpu") == f()
    assert remat.max_memory_allocated() >= remat.memory_allocated()


@pytest.mark.parametrize(
    "make,nbytes",
    [
        (lambda: remat.zeros(1000), 4000),
        (lambda: remat.ones(1000, dtype=remat.float64), 8000),
        (lambda: remat.full((10, 10), 3.0), 400),
        (lambda: remat.randn(25, 4), 400),
        (lambda: remat.rand(7, dtype=remat.float64), 56),
        (lambda: remat.tensor(np.zeros(300, dtype=np.float32)), 1200),
        (lambda: remat.tensor([[1.0, 2.0], [3.0, 4.0]]), 16),
        (lambda: remat.tensor(1.0, dtype=remat.float64), 8),
        (lambda: remat.zeros(0, 5), 0),
    ],
)
def test_creation_adds_exact_bytes_and_delete_returns(make, nbytes):
    base = mem()
    t = make()
    assert t.nbytes == nbytes
    assert mem() - base == nbytes
    del t
    assert mem() == base


def test_op_results_are_counted():
    a = remat.ones(1000)
    b = remat.ones(1000)
    base = mem()
    c = a + b
    assert mem() - base == 4000
    d = a @ b  # a 0-d result
    assert mem() - base == 4004
    s = remat.ones(10, 20, dtype=remat.float64).sum(axis=0)  # temp freed, result kept
    assert mem() - base == 4004 + 160
    del c, d, s
    assert mem() == base


def test_views_add_nothing():
    t = remat.zeros(10, 20)
    base = mem()
    views = [t.reshape(200), t.reshape(20, 10), t.T, t.transpose(0, 1), t[1], t[2:5],
             t[:, ::2], t[None], t[..., 0], t.detach(), remat.reshape(t, (4, 50))]
    assert mem() == base
    arr = t.numpy()
    assert mem() == base
    del t
    assert mem() == base  # the views keep the storage alive
    del views
    assert arr.shape == (10, 20)
    del arr
    assert mem() == base - 800


def test_storage_freed_when_last_view_dies():
    base = mem()
    t = remat.zeros(250)
    v = t[10:20]
    del t
    assert mem() - base == 1000
    del v
    assert mem() == base


def test_numpy_view_keeps_storage_alive():
    base = mem()
    t = remat.ones(100)
    arr = t.numpy()
    del t
    np.testing.assert_array_equal(arr, np.ones(100, dtype=np.float32))
    del arr
    gc.collect()
    assert mem() == base


def test_max_memory_allocated_and_reset():
    remat.reset_peak_memory_stats()
    base = mem()
    assert remat.max_memory_allocated() == base
    t = remat.zeros(2000)  # 8000 bytes
    u = remat.zeros(500)  # 2000 bytes
    assert remat.max_memory_allocated() == base + 10000
    del t
    assert mem() == base + 2000
    assert remat.max_memory_allocated() == base + 10000  # the peak stays
    remat.reset_peak_memory_stats()
    assert remat.max_memory_allocated() == base + 2000  # reset to the current value
    w = remat.zeros(10)
    assert remat.max_memory_allocated() == base + 2040
    del u, w
    assert remat.max_memory_allocated() == base + 2040
    remat.reset_peak_memory_stats("cpu")
    assert remat.max_memory_allocated("cpu") == mem() == base


def test_peak_counts_temporaries():
    x = remat.ones(1000, dtype=remat.float64)
    remat.reset_peak_memory_stats()
    base = mem()
    y = ((x + 1) * 2).sum()  # x + 1 (8000) lives while * 2 (8000) is made
    assert mem() - base == 8
    assert remat.max_memory_allocated() - base >= 16000
    del y


def test_backward_frees_saved_tensors():
    w = remat.randn(100, 100, requires_grad=True)
    x = remat.randn(10, 100)
    base = mem()
    loss = remat.tanh(x @ w).sum()
    assert mem() > base + 4  # the activations saved for backward are alive
    loss.backward()
    grad_bytes = w.grad.nbytes
    assert grad_bytes == 40000
    del loss
    assert mem() == base + grad_bytes
    w.grad = None
    assert mem() == base


def test_grad_accumulates_in_place():
    w = remat.randn(30, 30, requires_grad=True)
    x = remat.randn(5, 30)
    base = mem()
    remat.tanh(x @ w).sum().backward()
    after_first = mem()
    assert after_first == base + w.nbytes
    remat.tanh(x @ w).sum().backward()
    assert mem() == after_first  # the second backward adds into the same buffer
    w.grad = None
    assert mem() == base


def test_deleting_output_frees_graph():
    w = remat.randn(64, 64, requires_grad=True)
    base = mem()
    h = remat.relu(remat.randn(32, 64) @ w)
    y = remat.sigmoid(h).sum()
    assert mem() > base
    del h, y
    assert mem() == base


def test_no_grad_keeps_nothing_for_backward():
    w = remat.randn(50, 50, requires_grad=True)
    x = remat.randn(20, 50)
    base = mem()
    with remat.no_grad():
        y = remat.tanh(remat.tanh(x @ w) @ w)
    assert mem() - base == y.nbytes
    del y
    assert mem() == base


# ---------------------------------------------------------------- MLP training without leaks


def test_mlp_training_loss_falls_and_memory_returns_to_baseline():
    remat.manual_seed(0)
    rng = np.random.default_rng(0)
    n, d_in, hidden, n_cls = 128, 8, 64, 3
    centers = rng.standard_normal((n_cls, d_in)) * 2.0
    labels = rng.integers(0, n_cls, size=n)
    feats = centers[labels] + 0.5 * rng.standard_normal((n, d_in))
    x = remat.tensor(feats.astype(np.float32))
    y = labels

    def param(shape, fan_in):
        data = rng.uniform(-1, 1, size=shape) / np.sqrt(fan_in)
        return remat.tensor(data.astype(np.float32), requires_grad=True)

    params = [param((d_in, hidden), d_in), param((hidden,), d_in),
              param((hidden, hidden), hidden), param((hidden,), hidden),
              param((hidden, n_cls), hidden), param((n_cls,), hidden)]

    def forward(ps):
        w1, b1, w2, b2, w3, b3 = ps
        h = remat.relu(x @ w1 + b1)
        h = remat.relu(h @ w2 + b2)
        return remat.cross_entropy(h @ w3 + b3, y)

    def step(ps, lr=0.1):
        loss = forward(ps)
        loss.backward()
        value = loss.item()
        with remat.no_grad():
            new = [(p - lr * p.grad).detach().requires_grad_() for p in ps]
        for p in ps:
            p.grad = None
        return new, value

    gc.collect()
    baseline = mem()
    param_bytes = sum(p.nbytes for p in params)
    assert param_bytes == 4 * (8 * 64 + 64 + 64 * 64 + 64 + 64 * 3 + 3)
    losses = []
    after = []
    for _ in range(200):
        params, value = step(params)
        losses.append(value)
        after.append(mem())
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0], (losses[0], losses[-1])
    assert losses[-1] < 0.2
    assert set(after) == {baseline}, f"leak: baseline {baseline}, after steps {sorted(set(after))}"
    # no peak drift either: a step never needs more than the first one did
    remat.reset_peak_memory_stats()
    params, _ = step(params)
    peak1 = remat.max_memory_allocated()
    for _ in range(5):
        remat.reset_peak_memory_stats()
        params, _ = step(params)
        assert remat.max_memory_allocated() == peak1
    del params
    assert mem() == baseline - param_bytes


def test_mse_regression_memory_stable_with_grad_accumulation():
    rng = np.random.default_rng(1)
    xa = rng.standard_normal((64, 4)).astype(np.float32)
    x = remat.tensor(xa)
    target = remat.tensor(xa @ rng.standard_normal((4, 1)).astype(np.float32))
    w = remat.tensor(np.zeros((4, 1), dtype=np.float32), requires_grad=True)
    first = None
    marks = []
    for _ in range(50):
        loss = remat.mse_loss(x @ w, target)
        loss.backward()
        if first is None:
            first = loss.item()
        with remat.no_grad():
            w = (w - 0.05 * w.grad).detach().requires_grad_()
        del loss
        marks.append(mem())
    assert remat.mse_loss(x @ w, target).item() < 0.1 * first
    assert len(set(marks)) == 1
