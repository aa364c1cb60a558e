"""Advanced indexing (integer tensors, lists, NumPy arrays, bool masks) against NumPy, its
gradients (scatter-adds, repeated indices accumulate), and embedding / one_hot / nonzero."""

from __future__ import annotations

import numpy as np
import pytest

import remat

A = np.arange(24.0).reshape(2, 3, 4)

KEYS = [
    [1, 0],
    np.array([1, -1]),
    (slice(None), [2, 0, 2]),
    (Ellipsis, [3, 1]),
    ([1, 0], [2, 1]),
    ([1, 0], slice(None), [2, 1]),
    (0, [2, 1]),
    (slice(None), np.array([[0, 1], [2, 2]])),
    ([[0], [1]], [0, 2]),
    (None, [1], slice(1, 3)),
    ([1, 0], slice(None), 3),
    (slice(None), slice(None), []),
    A > 5,
    (slice(None), A[0] > 5),
    (1, A[1, :, 0] > 15),
    (slice(None), np.array([True, False, True])),
    # A 0-d bool (Python's True/False) is a new axis of extent 1 or 0, an advanced index
    # consuming no axis; several broadcast into one, and with other indices as NumPy's.
    True,
    False,
    (True, 1),
    (1, True),
    (True, True),
    (True, False),
    (Ellipsis, True),
    (None, True),
    (True, Ellipsis, 0),
    (slice(None), True),
    (True, [0, 1]),
    (False, 1, slice(1, 3)),
]


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_forward_matches_numpy(key):
    t = remat.tensor(A)
    got = t[key]
    want = A[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.detach().numpy(), want)


@pytest.mark.parametrize("key", KEYS, ids=[str(i) for i in range(len(KEYS))])
def test_keys_as_remat_tensors(key):
    def conv(k):
        if isinstance(k, (list, np.ndarray)):
            a = np.asarray(k)
            return remat.tensor(a if a.size else a.astype(np.int64))
        return k

    k2 = tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)
    np.testing.assert_array_equal(remat.tensor(A)[k2].detach().numpy(), A[key])


def test_zero_d_bool_masks_on_0d_tensors_and_as_tensors():
    s = remat.tensor(2.5)
    assert s[True].shape == (1,) and s[True].tolist() == [2.5]
    assert s[False].shape == (0,)
    assert s[None, True].shape == (1, 1)
    t = remat.tensor(A)
    np.testing.assert_array_equal(t[remat.tensor(True)].numpy(), A[None])
    assert t[remat.tensor(False), 1].shape == (0, 3, 4)
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    (x[True] * remat.tensor([[3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_several_ellipses_as_pytorch():
    # PyTorch: the first `...` stands for the axes nothing else indexes; a later one for no
    # axis (when the first stands for none, or nothing but ellipses follows it).
    t = remat.tensor(A)
    for key, want in [
        ((Ellipsis, Ellipsis), A),
        ((Ellipsis, Ellipsis, Ellipsis), A),
        ((Ellipsis, 1, Ellipsis), A[..., 1]),
        ((1, Ellipsis, Ellipsis), A[1]),
        ((Ellipsis, None, Ellipsis), A[..., None]),
        ((0, Ellipsis, 1, Ellipsis), A[0, ..., 1]),
        ((0, Ellipsis, 1, Ellipsis, 2), A[0, 1, 2]),
        ((Ellipsis, [1, 0], Ellipsis), A[..., [1, 0]]),
    ]:
        got = t[key]
        assert got.shape == want.shape, key
        np.testing.assert_array_equal(got.numpy(), want)
    # A later ellipsis standing for axes past the last one: PyTorch's IndexError too.
    with pytest.raises(IndexError, match="ellipsis"):
        t[..., ..., 1]


def test_index_select_of_a_0d_tensor_as_pytorch():
    s = remat.tensor(2.5, requires_grad=True)
    got = remat.index_select(s, 0, remat.tensor([0]))
    assert got.shape == () and got.item() == 2.5
    got.backward()
    assert s.grad.item() == 1.0
    assert remat.index_select(remat.tensor(2.5), -1, remat.tensor(0)).item() == 2.5
    with pytest.raises(remat.DimensionError):
        remat.index_select(remat.tensor(2.5), 1, remat.tensor([0]))
    with pytest.raises(remat.ShapeError, match="exactly one position"):
        remat.index_select(remat.tensor(2.5), 0, remat.tensor([0, 0]))
    with pytest.raises(IndexError, match="out of bounds"):
        remat.index_select(remat.tensor(2.5), 0, remat.tensor([1]))


def test_gradient_accumulates_repeated_indices():
    x = remat.tensor(np.arange(5.0), requires_grad=True, dtype=remat.float64)
    y = x[[0, 0, 3, 0]]
    (y * remat.tensor([1.0, 2.0, 3.0, 4.0], dtype=remat.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), [7.0, 0.0, 0.0, 3.0, 0.0])


def test_mask_gradient():
    a = np.random.default_rng(0).normal(size=(3, 4))
    x = remat.tensor(a, requires_grad=True)
    m = a > 0
    (x[remat.tensor(m)] ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), np.where(m, 2 * a, 0.0))


def test_second_order_through_index():
    x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True, dtype=remat.float64)
    y = (x[[2, 2, 0]] ** 3).sum()
    (g,) = remat.grad(y, [x], create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), [6.0, 0.0, 2 * 6 * 3.0])


def test_integer_tensor_indexing_keeps_dtype():
    t = remat.tensor([[1, 2], [3, 4]])
    assert t[[1, 0]].dtype == remat.int64
    assert t[[1, 0]].tolist() == [[3, 4], [1, 2]]
    b = remat.tensor([True, False, True])
    assert b[[2, 1]].tolist() == [True, False]


@pytest.mark.parametrize(
    "key,exc,text",
    [
        ([3], IndexError, "out of bounds"),
        ([-4], IndexError, "out of bounds"),
        (np.array([0.5]), remat.DTypeError, "int64"),
        (np.ones((3, 5), bool), IndexError, "mask of shape"),
        (np.ones((4,), bool), IndexError, "mask of shape"),
        ((0, 0, 0, 0), IndexError, "too many"),
    ],
)
def test_bad_keys_raise(key, exc, text):
    t = remat.tensor(np.zeros((3, 4)))
    with pytest.raises(exc, match=text):
        t[key]


def test_embedding_forward_and_scatter_add_backward():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(6, 3))
    ids = np.array([[0, 5, 5], [2, 0, 1]])
    wt = remat.tensor(w, requires_grad=True)
    out = remat.embedding(remat.tensor(ids), wt)
    np.testing.assert_array_equal(out.detach().numpy(), w[ids])
    g = rng.normal(size=out.shape)
    out.backward(remat.tensor(g))
    want = np.zeros_like(w)
    np.add.at(want, ids, g)
    np.testing.assert_allclose(wt.grad.detach().numpy(), want)
    with pytest.raises(IndexError, match="embedding"):
        remat.embedding(remat.tensor([6]), wt)
    with pytest.raises(remat.DTypeError, match="embedding"):
        remat.embedding(remat.tensor([0.0]), wt)


def test_one_hot_and_nonzero():
    ids = remat.tensor([[0, 2], [1, 1]])
    want = np.eye(3, dtype=np.int64)[ids.detach().numpy()]
    np.testing.assert_array_equal(remat.one_hot(ids).detach().numpy(), want)
    assert remat.one_hot(ids, 4).shape == (2, 2, 4)
    with pytest.raises(remat.ShapeError, match="one_hot"):
        remat.one_hot(ids, 2)
    with pytest.raises(remat.ShapeError, match="one_hot"):
        remat.one_hot(remat.tensor([-1]), 3)
    m = np.array([[0.0, 1.5], [2.0, 0.0]])
    np.testing.assert_array_equal(remat.nonzero(remat.tensor(m)).detach().numpy(), np.argwhere(m))
    assert remat.tensor(m).nonzero().dtype == remat.int64


def test_indexing_under_checkpoint_matches_plain():
    rng = np.random.default_rng(2)
    w = rng.normal(size=(5, 4))
    ids = remat.tensor([3, 0, 3])

    def f(wt):
        return (remat.embedding(ids, wt).tanh()[[2, 0]] ** 2).sum()

    w1 = remat.tensor(w, requires_grad=True)
    f(w1).backward()
    w2 = remat.tensor(w, requires_grad=True)
    remat.checkpoint(f, w2).backward()
    np.testing.assert_array_equal(w1.grad.detach().numpy(), w2.grad.detach().numpy())


def test_scatter_add_with_an_index_smaller_than_src():
    # As PyTorch: only src's leading block of index's shape is scattered.
    x = remat.zeros(3, 4, dtype=remat.float64)
    src = remat.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    idx = remat.tensor([[0, 1], [2, 0]])
    out = x.scatter_add(0, idx, src)
    want = np.zeros((3, 4))
    for i in range(2):
        for j in range(2):
            want[idx.detach().numpy()[i, j], j] += np.arange(12.0).reshape(3, 4)[i, j]
    np.testing.assert_array_equal(out.detach().numpy(), want)
    (out * remat.arange(12.0).reshape(3, 4)).sum().backward()
    g = src.grad.detach().numpy()
    assert np.all(g[2:] == 0) and np.all(g[:, 2:] == 0) and g[0, 1] == 5.0
    with pytest.raises(remat.ShapeError, match="no larger extent than src"):
        x.scatter_add(0, remat.zeros(4, 2, dtype=remat.int64), src)
