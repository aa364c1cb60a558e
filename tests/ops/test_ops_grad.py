"""Gradients beyond the op registry's generated finite-difference checks
(test_op_registry.py): scalar operands, aliasing, random reduction axes, closed forms,
compositions, large and empty inputs, dtype conversion."""

import numpy as np
import pytest
from conftest import (
    check_grad,
    distinct,
    rand_array,
    seeds,
    shapes,
    t64,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import remat

FEW = settings(deadline=None, max_examples=12)

# ---------------------------------------------------------------- binary ops, broadcasting


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x + 2.5, lambda x: 2.5 + x, lambda x: x - 1.5, lambda x: 1.5 - x,
        lambda x: x * 3.0, lambda x: 3.0 * x, lambda x: x / 4.0, lambda x: 4.0 / x,
        lambda x: x**2, lambda x: x**3.5, lambda x: x**-1.5, lambda x: 2.0**x,
        lambda x: -x, lambda x: x * x, lambda x: x / x, lambda x: x - x + x * 2,
        lambda x: remat.pow(x, 0.5), lambda x: remat.mul(x, 2.0),
    ],
)
def test_scalar_operand_grad(fn):
    check_grad(fn, rand_array((2, 3), np.float64, 0, 0.5, 2.0))


def test_same_tensor_both_operands():
    x = t64([1.0, 2.0, 3.0], requires_grad=True)
    (x * x + x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0, 3.0]) + 1)


def test_broadcast_grad_shapes():
    a = t64(np.ones((3, 1)), requires_grad=True)
    b = t64(np.ones((1, 4)), requires_grad=True)
    c = t64(np.ones(()), requires_grad=True)
    ((a + b) * c).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (1, 4) and c.grad.shape == ()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), 4.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full((1, 4), 3.0))
    np.testing.assert_allclose(c.grad.numpy(), 24.0)  # sum(a + b) = 12 * 2


# ---------------------------------------------------------------- unary ops


def test_relu_grad_values():
    x = t64([-2.0, -0.5, 0.5, 3.0], requires_grad=True)
    remat.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0, 1.0])


# ---------------------------------------------------------------- matmul


def test_matmul_grad_transposed_operands():
    a = rand_array((4, 3), np.float64, 1)
    b = rand_array((5, 4), np.float64, 2)
    check_grad(lambda x, y: x.T @ y.T, a, b)
    check_grad(lambda x, y: (x.transpose(0, 1) @ y.T) @ (y @ x), a, b)


# ---------------------------------------------------------------- reductions


@st.composite
def shape_and_axis(draw):
    shape = draw(shapes(min_dims=0, max_dims=3, max_side=4))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or nd == 0:
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-nd, nd - 1))
    return shape, tuple(draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd,
                                      unique=True)))


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "f_sum", "f_mean", "f_amax"])
@FEW
@given(sa=shape_and_axis(), keepdims=st.booleans(), seed=seeds)
def test_reduction_grad(name, sa, keepdims, seed):
    shape, axis = sa
    a = distinct(shape, np.float64, seed)  # no ties for max
    if name.startswith("f_"):
        fn = getattr(remat, name[2:])
        check_grad(lambda x: fn(x, axis=axis, keepdims=keepdims), a)
    else:
        check_grad(lambda x: getattr(x, name)(axis=axis, keepdims=keepdims), a)


def test_max_grad_goes_to_argmax():
    x = t64([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], requires_grad=True)
    x.max(axis=1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])


def test_max_grad_with_ties_sums_to_one():
    x = t64([2.0, 2.0, 1.0], requires_grad=True)
    x.max().backward()
    g = x.grad.numpy()
    assert g[2] == 0.0
    np.testing.assert_allclose(g.sum(), 1.0)  # split evenly or to one index, like torch/jax


# ---------------------------------------------------------------- softmax family, layer norm


# ---------------------------------------------------------------- losses


def test_cross_entropy_grad_closed_form():
    logits = rand_array((3, 4), np.float64, 2)
    target = np.array([0, 3, 1])
    x = t64(logits, requires_grad=True)
    remat.cross_entropy(x, target).backward()
    e = np.exp(logits - logits.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    p[np.arange(3), target] -= 1
    np.testing.assert_allclose(x.grad.numpy(), p / 3, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- shape ops


@pytest.mark.parametrize(
    "fn,shape",
    [
        (lambda x: x.T.reshape(6, 4), (2, 3, 4)),
        (lambda x: x[1:] * x[:-1], (5,)),
        (lambda x: x[0] + x[0], (3, 2)),
        (lambda x: x.transpose(0, 1)[::2].reshape(-1), (3, 4)),
    ],
)
def test_shape_op_grad(fn, shape):
    check_grad(fn, rand_array(shape, np.float64, 10))


def test_concat_same_tensor_twice():
    a = rand_array((2, 2), np.float64, 6)
    check_grad(lambda x: remat.concat([x, x * 2], axis=1), a)


def test_where_grad():
    cond = np.array([[True, False, True], [False, False, True]])
    a = rand_array((2, 3), np.float64, 7)
    b = rand_array((1, 3), np.float64, 8)
    ga, gb = check_grad(lambda x, y: remat.where(cond, x, y), a, b)
    w = np.random.default_rng(0).standard_normal((2, 3))
    np.testing.assert_allclose(ga, np.where(cond, w, 0.0))
    np.testing.assert_allclose(gb, np.where(cond, 0.0, w).sum(0, keepdims=True))


def test_dropout_grad_matches_mask():
    a = rand_array((4, 5), np.float64, 9)

    def f(x):
        remat.manual_seed(123)  # the same mask on every call
        return remat.dropout(x, p=0.4)

    (g,) = check_grad(f, a)
    remat.manual_seed(123)
    mask = remat.dropout(remat.ones(4, 5, dtype=remat.float64), p=0.4).numpy()
    w = np.random.default_rng(0).standard_normal((4, 5))
    np.testing.assert_allclose(g, w * mask, rtol=1e-12)
    check_grad(lambda x: remat.dropout(x, p=0.4, training=False), a)


def test_to_dtype_grad():
    x = t64([1.0, 2.0, -3.0], requires_grad=True)
    y = x.to(remat.float32)
    assert y.dtype == remat.float32 and y.requires_grad
    (y.to(remat.float64) * t64([3.0, 4.0, 5.0])).sum().backward()
    assert x.grad.dtype == remat.float64
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0, 5.0])


def test_mixed_dtype_grads_keep_each_leaf_dtype():
    a = remat.tensor([1.0, 2.0], requires_grad=True)
    b = t64([3.0, 4.0], requires_grad=True)
    ((a * b) ** 2).sum().backward()
    assert a.grad.dtype == remat.float32 and b.grad.dtype == remat.float64
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.array([1.0, 2.0]) * np.array([9, 16.0]))
    np.testing.assert_allclose(b.grad.numpy(), 2 * np.array([3.0, 4.0]) * np.array([1, 4.0]))


# ---------------------------------------------------------------- compositions


def test_mlp_like_composition_grad():
    x = rand_array((4, 3), np.float64, 1)
    w1 = rand_array((3, 5), np.float64, 2)
    b1 = rand_array((5,), np.float64, 3)
    w2 = rand_array((5, 2), np.float64, 4)

    def f(x, w1, b1, w2):
        h = remat.tanh(x @ w1 + b1)
        return remat.log_softmax(h @ w2, axis=-1).mean(axis=0)

    check_grad(f, x, w1, b1, w2)


def test_deep_chain_grad():
    def f(x):
        for _ in range(20):
            x = remat.tanh(x * 1.1 + 0.1)
        return x

    check_grad(f, rand_array((3,), np.float64, 5))


# ---------------------------------------------------------------- large inputs: closed forms


def test_large_matmul_grad_closed_form():
    a = rand_array((3, 65, 130), np.float64, 1)
    b = rand_array((130, 70), np.float64, 2)
    g = rand_array((3, 65, 70), np.float64, 3)
    ta, tb = t64(a, requires_grad=True), t64(b, requires_grad=True)
    (ta @ tb).backward(gradient=t64(g))
    np.testing.assert_allclose(ta.grad.numpy(), g @ b.T, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tb.grad.numpy(), np.einsum("bik,bij->kj", a, g), rtol=1e-10,
                               atol=1e-10)


def test_large_broadcast_grad_closed_form():
    a = rand_array((200, 1), np.float64, 4)
    b = rand_array((1, 300), np.float64, 5)
    g = rand_array((200, 300), np.float64, 6)
    ta, tb = t64(a, requires_grad=True), t64(b, requires_grad=True)
    (ta * tb).backward(gradient=t64(g))
    np.testing.assert_allclose(ta.grad.numpy(), (g * b).sum(1, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(tb.grad.numpy(), (g * a).sum(0, keepdims=True), rtol=1e-10)


def test_large_softmax_cross_entropy_grad_closed_form():
    logits = rand_array((257, 10), np.float64, 7, -4, 4)
    target = np.random.default_rng(8).integers(0, 10, size=257)
    x = t64(logits, requires_grad=True)
    remat.cross_entropy(x, target).backward()
    e = np.exp(logits - logits.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    p[np.arange(257), target] -= 1
    np.testing.assert_allclose(x.grad.numpy(), p / 257, rtol=1e-9, atol=1e-12)


def test_empty_tensor_grads():
    x = t64(np.zeros((0, 3)), requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad.shape == (0, 3)
    y = t64(np.zeros((0, 3)), requires_grad=True)
    w = t64(np.ones((3, 2)), requires_grad=True)
    (y @ w).sum().backward()
    assert y.grad.shape == (0, 3)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((3, 2)))


# ---------------------------------------------------------------- points PyTorch masks


@pytest.mark.parametrize("p", [2, 3, 1.5, 1, 0.5, -1, float("inf"), float("-inf")])
def test_norm_gradient_is_zero_at_zero_vectors_and_rows(p):
    # The root's derivative is infinite at a zero norm and |x|^(p-1) at a zero element
    # (p < 1): PyTorch's norm_backward gives 0 there, not 0 * inf = NaN.
    x = t64(np.zeros(4), requires_grad=True)
    remat.norm(x, p=p).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))
    a = rand_array((3, 4), np.float64, 3)
    a[1] = 0.0
    a[2, 0] = 0.0
    g = check_grad(lambda t: t.norm(p=p, dim=1), a)  # central differences read 0 there too
    np.testing.assert_array_equal(g[0][1], np.zeros(4))


def test_std_gradient_is_zero_for_a_constant_row():
    a = rand_array((3, 4), np.float64, 4)
    a[1] = 0.7
    g = check_grad(lambda t: remat.std(t, dim=1), a)
    np.testing.assert_array_equal(g[0][1], np.zeros(4))
    c = t64(np.full((2, 3), 1.25), requires_grad=True)
    c.std().backward()
    np.testing.assert_array_equal(c.grad.numpy(), np.zeros((2, 3)))


# (x, min, max) -> (dx, dmin, dmax), PyTorch's rule for two tensor bounds.
CLAMP_TIES = [
    ((0.0, 1.0, 2.0), (0.0, 1.0, 0.0)),
    ((1.0, 1.0, 2.0), (0.5, 0.5, 0.0)),
    ((2.0, 1.0, 2.0), (0.5, 0.0, 0.5)),
    ((1.0, 1.0, 1.0), (1.0, 0.0, 0.0)),
    ((0.0, 1.0, 1.0), (0.0, 1.0, 0.0)),
    ((1.5, 2.0, 1.0), (0.0, 0.0, 1.0)),
    ((2.0, 2.0, 1.0), (0.0, 0.0, 1.0)),
]


@pytest.mark.parametrize("fn", [remat.clamp, remat.clip, lambda x, lo, hi: x.clamp(lo, hi)])
def test_clamp_with_tensor_bounds_routes_the_gradient_as_pytorch(fn):
    x, lo, hi = (t64([c[0][i] for c in CLAMP_TIES], requires_grad=True) for i in range(3))
    fn(x, lo, hi).sum().backward()
    got = np.stack([x.grad.numpy(), lo.grad.numpy(), hi.grad.numpy()], 1)
    np.testing.assert_array_equal(got, np.array([c[1] for c in CLAMP_TIES]))
