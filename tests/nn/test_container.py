"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict as PyTorch's."""

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


def _names(container):
    return [type(m).__name__ for m in container]


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


def test_module_dict_registers_children():
    d = nn.ModuleDict({"a": nn.Linear(2, 3)})
    d["b"] = nn.ReLU()
    d.update([("c", nn.Linear(3, 1))])
    assert list(d) == ["a", "b", "c"] and len(d) == 3 and "b" in d
    assert [k for k, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    assert isinstance(d.pop("b"), nn.ReLU) and list(d.keys()) == ["a", "c"]


def test_parameter_list_and_dict_register_parameters():
    pl = nn.ParameterList([remat.ones(2), remat.zeros(3)])
    pl.append(remat.ones(1))
    assert len(pl) == 3 and all(p.requires_grad for p in pl)
    assert list(pl.state_dict()) == ["0", "1", "2"]
    assert pl[-1].shape == (1,)
    pd = nn.ParameterDict({"scale": remat.ones(1)})
    pd["shift"] = remat.zeros(1)
    assert list(pd) == ["scale", "shift"] and pd["shift"].requires_grad
    assert sorted(k for k, _ in pd.named_parameters()) == ["scale", "shift"]
