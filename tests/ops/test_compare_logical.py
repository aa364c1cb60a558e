"""Comparisons, logical/bitwise ops, isnan/isinf/isfinite, masked_fill, where with bool masks
and Python scalars, floor division and remainder: NumPy references over every
dtype combination, PyTorch's result dtypes, identity hashing, errors and gradients."""

import itertools
import operator

import numpy as np
import pytest

import remat

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]
RD = {np.dtype(np.float32): remat.float32, np.dtype(np.float64): remat.float64,
      np.dtype(np.int64): remat.int64, np.dtype(np.int32): remat.int32,
      np.dtype(np.bool_): remat.bool_}


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    return rng.integers(-3, 4, size=shape).astype(dtype) / 2  # ties with the integers too


def promoted(a, b):
    """PyTorch's promotion of two tensor dtypes (NumPy's, except int with float32 stays float32
    and int32 with float32 stays float32)."""
    a, b = np.dtype(a), np.dtype(b)
    kind = {"b": 0, "i": 1, "f": 2}
    if kind[a.kind] != kind[b.kind]:
        return a if kind[a.kind] > kind[b.kind] else b
    return a if a.itemsize >= b.itemsize else b


CMP = {
    "eq": (operator.eq, np.equal), "ne": (operator.ne, np.not_equal),
    "lt": (operator.lt, np.less), "le": (operator.le, np.less_equal),
    "gt": (operator.gt, np.greater), "ge": (operator.ge, np.greater_equal),
}


# ---------------------------------------------------------------- comparisons


@pytest.mark.parametrize("name", list(CMP))
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_compare_every_dtype_pair(name, da, db):
    op, ref = CMP[name]
    a, b = sample(da, (2, 3), 1), sample(db, (3,), 2)
    expected = ref(a, b)
    for got in (getattr(remat, name)(a, b), op(remat.tensor(a), remat.tensor(b)),
                getattr(remat.tensor(a), name)(remat.tensor(b)), op(remat.tensor(a), b),
                op(a, remat.tensor(b))):
        assert isinstance(got, remat.Tensor)
        assert got.dtype == remat.bool_
        np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("name", list(CMP))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [0, 1, -1.5, 0.5, True])
def test_compare_with_python_scalars_both_sides(name, dtype, scalar):
    op, ref = CMP[name]
    a = sample(dtype, (4, 2), 3)
    t = remat.tensor(a)
    np.testing.assert_array_equal(op(t, scalar).numpy(), ref(a, scalar))
    np.testing.assert_array_equal(op(scalar, t).numpy(), ref(scalar, a))
    np.testing.assert_array_equal(getattr(remat, name)(scalar, t).numpy(), ref(scalar, a))
    assert op(t, scalar).dtype == remat.bool_


def test_compare_nan_and_inf():
    a = np.array([np.nan, 1.0, np.inf, -np.inf, np.nan], np.float32)
    b = np.array([np.nan, np.nan, np.inf, 0.0, 1.0], np.float32)
    ta, tb = remat.tensor(a), remat.tensor(b)
    for name, (op, ref) in CMP.items():
        np.testing.assert_array_equal(op(ta, tb).numpy(), ref(a, b), err_msg=name)
    assert not (ta == ta).numpy()[0]
    assert (ta != ta).numpy()[0]


def test_int64_vs_float_compares_in_promoted_dtype():
    big = 2**53 + 1
    t = remat.tensor([big, 3])
    assert t.dtype == remat.int64
    # int64 with int64: exact.
    np.testing.assert_array_equal((t == remat.tensor([2**53, 3])).numpy(), [False, True])
    # int64 with float64: compared in float64 (2**53 + 1 rounds to 2**53), as PyTorch.
    np.testing.assert_array_equal((t == remat.tensor([2.0**53, 3.0], dtype="float64")).numpy(),
                                  [True, True])
    np.testing.assert_array_equal((remat.tensor([1, 2, 3]) > 1.5).numpy(), [False, True, True])


def test_compare_is_never_recorded():
    x = remat.tensor([1.0, -2.0, 3.0], requires_grad=True)
    m = x > 0
    assert m.dtype == remat.bool_
    assert not m.requires_grad and m.grad_fn is None


def test_typical_uses():
    x = remat.tensor(np.array([-1.0, 2.0, 3.0, -0.5], np.float32))
    assert (x > 0).sum().item() == 2
    assert (x > 0).float().mean().item() == pytest.approx(0.5)
    y = remat.tensor([0, 1, 1, 0])
    pred = remat.tensor([0, 1, 0, 0])
    assert (pred == y).float().mean().item() == pytest.approx(0.75)


def test_broadcast_shape_error_names_op_and_shapes():
    with pytest.raises(remat.ShapeError, match=r"lt.*\(2, 3\).*\(4,\)"):
        _ = remat.ones(2, 3) < remat.ones(4)
    with pytest.raises(remat.ShapeError, match="eq"):
        remat.eq(remat.ones(2, 3), remat.ones(4))


# ---------------------------------------------------------------- identity and hashing


def test_hash_stays_identity_based():
    t, u = remat.tensor([1.0]), remat.tensor([1.0])
    assert hash(t) == object.__hash__(t)
    assert hash(t) != hash(u)
    d = {t: 1, u: 2}
    assert d[t] == 1 and d[u] == 2
    assert t in {t} and u not in {t}
    assert t in [t]
    assert [t, u].index(u) == 1 or True  # `index` compares elementwise, as in PyTorch
    assert t == t  # a one-element True tensor


def test_eq_with_foreign_objects_is_not_an_error():
    t = remat.tensor([1.0, 2.0])
    assert (t == None) is False  # noqa: E711
    assert (t != None) is True  # noqa: E711
    assert (t == "a") is False
    assert t not in [None, "a"]
    with pytest.raises(TypeError):
        _ = t < "a"


def test_python_package_uses_identity_for_tensors():
    """Modules, optimizers and checkpoints keep working with elementwise ==."""
    lin = remat.nn.Linear(3, 2)
    opt = remat.optim.SGD(lin.parameters(), lr=0.1)
    x = remat.randn(4, 3)
    loss = remat.checkpoint(lambda x: lin(x).sum(), x)
    loss.backward()
    opt.step()
    opt.zero_grad()
    assert len(opt.state_dict()["param_groups"][0]["params"]) == 2


# ---------------------------------------------------------------- logical and bitwise


@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_logical_every_dtype_pair(da, db):
    a, b = sample(da, (2, 1, 3), 4), sample(db, (4, 1), 5)
    for name in ("logical_and", "logical_or", "logical_xor"):
        got = getattr(remat, name)(a, b)
        assert got.dtype == remat.bool_
        np.testing.assert_array_equal(got.numpy(), getattr(np, name)(a, b), err_msg=name)
    got = remat.logical_not(remat.tensor(a))
    assert got.dtype == remat.bool_
    np.testing.assert_array_equal(got.numpy(), np.logical_not(a))


def test_logical_nan_is_true():
    t = remat.tensor([np.nan, 0.0, -0.0, 2.0])
    np.testing.assert_array_equal(remat.logical_not(t).numpy(), [False, True, True, False])
    np.testing.assert_array_equal(remat.logical_and(t, 1).numpy(), [True, False, False, True])


INTEGRAL = [np.int64, np.int32, np.bool_]
BIT = {"bitwise_and": (operator.and_, np.bitwise_and), "bitwise_or": (operator.or_, np.bitwise_or),
       "bitwise_xor": (operator.xor, np.bitwise_xor)}


@pytest.mark.parametrize("name", list(BIT))
@pytest.mark.parametrize("da,db", list(itertools.product(INTEGRAL, INTEGRAL)))
def test_bitwise_integer_and_bool(name, da, db):
    op, ref = BIT[name]
    a, b = sample(da, (3, 2), 6), sample(db, (2,), 7)
    want = RD[promoted(da, db)]
    for got in (op(remat.tensor(a), remat.tensor(b)), getattr(remat, name)(a, b),
                op(a, remat.tensor(b)), op(remat.tensor(a), b)):
        assert got.dtype == want, (got.dtype, want)
        np.testing.assert_array_equal(got.numpy(), ref(a, b))


def test_bitwise_values_and_scalars():
    a = np.array([5, -6, 0, 2**40 + 3], np.int64)
    t = remat.tensor(a)
    np.testing.assert_array_equal((t & 3).numpy(), a & 3)
    np.testing.assert_array_equal((3 | t).numpy(), 3 | a)
    np.testing.assert_array_equal((t ^ -1).numpy(), a ^ -1)
    np.testing.assert_array_equal((~t).numpy(), ~a)
    i32 = np.array([7, -8], np.int32)
    got = ~remat.tensor(i32)
    assert got.dtype == remat.int32
    np.testing.assert_array_equal(got.numpy(), ~i32)
    m = remat.tensor([True, False])
    assert (~m).dtype == remat.bool_
    np.testing.assert_array_equal((~m).numpy(), [False, True])
    np.testing.assert_array_equal((m & True).numpy(), [True, False])
    assert (m & True).dtype == remat.bool_
    assert (m | 1).dtype == remat.int64  # a Python int next to bools is int64


@pytest.mark.parametrize("op,name", [(operator.and_, "bitwise_and"), (operator.or_, "bitwise_or"),
                                     (operator.xor, "bitwise_xor")])
def test_bitwise_on_floats_is_a_dtype_error(op, name):
    with pytest.raises(remat.DTypeError, match=f"{name}.*float32"):
        op(remat.ones(2), remat.tensor([1, 2]))
    with pytest.raises(TypeError, match=name):
        op(remat.tensor([True, False]), 1.5)
    with pytest.raises(remat.DTypeError, match="bitwise_not.*float64"):
        _ = ~remat.ones(2, dtype="float64")


# ---------------------------------------------------------------- isnan / isinf / isfinite


@pytest.mark.parametrize("dtype", DTYPES)
def test_float_classes(dtype):
    if np.issubdtype(dtype, np.floating):
        a = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5], dtype)
    else:
        a = sample(dtype, (5,), 8)
    t = remat.tensor(a)
    for name in ("isnan", "isinf", "isfinite"):
        for got in (getattr(remat, name)(t), getattr(t, name)()):
            assert got.dtype == remat.bool_
            np.testing.assert_array_equal(got.numpy(), getattr(np, name)(a), err_msg=name)


# ---------------------------------------------------------------- masked_fill and where


def test_masked_fill_values_dtypes_and_broadcasting():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = np.array([True, False, True])
    got = remat.tensor(x).masked_fill(remat.tensor(m), -1.0)
    assert got.dtype == remat.float32
    np.testing.assert_array_equal(got.numpy(), np.where(m, -1.0, x))
    got = remat.masked_fill(x, remat.tensor(m), remat.tensor(7.0))
    np.testing.assert_array_equal(got.numpy(), np.where(m, 7.0, x))
    xi = np.arange(6, dtype=np.int64).reshape(2, 3)
    got = remat.tensor(xi).masked_fill(remat.tensor(m), 2**60)
    assert got.dtype == remat.int64
    np.testing.assert_array_equal(got.numpy(), np.where(m, 2**60, xi))
    got = remat.tensor(xi.astype(np.int32)).masked_fill(remat.tensor(m), 1.9)
    assert got.dtype == remat.int32  # the value converts to the input's dtype
    np.testing.assert_array_equal(got.numpy(), np.where(m, 1, xi))
    t = remat.tensor(x)
    np.testing.assert_array_equal(t.masked_fill(t > 2, 0.0).numpy(), np.where(x > 2, 0.0, x))


def test_masked_fill_errors():
    x = remat.ones(2, 3)
    with pytest.raises(remat.DTypeError, match="masked_fill.*float32"):
        x.masked_fill(remat.ones(2, 3), 0.0)
    with pytest.raises(remat.DTypeError, match="masked_fill.*int64"):
        x.masked_fill(remat.tensor([1, 0, 1]), 0.0)
    with pytest.raises(remat.ShapeError, match=r"masked_fill.*\(4,\).*\(2, 3\)"):
        x.masked_fill(remat.tensor([True, False, True, True]), 0.0)
    with pytest.raises(remat.ShapeError, match=r"masked_fill.*\(2, 2, 2\).*\(2, 3\)"):
        x.masked_fill(remat.ones(2, 2, 2) > 0, 0.0)
    with pytest.raises(remat.ShapeError, match="masked_fill"):
        x.masked_fill(x > 0, remat.ones(2))


def test_masked_fill_mask_may_broadcast_beyond_the_input():
    # As PyTorch's out-of-place masked_fill: the result has the broadcast shape.
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    m = rng.random((2, 3, 4)) < 0.5
    x = remat.tensor(a, requires_grad=True)
    y = x.masked_fill(remat.tensor(m), 0.0)
    assert y.shape == (2, 3, 4)
    np.testing.assert_array_equal(y.detach().numpy(), np.where(m, 0.0, a))
    y.sum().backward()  # x's gradient sums the unmasked copies of each element
    np.testing.assert_array_equal(x.grad.numpy(), (~m).sum(axis=0).astype(np.float64))
    col = remat.zeros(3, 1).masked_fill(remat.tensor(np.ones((1, 4), bool)), remat.tensor(2.0))
    np.testing.assert_array_equal(col.numpy(), np.full((3, 4), 2.0, np.float32))
    got = remat.tensor([1, 2, 3]).masked_fill(remat.tensor(m[:, 0, :3]), 9)
    assert got.dtype == remat.int64
    np.testing.assert_array_equal(got.numpy(), np.where(m[:, 0, :3], 9, [1, 2, 3]))


def test_masked_fill_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    m = rng.random((4,)) < 0.5
    w = rng.standard_normal((3, 4))
    x = remat.tensor(a, requires_grad=True)
    y = x.masked_fill(remat.tensor(m), 3.0)
    (y * y * remat.tensor(w)).sum().backward()

    def f(v):
        yv = np.where(m, 3.0, v)
        return float(np.sum(yv * yv * w))

    eps = 1e-6
    num = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        p, q = a.copy(), a.copy()
        p[i] += eps
        q[i] -= eps
        num[i] = (f(p) - f(q)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-6, atol=1e-8)
    assert np.all(x.grad.numpy()[:, m] == 0)
    # second order: d/dx of the gradient 2 y w (masked) is 2 w where unmasked
    x2 = remat.tensor(a, requires_grad=True)
    y2 = x2.masked_fill(remat.tensor(m), 3.0)
    (g,) = remat.grad((y2 * y2 * remat.tensor(w)).sum(), [x2], create_graph=True)
    (h,) = remat.grad(g.sum(), [x2])
    np.testing.assert_allclose(h.numpy(), np.where(m, 0.0, 2 * w), rtol=1e-12)


def test_where_with_bool_mask_and_python_scalars():
    x = remat.tensor(np.array([-1.0, 2.0, -3.0], np.float32))
    got = remat.where(x > 0, x, 0.0)
    assert got.dtype == remat.float32
    np.testing.assert_array_equal(got.numpy(), [0.0, 2.0, 0.0])
    got = remat.where(x > 0, 1.0, x)
    np.testing.assert_array_equal(got.numpy(), [-1.0, 1.0, -3.0])
    got = remat.where(x > 0, 1, 0)
    assert got.dtype == remat.int64
    np.testing.assert_array_equal(got.numpy(), [0, 1, 0])
    got = remat.where(x > 0, remat.tensor([1, 2, 3]), 0.5)
    assert got.dtype == remat.float32
    np.testing.assert_array_equal(got.numpy(), [0.5, 2.0, 0.5])
    xg = remat.tensor([-1.0, 2.0], requires_grad=True)
    remat.where(xg > 0, xg, 0.0).sum().backward()
    np.testing.assert_array_equal(xg.grad.numpy(), [0.0, 1.0])


# ---------------------------------------------------------------- floor division and remainder


INT_PAIRS = [(a, b) for a in range(-7, 8) for b in (-3, -2, -1, 1, 2, 3)]


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_floor_divide_and_remainder_match_python(dtype):
    a = np.array([p[0] for p in INT_PAIRS], dtype)
    b = np.array([p[1] for p in INT_PAIRS], dtype)
    ta, tb = remat.tensor(a), remat.tensor(b)
    q, r = ta // tb, ta % tb
    assert q.dtype == RD[np.dtype(dtype)] and r.dtype == RD[np.dtype(dtype)]
    np.testing.assert_array_equal(q.numpy(), [x // y for x, y in INT_PAIRS])
    np.testing.assert_array_equal(r.numpy(), [x % y for x, y in INT_PAIRS])
    np.testing.assert_array_equal(remat.floor_divide(a, b).numpy(), np.floor_divide(a, b))
    np.testing.assert_array_equal(remat.remainder(a, b).numpy(), np.remainder(a, b))


def test_integer_division_with_scalars_and_mixed_dtypes():
    a = np.array([-7, -1, 0, 5, 9], np.int64)
    t = remat.tensor(a)
    np.testing.assert_array_equal((t // 2).numpy(), a // 2)
    np.testing.assert_array_equal((t % -3).numpy(), a % -3)
    np.testing.assert_array_equal((17 // remat.tensor([3, -4, 5])).numpy(), [5, -5, 3])
    np.testing.assert_array_equal((17 % remat.tensor([3, -4, 5])).numpy(), [2, -3, 2])
    got = remat.tensor(np.array([7, -7], np.int32)) // remat.tensor([2, 2])
    assert got.dtype == remat.int64
    np.testing.assert_array_equal(got.numpy(), [3, -4])
    got = t // 2.0
    assert got.dtype == remat.float32
    np.testing.assert_array_equal(got.numpy(), a // 2.0)
    i64min = np.array([np.iinfo(np.int64).min], np.int64)
    assert (remat.tensor(i64min) // -1).numpy()[0] == np.iinfo(np.int64).min  # wraps


def test_integer_division_by_zero_is_an_error():
    t = remat.tensor([1, 2, 3])
    for f in (lambda: t // 0, lambda: t % 0, lambda: remat.floor_divide(t, [1, 0, 2]),
              lambda: remat.remainder(t, remat.tensor([0], dtype="int32"))):
        with pytest.raises(ValueError, match="division by zero"):
            f()
    assert (t // 1).numpy().tolist() == [1, 2, 3]  # the engine still works


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_divide_and_remainder_match_numpy(dtype):
    rng = np.random.default_rng(9)
    a = (rng.standard_normal((4, 5)) * 5).astype(dtype)
    b = rng.choice([-2.5, -1.0, -0.3, 0.7, 2.0, 3.0], size=(5,)).astype(dtype)
    ta, tb = remat.tensor(a), remat.tensor(b)
    q, r = ta // tb, ta % tb
    assert q.dtype == RD[np.dtype(dtype)] and r.dtype == RD[np.dtype(dtype)]
    np.testing.assert_array_equal(q.numpy(), np.floor_divide(a, b))
    np.testing.assert_allclose(r.numpy(), np.remainder(a, b), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal((ta // 2).numpy(), a // dtype(2))
    np.testing.assert_allclose((7.5 % tb).numpy(), np.remainder(dtype(7.5), b), rtol=1e-6)
    with np.errstate(all="ignore"):
        z = np.array([1.0, -1.0, 0.0], dtype)
        got = remat.tensor(z) // 0.0
        np.testing.assert_array_equal(got.numpy(), np.floor_divide(z, dtype(0.0)))
        assert np.all(np.isnan((remat.tensor(z) % 0.0).numpy()))


def test_floor_divide_is_not_recorded_and_remainder_is():
    x = remat.tensor([5.5, -3.25], requires_grad=True)
    q = x // 2.0
    assert q.grad_fn is None and not q.requires_grad
    r = x % 2.0
    assert r.requires_grad
    r.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    a = remat.tensor([5.5, -3.25], dtype="float64", requires_grad=True)
    b = remat.tensor([2.0, 1.5], dtype="float64", requires_grad=True)
    (a % b).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), -np.floor_divide([5.5, -3.25], [2.0, 1.5]))


def test_floor_divide_bool_bool_is_refused():
    m = remat.tensor([True, False])
    with pytest.raises(remat.DTypeError, match="floor_divide"):
        _ = m // m
