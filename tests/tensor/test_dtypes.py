"""int64, int32 and bool tensors: dtype inference, PyTorch's type promotion, integer
arithmetic, the float-only ops' errors, conversions, and the rule that integer tensors never
require grad."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import remat

INT_DTYPES = ["int64", "int32"]


def test_dtype_objects_and_aliases():
    assert str(remat.int64) == "int64" and str(remat.int32) == "int32"
    assert str(remat.bool) == "bool" and remat.bool is remat.bool_
    assert remat.long is remat.int64 and remat.double is remat.float64
    assert remat.float is remat.float32
    assert remat.int64 == np.int64 and remat.int32 == np.dtype("int32") and remat.bool == np.bool_
    assert not remat.int64.is_floating_point and remat.float32.is_floating_point
    assert remat.int64.itemsize == 8 and remat.int32.itemsize == 4 and remat.bool.itemsize == 1
    assert pickle.loads(pickle.dumps(remat.int32)) is remat.int32
    assert {remat.int64: 1}[remat.long] == 1


@pytest.mark.parametrize(
    "a,b,want",
    [
        ("int64", "int64", "int64"),
        ("int32", "int64", "int64"),
        ("int32", "int32", "int32"),
        ("bool", "int32", "int32"),
        ("bool", "bool", "bool"),
        ("int64", "float32", "float32"),
        ("int32", "float64", "float64"),
        ("bool", "float32", "float32"),
        ("float32", "float64", "float64"),
    ],
)
def test_tensor_tensor_promotion(a, b, want):
    x = remat.tensor(np.array([1, 0, 3]).astype(a))
    y = remat.tensor(np.array([2, 1, 1]).astype(b))
    for op in ("__add__", "__mul__", "maximum", "minimum"):
        got = getattr(x, op)(y)
        assert str(got.dtype) == want, (op, got.dtype)
        assert str(getattr(y, op)(x).dtype) == want


def test_python_scalars_promote_by_category():
    i = remat.tensor([1, 2, 3])
    f = remat.tensor([1.0, 2.0])
    b = remat.tensor([True, False])
    assert (i + 1).dtype == remat.int64 and (1 + i).dtype == remat.int64
    assert (i * 2.5).dtype == remat.float32
    np.testing.assert_allclose((i * 2.5).detach().numpy(), [2.5, 5.0, 7.5])
    assert (f * 2).dtype == remat.float32 and (f.double() * 2).dtype == remat.float64
    assert (b + 1).dtype == remat.int64
    assert (b * 1.5).dtype == remat.float32
    assert (remat.tensor([1, 2], dtype=remat.int32) + 1).dtype == remat.int32


def test_integer_arithmetic_is_exact():
    big = 2**53 + 1
    t = remat.tensor([big, -big])
    assert (t + 2).tolist() == [big + 2, -big + 2]
    assert (t - 1).tolist() == [big - 1, -big - 1]
    assert (t * 1).tolist() == [big, -big]
    assert t.sum().item() == 0
    assert t.max().item() == big and t.min().item() == -big  # exact in int64
    a = np.array([[5, -3, 7], [0, 2, -8]])
    x = remat.tensor(a)
    np.testing.assert_array_equal((x + x).detach().numpy(), a + a)
    np.testing.assert_array_equal((x * x).detach().numpy(), a * a)
    np.testing.assert_array_equal((x - 4).detach().numpy(), a - 4)
    np.testing.assert_array_equal((-x).detach().numpy(), -a)
    np.testing.assert_array_equal(abs(x).detach().numpy(), abs(a))
    np.testing.assert_array_equal((x**2).detach().numpy(), a**2)
    assert (x**2).dtype == remat.int64
    np.testing.assert_array_equal(x.sum(dim=1).detach().numpy(), a.sum(axis=1))
    assert x.sum().dtype == remat.int64 and x.sum().item() == a.sum()
    np.testing.assert_array_equal(x.amax(dim=0).detach().numpy(), a.max(axis=0))
    np.testing.assert_array_equal(x.relu().detach().numpy(), np.maximum(a, 0))
    np.testing.assert_array_equal(x.clamp(-2, 3).detach().numpy(), np.clip(a, -2, 3))
    assert x.clamp(-2, 3).dtype == remat.int64


def test_integer_rows_wrap_like_int64_instead_of_saturating():
    # PyTorch's integer arithmetic is two's complement: it wraps, never saturates.
    big = 2**62 + 1
    x = remat.tensor([big, 3, -(2**63)])
    wrap = lambda v: (v + 2**63) % 2**64 - 2**63  # noqa: E731
    assert remat.square(x).tolist() == [wrap(v * v) for v in (big, 3, -(2**63))]
    assert (x**3).tolist() == [wrap(v**3) for v in (big, 3, -(2**63))]
    assert (x * 3).tolist() == [wrap(v * 3) for v in (big, 3, -(2**63))]
    assert (x + 2**62).tolist() == [wrap(v + 2**62) for v in (big, 3, -(2**63))]
    assert (-x).tolist() == [wrap(-v) for v in (big, 3, -(2**63))]
    assert abs(x).tolist() == [wrap(abs(v)) for v in (big, 3, -(2**63))]
    assert x.sign().tolist() == [1, 1, -1] and x.floor().tolist() == x.tolist()
    assert remat.tensor([big], dtype=remat.int32).dtype == remat.int32


def test_ints_beyond_int64_are_an_overflow_error_not_a_wrapped_value():
    with pytest.raises(OverflowError, match="full"):
        remat.full((2,), 2**70)
    with pytest.raises(OverflowError, match="int64"):
        remat.tensor([2**63])
    with pytest.raises(OverflowError, match="int64"):
        remat.tensor([[2**63], [2**64 - 1]])
    with pytest.raises(ValueError, match="int32"):
        remat.full((2,), 2**40, dtype=remat.int32)
    assert remat.full((2,), 2**62 + 1).tolist() == [2**62 + 1] * 2  # exact, not via float64
    assert remat.full((1,), -(2**63)).tolist() == [-(2**63)]
    assert remat.tensor([2**63 - 1, 5]).tolist() == [2**63 - 1, 5]
    assert remat.tensor([2**63], dtype=remat.float32).dtype == remat.float32
    assert remat.tensor([np.uint64(7)]).tolist() == [7]


@pytest.mark.parametrize(
    "data",
    [[1, 2**64 - 1], [-1, 2**63], [[2**70, 1], [2, 3]], [True, 2**63], [1, -(2**63) - 1]],
)
def test_ints_beyond_int64_among_other_ints_overflow_as_in_pytorch(data):
    # NumPy widens these to float64 or object; PyTorch infers int64 and raises.
    with pytest.raises(OverflowError, match=r"tensor: .*int64"):
        remat.tensor(data)
    with pytest.raises(OverflowError, match="int64"):
        remat.tensor(data, dtype=remat.int64)
    # A float dtype takes them (rounded), as PyTorch's does.
    want = np.array(data, dtype=np.float64).astype(np.float32)
    np.testing.assert_array_equal(remat.tensor(data, dtype=remat.float32).detach().numpy(), want)


def test_ints_beyond_int64_next_to_a_float_make_a_float32_tensor():
    t = remat.tensor([1.5, 2**70])
    assert t.dtype == remat.float32 and t.tolist() == [1.5, float(np.float32(2.0**70))]
    assert remat.tensor([[1, 2**70], [2.0, 3]]).dtype == remat.float32
    assert remat.tensor([1e19, 1]).dtype == remat.float32  # a float that large is no int
    with pytest.raises(OverflowError, match="int64"):
        remat.tensor([1.5, 2**70], dtype=remat.int64)
    # Objects that are not numbers are still refused by dtype, not as an overflow.
    with pytest.raises(remat.DTypeError, match="object"):
        remat.tensor([None, 2**70])


def test_mse_loss_promotes_an_int_target_as_pytorch():
    F = remat.nn.functional
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    loss = F.mse_loss(x, remat.tensor([1, 3]))
    assert loss.dtype == remat.float32 and loss.item() == 0.5
    loss.backward()
    assert x.grad.tolist() == [0.0, -1.0]
    assert F.mse_loss(x, remat.tensor([1.0, 3.0], dtype=remat.float64)).dtype == remat.float64
    with pytest.raises(remat.DTypeError, match="mse_loss"):
        F.mse_loss(remat.tensor([1, 2]), remat.tensor([1, 3]))


def test_int32_sums_to_int64():
    x = remat.tensor(np.array([2**30, 2**30, 2**30], dtype=np.int32))
    s = x.sum()
    assert s.dtype == remat.int64 and s.item() == 3 * 2**30


def test_bool_arithmetic_as_pytorch():
    a = remat.tensor([True, True, False, False])
    b = remat.tensor([True, False, True, False])
    assert (a + b).tolist() == [True, True, True, False]  # or
    assert (a * b).tolist() == [True, False, False, False]  # and
    assert a.sum().item() == 2 and a.sum().dtype == remat.int64
    with pytest.raises(remat.DTypeError, match="sub"):
        a - b
    with pytest.raises(remat.DTypeError, match="neg"):
        remat.neg(a)


def test_true_division_and_math_give_float32():
    x = remat.tensor([1, 2, 4])
    assert (x / 2).dtype == remat.float32
    np.testing.assert_allclose((x / 2).detach().numpy(), [0.5, 1.0, 2.0])
    assert (x / x).dtype == remat.float32
    for f in ("exp", "sqrt", "sin", "sigmoid", "tanh", "log"):
        y = getattr(x, f)()
        assert y.dtype == remat.float32, f
        xs = np.asarray(x).astype(np.float32)
        want = getattr(np, f)(xs) if hasattr(np, f) else np.asarray(y)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)


def test_integer_powers_follow_pytorch():
    # A negative Python int exponent is an error for an integer base (PyTorch's message) ...
    with pytest.raises(ValueError, match="negative integer powers"):
        remat.tensor([2, 3]) ** -1
    with pytest.raises(ValueError, match=r"int32.*\(2,\)"):
        remat.pow(remat.tensor([2, 3], dtype=remat.int32), -2)
    # ... while an integer tensor exponent gives PyTorch's integer results: 1 for a base of
    # 1, +-1 for -1, 0 otherwise (0 ** -1 included).
    base = remat.tensor([0, 1, -1, 2, -2])
    assert (base ** remat.tensor(-1)).tolist() == [0, 1, -1, 0, 0]
    assert (base ** remat.tensor(-2)).tolist() == [0, 1, 1, 0, 0]
    assert (2 ** remat.tensor([-1, 2])).tolist() == [0, 4]
    r = remat.tensor([3, 2], dtype=remat.int32) ** remat.tensor([2, 40])
    assert r.dtype == remat.int64 and r.tolist() == [9, 2**40]
    # A float exponent makes an integer or bool base float32; an int exponent keeps it.
    for x in (remat.tensor([2, 3]), remat.tensor([True, False])):
        assert (x ** 2.0).dtype == remat.float32
        assert remat.pow(x, 2.0).dtype == x.pow(1.0).dtype == remat.float32
    assert (remat.tensor([2, 3]) ** 2).tolist() == [4, 9]
    assert (remat.tensor([True, False]) ** 2).dtype == remat.int64
    np.testing.assert_allclose((remat.tensor([2, 3]) ** 0.5).numpy(), np.sqrt([2, 3]), rtol=1e-6)
    with pytest.raises(remat.DTypeError, match="bool"):
        remat.tensor([True]) ** remat.tensor([True])


def test_zero_dim_operands_decide_the_dtype_only_from_a_higher_category():
    f32, f64, i32, i64 = remat.float32, remat.float64, remat.int32, remat.int64
    v32 = remat.tensor([1.0, 2.0])
    assert (v32 + remat.tensor(1.5, dtype=f64)).dtype == f32
    assert (remat.tensor(1.5, dtype=f64) * v32).dtype == f32
    vi32 = remat.tensor([1, 2], dtype=i32)
    assert (vi32 + remat.tensor(5)).dtype == i32
    assert (vi32 + remat.tensor(1.5, dtype=f64)).dtype == f64  # a higher category decides
    assert (remat.tensor([True]) + remat.tensor(5, dtype=i32)).dtype == i32
    assert (remat.tensor(2.0, dtype=f64) + remat.tensor(1.0)).dtype == f64  # both 0-d
    mask = remat.tensor([True, False])
    assert remat.where(mask, remat.tensor(3.0, dtype=f64), v32).dtype == f32
    assert (vi32 // remat.tensor(2)).dtype == i32 and (vi32 % remat.tensor(2)).dtype == i32
    assert (vi32 & remat.tensor(3)).dtype == i32
    # gradients come back in each input's own dtype
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    s = remat.tensor(3.0, dtype=f64, requires_grad=True)
    (x * s).sum().backward()
    assert x.grad.dtype == f32 and s.grad.dtype == f64
    assert x.grad.tolist() == [3.0, 3.0] and s.grad.item() == 3.0
    assert (remat.tensor([1, 2], dtype=i64) + remat.tensor(2**40)).tolist() == [2**40 + 1,
                                                                                 2**40 + 2]


def test_reductions_and_scans_of_integers_follow_pytorch_dtypes():
    assert remat.prod(remat.tensor([True, True])).dtype == remat.int64
    assert remat.prod(remat.tensor([3, 4], dtype=remat.int32)).tolist() == 12
    assert remat.prod(remat.tensor([3, 4], dtype=remat.int32)).dtype == remat.int64
    assert remat.sum(remat.tensor([True, True]), dtype=remat.int32).dtype == remat.int32
    assert remat.tensor([1.0, 2.0]).sum(dtype=remat.float64).dtype == remat.float64
    assert remat.prod(remat.tensor([2, 3]), dtype=remat.float64).dtype == remat.float64
    c = remat.cumsum(remat.tensor([[1, 2], [3, 4]], dtype=remat.int32), 1)
    assert c.dtype == remat.int64 and c.tolist() == [[1, 3], [3, 7]]
    assert remat.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]
    big = remat.tensor([2**62, 2**62, 2**62])
    assert big.cumsum(0).tolist() == [2**62, 2**63 - 2**64 + 0, -(2**62)]  # wraps, as int64
    assert remat.cumsum(remat.tensor(7), 0).dtype == remat.int64
    assert remat.cumsum(remat.tensor([1.0, 2.0]), 0, dtype=remat.float64).dtype == remat.float64
    # An empty dim tuple reduces every axis, and a 0-d tensor takes dim 0 / -1 (PyTorch).
    m = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert remat.sum(m, ()).shape == () and remat.sum(m, ()).item() == 10.0
    assert remat.sum(remat.tensor(2.5), 0).item() == 2.5
    assert remat.mean(remat.tensor(2.5), -1).item() == 2.5


def test_cat_and_stack_promote_and_skip_legacy_empty_tensors():
    c = remat.cat([remat.tensor([1.0, 2.0]), remat.tensor([3, 4])])
    assert c.dtype == remat.float32 and c.tolist() == [1.0, 2.0, 3.0, 4.0]
    s = remat.stack([remat.tensor([1, 2], dtype=remat.int32), remat.tensor([True, False])])
    assert s.dtype == remat.int32 and s.tolist() == [[1, 2], [1, 0]]
    assert remat.cat([remat.tensor([1], dtype=remat.int32), remat.tensor([2])]).dtype == \
        remat.int64
    a = remat.tensor([1.0], dtype=remat.float64, requires_grad=True)
    b = remat.tensor([2.0], requires_grad=True)
    (remat.cat([a, b]) * remat.tensor([3.0, 4.0], dtype=remat.float64)).sum().backward()
    assert a.grad.dtype == remat.float64 and b.grad.dtype == remat.float32
    assert a.grad.tolist() == [3.0] and b.grad.tolist() == [4.0]
    # PyTorch skips 1-d empty tensors next to others (its legacy "empty" shape (0,)).
    m = remat.cat([remat.ones(2, 3), remat.zeros(0)])
    assert m.shape == (2, 3)
    assert remat.cat([remat.zeros(0), remat.zeros(0)]).shape == (0,)


def test_pytorch_spellings_of_dtypes_and_keywords():
    assert remat.int == remat.int32
    assert remat.sign(remat.tensor([True, False])).dtype == remat.bool
    assert remat.arange(start=1, end=4).tolist() == [1, 2, 3]
    assert remat.arange(1, end=4).tolist() == [1, 2, 3]
    assert remat.arange(end=3, dtype=remat.float64).dtype == remat.float64
    with pytest.raises(TypeError, match="arange"):
        remat.arange(1, 2, start=0)
    assert remat.div(remat.tensor([-7, 7]), 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert remat.div(remat.tensor([-7, 7]), 2, rounding_mode="floor").tolist() == [-4, 3]
    assert remat.tensor([-7.5, 7.5]).div(2, rounding_mode="trunc").tolist() == [-3.0, 3.0]
    assert remat.tensor([-7.5, 7.5]).div(2, rounding_mode=None).tolist() == [-3.75, 3.75]
    with pytest.raises(ValueError, match="rounding_mode"):
        remat.div(remat.tensor([1.0]), 2, rounding_mode="up")
    with pytest.raises(ValueError, match="division by zero"):
        remat.div(remat.tensor([1]), 0, rounding_mode="trunc")
    assert remat.add(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 1.0]), alpha=2).tolist() == \
        [3.0, 4.0]
    assert remat.tensor([1, 2]).sub(remat.tensor([1, 1]), alpha=3).tolist() == [-2, -1]
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    y = remat.tensor([1.0, 1.0], requires_grad=True)
    remat.add(x, y, alpha=2.5).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [2.5, 2.5]
    t = remat.ones(2, 2)
    assert t.contiguous() is t and t.T.contiguous() is not t


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_tensors_never_require_grad(dtype):
    t = remat.zeros(3, dtype=getattr(remat, dtype))
    with pytest.raises(remat.DTypeError, match=rf"{dtype}.*\(3,\)"):
        t.requires_grad_()
    with pytest.raises(remat.DTypeError, match="only floating point"):
        t.requires_grad = True
    with pytest.raises(remat.DTypeError):
        remat.tensor([1, 2], requires_grad=True)
    with pytest.raises(remat.DTypeError):
        remat.zeros(2, dtype=getattr(remat, dtype), requires_grad=True)
    assert not t.requires_grad


def test_integer_result_of_a_graph_does_not_require_grad():
    x = remat.randn(4, requires_grad=True)
    i = x.long()
    assert i.dtype == remat.int64 and not i.requires_grad and i.grad_fn is None
    # ... and float results of mixing it back in follow only the float input.
    y = (x * i).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), i.detach().numpy().astype(np.float32))


@pytest.mark.parametrize(
    "call",
    [
        lambda t: remat.softmax(t, dim=0),
        lambda t: remat.log_softmax(t, dim=0),
        lambda t: t.mean(),
        lambda t: remat.layer_norm(t),
        lambda t: t.var(),
    ],
)
def test_float_only_ops_name_the_op_and_shape(call):
    t = remat.tensor([1, 2, 3])
    with pytest.raises(remat.DTypeError) as info:
        call(t)
    msg = str(info.value)
    assert "int64" in msg and "(3,)" in msg


@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool"])
def test_numpy_round_trip_keeps_dtype_and_shares_memory(dtype):
    a = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    t = remat.from_numpy(a)
    assert str(t.dtype) == dtype
    n = t.detach().numpy()
    assert n.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(n, a)
    assert np.shares_memory(n, a)
    np.testing.assert_array_equal(np.asarray(t), a)


def test_item_tolist_int_index():
    t = remat.tensor([[3, -1], [7, 2]])
    assert t[0, 1].item() == -1 and isinstance(t[0, 1].item(), int)
    assert t.tolist() == [[3, -1], [7, 2]]
    assert isinstance(remat.tensor([True])[0].item(), bool)
    assert isinstance(remat.tensor([1.5])[0].item(), float)
    assert int(t[1, 0]) == 7
    xs = ["a", "b", "c"]
    assert xs[remat.tensor(2)] == "c"
    with pytest.raises(TypeError):
        xs[remat.tensor(1.0)]


def test_casts():
    x = remat.tensor([1.7, -2.5, 0.0, 3.0])
    assert x.long().tolist() == [1, -2, 0, 3]
    assert x.int().dtype == remat.int32 and x.int().tolist() == [1, -2, 0, 3]
    assert x.bool().tolist() == [True, True, False, True]
    assert x.long().float().dtype == remat.float32
    assert x.type(remat.int64).dtype == remat.int64
    assert x.type() == "remat.FloatTensor" and x.long().type() == "remat.LongTensor"
    assert x.to(remat.int64).dtype == remat.int64 and x.to(remat.bool).dtype == remat.bool
    assert remat.tensor([3, 4]).double().tolist() == [3.0, 4.0]
    assert remat.tensor([2**40]).int().dtype == remat.int32


def test_creation_with_integer_dtypes():
    z = remat.zeros(2, 3, dtype=remat.int64)
    assert z.dtype == remat.int64 and z.tolist() == [[0] * 3] * 2
    assert remat.ones(2, dtype=remat.bool).tolist() == [True, True]
    assert remat.full((2,), 7, dtype=remat.int32).tolist() == [7, 7]
    with pytest.raises(remat.DTypeError, match="randn"):
        remat.randn(2, dtype=remat.int64)


def test_shape_and_join_ops_keep_integer_dtypes():
    a = np.arange(12).reshape(3, 4)
    t = remat.tensor(a)
    np.testing.assert_array_equal(t.T.detach().numpy(), a.T)
    np.testing.assert_array_equal(t.reshape(4, 3).detach().numpy(), a.reshape(4, 3))
    np.testing.assert_array_equal(t[1:, ::2].detach().numpy(), a[1:, ::2])
    np.testing.assert_array_equal(np.asarray(remat.cat([t, t], dim=1)), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(remat.stack([t, t]).detach().numpy(), np.stack([a, a]))
    np.testing.assert_array_equal(t.flip(0).detach().numpy(), a[::-1])
    np.testing.assert_array_equal(t.unsqueeze(0).expand(2, 3, 4).detach().numpy(),
                                  np.broadcast_to(a, (2, 3, 4)))
    np.testing.assert_array_equal(t.T.contiguous().detach().numpy(), a.T)
    np.testing.assert_array_equal(t.clone().detach().numpy(), a)
    np.testing.assert_array_equal(t.repeat(2, 1).detach().numpy(), np.tile(a, (2, 1)))
    for part, ref in zip(t.split(2, dim=1), np.split(a, 2, axis=1)):
        assert part.dtype == remat.int64
        np.testing.assert_array_equal(part.detach().numpy(), ref)
    m = remat.tensor([[True, False], [False, True]])
    np.testing.assert_array_equal(m.T.detach().numpy(), [[True, False], [False, True]])


def test_where_with_integer_values():
    c = remat.tensor([1.0, 0.0, 2.0])
    got = remat.where(c, remat.tensor([1, 2, 3]), remat.tensor([10, 20, 30]))
    assert got.dtype == remat.int64 and got.tolist() == [1, 20, 3]


def test_repr_follows_pytorch():
    assert repr(remat.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(remat.tensor([1, 2], dtype=remat.int32)) == "tensor([1, 2], dtype=remat.int32)"
    assert repr(remat.tensor([True, False])) == "tensor([ True, False])"


def test_cross_entropy_takes_an_int64_tensor_target():
    logits = remat.randn(3, 4, requires_grad=True)
    target = remat.tensor([0, 3, 1])
    a = remat.cross_entropy(logits, target)
    b = remat.cross_entropy(logits, np.array([0, 3, 1]))
    assert a.item() == b.item()


def test_int_arithmetic_on_views_and_broadcast():
    a = np.arange(6).reshape(2, 3)
    t = remat.tensor(a)
    np.testing.assert_array_equal((t.T + remat.tensor([1, 2])).detach().numpy(), a.T + [1, 2])
    np.testing.assert_array_equal((t[:, ::2] * t[:, :1]).detach().numpy(), a[:, ::2] * a[:, :1])


def test_pickle_and_deepcopy_int_tensors():
    import copy

    t = remat.tensor([[1, 2], [3, 4]], dtype=remat.int32)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert u.dtype == remat.int32 and u.tolist() == [[1, 2], [3, 4]]
