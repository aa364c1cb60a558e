"""Tensor construction, attributes, NumPy interop, indexing and views."""

import numpy as np
import pytest
from conftest import DTYPES, rdtype, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import remat

# ---------------------------------------------------------------- construction and dtypes


def test_tensor_from_float64_array_stays_float64():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = remat.tensor(a)
    assert t.dtype == remat.float64
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), a)


def test_tensor_from_float32_array_stays_float32():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    t = remat.tensor(a)
    assert t.dtype == remat.float32
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize(
    "data,want",
    [
        (np.arange(5, dtype=np.int64), "int64"),
        (np.arange(5, dtype=np.int32), "int32"),
        (np.arange(5, dtype=np.int16), "int64"),
        (np.arange(5, dtype=np.uint8), "int64"),
        (np.array([True, False]), "bool"),
        (np.arange(4, dtype=np.float16), "float16"),
        ([1, 2, 3], "int64"),
        ([True, False], "bool"),
        ([1, 2.5], "float32"),
        ([1.5, 2.5], "float32"),
        ([[1.0, 2.0], [3.0, 4.0]], "float32"),
        (3, "int64"),
        (2.5, "float32"),
        (True, "bool"),
    ],
)
def test_tensor_infers_dtype_as_pytorch_does(data, want):
    """PyTorch's rules: arrays keep their dtype (widths remat lacks widen), Python ints are
    int64, bools bool, floats float32."""
    t = remat.tensor(data)
    assert t.dtype == getattr(remat, want) and str(t.dtype) == want
    expected = np.asarray(data).astype(want)
    assert t.shape == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)
    assert t.numpy().dtype == np.dtype(want)


def test_tensor_dtype_argument_overrides():
    t = remat.tensor([1, 2, 3], dtype=remat.float64)
    assert t.dtype == remat.float64
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    t = remat.tensor(np.array([0.1, 0.2]), dtype=remat.float32)
    assert t.dtype == remat.float32
    np.testing.assert_array_equal(t.numpy(), np.array([0.1, 0.2], dtype=np.float32))
    t = remat.tensor(2.0, dtype=remat.float64)
    assert t.dtype == remat.float64 and t.shape == ()


def test_tensor_from_scalar_is_0d():
    t = remat.tensor(3.5)
    assert t.shape == () and t.ndim == 0 and t.numel() == 1 and t.size() == ()
    assert t.item() == 3.5
    assert t.tolist() == 3.5


def test_tensor_from_tensor_copies_values():
    src = remat.tensor([1.0, 2.0, 3.0])
    t = remat.tensor(src)
    assert isinstance(t, remat.Tensor)
    assert t.dtype == remat.float32
    np.testing.assert_array_equal(t.numpy(), src.numpy())
    t64 = remat.tensor(src, dtype=remat.float64)
    assert t64.dtype == remat.float64
    np.testing.assert_array_equal(t64.numpy(), [1.0, 2.0, 3.0])


def test_tensor_from_grad_tensor_is_a_new_leaf():
    src = remat.tensor([1.0, 2.0], requires_grad=True)
    y = src * 3
    t = remat.tensor(y)
    assert t.is_leaf and not t.requires_grad
    np.testing.assert_array_equal(t.numpy(), [3.0, 6.0])
    t2 = remat.tensor(y, requires_grad=True)
    (t2 * t2).sum().backward()
    assert src.grad is None
    np.testing.assert_array_equal(t2.grad.numpy(), [6.0, 12.0])


def test_tensor_requires_grad_flag():
    t = remat.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad is None
    assert not remat.tensor([1.0]).requires_grad


def test_tensor_device_cpu():
    t = remat.tensor([1.0], device="cpu")
    assert str(t.device) == "cpu"
    assert str(remat.zeros(2).device) == "cpu"


# ---------------------------------------------------------------- factories


@pytest.mark.parametrize("factory,value", [(remat.zeros, 0.0), (remat.ones, 1.0)])
def test_zeros_ones_shapes(factory, value):
    for args, shape in [((2, 3), (2, 3)), (((2, 3),), (2, 3)), ((4,), (4,)), (((),), ()),
                        ((0, 3), (0, 3)), (((1, 2, 3),), (1, 2, 3))]:
        t = factory(*args)
        assert t.shape == shape
        assert t.dtype == remat.float32
        np.testing.assert_array_equal(t.numpy(), np.full(shape, value, dtype=np.float32))
    t = factory(2, 2, dtype=remat.float64, requires_grad=True)
    assert t.dtype == remat.float64 and t.requires_grad and t.is_leaf


def test_full():
    t = remat.full((2, 3), 7.5)
    assert t.shape == (2, 3) and t.dtype == remat.float32
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 7.5, dtype=np.float32))
    t = remat.full((4,), -1.25, dtype=remat.float64)
    assert t.dtype == remat.float64
    np.testing.assert_array_equal(t.numpy(), np.full(4, -1.25))
    t = remat.full((), 2.0)
    assert t.shape == () and t.item() == 2.0


def test_zeros_like_ones_like():
    base = remat.randn(3, 4, dtype=remat.float64)
    z = remat.zeros_like(base)
    o = remat.ones_like(base)
    assert z.shape == o.shape == (3, 4)
    assert z.dtype == o.dtype == remat.float64
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 4)))
    np.testing.assert_array_equal(o.numpy(), np.ones((3, 4)))
    assert remat.zeros_like(remat.ones(2)).dtype == remat.float32


@pytest.mark.parametrize("factory", [remat.randn, remat.rand])
def test_random_shapes_and_dtypes(factory):
    assert factory(2, 3).shape == (2, 3)
    assert factory((2, 3)).shape == (2, 3)
    assert factory(5).dtype == remat.float32
    t = factory(4, dtype=remat.float64, requires_grad=True)
    assert t.dtype == remat.float64 and t.requires_grad


def test_randn_statistics():
    remat.manual_seed(1234)
    x = remat.randn(20000, dtype=remat.float64).numpy()
    assert abs(x.mean()) < 0.05
    assert abs(x.std() - 1.0) < 0.05
    assert np.all(np.isfinite(x))


def test_rand_statistics():
    remat.manual_seed(99)
    x = remat.rand(20000).numpy()
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.02


@pytest.mark.parametrize("factory", [remat.randn, remat.rand])
def test_manual_seed_reproducible(factory):
    remat.manual_seed(7)
    a = factory(50).numpy().copy()
    b = factory(50).numpy().copy()
    remat.manual_seed(7)
    a2 = factory(50).numpy()
    b2 = factory(50).numpy()
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    assert not np.array_equal(a, b)
    remat.manual_seed(8)
    assert not np.array_equal(factory(50).numpy(), a)


def test_manual_seed_dropout_reproducible():
    x = remat.ones(200)
    remat.manual_seed(3)
    m1 = remat.dropout(x, 0.5).numpy().copy()
    remat.manual_seed(3)
    m2 = remat.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(m1, m2)


# ---------------------------------------------------------------- attributes


@pytest.mark.parametrize("dtype", DTYPES)
def test_attributes(dtype):
    a = np.zeros((2, 3, 4), dtype=dtype)
    t = remat.tensor(a)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
    assert t.ndim == 3
    assert t.numel() == 24 and t.size() == (2, 3, 4) and t.size(-1) == 4
    assert t.nbytes == 24 * np.dtype(dtype).itemsize
    assert t.dtype == rdtype(dtype)
    assert len(t) == 2


def test_is_leaf_rules():
    a = remat.tensor([1.0, 2.0], requires_grad=True)
    b = remat.tensor([3.0, 4.0])
    assert a.is_leaf and b.is_leaf
    c = a * 2
    assert not c.is_leaf and c.requires_grad
    d = b * 2  # no input requires grad: a leaf, like PyTorch
    assert d.is_leaf and not d.requires_grad
    assert c.detach().is_leaf and not c.detach().requires_grad


def test_requires_grad_setter():
    t = remat.tensor([1.0, 2.0])
    t.requires_grad = True
    assert t.requires_grad
    y = (t * t).sum()
    y.backward()
    np.testing.assert_allclose(t.grad.numpy(), [2.0, 4.0])
    t.requires_grad = False
    assert not t.requires_grad


def test_grad_setter_rules():
    t = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert t.grad is None
    t.grad = remat.tensor([0.5, 0.5, 0.5])
    np.testing.assert_array_equal(t.grad.numpy(), [0.5, 0.5, 0.5])
    (t * 2).sum().backward()  # accumulates into the assigned grad
    np.testing.assert_allclose(t.grad.numpy(), [2.5, 2.5, 2.5])
    t.grad = None
    assert t.grad is None
    with pytest.raises(ValueError):
        t.grad = remat.tensor([1.0, 2.0])
    with pytest.raises(TypeError):
        t.grad = "not a tensor"
    assert t.grad is None


# ---------------------------------------------------------------- NumPy interop


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_roundtrip(dtype):
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(dtype)
    t = remat.tensor(a)
    n = t.numpy()
    assert isinstance(n, np.ndarray)
    assert n.dtype == dtype
    np.testing.assert_array_equal(n, a)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert np.asarray(t).dtype == dtype
    np.testing.assert_array_equal(np.array(t, dtype=np.float64), a.astype(np.float64))


def test_tensor_copies_numpy_data():
    a = np.arange(4, dtype=np.float32)
    t = remat.tensor(a)
    a[0] = 100.0
    assert t.numpy()[0] == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_shares_memory(dtype):
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    t = remat.from_numpy(a)
    assert t.dtype == rdtype(dtype) and t.shape == (2, 3)
    a[0, 1] = 42.0
    assert t.numpy()[0, 1] == 42.0
    assert np.shares_memory(t.numpy(), a)


def test_numpy_is_a_view_of_cpu_tensor():
    t = remat.zeros(2, 3)
    assert np.shares_memory(t.numpy(), t.numpy())


def test_from_numpy_keeps_data_alive():
    a = np.arange(5, dtype=np.float64)
    t = remat.from_numpy(a)
    del a
    np.testing.assert_array_equal(t.numpy(), np.arange(5.0))


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2],
        lambda: np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
        lambda: np.arange(12, dtype=np.float64).reshape(3, 4).T,
        lambda: np.arange(10, dtype=np.float32)[::-1],
        lambda: np.broadcast_to(np.arange(3, dtype=np.float64), (4, 3)),
    ],
)
@pytest.mark.parametrize("ctor", [remat.tensor, remat.from_numpy])
def test_non_contiguous_arrays(make, ctor):
    a = make()
    t = ctor(a)
    assert t.shape == a.shape
    assert t.dtype == rdtype(a.dtype)
    np.testing.assert_array_equal(t.numpy(), a)
    expected = a.copy()
    if a.flags.writeable:
        a[...] = -1.0  # the tensor was copied, so it keeps its values
        np.testing.assert_array_equal(t.numpy(), expected)
    np.testing.assert_allclose((t * 2).numpy(), expected * 2)


def test_0d_arrays():
    for a in [np.array(2.5), np.array(2.5, dtype=np.float32), np.float64(2.5)]:
        t = remat.tensor(a)
        assert t.shape == () and t.ndim == 0 and t.numel() == 1
        assert t.item() == 2.5
        assert t.numpy().shape == ()
        assert t.dtype == rdtype(np.asarray(a).dtype)
    t = remat.from_numpy(np.array(1.5))
    assert t.shape == () and t.item() == 1.5


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 4)])
def test_empty_arrays(shape):
    a = np.zeros(shape, dtype=np.float32)
    t = remat.tensor(a)
    assert t.shape == shape and t.numel() == 0 and t.nbytes == 0
    assert t.numpy().shape == shape
    assert t.tolist() == a.tolist()
    assert (t + 1).shape == shape
    np.testing.assert_array_equal(t.sum().numpy(), np.float32(0.0))
    assert len(t) == shape[0]


# ---------------------------------------------------------------- indexing


INDEXES = [
    0, -1, 1, slice(None), slice(1, None), slice(None, -1), slice(0, 4, 2), slice(1, 100),
    slice(3, 1), (0, 1), (-1, -2), (slice(None), 0), (Ellipsis, 1), (Ellipsis,), (None,),
    (None, 0), (0, None, slice(1, 3)), (slice(None), None, slice(None, None, 2)),
    (1, Ellipsis, None), (Ellipsis, None), (slice(None), slice(1, 2), 0), (0, 0, 0),
    (None, Ellipsis, 0, None),
]


@pytest.mark.parametrize("idx", INDEXES, ids=repr)
def test_getitem_matches_numpy(idx):
    a = np.arange(3 * 4 * 5, dtype=np.float64).reshape(3, 4, 5)
    t = remat.tensor(a)
    got = t[idx]
    expected = a[idx]
    assert isinstance(got, remat.Tensor)
    assert got.shape == np.shape(expected)
    np.testing.assert_array_equal(got.numpy(), expected)


@settings(deadline=None, max_examples=40)
@given(shape=shapes(min_dims=1, max_dims=3, max_side=6), data=st.data())
def test_getitem_random_slices(shape, data):
    a = np.random.default_rng(0).standard_normal(shape)
    idx = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            idx.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = data.draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = data.draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = data.draw(st.one_of(st.none(), st.integers(1, 3)))
            idx.append(slice(start, stop, step))
        else:
            idx.append(slice(None))
    idx = tuple(idx)
    got = remat.tensor(a)[idx]
    np.testing.assert_array_equal(got.numpy(), a[idx])
    # an index into a view: views of views stay correct
    got2 = remat.tensor(a).T[idx[::-1]]
    np.testing.assert_array_equal(got2.numpy(), a.T[idx[::-1]])


def test_getitem_out_of_range_raises_index_error():
    t = remat.zeros(3, 2)
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError):
        t[-4]
    with pytest.raises(IndexError):
        t[0, 2]
    assert t[2].shape == (2,)


def test_iteration_yields_rows():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    rows = list(remat.tensor(a))
    assert len(rows) == 3
    for r, e in zip(rows, a):
        np.testing.assert_array_equal(r.numpy(), e)


def test_getitem_is_a_view():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = remat.from_numpy(a)
    v = t[1:, ::2]
    a[2, 2] = -5.0
    assert v.numpy()[1, 1] == -5.0


# ---------------------------------------------------------------- reshape / transpose / T


def test_reshape_forms():
    a = np.arange(24, dtype=np.float32)
    t = remat.tensor(a)
    for args, shape in [((2, 3, 4), (2, 3, 4)), (((4, 6),), (4, 6)), ((-1, 4), (6, 4)),
                        ((24,), (24,)), ((-1,), (24,)), (((2, -1, 3),), (2, 4, 3))]:
        r = t.reshape(*args)
        assert r.shape == shape
        np.testing.assert_array_equal(r.numpy(), a.reshape(shape))
    np.testing.assert_array_equal(remat.reshape(t, (3, 8)).numpy(), a.reshape(3, 8))
    assert remat.tensor([5.0]).reshape(()).shape == ()


def test_reshape_of_non_contiguous():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = remat.tensor(a).T
    np.testing.assert_array_equal(t.reshape(12).numpy(), a.T.reshape(12))
    np.testing.assert_array_equal(t.reshape(2, 6).numpy(), a.T.reshape(2, 6))


def test_transpose_and_T():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    t = remat.tensor(a)
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), np.swapaxes(a, 0, 2))
    np.testing.assert_array_equal(t.transpose(-1, 1).numpy(), np.swapaxes(a, -1, 1))
    np.testing.assert_array_equal(remat.transpose(t, 0, 1).numpy(), np.swapaxes(a, 0, 1))
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    assert t.T.shape == (4, 3, 2)
    v = remat.tensor([1.0, 2.0])
    np.testing.assert_array_equal(v.T.numpy(), [1.0, 2.0])


def test_reshape_transpose_are_views():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = remat.from_numpy(a)
    r = t.reshape(3, 2)
    tt = t.T
    tr = t.transpose(0, 1)
    a[1, 0] = 77.0
    assert r.numpy()[1, 1] == 77.0
    assert tt.numpy()[0, 1] == 77.0
    assert tr.numpy()[0, 1] == 77.0


# ---------------------------------------------------------------- misc methods


def test_tolist_item_len():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = remat.tensor(a)
    assert t.tolist() == a.tolist()
    assert all(isinstance(x, float) for row in t.tolist() for x in row)
    assert len(t) == 2
    assert remat.tensor([[4.0]]).item() == 4.0
    assert isinstance(remat.tensor([4.0]).item(), float)
    assert remat.tensor(1.0).tolist() == 1.0


def test_repr():
    t = remat.tensor([1.5, -2.0])
    r = repr(t)
    assert isinstance(r, str) and "tensor" in r.lower()
    assert "1.5" in r and "-2" in r
    assert "requires_grad" in repr(remat.tensor([1.0], requires_grad=True))
    assert "tensor" in repr(remat.zeros(0)).lower()
    assert "tensor" in repr(remat.tensor(3.0)).lower()
    big = repr(remat.zeros(10000))
    assert len(big) < 5000  # summarised, like NumPy


def test_to_and_cpu():
    t = remat.tensor([1.0, 2.0])
    t64 = t.to(remat.float64)
    assert t64.dtype == remat.float64
    np.testing.assert_array_equal(t64.numpy(), [1.0, 2.0])
    assert t64.to(remat.float32).dtype == remat.float32
    c = t.to("cpu")
    assert str(c.device) == "cpu"
    np.testing.assert_array_equal(c.numpy(), t.numpy())
    np.testing.assert_array_equal(t.cpu().numpy(), t.numpy())


def test_to_dtype_keeps_graph():
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(remat.float64)
    assert y.requires_grad
    (y * y).sum().backward()
    assert x.grad.dtype == remat.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_device_round_trip(devices):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = remat.tensor(a, device=devices)
    assert str(t.device).startswith(devices)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    np.testing.assert_array_equal(((t + 1) * 2).cpu().numpy(), (a + 1) * 2)


# ---------------------------------------------------------------- dtype objects


def test_dtype_objects():
    assert str(remat.float32) == "float32"
    assert str(remat.float64) == "float64"
    assert remat.float32 == np.float32
    assert remat.float64 == np.float64
    assert remat.float32 != np.float64
    assert remat.float64 != np.float32
    assert remat.float32 == np.dtype("float32")
    assert remat.float32 != remat.float64
    assert remat.tensor([1.0]).dtype == np.float32
    assert remat.tensor(np.zeros(1)).dtype == np.float64
    assert hash(remat.float32) == hash(remat.float32)
    assert {remat.float32: 1}[remat.tensor([1.0]).dtype] == 1


def test_numpy_dtypes_accepted_as_dtype_argument():
    assert remat.zeros(2, dtype=np.float64).dtype == remat.float64
    assert remat.tensor([1.0], dtype=np.dtype("float64")).dtype == remat.float64
    assert remat.ones(2, dtype=remat.float64).to(np.float32).dtype == remat.float32
    assert np.dtype(remat.float32) == np.float32
    assert np.zeros(2, dtype=remat.float64).dtype == np.float64


def test_slice_bounds_beyond_the_machine_range_clamp_like_python():
    a = np.arange(12.0).reshape(3, 4)
    t = remat.tensor(a)
    np.testing.assert_array_equal(t[0:10**30].numpy(), a[0:10**30])
    np.testing.assert_array_equal(t[-10**30:2].numpy(), a[-10**30:2])
    np.testing.assert_array_equal(t[:, 1:10**40:10**30].numpy(), a[:, 1:10**40:10**30])
    with pytest.raises(TypeError, match="slice"):
        t[0:"a"]
