"""The PyO3 binding layer: dtype objects, the NumPy bridge (views and shared memory), argument
forms, operators with Python scalars, indexing, repr, and the error → exception mapping."""

import copy
import pickle

import numpy as np
import pytest

import remat

# ---------------------------------------------------------------- dtypes


def test_dtype_objects_compare_with_numpy_and_names():
    f32, f64 = remat.float32, remat.float64
    assert str(f32) == "float32" and repr(f32) == "remat.float32"
    assert f32.name == "float32" and f32.itemsize == 4 and f64.itemsize == 8
    assert f32 == np.float32 and np.float32 == f32
    assert f32 == np.dtype("float32") and np.dtype("float32") == f32
    assert f64 == "float64" and f64 == np.float64 and f64 == np.dtype("<f8")
    assert f32 != f64 and f32 != np.float64 and f32 != "float64"
    assert not (f32 == None) and not (f32 == 3) and not (f32 == "int32")  # noqa: E711
    assert hash(f32) == hash("float32") and len({f32, remat.float32}) == 1
    assert np.dtype(f64) == np.float64
    assert pickle.loads(pickle.dumps(f64)) is f64


@pytest.mark.parametrize("spec", [remat.float64, "float64", np.float64, np.dtype("float64")])
def test_dtype_arguments_accept_every_form(spec):
    assert remat.zeros(2, dtype=spec).dtype == remat.float64
    assert remat.tensor([1, 2], dtype=spec).dtype is remat.float64
    if isinstance(spec, str):  # to("float64") is a device, as in PyTorch
        with pytest.raises(remat.DeviceError):
            remat.ones(2).to(spec)
    else:
        assert remat.ones(2).to(spec).dtype == remat.float64


def test_unsupported_dtype_raises_dtype_error():
    with pytest.raises(remat.DTypeError, match="uint8"):
        remat.zeros(2, dtype="uint8")
    with pytest.raises(TypeError):
        remat.ones(2, dtype=np.complex64)
    assert remat.zeros(2, dtype="int32").dtype == remat.int32
    assert remat.ones(2, dtype=np.int64).dtype == remat.int64


# ---------------------------------------------------------------- tensor() dtype rules


def test_tensor_dtype_rules():
    assert remat.tensor(np.ones(3)).dtype == remat.float64
    assert remat.tensor(np.ones(3, dtype=np.float32)).dtype == remat.float32
    assert remat.tensor(np.arange(3)).dtype == remat.int64
    assert remat.tensor([1.0, 2.0]).dtype == remat.float32
    assert remat.tensor(3).dtype == remat.int64 and remat.tensor(3).shape == ()
    assert remat.tensor(True).item() is True
    assert remat.tensor([[1, 2], [3, 4]], dtype=remat.float64).dtype == remat.float64
    t = remat.ones(2, requires_grad=True)
    c = remat.tensor(t)
    assert c.is_leaf and not c.requires_grad and np.array_equal(c.numpy(), [1, 1])


def test_tensor_copies_its_input():
    a = np.zeros(3, dtype=np.float32)
    t = remat.tensor(a)
    a[0] = 5
    assert t.numpy()[0] == 0


def test_tensor_rejects_non_numeric_and_ragged():
    with pytest.raises(TypeError):
        remat.tensor(["a", "b"])
    with pytest.raises(TypeError):
        remat.tensor([None])
    with pytest.raises(TypeError):
        remat.tensor(np.array([1 + 2j]))
    with pytest.raises(ValueError):
        remat.tensor([[1, 2], [3]])


# ---------------------------------------------------------------- NumPy bridge


def test_numpy_is_a_view_sharing_memory():
    t = remat.zeros(2, 3)
    v = t.numpy()
    v[1, 2] = 7.0
    assert t[1, 2].item() == 7.0
    assert np.shares_memory(v, t.numpy())
    assert np.asarray(t)[1, 2] == 7.0


def test_numpy_views_of_strided_tensors():
    base = remat.tensor(np.arange(12.0).reshape(3, 4))
    tv = base.T.numpy()
    assert tv.shape == (4, 3) and np.array_equal(tv, np.arange(12.0).reshape(3, 4).T)
    assert np.shares_memory(tv, base.numpy())
    sl = base[1:, ::2].numpy()
    assert np.array_equal(sl, np.arange(12.0).reshape(3, 4)[1:, ::2])
    assert np.shares_memory(sl, base.numpy())


def test_numpy_outlives_the_tensor():
    v = remat.full((1000,), 3.0).numpy()
    import gc

    gc.collect()
    assert v.sum() == 3000.0


def test_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = remat.from_numpy(a)
    a[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    t.numpy()[1, 1] = -1.0
    assert a[1, 1] == -1.0
    b = np.ones(4)
    assert remat.from_numpy(b).dtype == remat.float64


@pytest.mark.parametrize(
    "arr",
    [
        np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        np.arange(12.0).reshape(3, 4)[:, ::2],
        np.arange(5.0)[::-1],
        np.array(2.5),
        np.zeros((0, 3)),
        np.arange(6, dtype=np.int64).reshape(3, 2),
        np.array([True, False]),
        np.arange(4, dtype=">f4"),
    ],
    ids=["fortran", "strided", "negative_stride", "0d", "empty", "int", "bool", "big_endian"],
)
def test_from_numpy_copies_other_layouts(arr):
    t = remat.from_numpy(arr)
    assert t.shape == arr.shape
    np.testing.assert_array_equal(t.numpy(), arr.astype(np.float64))


def test_from_numpy_rejects_non_arrays_and_non_numeric():
    with pytest.raises(TypeError):
        remat.from_numpy([1.0, 2.0])
    with pytest.raises(TypeError):
        remat.from_numpy(np.array(["x"]))


def test_array_protocol_and_tolist():
    t = remat.tensor([[1.0, 2.0]])
    assert np.array(t, dtype=np.float64).dtype == np.float64
    assert t.tolist() == [[1.0, 2.0]]
    assert remat.tensor(4.0).item() == 4.0
    assert float(remat.tensor(2.5)) == 2.5 and int(remat.tensor(2.5)) == 2
    assert bool(remat.tensor(1.0)) and not bool(remat.tensor(0.0))


# ---------------------------------------------------------------- attributes and methods


def test_attributes():
    t = remat.ones(2, 3, dtype=remat.float64, requires_grad=True)
    assert t.shape == (2, 3) and t.ndim == 2 and t.nbytes == 48
    assert t.size() == (2, 3) and t.numel() == 6
    assert t.dtype is remat.float64 and t.device == "cpu"
    assert t.is_leaf and t.requires_grad and t.grad is None
    assert len(t) == 2 and t.numel() == 6
    y = t * 2
    assert not y.is_leaf and y.requires_grad
    assert t.requires_grad_(False) is t and not t.requires_grad
    assert t.detach().is_leaf


def test_grad_setter():
    t = remat.ones(3, requires_grad=True)
    t.grad = remat.full(3, 2.0)
    assert t.grad.tolist() == [2.0, 2.0, 2.0]
    t.grad = None
    assert t.grad is None
    with pytest.raises(remat.ShapeError):
        t.grad = remat.ones(4)


def test_shape_methods():
    x = remat.tensor(np.arange(24.0).reshape(2, 3, 4))
    assert x.reshape(6, -1).shape == (6, 4)
    assert x.reshape((4, 6)).shape == (4, 6)
    assert x.transpose(0, 2).shape == (4, 3, 2)
    assert x.T.shape == (4, 3, 2)
    assert remat.transpose(x, (1, 0, 2)).shape == (3, 2, 4)
    assert remat.reshape(x, (24,)).shape == (24,)
    assert x.sum(axis=(0, 2)).shape == (3,)
    assert x.mean(axis=1, keepdims=True).shape == (2, 1, 4)
    assert x.max().item() == 23.0


def test_to_cpu_and_cuda():
    x = remat.ones(2)
    assert x.to("cpu") is x and x.cpu() is x and x.to(remat.float32) is x
    y = x.to(remat.float64)
    assert y.dtype == remat.float64
    if not remat.cuda.is_available():
        with pytest.raises(remat.DeviceError):
            x.cuda()
        with pytest.raises(remat.DeviceError):
            x.to("cuda:0")
        with pytest.raises(remat.DeviceError):
            remat.zeros(2, device="cuda")
    with pytest.raises(remat.DeviceError, match="gpu"):
        x.to("gpu")


# ---------------------------------------------------------------- indexing


def test_getitem_forms():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = remat.tensor(a)
    for key in [
        0,
        -1,
        (1, 2),
        slice(None),
        (slice(None), 1),
        (slice(1, None), slice(None, None, 2)),
        (Ellipsis, 0),
        (None, 0),
        (0, None, slice(1, 3)),
        (Ellipsis,),
        (1, 2, 3),
        (slice(-2, None), Ellipsis, slice(None, -1)),
        np.int64(1),
    ]:
        np.testing.assert_array_equal(t[key].numpy(), a[key], err_msg=repr(key))


def test_getitem_errors():
    t = remat.zeros(3, 2)
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(remat.ShapeError):
        t[0, 0, 0]
    with pytest.raises(TypeError):
        t["a"]
    with pytest.raises(TypeError):
        t[1.5]


def test_iteration():
    rows = list(remat.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(TypeError):
        len(remat.tensor(1.0))


# ---------------------------------------------------------------- operators


def test_operators_with_scalars_on_both_sides():
    a = remat.tensor([1.0, 2.0, 4.0])
    n = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    cases = {
        "a+2": (a + 2, n + 2),
        "2+a": (2 + a, 2 + n),
        "a-1.5": (a - 1.5, n - 1.5),
        "1.5-a": (1.5 - a, 1.5 - n),
        "a*3": (a * 3, n * 3),
        "3*a": (3 * a, 3 * n),
        "a/2": (a / 2, n / 2),
        "2/a": (2 / a, 2 / n),
        "a**2": (a**2, n**2),
        "2**a": (2**a, 2**n),
        "-a": (-a, -n),
        "a@a": (a @ a, n @ n),
    }
    for name, (got, want) in cases.items():
        assert got.dtype == remat.float32, name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=name)


def test_scalars_keep_the_tensor_dtype():
    assert (remat.ones(2) + 1.5).dtype == remat.float32
    assert (remat.ones(2) * np.float64(2.0)).dtype == remat.float32
    assert (remat.ones(2, dtype=remat.float64) + 1).dtype == remat.float64
    assert (remat.ones(2) + remat.ones(2, dtype=remat.float64)).dtype == remat.float64


def test_numpy_arrays_on_either_side_give_tensors():
    t = remat.ones(3)
    assert isinstance(t + np.ones(3), remat.Tensor)
    assert isinstance(np.ones(3) * t, remat.Tensor)
    assert isinstance(np.ones((3, 3)) @ t, remat.Tensor)


def test_unknown_operand_types_raise_type_error():
    with pytest.raises(TypeError):
        remat.ones(2) + "x"
    with pytest.raises(TypeError):
        object() * remat.ones(2)


def test_broadcasting_and_matmul_rules():
    a = remat.ones(4, 1, 3)
    b = remat.ones(2, 1)
    assert (a + b).shape == (4, 2, 3)
    assert (remat.ones(5, 2, 3) @ remat.ones(3, 4)).shape == (5, 2, 4)
    assert (remat.ones(3) @ remat.ones(3, 4)).shape == (4,)


def test_hash_is_identity():
    a, b = remat.ones(1), remat.ones(1)
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2


# ---------------------------------------------------------------- repr


def test_repr():
    assert repr(remat.tensor([[1.0, 2.0]])) == "tensor([[1., 2.]])"
    assert repr(remat.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(remat.tensor(2.0, dtype=remat.float64)) == "tensor(2., dtype=remat.float64)"
    y = remat.tensor([1.0], requires_grad=True) * 2
    assert repr(y).startswith("tensor([2.], grad_fn=<")
    assert repr(remat.zeros(0, 3)) == "tensor([], size=(0, 3))"


# ---------------------------------------------------------------- autograd entry points


def test_backward_and_grad_release_gil_and_work():
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    (g,) = remat.grad((x * x * x).sum(), x)
    assert g.tolist() == [3.0, 12.0]
    assert x.grad.tolist() == [2.0, 4.0]
    y = x * 3
    y.backward(np.ones(2))
    assert x.grad.tolist() == [5.0, 7.0]


def test_grad_mode_context_managers_and_decorators():
    assert remat.is_grad_enabled()
    ng = remat.no_grad()
    with ng:
        with ng:
            assert not remat.is_grad_enabled()
            with remat.enable_grad():
                assert remat.is_grad_enabled()
            assert not remat.is_grad_enabled()
        assert not remat.is_grad_enabled()
    assert remat.is_grad_enabled()

    @remat.no_grad()
    def f(x):
        return x * 2

    assert not f(remat.ones(1, requires_grad=True)).requires_grad
    with remat.set_grad_enabled(False):
        assert not remat.is_grad_enabled()
    assert remat.is_grad_enabled()


def test_deepcopy_and_pickle():
    t = remat.tensor([1.0, 2.0], requires_grad=True)
    c = copy.deepcopy(t)
    assert c is not t and c.requires_grad and c.tolist() == [1.0, 2.0]
    p = pickle.loads(pickle.dumps(t))
    assert p.requires_grad and p.tolist() == [1.0, 2.0]


# ---------------------------------------------------------------- error mapping


@pytest.mark.parametrize(
    "fn,exc",
    [
        (lambda: remat.ones(2, 3) + remat.ones(4), remat.ShapeError),
        (lambda: remat.ones(2, 3) @ remat.ones(2, 3), remat.ShapeError),
        (lambda: remat.zeros(2, dtype="int8"), remat.DTypeError),
        (lambda: remat.ones(2, requires_grad=True).grad_fn_missing, AttributeError),
        (lambda: remat.memory_allocated("tpu"), remat.DeviceError),
        (lambda: remat.ones(2, 2, requires_grad=True).sum(axis=0).backward(), remat.GraphError),
        (lambda: remat.ones(2).sum().backward(), remat.GraphError),
        (lambda: remat.gelu(remat.ones(2), approximate="x"), ValueError),
        (lambda: remat.dropout(remat.ones(2), p=2.0), ValueError),
        (lambda: remat.cross_entropy(remat.ones(2, 3), [0.5, 1.0]), ValueError),
        (lambda: remat.zeros(-1), remat.ShapeError),
        (lambda: remat.zeros(2.5), TypeError),
        (lambda: remat.grad(remat.ones(1, requires_grad=True).sum(), [1.0]), TypeError),
    ],
)
def test_error_mapping(fn, exc):
    with pytest.raises(exc):
        fn()


def test_error_classes_subclass_builtin_exceptions():
    assert issubclass(remat.ShapeError, ValueError)
    assert issubclass(remat.DTypeError, TypeError)
    assert issubclass(remat.DeviceError, RuntimeError)
    assert issubclass(remat.GraphError, RuntimeError)
    assert issubclass(remat.CheckpointError, RuntimeError)
    assert issubclass(remat.IndexingError, IndexError)
    assert issubclass(remat.IndexingError, remat.ShapeError)


def test_backward_twice_names_the_remedy():
    x = remat.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(remat.GraphError, match="retain_graph=True"):
        y.backward()


def test_callback_exceptions_propagate_unchanged():
    class Boom(Exception):
        pass

    calls = []

    def fn(x):
        calls.append(1)
        if len(calls) > 1:
            raise Boom("from the recompute")
        return x * 2

    x = remat.ones(3, requires_grad=True)
    y = remat.checkpoint_segment(fn, x)
    with pytest.raises(Boom, match="from the recompute"):
        y.sum().backward()


# ---------------------------------------------------------------- memory and devices


def test_memory_statistics_and_cuda_queries():
    base = remat.memory_allocated()
    t = remat.zeros(1000)
    assert remat.memory_allocated("cpu") == base + 4000
    assert remat.max_memory_allocated() >= base + 4000
    del t
    assert remat.memory_allocated() == base
    remat.reset_peak_memory_stats()
    assert remat.max_memory_allocated() == base
    assert isinstance(remat.cuda.is_available(), bool)
    assert remat.cuda.device_count() >= 0
    remat.cuda.synchronize()


def test_manual_seed_is_reproducible():
    remat.manual_seed(123)
    a = remat.randn(5).tolist()
    remat.manual_seed(123)
    assert remat.randn(5).tolist() == a
    assert all(0.0 <= v < 1.0 for v in remat.rand(100).tolist())
