"""remat.nn: parameter registration and naming, layers (shapes, init, modes), containers,
state dicts (round trip through remat.save/load, shape mismatches), zero_grad, to(), and
activation_checkpointing."""

import math
from collections import OrderedDict

import copy

import numpy as np
import pytest

import remat
from remat import nn


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


class Net(nn.Module):
    def __init__(self, d=4, n=2):
        super().__init__()
        self.inp = nn.Linear(3, d)
        self.blocks = nn.Sequential(*[Block(d) for _ in range(n)])
        self.head = nn.Linear(d, 2, bias=False)
        self.scale = 2.0  # plain attribute
        self.register_buffer("running", remat.zeros(d))

    def forward(self, x):
        return self.head(self.blocks(self.inp(x)))


# ---------------------------------------------------------------- registration


def test_nested_parameter_names_and_order():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "inp.weight",
        "inp.bias",
        "blocks.0.norm.weight",
        "blocks.0.norm.bias",
        "blocks.0.fc1.weight",
        "blocks.0.fc1.bias",
        "blocks.0.fc2.weight",
        "blocks.0.fc2.bias",
        "blocks.1.norm.weight",
        "blocks.1.norm.bias",
        "blocks.1.fc1.weight",
        "blocks.1.fc1.bias",
        "blocks.1.fc2.weight",
        "blocks.1.fc2.bias",
        "head.weight",
    ]
    params = list(net.parameters())
    assert len(params) == len(names)
    assert all(p.is_leaf and p.requires_grad for p in params)
    assert isinstance(params[0], nn.Parameter)
    assert net.scale == 2.0
    assert [n for n, _ in net.named_buffers()] == ["running"]


def test_shared_parameters_are_listed_once():
    a = nn.Linear(3, 3)
    b = nn.Linear(3, 3)
    b.weight = a.weight
    seq = nn.Sequential(a, b, a)
    names = [n for n, _ in seq.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.bias"]
    assert len(list(seq.modules())) == 3  # seq, a, b
    assert len(list(seq.children())) == 2


def test_parameter_helper_and_attribute_rules():
    m = nn.Module()
    p = nn.Parameter(np.ones((2, 3), dtype=np.float32))
    assert p.is_leaf and p.requires_grad and p.shape == (2, 3)
    m.w = p
    assert [n for n, _ in m.named_parameters()] == ["w"]
    assert m.w is p
    # a tensor that does not require grad is a plain attribute
    m.c = remat.zeros(2)
    assert [n for n, _ in m.named_parameters()] == ["w"]
    # replacing a parameter with a non-parameter is an error, None is allowed
    with pytest.raises(TypeError):
        m.w = remat.zeros(2, 3)
    m.w = None
    assert list(m.parameters()) == []
    del m.w
    with pytest.raises(AttributeError):
        _ = m.w
    # a non-leaf tensor requiring grad is not a parameter
    x = remat.ones(2, requires_grad=True)
    assert not isinstance(x * 2, nn.Parameter)


def test_children_modules_and_repr():
    net = Net(d=4, n=1)
    assert [type(c).__name__ for c in net.children()] == ["Linear", "Sequential", "Linear"]
    assert len(list(net.modules())) == 9  # Net, inp, blocks, Block + its 4 layers, head
    r = repr(net)
    assert r.startswith("Net(\n  (inp): Linear(in_features=3, out_features=4, bias=True)")
    assert "(blocks): Sequential(\n    (0): Block(\n      (norm): LayerNorm((4,), eps=1e-05" in r
    assert "(act): GELU(approximate='none')" in r
    assert r.endswith("(head): Linear(in_features=4, out_features=2, bias=False)\n)")
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.Dropout(0.25)) == "Dropout(p=0.25, inplace=False)"


# ---------------------------------------------------------------- layers


def test_linear_shapes_and_formula():
    lin = nn.Linear(5, 3)
    assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    y = lin(remat.tensor(x))
    assert y.shape == (4, 3)
    np.testing.assert_allclose(_np(y), x @ _np(lin.weight).T + _np(lin.bias), rtol=1e-5, atol=1e-5)
    # batched input and no bias
    lin2 = nn.Linear(5, 2, bias=False)
    assert lin2.bias is None
    assert [n for n, _ in lin2.named_parameters()] == ["weight"]
    assert lin2(remat.tensor(np.zeros((2, 3, 5), np.float32))).shape == (2, 3, 2)


def test_linear_init_bounds_and_seed():
    remat.manual_seed(123)
    lin = nn.Linear(64, 200)
    bound = 1 / math.sqrt(64)
    w, b = _np(lin.weight), _np(lin.bias)
    assert w.dtype == np.float32
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound)
    # uniform over the whole interval, not a narrow part of it
    assert w.max() > 0.9 * bound and w.min() < -0.9 * bound
    assert abs(w.mean()) < 0.05 * bound * 4
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    remat.manual_seed(123)
    lin2 = nn.Linear(64, 200)
    np.testing.assert_array_equal(_np(lin2.weight), w)
    np.testing.assert_array_equal(_np(lin2.bias), b)
    lin3 = nn.Linear(64, 200)
    assert not np.array_equal(_np(lin3.weight), w)


def test_activations_match_numpy():
    x = np.linspace(-3, 3, 13)
    t = remat.tensor(x)
    np.testing.assert_allclose(_np(nn.ReLU()(t)), np.maximum(x, 0))
    np.testing.assert_allclose(_np(nn.Tanh()(t)), np.tanh(x), rtol=1e-12)
    np.testing.assert_allclose(_np(nn.Sigmoid()(t)), 1 / (1 + np.exp(-x)), rtol=1e-12)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(
        _np(nn.GELU()(t)), 0.5 * x * (1 + erf(x / math.sqrt(2))), rtol=1e-10, atol=1e-12
    )
    tanh_gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(_np(nn.GELU("tanh")(t)), tanh_gelu, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError):
        nn.GELU("fast")
    assert nn.Identity()(t) is t
    assert nn.Flatten()(remat.zeros(2, 3, 4)).shape == (2, 12)
    assert nn.Flatten(0)(remat.zeros(2, 3, 4)).shape == (24,)


def test_layernorm_defaults_and_values():
    ln = nn.LayerNorm(6)
    np.testing.assert_array_equal(_np(ln.weight), np.ones(6, np.float32))
    np.testing.assert_array_equal(_np(ln.bias), np.zeros(6, np.float32))
    x = np.random.default_rng(1).standard_normal((3, 6))
    y = _np(ln.double()(remat.tensor(x)))
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10)
    with pytest.raises(remat.ShapeError):
        ln(remat.zeros(3, 5, dtype=remat.float64))


def test_train_eval_flags_are_recursive():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.blocks.train(False)
    assert net.training and not net.blocks[0].fc1.training


def test_dropout_train_and_eval():
    remat.manual_seed(0)
    d = nn.Dropout(0.5)
    x = remat.ones(1000, 10)
    y = _np(d(x))
    zero = y == 0
    assert 0.4 < zero.mean() < 0.6
    np.testing.assert_allclose(y[~zero], 2.0)
    d.eval()
    np.testing.assert_array_equal(_np(d(x)), np.ones((1000, 10), np.float32))
    d.train()
    np.testing.assert_array_equal(_np(nn.Dropout(0.0)(x)), np.ones((1000, 10), np.float32))
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


# ---------------------------------------------------------------- Sequential


def test_sequential_indexing_slicing_len_iter_append():
    mods = [nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 4), nn.Tanh()]
    seq = nn.Sequential(*mods)
    assert len(seq) == 4
    assert seq[0] is mods[0] and seq[-1] is mods[3]
    assert list(seq) == mods
    sub = seq[1:3]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2
    assert sub[0] is mods[1] and sub[1] is mods[2]
    assert len(seq[::2]) == 2
    with pytest.raises(IndexError):
        seq[4]
    seq.append(nn.Linear(4, 1))
    assert len(seq) == 5
    assert seq(remat.zeros(7, 2)).shape == (7, 1)
    assert [n for n, _ in seq.named_parameters()][-2:] == ["4.weight", "4.bias"]
    # forward equals applying the modules in turn
    x = remat.tensor(np.random.default_rng(2).standard_normal((3, 2)).astype(np.float32))
    y = x
    for m in seq:
        y = m(y)
    np.testing.assert_array_equal(_np(seq(x)), _np(y))


def test_sequential_works_with_checkpoint_sequential():
    remat.manual_seed(5)
    seq = nn.Sequential(*[Block(4) for _ in range(4)]).double()
    x = np.random.default_rng(3).standard_normal((5, 4))

    def grads(run):
        seq.zero_grad()
        xt = remat.tensor(x, requires_grad=True)
        run(xt).sum().backward()
        return [_np(p.grad).copy() for p in seq.parameters()] + [_np(xt.grad).copy()]

    ref = grads(seq)
    got = grads(lambda xt: remat.checkpoint_sequential(seq, 2, xt))
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)


def _names(container):
    return [type(m).__name__ for m in container]


def test_sequential_insert_pop_add_mul_and_setitem_keep_order():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh())
    assert seq.insert(1, nn.Sigmoid()) is seq
    seq.insert(-1, nn.Identity())  # before the last one, as list.insert
    assert _names(seq) == ["ReLU", "Sigmoid", "Identity", "Tanh"]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    with pytest.raises(IndexError):
        seq.insert(9, nn.ReLU())
    with pytest.raises(TypeError):
        seq.insert(0, "relu")
    assert type(seq.pop(0)).__name__ == "ReLU" and _names(seq) == ["Sigmoid", "Identity", "Tanh"]
    seq[0] = nn.GELU()  # replacing keeps the position
    assert _names(seq) == ["GELU", "Identity", "Tanh"]
    both = seq + nn.Sequential(nn.ReLU())
    assert _names(both) == ["GELU", "Identity", "Tanh", "ReLU"] and len(seq) == 3
    tripled = nn.Sequential(nn.Tanh()) * 3
    assert len(tripled) == 3 and tripled[0] is tripled[2]
    assert len(2 * nn.Sequential(nn.ReLU(), nn.Tanh())) == 4
    seq += nn.Sequential(nn.ReLU())
    assert len(seq) == 4
    with pytest.raises(ValueError):
        seq + [nn.ReLU()]
    with pytest.raises(ValueError):
        seq * 0


def test_module_list_insert_del_slice_pop_and_setitem():
    lins = [nn.Linear(2, 2), nn.Linear(2, 3)]
    ml = nn.ModuleList()
    ml.append(lins[0])
    ml.extend([nn.ReLU(), lins[1]])
    assert ml.insert(1, nn.Tanh()) is None
    assert _names(ml) == ["Linear", "Tanh", "ReLU", "Linear"]
    assert [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias", "3.weight", "3.bias"]
    ml.insert(-1, nn.Sigmoid())  # list.insert semantics for negative indices
    ml.insert(100, nn.Identity())  # past the end: appended
    assert _names(ml) == ["Linear", "Tanh", "ReLU", "Sigmoid", "Linear", "Identity"]
    assert [n for n, _ in ml.named_children()] == [str(i) for i in range(6)]
    del ml[1:3]
    assert _names(ml) == ["Linear", "Sigmoid", "Linear", "Identity"]
    del ml[-1]
    assert [n for n, _ in ml.named_children()] == ["0", "1", "2"]
    assert ml.pop(1).__class__ is nn.Sigmoid and ml[1] is lins[1]
    sub = ml[1:]
    assert type(sub) is nn.ModuleList and sub[0] is lins[1]
    ml[0] = nn.ReLU()  # replacing keeps the position
    assert _names(ml) == ["ReLU", "Linear"]
    ml += [nn.Tanh()]
    both = ml + nn.ModuleList([nn.GELU()])
    assert _names(both) == ["ReLU", "Linear", "Tanh", "GELU"] and len(ml) == 3
    with pytest.raises(TypeError):
        ml.insert(0, 3)
    with pytest.raises(TypeError):
        ml.extend(5)
    with pytest.raises(IndexError):
        ml[5] = nn.ReLU()


def test_module_list_repr_compresses_repeated_modules():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
    assert repr(ml) == (
        "ModuleList(\n"
        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (3): ReLU()\n"
        ")"
    )
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_dict_update_from_module_dict_and_pairs():
    md = nn.ModuleDict({"z": nn.ReLU(), "a": nn.Linear(2, 2)})
    md.update(nn.ModuleDict({"q": nn.Tanh(), "z": nn.Identity()}))
    md.update([["w", nn.Sigmoid()]])
    assert list(md) == ["z", "a", "q", "w"]
    assert _names(md.values()) == ["Identity", "Linear", "Tanh", "Sigmoid"]
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(ValueError, match="length 3"):
        md.update([("x", nn.ReLU(), 1)])
    with pytest.raises(TypeError):
        md.update([nn.ReLU()])
    with pytest.raises(TypeError):
        md.update(3)
    assert type(md.pop("q")).__name__ == "Tanh" and "q" not in md
    md.clear()
    assert len(md) == 0 and list(md.parameters()) == []


# ---------------------------------------------------------------- gradients and state


def test_zero_grad_none_and_in_place():
    net = Net()
    x = remat.tensor(np.ones((2, 3), np.float32))
    net(x).sum().backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None for g in grads)
    net.zero_grad(set_to_none=False)
    for p, g in zip(net.parameters(), grads):
        assert p.grad is not None
        np.testing.assert_array_equal(_np(p.grad), np.zeros(p.shape, np.float32))
        # the same storage was zeroed in place
        np.testing.assert_array_equal(_np(g), np.zeros(p.shape, np.float32))
    net(x).sum().backward()
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_dtype_keeps_leaves_and_requires_grad():
    net = Net()
    net.head.weight.requires_grad = False  # frozen: stays registered, stays frozen
    before = {n: _np(p).copy() for n, p in net.named_parameters()}
    assert net.to(remat.float64) is net
    for n, p in net.named_parameters():
        assert p.dtype == remat.float64 and p.is_leaf
        assert p.requires_grad == (n != "head.weight")
        np.testing.assert_array_equal(_np(p), before[n].astype(np.float64))
    assert net.running.dtype == remat.float64
    assert net.to("cpu") is net
    y = net(remat.tensor(np.ones((2, 3))))
    assert y.dtype == remat.float64


def test_to_cuda_without_gpu_raises_device_error():
    if remat.cuda.is_available():
        net = Net().to("cuda")
        assert all(str(p.device).startswith("cuda") for p in net.parameters())
        assert all(p.is_leaf and p.requires_grad for p in net.parameters())
    else:
        with pytest.raises(remat.DeviceError):
            Net().to("cuda")


def test_state_dict_round_trip_through_save_load(tmp_path):
    remat.manual_seed(0)
    net = Net()
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
    other = Net()
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


# ---------------------------------------------------------------- activation checkpointing


def test_activation_checkpointing_gives_identical_gradients():
    remat.manual_seed(11)
    net = Net(d=8, n=3).double()
    x = np.random.default_rng(4).standard_normal((6, 3))

    def run():
        net.zero_grad()
        xt = remat.tensor(x, requires_grad=True)
        loss = (net(xt) ** 2).mean()
        loss.backward()
        return loss.item(), [_np(p.grad).copy() for p in net.parameters()], _np(xt.grad).copy()

    assert net.activation_checkpointing is False
    ref = run()
    for b in net.blocks:
        b.activation_checkpointing = True
    got = run()
    assert got[0] == ref[0]
    for a, b in zip(ref[1], got[1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ref[2], got[2])
    # the whole model checkpointed as one segment, with Dropout replayed identically
    net.activation_checkpointing = True
    got2 = run()
    for a, b in zip(ref[1], got2[1]):
        np.testing.assert_array_equal(a, b)


def test_activation_checkpointing_with_dropout_replays_masks():
    remat.manual_seed(2)
    model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.Linear(16, 1)).double()
    x = np.random.default_rng(0).standard_normal((8, 4))

    def run(flag):
        model.activation_checkpointing = flag
        model.zero_grad()
        remat.manual_seed(42)
        model(remat.tensor(x)).sum().backward()
        return [_np(p.grad).copy() for p in model.parameters()]

    for a, b in zip(run(False), run(True)):
        np.testing.assert_array_equal(a, b)
