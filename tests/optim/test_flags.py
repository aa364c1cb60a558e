"""PyTorch's implementation switches (foreach, fused, capturable, differentiable) on every
remat optimizer: accepted where PyTorch takes them, kept in the param groups, changing no
update; PyTorch's fused/foreach checks; differentiable=True refused. Adam's
decoupled_weight_decay is AdamW's rule."""

import inspect

import numpy as np
import pytest

import remat
from remat import optim

rng = np.random.default_rng(2)
P0 = rng.standard_normal((2, 3))
GRADS = [rng.standard_normal((2, 3)) for _ in range(4)]

# The switches each optimizer takes, with PyTorch's defaults.
SWITCHES = {
    "SGD": dict(foreach=None, differentiable=False, fused=None),
    "Adam": dict(foreach=None, capturable=False, differentiable=False, fused=None),
    "AdamW": dict(foreach=None, capturable=False, differentiable=False, fused=None),
    "RMSprop": dict(capturable=False, foreach=None, differentiable=False),
    "Adagrad": dict(foreach=None, differentiable=False, fused=None),
    "Adadelta": dict(foreach=None, capturable=False, differentiable=False),
    "Adamax": dict(foreach=None, capturable=False, differentiable=False),
    "NAdam": dict(foreach=None, capturable=False, differentiable=False),
    "RAdam": dict(foreach=None, capturable=False, differentiable=False),
}
NAMES = sorted(SWITCHES)


def _np(t):
    return np.asarray(t.detach().numpy())


def _run(name, **kw):
    p = remat.tensor(P0.copy(), requires_grad=True)
    opt = getattr(optim, name)([p], lr=0.01, **kw)
    for g in GRADS:
        p.grad = remat.tensor(g)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name", NAMES)
def test_switches_default_as_pytorch_and_live_in_the_param_groups(name):
    _, opt = _run(name)
    for key, value in SWITCHES[name].items():
        assert opt.defaults[key] == value and opt.param_groups[0][key] == value, key


@pytest.mark.parametrize("name", NAMES)
def test_switches_select_no_other_update(name):
    ref, _ = _run(name)
    on = {k: True for k in SWITCHES[name] if k not in ("differentiable", "fused")}
    p, opt = _run(name, **on)
    np.testing.assert_array_equal(_np(p), _np(ref))
    assert all(opt.param_groups[0][k] is True for k in on)
    if "fused" in SWITCHES[name]:
        p, _ = _run(name, fused=True)
        np.testing.assert_array_equal(_np(p), _np(ref))
        # The state dict carries them, as PyTorch's does.
        _, opt = _run(name, fused=True)
        assert opt.state_dict()["param_groups"][0]["fused"] is True


@pytest.mark.parametrize("name", NAMES)
def test_differentiable_is_refused_with_a_clear_message(name):
    p = remat.tensor(P0.copy(), requires_grad=True)
    cls = getattr(optim, name)
    with pytest.raises(NotImplementedError,
                       match=f"{name}: differentiable=True is not supported: remat's "
                             "optimizers update the parameters in place"):
        cls([p], lr=0.01, differentiable=True)
    opt = cls([p], lr=0.01)
    q = remat.tensor(P0.copy(), requires_grad=True)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        opt.add_param_group({"params": [q], "differentiable": True})


@pytest.mark.parametrize("name", [n for n in NAMES if "fused" in SWITCHES[n]])
def test_fused_combinations_pytorch_refuses(name):
    p = remat.tensor(P0.copy(), requires_grad=True)
    cls = getattr(optim, name)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        cls([p], lr=0.01, fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        cls([p], lr=0.01, fused=True, differentiable=True)


@pytest.mark.parametrize("name", NAMES)
def test_switches_are_keyword_arguments_where_pytorch_has_them(name):
    params = inspect.signature(getattr(optim, name)).parameters
    for key in SWITCHES[name]:
        assert key in params, key
    # Adagrad and Adadelta/Adamax take `foreach` positionally, as PyTorch; the others only
    # by keyword (RMSprop all positionally, as PyTorch).
    kinds = {k: params[k].kind for k in SWITCHES[name]}
    if name not in ("RMSprop", "Adagrad", "Adadelta", "Adamax"):
        assert set(kinds.values()) == {inspect.Parameter.KEYWORD_ONLY}


def test_adam_decoupled_weight_decay_is_adamw():
    a, _ = _run("Adam", weight_decay=0.1, decoupled_weight_decay=True)
    b, opt = _run("AdamW", weight_decay=0.1)
    np.testing.assert_array_equal(_np(a), _np(b))
    assert opt.param_groups[0]["decoupled_weight_decay"] is True
    c, opt = _run("Adam", weight_decay=0.1)
    assert opt.param_groups[0]["decoupled_weight_decay"] is False
    assert not np.array_equal(_np(a), _np(c))


@pytest.mark.parametrize("name", NAMES)
def test_signature_and_param_group_keys_match_torch(name):
    torch = pytest.importorskip("torch")
    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    mine = inspect.signature(getattr(optim, name)).parameters
    def positional(ps):
        return [k for k, v in ps.items() if v.kind == v.POSITIONAL_OR_KEYWORD]

    # PyTorch's positional arguments come in its order (remat's SGD and Adam also take their
    # older positional `maximize`, which PyTorch only takes by keyword).
    assert positional(mine)[:len(positional(theirs))] == positional(theirs)
    assert set(mine) == set(theirs)
    for k in mine:
        if k != "params":
            assert mine[k].default == theirs[k].default, k
    tp = torch.zeros(2, requires_grad=True)
    p = remat.zeros(2, requires_grad=True)
    tkeys = set(getattr(torch.optim, name)([tp], lr=0.01).param_groups[0])
    mkeys = set(getattr(optim, name)([p], lr=0.01).param_groups[0])
    assert mkeys == tkeys
