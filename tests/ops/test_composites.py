"""Behaviour of the small composites (take_along_dim, masked_select, count_nonzero,
nan_to_num, addcmul, addcdiv, var_mean, std_mean) beyond the op registry's checks: the
special values, the flattened and broadcast forms, integer dtypes and the tuple results."""

import numpy as np
import pytest

import remat


def test_take_along_dim_flattened_and_with_argsort():
    x = remat.tensor([[10, 30, 20], [60, 40, 50]])
    assert remat.take_along_dim(x, remat.tensor([5, 0])).tolist() == [50, 10]
    idx = x.argsort(dim=1)
    assert x.take_along_dim(idx, dim=1).tolist() == [[10, 20, 30], [40, 50, 60]]
    # a (1, k) index broadcasts over the rows
    assert x.take_along_dim(remat.tensor([[2, 0]]), 1).tolist() == [[20, 10], [50, 60]]


def test_masked_select_broadcasts_and_keeps_gradients():
    x = remat.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = remat.masked_select(x, remat.tensor([False, True]))
    assert y.tolist() == [2.0, 4.0]
    y.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0], [0.0, 1.0]]
    with pytest.raises(TypeError, match="masked_select"):
        remat.masked_select(x, remat.tensor([1.0, 0.0]))


def test_count_nonzero_counts_nan_and_returns_int64():
    x = remat.tensor([[0.0, float("nan")], [0.0, 2.0]])
    n = remat.count_nonzero(x)
    assert n.dtype == remat.int64 and n.item() == 2
    assert x.count_nonzero(dim=0).tolist() == [0, 2]
    assert remat.count_nonzero(remat.tensor([True, False, True])).item() == 2


@pytest.mark.parametrize("dtype", [remat.float32, remat.float64])
def test_nan_to_num_defaults_are_the_dtype_limits(dtype):
    x = remat.tensor([float("nan"), float("inf"), -float("inf"), 1.5], dtype=dtype)
    info = np.finfo(np.float32 if dtype == remat.float32 else np.float64)
    np.testing.assert_array_equal(remat.nan_to_num(x).numpy(),
                                  np.array([0.0, info.max, info.min, 1.5], dtype=info.dtype))
    assert x.nan_to_num(nan=2.0, posinf=1.0, neginf=-1.0).tolist() == [2.0, 1.0, -1.0, 1.5]
    assert remat.nan_to_num(remat.tensor([1, 2])).tolist() == [1, 2]


def test_addcmul_and_addcdiv_as_in_an_optimizer_step():
    p = remat.tensor([1.0, 2.0])
    m, v = remat.tensor([0.5, -0.5]), remat.tensor([4.0, 1.0])
    assert remat.addcdiv(p, m, v.sqrt(), value=-0.1).tolist() == pytest.approx([0.975, 2.05])
    assert p.addcmul(m, m, value=2.0).tolist() == [1.5, 2.5]
    with pytest.raises(TypeError, match="addcdiv"):
        remat.addcdiv(remat.tensor([1]), remat.tensor([1]), remat.tensor([2]))


def test_var_mean_and_std_mean_return_pairs():
    a = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]], np.float32)
    v, m = remat.var_mean(remat.tensor(a), dim=1)
    np.testing.assert_allclose(v.numpy(), a.var(axis=1, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(m.numpy(), a.mean(axis=1), rtol=1e-6)
    s, m2 = remat.std_mean(remat.tensor(a), correction=0, keepdim=True)
    assert s.shape == m2.shape == (1, 1)
    np.testing.assert_allclose(s.numpy(), [[a.std()]], rtol=1e-6)


def test_index_add_in_place_returns_self_and_accumulates_repeats():
    x = remat.zeros(3)
    y = x.index_add_(0, remat.tensor([0, 2, 0]), remat.tensor([1.0, 2.0, 3.0]), alpha=2)
    assert y is x and x.tolist() == [8.0, 0.0, 4.0]
    w = remat.ones(3, requires_grad=True)
    h = w * 1.0
    h.index_add_(0, remat.tensor([1]), remat.tensor([5.0]))
    assert h.tolist() == [1.0, 6.0, 1.0]
    h.sum().backward()
    assert w.grad.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises((IndexError, remat.ShapeError), match="index_add"):
        remat.zeros(2).index_add(0, remat.tensor([2]), remat.tensor([1.0]))
