"""``Module.state_dict()`` as PyTorch's: an ordered dict of detached Tensors sharing storage
with the parameters and buffers, used the way PyTorch programs use it (written with only the
import changed), and ``load_state_dict`` accepting Tensors, NumPy arrays and PyTorch's legacy
``(1,)`` value of a 0-d buffer."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import remat
import remat as torch
import remat.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.fc(x))))


def test_pytorch_script_idioms_on_state_dict_values():
    torch.manual_seed(0)
    model = Net()
    sd = model.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == [
        "fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
        "bn.num_batches_tracked", "head.weight", "head.bias",
    ]
    # The idioms of PyTorch programs: export to NumPy, shapes, clones, deep copies.
    arrays = {k: model.state_dict()[k].detach().cpu().numpy() for k in sd}
    np.testing.assert_array_equal(arrays["fc.weight"], model.fc.weight.detach().numpy())
    assert sd["fc.weight"].shape == (4, 3)
    assert sd["bn.num_batches_tracked"].shape == () and sd["bn.num_batches_tracked"].dtype == (
        torch.int64
    )
    clone = sd["head.bias"].clone()
    deep = copy.deepcopy(sd)
    assert all(not v.requires_grad for v in sd.values())
    assert all(isinstance(v, torch.Tensor) for v in deep.values())
    # Detached views of the parameters: an optimizer step shows in a state dict taken before
    # it, not in its clone or deep copy.
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model(torch.randn(8, 3)).sum().backward()
    opt.step()
    np.testing.assert_array_equal(sd["head.bias"].numpy(), model.head.bias.detach().numpy())
    assert not np.array_equal(clone.numpy(), model.head.bias.detach().numpy())
    assert not np.array_equal(deep["head.bias"].numpy(), model.head.bias.detach().numpy())
    assert int(sd["bn.num_batches_tracked"].item()) == 1
    # The snapshot loads back (Tensors), as does its NumPy export.
    model.load_state_dict(deep)
    np.testing.assert_array_equal(model.head.bias.detach().numpy(), clone.numpy())
    model.load_state_dict(arrays)
    np.testing.assert_array_equal(model.fc.weight.detach().numpy(), arrays["fc.weight"])


def test_keep_vars_destination_and_positional_forms():
    lin = nn.Linear(2, 2)
    kept = lin.state_dict(keep_vars=True)
    assert kept["weight"] is lin.weight and kept["weight"].requires_grad
    dest: OrderedDict = OrderedDict(extra=1)
    out = lin.state_dict(dest, "lin.")
    assert out is dest and list(out) == ["extra", "lin.weight", "lin.bias"]
    with pytest.raises(TypeError, match="state_dict"):
        lin.state_dict(None, "", False, 1)


def test_legacy_shape_of_a_0d_buffer_loads():
    bn = nn.BatchNorm1d(3)
    sd = {k: v.clone() for k, v in bn.state_dict().items()}
    sd["num_batches_tracked"] = torch.tensor([7])  # how old PyTorch versions saved it
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.shape == () and bn.num_batches_tracked.item() == 7
    sd["num_batches_tracked"] = np.array([9])
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.item() == 9


def test_errors_name_a_buffer_as_a_buffer():
    bn = nn.BatchNorm1d(3)
    sd = {k: v.clone() for k, v in bn.state_dict().items()}
    sd["running_mean"] = torch.zeros(4)
    with pytest.raises(torch.ShapeError, match=r"'running_mean'.*buffer has shape \(3,\)"):
        bn.load_state_dict(sd)
    sd = {k: v.clone() for k, v in bn.state_dict().items()}
    sd["weight"] = torch.zeros(4)
    with pytest.raises(torch.ShapeError, match=r"'weight'.*parameter has shape \(3,\)"):
        bn.load_state_dict(sd)


def test_state_dict_round_trips_through_save_and_load(tmp_path):
    torch.manual_seed(1)
    model = Net()
    path = tmp_path / "model.pt"
    torch.save({"model": model.state_dict(), "epoch": 3}, path)
    back = torch.load(path)
    assert back["epoch"] == 3
    other = Net()
    other.load_state_dict(back["model"])
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k].numpy(), v.numpy())



def _np(t):
    return np.asarray(t.detach().numpy())


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class TreeNet(nn.Module):
    def __init__(self, d=4, n=2):
        super().__init__()
        self.inp = nn.Linear(3, d)
        self.blocks = nn.Sequential(*[Block(d) for _ in range(n)])
        self.head = nn.Linear(d, 2, bias=False)
        self.scale = 2.0  # plain attribute
        self.register_buffer("running", remat.zeros(d))

    def forward(self, x):
        return self.head(self.blocks(self.inp(x)))


def test_state_dict_round_trip_through_save_load(tmp_path):
    remat.manual_seed(0)
    net = TreeNet()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    # PyTorch's order: the module's own parameters (none here), its own buffers, then each
    # child's entries
    assert list(sd) == ["running"] + [n for n, _ in net.named_parameters()]
    # As PyTorch's: detached Tensors sharing storage with the parameters and buffers.
    assert all(isinstance(v, remat.Tensor) and not v.requires_grad for v in sd.values())
    snapshot = copy.deepcopy(sd)
    sd["inp.weight"].fill_(7)
    assert np.all(_np(net.inp.weight) == 7)
    assert not np.any(snapshot["inp.weight"].numpy() == 7)
    net.load_state_dict(snapshot)
    sd = net.state_dict()
    path = tmp_path / "net.npz"
    remat.save(sd, path)
    assert path.exists()
    loaded = remat.load(path)
    assert list(loaded) == list(sd)
    for k in sd:
        np.testing.assert_array_equal(loaded[k], sd[k])
        assert loaded[k].dtype == sd[k].dtype
    remat.manual_seed(99)
    other = TreeNet()
    w_before = other.inp.weight
    x = remat.tensor(np.ones((2, 3), np.float32))
    assert not np.array_equal(_np(other(x)), _np(net(x)))
    res = other.load_state_dict(loaded)
    assert list(res.missing_keys) == [] and list(res.unexpected_keys) == []
    assert other.inp.weight is w_before  # loaded in place
    np.testing.assert_array_equal(_np(other(x)), _np(net(x)))
    # tensors can be saved directly as well
    remat.save({"a": remat.ones(2), "b": np.arange(3.0)}, tmp_path / "t.bin")
    back = remat.load(tmp_path / "t.bin")
    assert list(back) == ["a", "b"] and back["a"].dtype == np.float32


def test_load_state_dict_shape_mismatch_names_parameter(tmp_path):
    small = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    big = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    remat.save(big.state_dict(), tmp_path / "big.npz")
    before = _np(small[0].weight).copy()
    with pytest.raises(remat.ShapeError) as e:
        small.load_state_dict(remat.load(tmp_path / "big.npz"))
    msg = str(e.value)
    assert "0.weight" in msg and "(5, 3)" in msg and "(4, 3)" in msg
    assert isinstance(e.value, ValueError)
    np.testing.assert_array_equal(_np(small[0].weight), before)  # nothing changed


def test_load_state_dict_strict_keys():
    m = nn.Sequential(nn.Linear(2, 2))
    sd = m.state_dict()
    partial = OrderedDict(list(sd.items())[:1])
    with pytest.raises(KeyError, match="0.bias"):
        m.load_state_dict(partial)
    extra = OrderedDict(sd, extra=np.zeros(1))
    with pytest.raises(KeyError, match="extra"):
        m.load_state_dict(extra)
    res = m.load_state_dict(OrderedDict(list(extra.items())[1:]), strict=False)
    assert res.missing_keys == ["0.weight"] and res.unexpected_keys == ["extra"]
    # values are cast to the parameter's dtype
    m.load_state_dict({"0.weight": np.eye(2), "0.bias": [1, 2]})
    assert m[0].weight.dtype == remat.float32
    np.testing.assert_array_equal(_np(m[0].bias), [1.0, 2.0])


def test_state_dict_lists_a_shared_module_under_every_name():
    lin = nn.Linear(2, 2)
    net = nn.Sequential(lin, nn.ReLU(), lin)
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(net.parameters())) == 2
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == [
        "0.weight", "0.bias", "2.weight", "2.bias"]
    assert [n for n, _ in net.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    sd = net.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    np.testing.assert_array_equal(sd["2.weight"], sd["0.weight"])
    # such a dict (PyTorch's form of tied weights) loads, strictly, into the shared tensors
    w, b = np.arange(4.0).reshape(2, 2), np.array([1.0, -1.0])
    res = net.load_state_dict({"0.weight": w, "0.bias": b, "2.weight": w, "2.bias": b})
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert net[2].weight is lin.weight
    np.testing.assert_array_equal(_np(lin.weight), w)
    with pytest.raises(KeyError, match="2.weight"):
        net.load_state_dict({"0.weight": w, "0.bias": b})


def test_state_dict_order_is_own_params_then_own_buffers_then_children():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.child = nn.Linear(1, 1)
            self.scale = nn.Parameter(remat.ones(1))
            self.register_buffer("count", remat.zeros(1))

    assert list(M().state_dict()) == ["scale", "count", "child.weight", "child.bias"]


def test_tied_parameter_keeps_its_place_and_is_saved_under_both_names():
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    b.weight = a.weight  # re-assigning a registered name keeps its position, as PyTorch
    net = nn.Sequential(a, b)
    assert list(b._parameters) == ["weight", "bias"]
    assert list(net.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "1.bias"]


def test_non_persistent_buffers():
    m = nn.Module()
    m.register_buffer("a", remat.ones(2))
    m.register_buffer("b", remat.zeros(3), persistent=False)
    m.register_buffer("n", None)
    assert [n for n, _ in m.named_buffers()] == ["a", "b"] and len(list(m.buffers())) == 2
    assert list(m.state_dict()) == ["a"]
    assert m.to(remat.float64).b.dtype == remat.float64  # still moved and cast
    # not expected by load_state_dict, and an unexpected key when present
    assert m.load_state_dict({"a": np.zeros(2)}).missing_keys == []
    res = m.load_state_dict({"a": np.zeros(2), "b": np.ones(3)}, strict=False)
    assert res.unexpected_keys == ["b"]
    np.testing.assert_array_equal(_np(m.b), np.zeros(3))
    with pytest.raises(KeyError, match="unexpected"):
        m.load_state_dict({"a": np.zeros(2), "b": np.ones(3)})
    # re-registering as persistent (or deleting) forgets the flag
    m.register_buffer("b", remat.zeros(3))
    assert list(m.state_dict()) == ["a", "b"]
    m.register_buffer("c", remat.zeros(1), persistent=False)
    del m.c
    m.register_buffer("c", remat.zeros(1))
    assert list(m.state_dict()) == ["a", "b", "c"]


def test_dtype_casts_leave_integer_and_bool_buffers_alone():
    m = nn.Linear(2, 2)
    m.register_buffer("ids", remat.tensor(np.arange(3)))
    m.register_buffer("mask", remat.tensor([True, False]))
    m.register_buffer("stats", remat.zeros(2))
    for cast, want in [(lambda: m.double(), remat.float64), (lambda: m.float(), remat.float32),
                       (lambda: m.to(remat.float64), remat.float64),
                       (lambda: m.to("cpu", dtype=remat.float32), remat.float32)]:
        assert cast() is m
        assert m.weight.dtype == want and m.stats.dtype == want
        assert m.ids.dtype == remat.int64 and m.mask.dtype == remat.bool
        assert m.weight.is_leaf and m.weight.requires_grad
    np.testing.assert_array_equal(_np(m.ids), [0, 1, 2])
    with pytest.raises(TypeError, match="floating point"):
        m.to(remat.int64)
