"""The structured constructors against NumPy, with PyTorch's dtype rules: arange, linspace,
eye, empty, the *_like family, randint, as_tensor, full's inferred dtype, tril / triu
(with gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import remat


@pytest.mark.parametrize(
    "args,kwargs,want_dtype",
    [
        ((5,), {}, "int64"),
        ((2, 7), {}, "int64"),
        ((2, 9, 3), {}, "int64"),
        ((5, 0, -2), {}, "int64"),
        ((0.0, 1.0, 0.25), {}, "float32"),
        ((1, 2.5), {}, "float32"),
        ((3,), {"dtype": remat.float64}, "float64"),
        ((0, 5), {"step": 2}, "int64"),
        ((4, 4), {}, "int64"),
    ],
)
def test_arange(args, kwargs, want_dtype):
    t = remat.arange(*args, **kwargs)
    step = kwargs.get("step")
    ref = np.arange(*args, step) if step is not None else np.arange(*args)
    assert str(t.dtype) == want_dtype
    np.testing.assert_allclose(t.detach().numpy(), ref.astype(want_dtype))


def test_arange_errors():
    with pytest.raises(ValueError, match="arange"):
        remat.arange(0, 5, 0)
    with pytest.raises(ValueError, match="arange"):
        remat.arange(0, 5, -1)
    with pytest.raises(TypeError, match="arange"):
        remat.arange()


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-2.0, 3.0, 7), (1, 1, 3), (0, 10, 1),
                                             (0, 1, 0), (5.0, -5.0, 11)])
def test_linspace(start, end, steps):
    t = remat.linspace(start, end, steps)
    assert t.dtype == remat.float32
    np.testing.assert_allclose(t.detach().numpy(), np.linspace(start, end, steps, dtype=np.float32),
                               rtol=1e-6, atol=1e-6)
    if steps > 1:
        assert t[0].item() == np.float32(start) and t[-1].item() == np.float32(end)


def test_eye_and_empty():
    np.testing.assert_array_equal(remat.eye(3).detach().numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(remat.eye(2, 4, dtype=remat.int64).detach().numpy(), np.eye(2, 4))
    assert remat.eye(2, 4, dtype=remat.int64).dtype == remat.int64
    e = remat.empty(2, 3)
    assert e.shape == (2, 3) and e.dtype == remat.float32
    assert remat.empty((4,), dtype=remat.int32).dtype == remat.int32


def test_like_family_keeps_shape_dtype_device():
    x = remat.ones(2, 3, dtype=remat.float64)
    for f in (remat.empty_like, remat.rand_like, remat.randn_like):
        y = f(x)
        assert y.shape == (2, 3) and y.dtype == remat.float64 and y.device == x.device
    f = remat.full_like(x, 7.5)
    assert f.dtype == remat.float64 and f.tolist() == [[7.5] * 3] * 2
    i = remat.full_like(remat.tensor([1, 2]), 3)
    assert i.dtype == remat.int64 and i.tolist() == [3, 3]
    assert remat.rand_like(x, dtype=remat.float32).dtype == remat.float32
    r = remat.rand_like(remat.zeros(1000))
    assert 0.0 <= r.detach().numpy().min() and r.detach().numpy().max() < 1.0
    assert remat.randn_like(x, requires_grad=True).requires_grad


def test_full_infers_dtype_from_value():
    assert remat.full((2,), 7).dtype == remat.int64
    assert remat.full((2,), True).dtype == remat.bool
    assert remat.full((2,), 1.5).dtype == remat.float32
    assert remat.full((2,), 7, dtype=remat.float64).dtype == remat.float64


def test_randint():
    remat.manual_seed(0)
    a = remat.randint(3, 9, (1000,))
    assert a.dtype == remat.int64 and a.shape == (1000,)
    v = a.detach().numpy()
    assert v.min() >= 3 and v.max() <= 8 and set(np.unique(v)) == set(range(3, 9))
    remat.manual_seed(0)
    assert remat.randint(3, 9, (1000,)).tolist() == a.tolist()
    b = remat.randint(5, size=(2, 3))
    assert b.shape == (2, 3) and b.detach().numpy().max() < 5
    assert remat.randint(0, 2, (4,), dtype=remat.int32).dtype == remat.int32
    with pytest.raises(ValueError, match="randint"):
        remat.randint(5, 5, (2,))


def test_as_tensor_shares_where_it_can():
    t = remat.ones(3)
    assert remat.as_tensor(t) is not None and remat.as_tensor(t).numpy().tolist() == [1, 1, 1]
    a = np.arange(4)
    u = remat.as_tensor(a)
    assert u.dtype == remat.int64 and np.shares_memory(u.detach().numpy(), a)
    assert remat.as_tensor([1.5, 2]).dtype == remat.float32
    assert remat.as_tensor(a, dtype=remat.float64).dtype == remat.float64


@pytest.mark.parametrize("k", [-1, 0, 1, 2])
def test_tril_triu_forward_and_grad(k):
    rng = np.random.default_rng(k + 5)
    a = rng.normal(size=(2, 3, 4))
    x = remat.tensor(a, requires_grad=True)
    lo, up = remat.tril(x, k), x.triu(k)
    np.testing.assert_array_equal(lo.detach().numpy(), np.tril(a, k))
    np.testing.assert_array_equal(up.detach().numpy(), np.triu(a, k))
    g = rng.normal(size=a.shape)
    (lo * remat.tensor(g)).sum().backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), np.tril(g, k))
    assert remat.tril(remat.ones(3, 3, dtype=remat.int64)).dtype == remat.int64
    with pytest.raises(remat.ShapeError, match="tril"):
        remat.tril(remat.ones(3))


def test_causal_mask_idiom():
    """The masks a transformer port builds, without NumPy."""
    t = 4
    causal = remat.tril(remat.ones(t, t, dtype=remat.bool))
    assert causal.dtype == remat.bool
    np.testing.assert_array_equal(causal.detach().numpy(), np.tril(np.ones((t, t), bool)))
    pos = remat.arange(t)
    np.testing.assert_array_equal(pos.detach().numpy(), np.arange(t))
