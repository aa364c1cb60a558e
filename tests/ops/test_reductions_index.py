"""Index reductions and the logical ones: ``argmax``/``argmin``, ``max``/``min`` with a dim
(the ``(values, indices)`` named tuple and its one-element gradient), ``all``/``any``, against
NumPy for float, int and bool inputs; ``Tensor.size()`` and NumPy's ``np.sum(t)``-style calls."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import remat

NAN = float("nan")
DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]


def _sample(shape, dtype, seed=0):
    """Small values with many ties (so first-occurrence rules are exercised)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, size=shape)
    return (a > 0) if dtype == np.bool_ else a.astype(dtype)


# ---------------------------------------------------------------- argmax / argmin


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@settings(max_examples=25, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5),
       data=st.data())
def test_arg_matches_numpy(name, dtype, shape, data):
    a = _sample(shape, dtype, data.draw(st.integers(0, 2**16)))
    nd = len(shape)
    dim = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    keepdim = data.draw(st.booleans())
    want = getattr(np, name)(a, axis=dim, keepdims=keepdim)
    t = remat.tensor(a)
    for got in (getattr(remat, name)(t, dim, keepdim),
                getattr(t, name)(dim=dim, keepdim=keepdim),
                getattr(t, name)(axis=dim, keepdims=keepdim)):
        assert got.dtype == remat.int64
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.detach().numpy(), want)


def test_arg_noncontiguous_and_big():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 700)).astype(np.float32)  # above the parallel threshold
    t = remat.tensor(a)
    for dim in (0, 1, -1, None):
        np.testing.assert_array_equal(t.argmax(dim).detach().numpy(), np.argmax(a, axis=dim))
        np.testing.assert_array_equal(t.argmin(dim).detach().numpy(), np.argmin(a, axis=dim))
    tt = t.T  # a transposed view
    np.testing.assert_array_equal(tt.argmax(1).detach().numpy(), np.argmax(a.T, axis=1))
    np.testing.assert_array_equal(tt.argmin(0).detach().numpy(), np.argmin(a.T, axis=0))


def test_arg_ties_take_the_first():
    t = remat.tensor([[1, 3, 3, 0], [2, 2, 2, 2]])
    assert t.argmax(1).tolist() == [1, 0]
    assert t.argmin(1).tolist() == [3, 0]
    assert remat.argmax(remat.tensor([5.0, 1.0, 5.0])).item() == 0


def test_arg_nan_counts_as_the_extreme():
    t = remat.tensor([[1.0, NAN, 7.0, NAN], [3.0, -1.0, 9.0, 2.0]])
    assert t.argmax(1).tolist() == [1, 2]
    assert t.argmin(1).tolist() == [1, 1]
    assert t.argmax().item() == 1
    c = remat.tensor([[1.0, 2.0], [NAN, 0.0], [5.0, NAN]])
    assert c.argmax(0).tolist() == [1, 2]
    assert c.argmin(0).tolist() == [1, 2]


def test_arg_flat_and_0d():
    t = remat.tensor(np.arange(6.0).reshape(2, 3))
    r = t.argmax()
    assert r.shape == () and r.item() == 5 and r.dtype == remat.int64
    assert t.argmax(keepdim=True).shape == (1, 1)
    s = remat.tensor(4.0)
    assert s.argmax().item() == 0 and s.argmax(0).item() == 0 and s.argmin(-1).item() == 0


def test_arg_is_never_recorded():
    x = remat.tensor([1.0, 3.0, 2.0], requires_grad=True)
    i = x.argmax()
    assert not i.requires_grad and i.grad_fn is None


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_errors(name):
    f = getattr(remat, name)
    with pytest.raises(remat.ShapeError, match=rf"{name}.*\(2, 0\)"):
        f(remat.zeros(2, 0), 1)
    with pytest.raises(remat.ShapeError, match=name):
        f(remat.zeros(0))
    with pytest.raises(remat.ShapeError, match=name):
        f(remat.zeros(2, 3), 2)
    with pytest.raises(TypeError, match=name):
        f(remat.zeros(2, 3), (0, 1))
    assert f(remat.zeros(0, 3), 1).shape == (0,)  # other axes may be empty


# ---------------------------------------------------------------- max / min with a dim


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_dim_matches_numpy(name, dtype):
    a = _sample((3, 4, 5), dtype, seed=7)
    t = remat.tensor(a)
    arg = np.argmax if name == "max" else np.argmin
    for dim in (0, 1, 2, -1, -3):
        for keepdim in (False, True):
            r = getattr(t, name)(dim, keepdim)
            v, i = r  # unpackable
            assert r[0] is v and r[1] is i  # indexable
            assert r.values is v and r.indices is i
            assert type(r).__name__ == name and isinstance(r, tuple)
            want = getattr(np, name)(a, dim, keepdims=keepdim)
            np.testing.assert_array_equal(np.asarray(v), want)
            np.testing.assert_array_equal(i.detach().numpy(), arg(a, dim, keepdims=keepdim))
            assert v.dtype == t.dtype and i.dtype == remat.int64
            f = getattr(remat, name)
            for r2 in (f(t, dim, keepdim), f(t, dim=dim, keepdim=keepdim),
                       f(t, axis=dim, keepdims=keepdim), getattr(t, name)(dim=dim)):
                assert r2.indices.shape == r2.values.shape
            np.testing.assert_array_equal(f(t, axis=dim, keepdims=keepdim).values.detach().numpy(),
                                          v.detach().numpy())


def test_max_without_dim_stays_values():
    t = remat.tensor([[1.0, 5.0], [3.0, 2.0]])
    assert isinstance(t.max(), remat.Tensor) and t.max().item() == 5.0
    assert remat.min(t).item() == 1.0
    assert t.max(keepdim=True).shape == (1, 1)
    assert remat.amax(t, 1).tolist() == [5.0, 3.0]  # amax stays values-only


def test_max_with_a_tensor_is_maximum():
    a = remat.tensor([1.0, 5.0, 3.0])
    b = remat.tensor([4.0, 2.0, 3.0])
    assert remat.max(a, b).tolist() == [4.0, 5.0, 3.0]
    assert a.max(b).tolist() == [4.0, 5.0, 3.0]
    assert remat.min(a, b).tolist() == [1.0, 2.0, 3.0]
    assert a.min(b).tolist() == [1.0, 2.0, 3.0]


def test_max_dim_nan():
    t = remat.tensor([[1.0, NAN, 7.0], [3.0, -1.0, 9.0]])
    v, i = t.max(1)
    assert np.isnan(v.detach().numpy()[0]) and v.detach().numpy()[1] == 9.0
    assert i.tolist() == [1, 2]
    v, i = t.min(1)
    assert np.isnan(v.detach().numpy()[0]) and i.tolist() == [1, 1]


def test_max_dim_gradient_goes_to_one_index_on_ties():
    x = remat.tensor([[2.0, 5.0, 5.0], [1.0, 1.0, 1.0]], dtype=remat.float64,
                     requires_grad=True)
    x.max(1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), [[0, 1, 0], [1, 0, 0]])
    y = remat.tensor([[2.0, 5.0, 5.0], [1.0, 1.0, 1.0]], dtype=remat.float64,
                     requires_grad=True)
    (y.min(0, keepdim=True).values * remat.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    np.testing.assert_array_equal(y.grad.detach().numpy(), [[0, 0, 0], [1, 2, 3]])
    z = remat.tensor([[2.0, 5.0, 5.0]], requires_grad=True)  # amax still splits ties
    z.amax(1).sum().backward()
    np.testing.assert_allclose(z.grad.detach().numpy(), [[0, 0.5, 0.5]])


def test_max_dim_second_order():
    x = remat.tensor([[1.0, 3.0, 2.0], [0.5, -1.0, 4.0]], dtype=remat.float64,
                     requires_grad=True)
    v = x.max(1).values
    (g,) = remat.grad((v * v).sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[0, 6, 0], [0, 0, 8]])
    (h,) = remat.grad(g.sum(), [x])
    np.testing.assert_allclose(h.detach().numpy(), [[0, 2, 0], [0, 0, 2]])


def test_max_dim_of_0d_and_int_not_recorded():
    s = remat.tensor(3.0, requires_grad=True)
    v, i = s.max(0)
    assert v.item() == 3.0 and i.item() == 0 and v.requires_grad
    r = remat.tensor([3, 1, 4]).max(0)
    assert r.values.item() == 4 and r.values.dtype == remat.int64 and r.indices.item() == 2


def test_max_dim_errors():
    with pytest.raises(remat.ShapeError, match=r"max.*\(3, 0\)"):
        remat.zeros(3, 0).max(1)
    with pytest.raises(remat.ShapeError, match="min"):
        remat.zeros(3, 2).min(2)
    with pytest.raises(TypeError, match="max"):
        remat.zeros(3, 2).max((0, 1))
    with pytest.raises(TypeError, match="max"):
        remat.zeros(3, 2).max(0, axis=0)


# ---------------------------------------------------------------- all / any


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["all", "any"])
@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       data=st.data())
def test_all_any_match_numpy(name, dtype, shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a = rng.integers(0, 2, size=shape) * rng.integers(1, 4, size=shape)
    a = a.astype(dtype)
    nd = len(shape)
    dim = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1) if nd else st.none(),
                              st.lists(st.integers(0, nd - 1), unique=True, min_size=1)
                              .map(tuple) if nd else st.none()))
    keepdim = data.draw(st.booleans())
    want = getattr(np, name)(a, axis=dim, keepdims=keepdim)
    t = remat.tensor(a)
    for got in (getattr(remat, name)(t, dim, keepdim),
                getattr(t, name)(dim=dim, keepdim=keepdim),
                getattr(t, name)(axis=dim, keepdims=keepdim)):
        assert got.dtype == remat.bool_
        assert got.shape == np.shape(want)
        np.testing.assert_array_equal(got.detach().numpy(), want)


def test_all_any_nan_is_true_and_empty():
    t = remat.tensor([NAN, 0.0])
    assert t.any().item() is True and t.all().item() is False
    assert remat.tensor([NAN, 1.0]).all().item() is True
    e = remat.zeros(0)
    assert e.all().item() is True and e.any().item() is False
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    assert not x.all().requires_grad


def test_all_any_errors():
    with pytest.raises(remat.ShapeError, match="all"):
        remat.zeros(2, 3).all(2)
    with pytest.raises(remat.ShapeError, match="any"):
        remat.zeros(2, 3).any((0, 0))


# ---------------------------------------------------------------- size and element_size


def test_size():
    t = remat.zeros(2, 3, 4)
    assert t.size() == (2, 3, 4) and isinstance(t.size(), tuple)
    assert t.size(0) == 2 and t.size(-1) == 4 and t.size(dim=1) == 3
    for d in (3, -4):
        with pytest.raises(IndexError):
            t.size(d)
    s = remat.tensor(1.0)
    assert s.size() == ()
    with pytest.raises(IndexError):
        s.size(0)
    assert t.numel() == 24 and t.dim() == 3


def test_element_size():
    assert remat.zeros(2).element_size() == 4
    assert remat.zeros(2, dtype=remat.float64).element_size() == 8
    assert remat.tensor([1, 2]).element_size() == 8
    assert remat.tensor([True]).element_size() == 1


# ---------------------------------------------------------------- NumPy's reductions on a Tensor


def test_numpy_reductions_on_a_tensor():
    a = np.arange(6.0).reshape(2, 3)
    t = remat.tensor(a)
    for f in (np.mean, np.sum, np.max, np.min, np.prod, np.argmax, np.argmin, np.all, np.any):
        r = f(t)
        assert np.asarray(r) == f(a), f.__name__
    np.testing.assert_allclose(np.asarray(np.sum(t, axis=1)), a.sum(axis=1))
    np.testing.assert_allclose(np.asarray(np.mean(t, axis=0, keepdims=True)),
                               a.mean(axis=0, keepdims=True))
    with pytest.raises(TypeError, match="out"):
        t.sum(out=np.zeros(()))


def test_sum_mean_dtype():
    t = remat.tensor([1, 2, 4])
    m = t.mean(dtype=remat.float64)
    assert m.dtype == remat.float64 and m.item() == pytest.approx(7 / 3)
    s = remat.tensor([1.5, 2.25]).sum(dtype="float64")
    assert s.dtype == remat.float64 and s.item() == 3.75


@pytest.mark.parametrize("values", [[1, 2, 3], [True, False, True]])
def test_logsumexp_of_integer_and_bool_tensors_is_float32(values):
    got = remat.logsumexp(remat.tensor(values), 0)
    assert got.dtype == remat.float32
    assert got.item() == pytest.approx(float(np.log(np.exp(np.array(values, float)).sum())))


def test_stack_takes_dim_and_numpys_axis():
    a, b = remat.tensor([1.0, 2.0]), remat.tensor([3.0, 4.0])
    assert remat.stack([a, b], dim=1).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert remat.stack([a, b], 1).tolist() == remat.stack([a, b], axis=1).tolist()
    assert remat.stack([a, b]).shape == (2, 2)


def test_var_and_std_of_integers_name_themselves():
    for op in (remat.var, remat.std):
        with pytest.raises(remat.DTypeError, match=rf"^{op.__name__}: .*int64"):
            op(remat.tensor([1, 2, 3]))


def test_clamp_of_an_integer_tensor_by_a_float_promotes():
    x = remat.tensor([-2, 1, 3])
    got = remat.clamp(x, 0.5, 2)  # PyTorch: result_type(int64, 0.5) is float32
    assert got.dtype == remat.float32 and got.tolist() == [0.5, 1.0, 2.0]
    assert remat.clamp(x, 0, 2).dtype == remat.int64  # int bounds keep the dtype
    both = x.clamp(min=remat.tensor([0.5, 0.5, 0.5], dtype=remat.float64))
    assert both.dtype == remat.float64 and both.tolist() == [0.5, 1.0, 3.0]


def test_arange_refuses_two_steps_and_one_hot_an_empty_tensor_without_classes():
    with pytest.raises(TypeError, match="multiple values for argument 'step'"):
        remat.arange(0, 5, 1, step=2)
    with pytest.raises(ValueError, match="empty tensor"):
        remat.nn.functional.one_hot(remat.tensor([], dtype=remat.int64))
    assert remat.nn.functional.one_hot(remat.tensor([], dtype=remat.int64), 3).shape == (0, 3)
