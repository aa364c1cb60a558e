"""remat.nn: parameter registration and naming, layers (shapes, init, modes), containers,
state dicts (round trip through remat.save/load, shape mismatches), zero_grad, to(), and
activation_checkpointing."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import remat
from remat import nn


def _np(t):
    return np.asarray(t.numpy())


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
    assert repr(nn.Dropout(0.25)) == "Dropout(p=0.25)"


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
    assert list(sd) == [n for n, _ in net.named_parameters()] + ["running"]
    assert all(isinstance(v, np.ndarray) for v in sd.values())
    # a copy: changing it does not touch the model
    sd["inp.weight"][...] = 7
    assert not np.any(_np(net.inp.weight) == 7)
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
