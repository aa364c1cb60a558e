"""`Tensor.new_zeros/new_ones/new_empty/new_full/new_tensor` (this tensor's dtype and device
unless told otherwise), `view_as`, `nelement`, `is_cuda` and `is_meta`, as PyTorch's."""

import numpy as np
import pytest

import remat


@pytest.mark.parametrize("name,value", [("new_zeros", 0.0), ("new_ones", 1.0),
                                        ("new_empty", None)])
def test_new_filled_takes_this_tensors_kind(name, value):
    base = remat.ones(2, dtype=remat.float64)
    for args in ((2, 3), ((2, 3),), ([2, 3],)):
        t = getattr(base, name)(*args)
        assert t.shape == (2, 3) and t.dtype == remat.float64 and t.is_leaf
        if value is not None:
            assert (t.numpy() == value).all()
    i = getattr(base, name)(3, dtype=remat.int64)
    assert i.dtype == remat.int64
    g = getattr(base, name)(2, requires_grad=True)
    assert g.requires_grad


def test_new_full_and_new_tensor():
    base = remat.zeros(1, dtype=remat.float64)
    f = base.new_full((2, 2), 3.5)
    assert f.dtype == remat.float64 and f.tolist() == [[3.5, 3.5], [3.5, 3.5]]
    n = base.new_tensor([1, 2, 3])  # integer data takes this tensor's dtype, as in PyTorch
    assert n.dtype == remat.float64 and n.tolist() == [1.0, 2.0, 3.0]
    a = np.array([1.0, 2.0])
    c = base.new_tensor(a)
    a[0] = 9.0
    assert c.tolist() == [1.0, 2.0]  # a copy
    src = remat.tensor([1.0, 2.0], requires_grad=True)
    d = remat.zeros(1).new_tensor(src)
    assert not d.requires_grad and d.is_leaf
    assert remat.zeros(1).new_tensor([1, 2], dtype=remat.int64).dtype == remat.int64


def test_view_as_shares_storage_and_refuses_what_view_refuses():
    x = remat.arange(6.0)
    v = x.view_as(remat.zeros(2, 3))
    assert v.shape == (2, 3)
    with remat.no_grad():
        v[0, 0] = 42.0
    assert x[0].item() == 42.0
    with pytest.raises(remat.ShapeError):
        x.view_as(remat.zeros(4))
    with pytest.raises(remat.ShapeError):
        remat.zeros(2, 3).t().view_as(remat.zeros(6))


def test_queries():
    t = remat.zeros(2, 3)
    assert t.nelement() == 6 == t.numel()
    assert t.is_cuda is False and t.is_meta is False


def test_errors():
    with pytest.raises(remat.ShapeError):
        remat.zeros(1).new_zeros(-1)
    with pytest.raises(remat.DeviceError):
        remat.zeros(1).new_zeros(2, device="nowhere")
