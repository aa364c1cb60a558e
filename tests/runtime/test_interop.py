"""Interop and runtime: DLPack in both directions (zero-copy with NumPy; with PyTorch where
installed), format(), Generator / initial_seed, and remat.testing.assert_close."""

import numpy as np
import pytest

import remat
from remat.testing import assert_close


# ------------------------------------------------------------------------------- DLPack

@pytest.mark.parametrize("dtype", [remat.float32, remat.float64, remat.int64, remat.int32,
                                   remat.bool_])
def test_numpy_from_dlpack_shares_memory(dtype):
    t = remat.zeros(2, 3, dtype=dtype)
    a = np.from_dlpack(t)
    assert a.shape == (2, 3) and a.dtype == np.dtype(dtype)
    a[1, 2] = 1
    assert t[1, 2].item() == 1


def test_from_dlpack_imports_numpy_memory_without_copying():
    a = np.arange(6.0).reshape(2, 3)
    t = remat.from_dlpack(a)
    assert t.dtype == remat.float64 and t.shape == (2, 3)
    t.fill_(5.0)
    assert np.all(a == 5.0)
    assert remat.from_dlpack(t) is t


def test_dlpack_of_a_view_and_a_capsule():
    t = remat.arange(12).reshape(3, 4)[:, 1::2]
    back = remat.from_dlpack(t.__dlpack__())
    np.testing.assert_array_equal(back.detach().numpy(), t.detach().numpy())
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_refuses_tensors_that_require_grad_and_bad_inputs():
    with pytest.raises(remat.GraphError, match="requires grad"):
        remat.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError, match="__dlpack__"):
        remat.from_dlpack([1, 2])

    class Elsewhere:
        def __dlpack_device__(self):
            return (8, 0)  # kDLMetal

        def __dlpack__(self, **kw):
            raise AssertionError("not reached")

    with pytest.raises(remat.DeviceError, match=r"\(8, 0\)"):
        remat.from_dlpack(Elsewhere())
    t = remat.zeros(2)
    with pytest.raises(BufferError, match="copy"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(dl_device=(2, 0))
    cap = t.__dlpack__()
    remat.from_dlpack(cap)
    with pytest.raises(ValueError, match="unconsumed"):
        remat.from_dlpack(cap)  # a capsule is consumed once


def test_dlpack_imports_strided_views_and_releases_the_producer():
    import gc
    import sys

    a = np.arange(12.0).reshape(3, 4)
    refs = sys.getrefcount(a)
    view = remat.from_dlpack(a[:, 1::2])  # no copy, even strided
    assert view.shape == (3, 2) and not view.is_contiguous()
    view.fill_(-1.0)
    assert a[:, 1::2].tolist() == [[-1.0, -1.0]] * 3 and a[0, 0] == 0.0
    del view
    gc.collect()
    assert sys.getrefcount(a) == refs  # the producer's deleter ran
    t = remat.arange(6).reshape(2, 3).T
    b = np.from_dlpack(t)
    assert b.tolist() == t.tolist() and np.shares_memory(b, np.from_dlpack(t))
    for versioned in (None, (1, 0)):  # legacy and DLPack 1.x capsules
        back = remat.from_dlpack(t.__dlpack__(max_version=versioned))
        assert back.tolist() == t.tolist()


def test_dlpack_copies_what_it_cannot_view():
    ro = np.arange(3.0)
    ro.flags.writeable = False
    t = remat.from_dlpack(ro)  # read-only memory: a writable copy
    t.fill_(1.0)
    assert ro.tolist() == [0.0, 1.0, 2.0]
    half = np.arange(3, dtype=np.float16)
    h = remat.from_dlpack(half)  # float16 is viewed, as any other dtype remat has
    assert h.dtype == remat.float16 and h.tolist() == [0.0, 1.0, 2.0]
    assert np.shares_memory(np.from_dlpack(h), half)


def test_dlpack_with_pytorch_both_ways():
    torch = pytest.importorskip("torch")
    t = remat.arange(4).float()
    tt = torch.from_dlpack(t)
    tt[0] = 9.0
    assert t[0].item() == 9.0
    src = torch.zeros(3)
    r = remat.from_dlpack(src)
    r.fill_(2.0)
    assert src.tolist() == [2.0, 2.0, 2.0]
    strided = torch.arange(12.0).reshape(3, 4).t()
    assert remat.from_dlpack(strided).tolist() == strided.tolist()
    ints = remat.arange(6).reshape(2, 3)[:, 1:]
    assert torch.from_dlpack(ints).tolist() == ints.tolist()


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not (remat.cuda.is_available() and torch.cuda.is_available()):
        pytest.skip("needs a GPU for both remat and PyTorch")
    return torch


def test_dlpack_on_cuda_with_pytorch_both_ways():
    torch = _torch_cuda()
    t = remat.arange(8, dtype=remat.float32, device="cuda").reshape(2, 4)[:, 1::2]
    tt = torch.from_dlpack(t)  # remat's stream is synchronised by the export
    assert tt.is_cuda and tt.tolist() == t.tolist()
    tt.add_(100.0)
    torch.cuda.synchronize()
    assert t.tolist() == [[101.0, 103.0], [105.0, 107.0]]  # the same device memory
    src = torch.arange(6.0, device="cuda").reshape(2, 3).t()
    r = remat.from_dlpack(src)  # PyTorch's stream is made to wait for nothing pending
    assert r.device == remat.device("cuda", 0) and r.tolist() == src.tolist()
    r.mul_(2.0)
    remat.cuda.synchronize()
    assert src.tolist() == [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]]
    for dtype in (torch.int64, torch.int32, torch.bool, torch.float64):
        x = torch.ones(3, dtype=dtype, device="cuda")
        assert remat.from_dlpack(x).tolist() == x.tolist()
    del r  # the last remat view: PyTorch's deleter runs, its tensor stays valid
    assert src.tolist() == [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]]


# ------------------------------------------------------------------------------- format

def test_format_of_zero_d_tensors_and_others():
    loss = remat.tensor(0.123456)
    assert f"{loss:.3f}" == "0.123" and f"{remat.tensor(7):04d}" == "0007"
    t = remat.ones(2)
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="0-d"):
        f"{t:.2f}"


# ---------------------------------------------------------------------------- generator

def test_generator_streams_are_private_and_reproducible():
    remat.manual_seed(11)
    assert remat.initial_seed() == 11
    g = remat.Generator().manual_seed(3)
    a = remat.randn(4, generator=g)
    global_draw = remat.rand(2)
    g.manual_seed(3)
    b = remat.randn(4, generator=g)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    remat.manual_seed(11)
    np.testing.assert_array_equal(remat.rand(2).numpy(), global_draw.detach().numpy())  # untouched
    assert g.initial_seed() == 3 and g.device == "cpu"


def test_generator_state_round_trip_and_every_sampler():
    g = remat.Generator().manual_seed(5)
    state = g.get_state()
    first = [remat.rand(3, generator=g), remat.randint(0, 10, (3,), generator=g),
             remat.randn_like(remat.ones(2), generator=g), remat.rand_like(remat.ones(2),
                                                                             generator=g),
             remat.zeros(3).normal_(generator=g), remat.zeros(3).uniform_(generator=g)]
    g.set_state(state)
    again = [remat.rand(3, generator=g), remat.randint(0, 10, (3,), generator=g),
             remat.randn_like(remat.ones(2), generator=g), remat.rand_like(remat.ones(2),
                                                                             generator=g),
             remat.zeros(3).normal_(generator=g), remat.zeros(3).uniform_(generator=g)]
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    with pytest.raises(ValueError, match="seed, offset"):
        g.set_state(remat.ones(3))


def test_dataloader_and_random_split_take_a_generator():
    from remat.utils.data import DataLoader, TensorDataset, random_split

    ds = TensorDataset(remat.arange(20))
    orders = []
    for _ in range(2):
        g = remat.Generator().manual_seed(1)
        orders.append([b[0].tolist() for b in DataLoader(ds, 5, shuffle=True, generator=g)])
    assert orders[0] == orders[1]
    a = random_split(ds, [0.5, 0.5], generator=remat.Generator().manual_seed(2))
    b = random_split(ds, [0.5, 0.5], generator=remat.Generator().manual_seed(2))
    assert a[0].indices == b[0].indices


# ------------------------------------------------------------------------- assert_close

def test_assert_close_defaults_and_options():
    assert_close(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 2.0 + 1e-6]))
    with pytest.raises(AssertionError, match="not close"):
        assert_close(remat.tensor([1.0]), remat.tensor([1.1]))
    assert_close(remat.tensor([1.0]), remat.tensor([1.1]), rtol=0.2, atol=0.0)
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(remat.ones(1), remat.ones(1, dtype=remat.float64))
    assert_close(remat.ones(1), remat.ones(1, dtype=remat.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="shape"):
        assert_close(remat.ones(2), remat.ones(3))
    nan = remat.tensor([float("nan")])
    with pytest.raises(AssertionError):
        assert_close(nan, nan)
    assert_close(nan, nan, equal_nan=True)
    assert_close({"a": [remat.ones(1), 2.0]}, {"a": [remat.ones(1), 2.0]})
    with pytest.raises(AssertionError, match="custom"):
        assert_close(remat.ones(1), remat.zeros(1), msg="custom")
    with pytest.raises(ValueError, match="rtol"):
        assert_close(remat.ones(1), remat.ones(1), rtol=1.0)
    with pytest.raises(AssertionError):
        assert_close(remat.tensor([1, 2]), remat.tensor([1, 3]))


# ------------------------------------------------------------------ NumPy views and graphs

def test_numpy_view_of_a_tensor_that_requires_grad_is_read_only():
    # Writing through it would change what backward computes with, bypassing the version
    # counter (the case: x*x's gradient came out as [0, 0, 0] instead of 2x).
    x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    # numpy() itself refuses a tensor that requires grad, as in PyTorch (API.md), naming the
    # remedy; force=True detaches.
    with pytest.raises(remat.GraphError, match=r"numpy.*\(3,\).*detach\(\)\.numpy\(\)"):
        x.numpy()
    with pytest.raises(remat.GraphError):
        (x * 2).numpy()
    for arr in (x.numpy(force=True), np.asarray(x), x.detach().numpy()):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 0.0
    y.backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), [2.0, 4.0, 6.0])
    # Reading, printing, NumPy reductions and copies keep working.
    assert np.sum(x) == 6.0 and x.tolist() == [1.0, 2.0, 3.0]
    assert np.array(x).flags.writeable
    # Once backward freed the graph, a detached view is writeable again, as in PyTorch.
    d = x.detach().numpy()
    assert d.flags.writeable and np.shares_memory(d, x.detach().numpy())
    plain = remat.zeros(3)
    plain.detach().numpy()[1] = 5.0
    assert plain.tolist() == [0.0, 5.0, 0.0]


def test_numpy_view_of_memory_a_graph_saved_is_read_only_until_backward():
    x = remat.tensor([[1.0, 2.0]])  # no grad, but the matmul saves it for w's gradient
    w = remat.ones(2, 1, requires_grad=True)
    loss = (x @ w).sum()
    assert not x.detach().numpy().flags.writeable
    loss.backward()
    assert w.grad.tolist() == [[1.0], [2.0]]
    view = x.detach().numpy()
    assert view.flags.writeable  # the graph is gone
    view[0, 0] = 7.0
    assert x.tolist() == [[7.0, 2.0]]
