"""Forward values beyond the op registry's generated tests (test_op_registry.py): scalar
operands, IEEE edge cases, empty and large inputs, strided operands, argument spellings."""

import math

import numpy as np
import pytest
from conftest import (
    DTYPES,
    assert_close,
    away_from_zero,
    broadcast_pairs,
    dtypes,
    rand_array,
    rdtype,
    seeds,
    shapes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import remat
from op_registry import (
    np_cross_entropy,
    np_gelu_tanh,
    np_layer_norm,
    np_log_softmax,
    np_sigmoid,
    np_softmax,
)

FEW = settings(deadline=None, max_examples=20)
SOME = settings(deadline=None, max_examples=40)

# ---------------------------------------------------------------- NumPy references


def np_gelu(x):
    erf = np.vectorize(math.erf)
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(x.dtype)


# ---------------------------------------------------------------- binary ops


BINARY = {
    "add": (remat.add, np.add, lambda a, b: a + b),
    "sub": (remat.sub, np.subtract, lambda a, b: a - b),
    "mul": (remat.mul, np.multiply, lambda a, b: a * b),
    "div": (remat.div, np.divide, lambda a, b: a / b),
    "pow": (remat.pow, np.power, lambda a, b: a**b),
}


def binary_inputs(name, sa, sb, dtype, seed):
    if name == "pow":
        a = rand_array(sa, dtype, seed, 0.2, 2.0)
        b = rand_array(sb, dtype, seed + 1, -2.0, 2.0)
    elif name == "div":
        a = rand_array(sa, dtype, seed)
        b = away_from_zero(sb, dtype, seed + 1)
    else:
        a = rand_array(sa, dtype, seed)
        b = rand_array(sb, dtype, seed + 1)
    return a, b


@pytest.mark.parametrize("name", list(BINARY))
@FEW
@given(shape=shapes(), dtype=dtypes, seed=seeds,
       scalar=st.floats(0.25, 3.0), side=st.sampled_from(["left", "right"]),
       kind=st.sampled_from([float, int]))
def test_binary_scalar_either_side(name, shape, dtype, seed, scalar, side, kind):
    _, _, op = BINARY[name]
    s = kind(round(scalar)) if kind is int else scalar
    if kind is int and s == 0:
        s = 2
    if name in ("pow", "div") and side == "left":
        a = rand_array(shape, dtype, seed, 0.2, 2.0) if name == "pow" else away_from_zero(
            shape, dtype, seed)
    elif name == "pow":
        a = rand_array(shape, dtype, seed, 0.2, 2.0)
    else:
        a = rand_array(shape, dtype, seed)
    t = remat.tensor(a)
    if side == "left":
        got, expected = op(s, t), op(dtype(s), a)
    else:
        got, expected = op(t, s), op(a, dtype(s))
    assert isinstance(got, remat.Tensor)
    assert got.dtype == rdtype(dtype), "a Python scalar must not change the tensor's dtype"
    assert_close(got, np.asarray(expected, dtype=dtype), dtype)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_functions_accept_scalars(name):
    fn, _, op = BINARY[name]
    a = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    t = remat.tensor(a)
    assert_close(fn(t, 2.0), op(a, np.float32(2.0)), np.float32)
    assert_close(fn(2.0, t), op(np.float32(2.0), a), np.float32)


def test_pow_integer_exponents_of_negative_base():
    a = np.array([-2.0, -1.5, 0.0, 1.5], dtype=np.float64)
    t = remat.tensor(a)
    assert_close(t**2, a**2, np.float64)
    assert_close(t**3, a**3, np.float64)
    assert_close(remat.pow(t, 2.0), a**2.0, np.float64)


def test_div_by_zero_follows_ieee():
    a = remat.tensor([1.0, -1.0, 0.0])
    with np.errstate(all="ignore"):
        expected = np.array([1.0, -1.0, 0.0], dtype=np.float32) / np.float32(0.0)
    got = (a / 0.0).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[:2], expected[:2])


@FEW
@given(pair=broadcast_pairs(max_dims=3), seed=seeds)
def test_binary_inputs_not_modified(pair, seed):
    a = rand_array(pair[0], np.float32, seed)
    b = rand_array(pair[1], np.float32, seed + 1)
    ta, tb = remat.tensor(a), remat.tensor(b)
    _ = ta + tb, ta * tb, ta - tb
    np.testing.assert_array_equal(ta.numpy(), a)
    np.testing.assert_array_equal(tb.numpy(), b)


@FEW
@given(pair=broadcast_pairs(min_dims=1, max_dims=3), dtype=dtypes, seed=seeds)
def test_binary_on_non_contiguous_views(pair, dtype, seed):
    sa, sb = pair
    a = rand_array(sa[::-1], dtype, seed)
    b = rand_array(sb, dtype, seed + 1)
    ta = remat.tensor(a).T  # strided view with shape sa
    assert_close(ta + remat.tensor(b), a.T + b, dtype)
    assert_close(ta * remat.tensor(b), a.T * b, dtype)


# ---------------------------------------------------------------- unary ops


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_extreme_values(dtype):
    a = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=dtype)
    t = remat.tensor(a)
    s = remat.sigmoid(t).numpy()
    assert np.all(np.isfinite(s))
    np.testing.assert_allclose(s, np_sigmoid(a.astype(np.float64)), atol=1e-7)
    np.testing.assert_allclose(remat.tanh(t).numpy(), np.tanh(a), atol=1e-7)
    np.testing.assert_array_equal(remat.relu(t).numpy(), np.maximum(a, 0))


def test_log_sqrt_outside_domain_follow_ieee():
    t = remat.tensor([-1.0, 0.0, 4.0])
    lg = remat.log(t).numpy()
    assert np.isnan(lg[0]) and lg[1] == -np.inf and lg[2] == np.float32(np.log(4.0))
    sq = t.sqrt().numpy()
    assert np.isnan(sq[0]) and sq[1] == 0.0 and sq[2] == 2.0
    assert remat.exp(remat.tensor([1000.0])).item() == np.inf


def test_ops_on_device(devices):
    a = rand_array((3, 4), np.float32, 0)
    b = rand_array((4, 2), np.float32, 1)
    ta, tb = remat.tensor(a, device=devices), remat.tensor(b, device=devices)
    assert str((ta @ tb).device).startswith(devices)
    assert_close((ta @ tb).cpu(), a @ b, np.float32, rtol=1e-4, atol=1e-5)
    assert_close((ta * 2 + 1).cpu(), a * 2 + 1, np.float32)
    assert_close(remat.softmax(ta).cpu(), np_softmax(a), np.float32)
    assert_close(ta.sum(axis=0).cpu(), a.sum(axis=0), np.float32)


def test_gelu_default_is_exact():
    a = np.linspace(-3, 3, 13)
    got = remat.gelu(remat.tensor(a)).numpy()
    np.testing.assert_allclose(got, np_gelu(a), rtol=1e-12, atol=1e-14)
    # the two variants really differ
    assert np.max(np.abs(got - np_gelu_tanh(a))) > 1e-6


# ---------------------------------------------------------------- matmul


# The registry (op_registry.py) draws matmul shapes of size >= 1; these have empty axes.
MATMUL_SHAPES = [
    ((0, 3), (3, 2)),
    ((2, 0), (0, 3)),
    ((0,), (0,)),
    ((2, 0, 3), (3, 4)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_rules(sa, sb, dtype):
    a = rand_array(sa, dtype, 1)
    b = rand_array(sb, dtype, 2)
    expected = np.matmul(a, b)
    ta, tb = remat.tensor(a), remat.tensor(b)
    for got in (ta @ tb, remat.matmul(ta, tb)):
        assert got.dtype == rdtype(dtype)
        assert_close(got, expected, dtype, rtol=1e-4 if dtype == np.float32 else 1e-10,
                     atol=1e-4 if dtype == np.float32 else 1e-10)


@st.composite
def matmul_shapes(draw):
    n, k, m = (draw(st.integers(1, 7)) for _ in range(3))
    batch = draw(broadcast_pairs(min_dims=0, max_dims=2, max_side=3))
    a_vec = draw(st.booleans()) and draw(st.booleans())
    b_vec = draw(st.booleans()) and draw(st.booleans())
    sa = (k,) if a_vec else batch[0] + (n, k)
    sb = (k,) if b_vec else batch[1] + (k, m)
    return sa, sb


@SOME
@given(s=matmul_shapes(), dtype=dtypes, seed=seeds, transpose=st.booleans())
def test_matmul_property(s, dtype, seed, transpose):
    sa, sb = s
    a = rand_array(sa, dtype, seed)
    b = rand_array(sb, dtype, seed + 1)
    tb = remat.tensor(b)
    if transpose and b.ndim >= 2:
        # a strided (transposed) right operand
        tb = remat.tensor(np.ascontiguousarray(np.swapaxes(b, -1, -2))).transpose(-1, -2)
    got = remat.tensor(a) @ tb
    assert_close(got, np.matmul(a, b), dtype, rtol=1e-4 if dtype == np.float32 else 1e-10,
                 atol=1e-4 if dtype == np.float32 else 1e-10)


def test_matmul_large_against_numpy():
    a = rand_array((70, 130), np.float64, 3)
    b = rand_array((130, 90), np.float64, 4)
    assert_close(remat.tensor(a) @ remat.tensor(b), a @ b, np.float64, rtol=1e-10, atol=1e-10)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    assert_close(remat.tensor(a32) @ remat.tensor(b32), a32 @ b32, np.float32, rtol=1e-4,
                 atol=1e-4)


# ---------------------------------------------------------------- reductions


@st.composite
def shape_and_axis(draw, min_dims=0, min_side=1):
    shape = draw(shapes(min_dims=min_dims, max_dims=4, min_side=min_side))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or nd == 0:
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-nd, nd - 1))
    axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    neg = draw(st.booleans())
    return shape, tuple(a - nd if neg else a for a in axes)


REDUCTIONS = {
    "sum": (remat.sum, np.sum),
    "mean": (remat.mean, np.mean),
    "amax": (remat.amax, np.max),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_defaults_and_positional_axis(name):
    fn, ref = REDUCTIONS[name]
    a = rand_array((3, 4), np.float64, 5)
    t = remat.tensor(a)
    assert_close(fn(t), ref(a), np.float64)
    assert fn(t).shape == ()
    assert_close(getattr(t, name)(), ref(a), np.float64)
    assert_close(getattr(t, name)(1), ref(a, axis=1), np.float64)
    assert_close(fn(t, 0), ref(a, axis=0), np.float64)
    assert_close(getattr(t, name)(axis=(0, 1), keepdims=True), ref(a, axis=(0, 1),
                                                                   keepdims=True), np.float64)


def test_sum_of_empty_axis_is_zero():
    a = np.zeros((0, 3), dtype=np.float32)
    t = remat.tensor(a)
    assert_close(t.sum(axis=0), a.sum(axis=0), np.float32)
    assert_close(t.sum(), a.sum(), np.float32)
    assert t.sum(axis=1).shape == (0,)


def test_sum_large_is_accurate():
    a = np.full(1_000_003, 0.1, dtype=np.float32)
    got = remat.tensor(a).sum().item()
    assert abs(got - 100000.3) / 100000.3 < 1e-4
    a64 = np.random.default_rng(0).standard_normal(100_000)
    np.testing.assert_allclose(remat.tensor(a64).mean().item(), a64.mean(), rtol=1e-9)


# ---------------------------------------------------------------- softmax family


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_is_stable_for_large_logits(dtype):
    a = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]], dtype=dtype)
    s = remat.softmax(remat.tensor(a)).numpy()
    ls = remat.log_softmax(remat.tensor(a)).numpy()
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(ls))
    np.testing.assert_allclose(s, np_softmax(a.astype(np.float64)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ls, np_log_softmax(a.astype(np.float64)), rtol=1e-5, atol=1e-4)


def test_layer_norm_default_eps_and_positional():
    a = rand_array((4, 6), np.float64, 0)
    w = rand_array((6,), np.float64, 1)
    b = rand_array((6,), np.float64, 2)
    t = remat.tensor(a)
    assert_close(remat.layer_norm(t), np_layer_norm(a), np.float64, rtol=1e-9, atol=1e-9)
    assert_close(remat.layer_norm(t, weight=remat.tensor(w), bias=remat.tensor(b)),
                 np_layer_norm(a, w, b), np.float64, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- losses


@pytest.mark.parametrize("kind", ["numpy", "list", "tensor", "numpy32"])
@FEW
@given(n=st.integers(1, 8), c=st.integers(1, 6), dtype=dtypes, seed=seeds)
def test_cross_entropy(kind, n, c, dtype, seed):
    rng = np.random.default_rng(seed)
    logits = rng.uniform(-4, 4, size=(n, c)).astype(dtype)
    target = rng.integers(0, c, size=n)
    expected = np_cross_entropy(logits.astype(np.float64), target)
    tgt = {"numpy": target, "list": target.tolist(), "numpy32": target.astype(np.int32),
           "tensor": remat.tensor(target)}[kind]
    got = remat.cross_entropy(remat.tensor(logits), tgt)
    assert got.shape == () and got.dtype == rdtype(dtype)
    assert_close(got, np.asarray(expected, dtype=dtype), dtype)


def test_cross_entropy_large_logits_stable():
    logits = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    got = remat.cross_entropy(remat.tensor(logits), np.array([0, 2])).item()
    np.testing.assert_allclose(got, np_cross_entropy(logits.astype(np.float64), [0, 2]),
                               rtol=1e-5)


# ---------------------------------------------------------------- dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    remat.manual_seed(0)
    x = remat.ones(100_000, dtype=remat.float64)
    y = remat.dropout(x, p=p).numpy()
    zero = y == 0.0
    assert abs(zero.mean() - p) < 0.01
    np.testing.assert_allclose(y[~zero], 1.0 / (1.0 - p), rtol=1e-12)
    assert abs(y.mean() - 1.0) < 0.03  # inverted dropout keeps the expectation


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_eval_and_edge_cases(dtype):
    a = rand_array((3, 5), dtype, 0)
    t = remat.tensor(a)
    np.testing.assert_array_equal(remat.dropout(t, p=0.5, training=False).numpy(), a)
    np.testing.assert_array_equal(remat.dropout(t, 0.9, False).numpy(), a)
    np.testing.assert_array_equal(remat.dropout(t, p=0.0).numpy(), a)
    np.testing.assert_array_equal(remat.dropout(t, p=1.0).numpy(), np.zeros_like(a))
    y = remat.dropout(t)  # default p = 0.5, training
    assert y.shape == a.shape and y.dtype == rdtype(dtype)
    kept = y.numpy() != 0
    np.testing.assert_allclose(y.numpy()[kept], a[kept] * 2, rtol=1e-6)


def test_dropout_masks_differ_between_calls():
    remat.manual_seed(1)
    x = remat.ones(1000)
    a = remat.dropout(x).numpy().copy()
    b = remat.dropout(x).numpy()
    assert not np.array_equal(a, b)


# ---------------------------------------------------------------- where / concat / stack


def test_where_with_comparison_like_condition():
    a = np.array([-1.0, 2.0, -3.0, 4.0])
    t = remat.tensor(a)
    got = remat.where(a > 0, t, remat.zeros_like(t))
    np.testing.assert_array_equal(got.numpy(), np.where(a > 0, a, 0.0))


def test_concat_stack_defaults_and_tuples():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(6.0, 12.0).reshape(2, 3)
    ta, tb = remat.tensor(a), remat.tensor(b)
    assert_close(remat.concat([ta, tb]), np.concatenate([a, b]), np.float64)
    assert_close(remat.concat((ta, tb), 1), np.concatenate([a, b], 1), np.float64)
    assert_close(remat.stack([ta, tb]), np.stack([a, b]), np.float64)
    assert_close(remat.stack((ta, tb), -1), np.stack([a, b], -1), np.float64)
    assert_close(remat.concat([ta.T, tb.T], axis=0), np.concatenate([a.T, b.T]), np.float64)


# ---------------------------------------------------------------- shape functions


# ---------------------------------------------------------------- NaN propagation


def test_nan_propagates_through_ops():
    a = np.array([1.0, np.nan, 2.0], dtype=np.float32)
    t = remat.tensor(a)
    for y in [t + 1, t * 2, t / 3, t**2, remat.exp(t), remat.tanh(t), remat.sigmoid(t),
              remat.gelu(t), remat.gelu(t, approximate="tanh"), remat.sqrt(t)]:
        v = y.numpy()
        assert np.isnan(v[1]) and np.all(np.isfinite(v[[0, 2]]))
    assert np.isnan(t.sum().item())
    assert np.isnan(t.mean().item())
    assert np.isnan(t.max().item())
    assert np.all(np.isnan(remat.softmax(t).numpy()))
    assert np.isnan(remat.mse_loss(t, remat.zeros(3)).item())
    assert np.isnan((remat.tensor([[1.0, np.nan]]) @ remat.ones(2, 1)).item())


# ---------------------------------------------------------------- large inputs (parallel kernels)


def test_large_broadcast_binary_and_unary():
    a = rand_array((97, 1, 67), np.float64, 1)
    b = rand_array((1, 129, 67), np.float64, 2)
    ta, tb = remat.tensor(a), remat.tensor(b)
    assert_close(ta + tb, a + b, np.float64)
    assert_close(ta * tb.transpose(0, 1).transpose(0, 1), a * b, np.float64)
    assert_close(remat.tanh(ta - tb), np.tanh(a - b), np.float64)
    assert_close((tb.T * 2.0).T, b * 2.0, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_reductions_on_strided_views(dtype):
    a = rand_array((301, 257), dtype, 3)
    t = remat.tensor(a).T  # (257, 301), non-contiguous
    r = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for axis in (None, 0, 1, (0, 1)):
        assert_close(t.sum(axis=axis), a.T.sum(axis=axis), **r)
        assert_close(t.mean(axis=axis), a.T.mean(axis=axis), **r)
        assert_close(t.amax(axis=axis), a.T.max(axis=axis), **r)
    assert_close(remat.softmax(t, axis=0), np_softmax(a.T.astype(np.float64), axis=0), **r)
    assert_close(remat.layer_norm(t), np_layer_norm(a.T.astype(np.float64)), **r)


def test_large_batched_matmul():
    a = rand_array((3, 1, 65, 33), np.float64, 4)
    b = rand_array((4, 33, 71), np.float64, 5)
    assert_close(remat.tensor(a) @ remat.tensor(b), np.matmul(a, b), np.float64, rtol=1e-10,
                 atol=1e-10)
    bt = remat.tensor(np.ascontiguousarray(np.swapaxes(b, 1, 2))).transpose(1, 2)
    assert_close(remat.tensor(a) @ bt, np.matmul(a, b), np.float64, rtol=1e-10, atol=1e-10)
