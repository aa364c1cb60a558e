"""nn.Module: parameter registration and naming, children and repr, train/eval, zero_grad,
to(), hooks, get_submodule, frozen parameters and activation_checkpointing."""

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


def test_train_eval_flags_are_recursive():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.blocks.train(False)
    assert net.training and not net.blocks[0].fc1.training


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


def test_frozen_parameters_stay_registered():
    m = nn.Linear(2, 2)
    m.weight.requires_grad_(False)
    m.weight = m.weight  # re-assigning a frozen parameter keeps it one
    assert list(m.state_dict()) == ["weight", "bias"]
    with pytest.raises(TypeError, match="register_parameter"):
        m.weight = remat.zeros(2, 2)  # a plain tensor is refused, as in PyTorch
    m.register_parameter("weight", nn.Parameter(remat.zeros(2, 2), requires_grad=False))
    m.register_parameter("scale", nn.Parameter(remat.ones(1), requires_grad=False))
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias", "scale"]
    with pytest.raises(TypeError, match="'scale'"):
        m.register_parameter("scale", [1.0])
    # An optimizer steps only what has a gradient.
    opt = remat.optim.SGD(m.parameters(), lr=0.1)
    m(remat.ones(1, 2)).sum().backward()
    opt.step()
    assert m.weight.tolist() == [[0.0, 0.0], [0.0, 0.0]] and m.bias.grad is not None


def test_forward_hooks_run_in_order_and_can_replace_values():
    lin = nn.Linear(2, 2)
    seen = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0.0,))
    h2 = lin.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    h3 = lin.register_forward_hook(lambda m, args, out: out + 1.0, prepend=False)
    out = lin(remat.ones(4, 2))
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(_np(lin.bias) + 1.0, (4, 2)))
    assert seen == [(4, 2)]
    for h in (h1, h2, h3):
        h.remove()
    out = lin(remat.ones(1, 2))
    np.testing.assert_allclose(np.asarray(out), np.ones((1, 2)) @ _np(lin.weight).T + _np(lin.bias),
                               rtol=1e-6)
    assert seen == [(4, 2)]


def test_forward_pre_hook_with_kwargs_and_prepend():
    calls = []
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, args: calls.append("second"))
    m.register_forward_pre_hook(lambda mod, args: calls.append("first"), prepend=True)
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: ((args[0] + 1,), kwargs), with_kwargs=True
    )
    assert m(1) == 2 and calls == ["first", "second"]


def test_hooks_run_around_a_checkpointed_module():
    remat.manual_seed(0)
    lin = nn.Linear(3, 3)
    lin.activation_checkpointing = True
    outs = []
    lin.register_forward_hook(lambda m, a, o: outs.append(o))
    x = remat.randn(2, 3, requires_grad=True)
    lin(x).sum().backward()
    assert len(outs) == 1 and x.grad is not None


def test_get_submodule():
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    assert net.get_submodule("1.1") is net[1][1]
    assert net.get_submodule("") is net
    with pytest.raises(AttributeError, match="nothere"):
        net.get_submodule("1.nothere")
    with pytest.raises(AttributeError, match="not an nn.Module"):
        net.get_submodule("0.weight")
