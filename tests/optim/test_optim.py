"""remat.optim: SGD (plain, momentum, weight decay, Nesterov, dampening), Adam and AdamW
against hand-written NumPy versions of PyTorch's update formulas, for one and several steps;
zero_grad, param groups, state dicts and argument validation."""

import numpy as np
import pytest

import remat
from remat import nn, optim


def _np(t):
    return np.asarray(t.detach().numpy())


def make_param(a):
    return remat.tensor(np.array(a), requires_grad=True)


def set_grad(p, g):
    p.grad = remat.tensor(np.asarray(g, dtype=_np(p).dtype))


# ---------------------------------------------------------------- NumPy references (PyTorch)


def sgd_ref(p, grads, lr, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
    p = p.copy()
    buf = None
    for g in grads:
        d = g + weight_decay * p
        if momentum != 0:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p


def adam_ref(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False,
             amsgrad=False):
    p = p.copy()
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vmax = np.zeros_like(p)
    b1, b2 = betas
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step_size = lr / (1 - b1**t)
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / np.sqrt(1 - b2**t) + eps
        p = p - step_size * m / denom
    return p, m, v


def run_steps(opt_cls, p0, grads, **kw):
    p = make_param(p0)
    opt = opt_cls([p], **kw)
    for g in grads:
        set_grad(p, g)
        opt.step()
    return p, opt


rng = np.random.default_rng(0)
P0 = rng.standard_normal((3, 4))
GRADS = [rng.standard_normal((3, 4)) for _ in range(5)]


# ---------------------------------------------------------------- SGD


def test_sgd_one_step_literal():
    p, _ = run_steps(optim.SGD, [1.0, -2.0], [[0.5, 0.25]], lr=0.1)
    np.testing.assert_allclose(_np(p), [0.95, -2.025], rtol=0, atol=1e-15)
    p, _ = run_steps(optim.SGD, [1.0, -2.0], [[0.5, 0.25]], lr=0.1, weight_decay=0.1)
    np.testing.assert_allclose(_np(p), [1 - 0.1 * 0.6, -2 - 0.1 * 0.05], rtol=0, atol=1e-15)


def test_sgd_momentum_two_steps_literal():
    p, opt = run_steps(optim.SGD, [1.0], [[0.5], [0.5]], lr=0.1, momentum=0.9)
    # step 1: buf = 0.5, p = 0.95; step 2: buf = 0.9 * 0.5 + 0.5 = 0.95, p = 0.855
    np.testing.assert_allclose(_np(p), [0.855], rtol=0, atol=1e-15)
    np.testing.assert_allclose(_np(opt.state[p]["momentum_buffer"]), [0.95], atol=1e-15)


@pytest.mark.parametrize(
    "kw",
    [
        dict(lr=0.1),
        dict(lr=0.05, weight_decay=0.01),
        dict(lr=0.05, momentum=0.9),
        dict(lr=0.05, momentum=0.9, weight_decay=0.1),
        dict(lr=0.05, momentum=0.8, dampening=0.3),
        dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    ],
)
@pytest.mark.parametrize("nsteps", [1, 5])
def test_sgd_matches_pytorch_formula(kw, nsteps):
    p, _ = run_steps(optim.SGD, P0, GRADS[:nsteps], **kw)
    np.testing.assert_allclose(_np(p), sgd_ref(P0, GRADS[:nsteps], **kw), rtol=1e-13, atol=1e-14)


def test_sgd_float32():
    p0 = P0.astype(np.float32)
    grads = [g.astype(np.float32) for g in GRADS]
    p, _ = run_steps(optim.SGD, p0, grads, lr=0.05, momentum=0.9, weight_decay=0.01)
    assert p.dtype == remat.float32
    ref = sgd_ref(P0, GRADS, lr=0.05, momentum=0.9, weight_decay=0.01)
    np.testing.assert_allclose(_np(p), ref, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- Adam / AdamW


def test_adam_one_step_literal():
    # first step: m = 0.1 g, v = 0.001 g^2 so the update is lr * g / (|g| + eps)
    p, opt = run_steps(optim.Adam, [1.0, -1.0], [[0.5, -2.0]], lr=0.1)
    want = [1 - 0.1 * 0.5 / (0.5 + 1e-8), -1 + 0.1 * 2 / (2 + 1e-8)]
    np.testing.assert_allclose(_np(p), want, rtol=1e-14)
    st = opt.state[p]
    assert st["step"] == 1
    np.testing.assert_allclose(_np(st["exp_avg"]), [0.05, -0.2], rtol=1e-14)
    np.testing.assert_allclose(_np(st["exp_avg_sq"]), [0.00025, 0.004], rtol=1e-12)


@pytest.mark.parametrize(
    "kw",
    [
        dict(lr=1e-3),
        dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
        dict(lr=0.01, weight_decay=0.1),
    ],
)
@pytest.mark.parametrize("nsteps", [1, 5])
def test_adam_matches_pytorch_formula(kw, nsteps):
    p, opt = run_steps(optim.Adam, P0, GRADS[:nsteps], **kw)
    ref_p, ref_m, ref_v = adam_ref(P0, GRADS[:nsteps], **kw)
    np.testing.assert_allclose(_np(p), ref_p, rtol=1e-12, atol=1e-14)
    st = opt.state[p]
    assert st["step"] == nsteps
    np.testing.assert_allclose(_np(st["exp_avg"]), ref_m, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(st["exp_avg_sq"]), ref_v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.01, weight_decay=0.1), dict(weight_decay=0.0)])
@pytest.mark.parametrize("nsteps", [1, 5])
def test_adamw_matches_pytorch_formula(kw, nsteps):
    p, _ = run_steps(optim.AdamW, P0, GRADS[:nsteps], **kw)
    full = dict(lr=1e-3, weight_decay=1e-2)
    full.update(kw)
    ref_p, _, _ = adam_ref(P0, GRADS[:nsteps], decoupled=True, **full)
    np.testing.assert_allclose(_np(p), ref_p, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls, decoupled", [(optim.Adam, False), (optim.AdamW, True)])
@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1)])
def test_amsgrad_matches_pytorch_formula(cls, decoupled, kw):
    # Gradients that shrink after the second step: v falls, so v_max differs from v.
    grads = [g * s for g, s in zip(GRADS, [1.0, 5.0, 0.1, 0.2, 0.1])]
    p, opt = run_steps(cls, P0, grads, amsgrad=True, **kw)
    full = dict(weight_decay=0.0 if not decoupled else 1e-2)
    full.update(kw)
    ref_p, _, ref_v = adam_ref(P0, grads, decoupled=decoupled, amsgrad=True, **full)
    plain_p, _, _ = adam_ref(P0, grads, decoupled=decoupled, **full)
    assert not np.allclose(ref_p, plain_p)  # the case does exercise amsgrad
    np.testing.assert_allclose(_np(p), ref_p, rtol=1e-12, atol=1e-14)
    st = opt.state[p]
    assert np.all(_np(st["max_exp_avg_sq"]) >= ref_v)
    assert opt.param_groups[0]["amsgrad"] is True


def test_adamw_decay_differs_from_adam_l2():
    zero = [np.zeros(1)]
    p, _ = run_steps(optim.AdamW, [2.0], zero, lr=0.1, weight_decay=0.01)
    np.testing.assert_allclose(_np(p), [2 * (1 - 0.1 * 0.01)], rtol=1e-15)
    p, _ = run_steps(optim.Adam, [2.0], zero, lr=0.1, weight_decay=0.01)
    np.testing.assert_allclose(_np(p), [2 - 0.1 * 0.02 / (0.02 + 1e-8)], rtol=1e-14)


def test_adam_float32():
    p0 = P0.astype(np.float32)
    p, _ = run_steps(optim.Adam, p0, [g.astype(np.float32) for g in GRADS], lr=0.01)
    ref, _, _ = adam_ref(P0, GRADS, lr=0.01)
    np.testing.assert_allclose(_np(p), ref, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- behaviour


def test_params_without_grad_are_skipped_and_state_is_lazy():
    a, b = make_param(P0), make_param(P0)
    opt = optim.Adam([a, b], lr=0.1)
    set_grad(a, GRADS[0])
    opt.step()
    assert b not in opt.state
    np.testing.assert_array_equal(_np(b), P0)
    assert not np.array_equal(_np(a), P0)


def test_zero_grad_and_training_loop_reduces_loss():
    remat.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
    xa = np.random.default_rng(1).standard_normal((32, 3)).astype(np.float32)
    x = remat.tensor(xa)
    y = remat.tensor(np.tanh(xa @ np.array([[1.0], [-2.0], [0.5]], np.float32)))
    for cls, kw in [(optim.SGD, dict(lr=0.1, momentum=0.9)), (optim.Adam, dict(lr=0.01))]:
        opt = cls(model.parameters(), **kw)
        first = None
        for _ in range(30):
            opt.zero_grad()
            loss = remat.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
        assert loss.item() < 0.7 * first
        opt.zero_grad()
        assert all(p.grad is None for p in model.parameters())
    # set_to_none=False zero-fills
    remat.mse_loss(model(x), y).backward()
    opt.zero_grad(set_to_none=False)
    assert all(np.all(_np(p.grad) == 0) for p in model.parameters())


def test_param_groups_and_lr_changes():
    a, b = make_param([1.0]), make_param([1.0])
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    set_grad(a, [1.0])
    set_grad(b, [1.0])
    opt.step()
    np.testing.assert_allclose(_np(a), [0.9])
    np.testing.assert_allclose(_np(b), [0.5])
    opt.param_groups[0]["lr"] = 0.2
    opt.step()
    np.testing.assert_allclose(_np(a), [0.7])


def test_state_dict_round_trip():
    p, opt = run_steps(optim.Adam, P0, GRADS[:2], lr=0.01)
    sd = opt.state_dict()
    q = make_param(_np(p).copy())
    opt2 = optim.Adam([q], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    for o, t in ((opt, p), (opt2, q)):
        set_grad(t, GRADS[2])
        o.step()
    np.testing.assert_array_equal(_np(p), _np(q))


@pytest.mark.parametrize("make,buffers", [
    (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), {"momentum_buffer"}),
    (lambda ps: optim.Adam(ps, lr=0.01, amsgrad=True),
     {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}),
    (lambda ps: optim.AdamW(ps, lr=0.01), {"step", "exp_avg", "exp_avg_sq"}),
    (lambda ps: optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
     {"step", "square_avg", "momentum_buffer", "grad_avg"}),
    (lambda ps: optim.Adagrad(ps, lr=0.1), {"step", "sum"}),
])
def test_state_dict_holds_tensor_copies_and_a_float32_step_as_pytorch(make, buffers, tmp_path):
    p, q = make_param(P0), make_param(P0[0])
    opt = make([p, q])
    for g in GRADS[:2]:
        set_grad(p, g)
        set_grad(q, g[0])
        opt.step()
    sd = opt.state_dict()
    assert set(sd["state"]) == {0, 1} and set(sd["state"][0]) == buffers
    for i, param in ((0, p), (1, q)):
        for name, v in sd["state"][i].items():
            assert isinstance(v, remat.Tensor) and not v.requires_grad, name
            if name == "step":  # PyTorch's 0-d float32 step count
                assert (v.dtype, v.shape, v.item()) == (remat.float32, (), 2.0)
            else:
                live = opt.state[param][name]
                assert v.dtype == param.dtype and v.shape == param.shape
                np.testing.assert_array_equal(_np(v), _np(live))
    # Copies: a further step leaves the state dict as it was.
    name = sorted(buffers - {"step"})[0]
    before = _np(sd["state"][0][name]).copy()
    set_grad(p, GRADS[2])
    set_grad(q, GRADS[2][0])
    opt.step()
    np.testing.assert_array_equal(_np(sd["state"][0][name]), before)
    assert not np.array_equal(_np(opt.state[p][name]), before)
    # Round trips: directly, through remat.save/load, and from NumPy arrays (older dicts);
    # each restored optimizer then steps exactly as the original.
    sd = opt.state_dict()
    remat.save(sd, tmp_path / "opt.pt")
    legacy = {"param_groups": sd["param_groups"], "state": {
        i: {k: int(v.item()) if k == "step" else _np(v) for k, v in st.items()}
        for i, st in sd["state"].items()}}
    copies = []
    for saved in (sd, remat.load(tmp_path / "opt.pt"), legacy):
        p2, q2 = make_param(_np(p)), make_param(_np(q))
        opt2 = make([p2, q2])
        opt2.load_state_dict(saved)
        if "step" in buffers:
            assert opt2.state[p2]["step"] == 3 and isinstance(opt2.state[p2]["step"], int)
        copies.append((opt2, p2, q2))
    set_grad(p, GRADS[3])
    set_grad(q, GRADS[3][0])
    opt.step()
    for opt2, p2, q2 in copies:
        set_grad(p2, GRADS[3])
        set_grad(q2, GRADS[3][0])
        opt2.step()
        np.testing.assert_array_equal(_np(p2), _np(p))
        np.testing.assert_array_equal(_np(q2), _np(q))


def test_load_state_dict_casts_tensor_state_to_the_parameters_dtype():
    p, opt = run_steps(optim.Adam, P0, GRADS[:2], lr=0.01)
    sd = opt.state_dict()
    q = remat.tensor(_np(p).astype(np.float32), requires_grad=True)
    opt2 = optim.Adam([q], lr=0.01)
    opt2.load_state_dict(sd)
    state = opt2.state[q]
    assert state["exp_avg"].dtype == remat.float32 and state["step"] == 2
    np.testing.assert_allclose(_np(state["exp_avg"]), _np(sd["state"][0]["exp_avg"]), rtol=1e-6)


def test_bad_arguments():
    p = make_param([1.0])
    with pytest.raises(ValueError):
        optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError):
        optim.Adam([p], lr=-1e-3)
    with pytest.raises(ValueError):
        optim.AdamW([p], lr=-1.0)
    with pytest.raises(ValueError):
        optim.Adam([p], betas=(1.0, 0.999))
    with pytest.raises(ValueError):
        optim.SGD([p], lr=0.1, momentum=-1)
    with pytest.raises(ValueError):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError):
        optim.SGD([p, p], lr=0.1)
    # a gradient of the wrong dtype is a typed error from the kernel
    opt = optim.SGD([p], lr=0.1)
    p.grad = None
    q = make_param(np.array([1.0], np.float32))
    opt_q = optim.SGD([q], lr=0.1)
    q.grad = remat.tensor(np.array([1.0], np.float32))
    opt_q.step()
    np.testing.assert_allclose(_np(q), [0.9], rtol=1e-6)
    opt.step()  # no grad: no-op
    np.testing.assert_array_equal(_np(p), [1.0])


# -------------------------------------------------------------------- RMSprop, Adagrad


def _np_rmsprop(w, grads, lr, alpha=0.99, eps=1e-8, wd=0.0, momentum=0.0, centered=False):
    v, m, buf = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for grad in grads:
        g = grad(w) + wd * w
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            m = alpha * m + (1 - alpha) * g
            avg = np.sqrt(v - m * m) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum:
            buf = momentum * buf + g / avg
            w = w - lr * buf
        else:
            w = w - lr * g / avg
    return w


def _np_adagrad(w, grads, lr, lr_decay=0.0, wd=0.0, init=0.0, eps=1e-10):
    acc = np.full_like(w, init)
    for step, grad in enumerate(grads, 1):
        g = grad(w) + wd * w
        clr = lr / (1 + (step - 1) * lr_decay)
        acc = acc + g * g
        w = w - clr * g / (np.sqrt(acc) + eps)
    return w


@pytest.mark.parametrize("kw", [{}, {"centered": True}, {"momentum": 0.9, "weight_decay": 0.1},
                                {"centered": True, "momentum": 0.5}])
def test_rmsprop_matches_pytorch_formulas(kw):
    w0 = np.array([0.5, -1.5, 2.0])
    p = remat.tensor(w0, requires_grad=True)
    opt = remat.optim.RMSprop([p], lr=0.01, **kw)
    for _ in range(5):
        opt.zero_grad()
        (p * p * p).sum().backward()
        opt.step()
    want = _np_rmsprop(w0, [lambda w: 3 * w * w] * 5, 0.01, wd=kw.get("weight_decay", 0.0),
                       momentum=kw.get("momentum", 0.0), centered=kw.get("centered", False))
    np.testing.assert_allclose(_np(p), want, rtol=1e-12)
    assert opt.state[p]["step"] == 5 and "square_avg" in opt.state[p]


def test_adagrad_matches_pytorch_formulas_and_round_trips():
    w0 = np.array([0.5, -1.5, 2.0])
    p = remat.tensor(w0, requires_grad=True)
    opt = remat.optim.Adagrad([p], lr=0.1, lr_decay=0.01, weight_decay=0.1,
                              initial_accumulator_value=0.5)
    for _ in range(4):
        opt.zero_grad()
        (p * p * p).sum().backward()
        opt.step()
    want = _np_adagrad(w0, [lambda w: 3 * w * w] * 4, 0.1, 0.01, 0.1, 0.5)
    np.testing.assert_allclose(_np(p), want, rtol=1e-12)
    sd = opt.state_dict()
    q = remat.tensor(_np(p), requires_grad=True)
    opt2 = remat.optim.Adagrad([q], lr=0.1)
    opt2.load_state_dict(sd)
    assert opt2.state[q]["step"] == 4 and opt2.param_groups[0]["lr_decay"] == 0.01
    with pytest.raises(ValueError, match="Adagrad.*lr_decay"):
        remat.optim.Adagrad([q], lr_decay=-1.0)
    with pytest.raises(ValueError, match="RMSprop.*alpha"):
        remat.optim.RMSprop([q], alpha=-0.5)


def test_state_is_keyed_by_parameter():
    a, b = remat.ones(2, requires_grad=True), remat.ones(3, requires_grad=True)
    opt = remat.optim.Adam([a, b])
    (a.sum()).backward()
    opt.step()
    assert list(opt.state) == [a] and a in opt.state and b not in opt.state
    assert set(opt.state[a]) == {"step", "exp_avg", "exp_avg_sq"} and len(opt.state) == 1


# --------------------------------------------------------- maximize, named params, state


MAXIMIZE = [
    (optim.SGD, dict(lr=0.05, momentum=0.8, weight_decay=0.05, nesterov=True)),
    (optim.SGD, dict(lr=0.1, weight_decay=0.1)),
    (optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.1)),
]


@pytest.mark.parametrize("cls,kw", MAXIMIZE, ids=[c.__name__ for c, _ in MAXIMIZE])
def test_maximize_is_minimizing_the_negated_gradient(cls, kw):
    # PyTorch negates the gradient before anything else (weight decay included), so
    # maximize=True on g is exactly maximize=False on -g.
    up, opt_up = run_steps(cls, P0, GRADS, maximize=True, **kw)
    down, _ = run_steps(cls, P0, [-g for g in GRADS], **kw)
    np.testing.assert_array_equal(_np(up), _np(down))
    assert opt_up.param_groups[0]["maximize"] is True
    assert cls([make_param(P0)], **kw).defaults["maximize"] is False


def test_maximize_literal_and_formula():
    p, _ = run_steps(optim.SGD, [1.0, -2.0], [[0.5, 0.25]], lr=0.1, weight_decay=0.1,
                     maximize=True)
    # d = -g + wd * p; p -= lr * d
    np.testing.assert_allclose(_np(p), [1 - 0.1 * (-0.5 + 0.1), -2 - 0.1 * (-0.25 - 0.2)],
                               rtol=0, atol=1e-15)
    p, _ = run_steps(optim.SGD, P0, GRADS, lr=0.05, momentum=0.9, maximize=True)
    ref = sgd_ref(P0, [-g for g in GRADS], lr=0.05, momentum=0.9)
    np.testing.assert_allclose(_np(p), ref, rtol=1e-13, atol=1e-14)
    p, _ = run_steps(optim.Adam, P0, GRADS, lr=0.01, maximize=True)
    ref, _, _ = adam_ref(P0, [-g for g in GRADS], lr=0.01)
    np.testing.assert_allclose(_np(p), ref, rtol=1e-12, atol=1e-14)


def test_named_parameters_are_accepted_and_named():
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    opt = optim.Adam(model.named_parameters(), lr=0.1)
    group = opt.param_groups[0]
    assert group["param_names"] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert [p is q for p, q in zip(group["params"], model.parameters())] == [True] * 4
    sd = opt.state_dict()
    assert sd["param_groups"][0]["param_names"] == group["param_names"]
    assert sd["param_groups"][0]["params"] == [0, 1, 2, 3]
    # param-group dicts may hold named parameters too
    opt = optim.SGD([{"params": model[0].named_parameters(), "lr": 0.5},
                     {"params": model[1].named_parameters()}], lr=0.1)
    assert [(g["param_names"], g["lr"]) for g in opt.param_groups] == [
        (["weight", "bias"], 0.5), (["weight", "bias"], 0.1)]
    x = remat.ones(4, 2)
    model(x).sum().backward()
    before = _np(model[1].bias).copy()
    opt.step()
    np.testing.assert_allclose(_np(model[1].bias), before - 0.1 * 4.0, rtol=1e-6)
    with pytest.raises(ValueError, match="with/without names"):
        optim.SGD([("w", model[0].weight), model[0].bias], lr=0.1)
    opt = optim.SGD(model[0].named_parameters(), lr=0.1)
    with pytest.raises(ValueError, match="with/without names"):
        opt.add_param_group({"params": list(model[1].parameters())})


def test_state_behaves_like_a_defaultdict():
    a, b = make_param(P0), make_param(P0)
    opt = optim.Adam([a, b], lr=0.1)
    assert a not in opt.state and len(opt.state) == 0
    assert opt.state[a] == {}  # created empty, as PyTorch's defaultdict(dict)
    assert a in opt.state and b not in opt.state and len(opt.state) == 1
    assert opt.state_dict()["state"] == {0: {}}
    set_grad(a, GRADS[0])
    opt.step()  # the empty entry is initialised as usual on the first step
    ref, m, _ = adam_ref(P0, GRADS[:1], lr=0.1)
    np.testing.assert_allclose(_np(a), ref, rtol=1e-12, atol=1e-14)
    assert set(opt.state[a]) == {"step", "exp_avg", "exp_avg_sq"}
    sd = opt.state_dict()
    assert list(sd["state"]) == [0] and sd["state"][0]["step"] == 1
    np.testing.assert_allclose(sd["state"][0]["exp_avg"], m, rtol=1e-12)
    del opt.state[a]
    assert a not in opt.state
    opt.state[b] = {"x": 1}
    assert list(opt.state) == [b]


def test_plain_sgd_keeps_no_state_and_adagrad_state_exists_from_the_start():
    p = make_param(P0)
    opt = optim.SGD([p], lr=0.1)
    set_grad(p, GRADS[0])
    opt.step()
    assert len(opt.state) == 0 and opt.state_dict()["state"] == {}
    q = make_param(P0)
    opt = optim.Adagrad([q], lr=0.1, initial_accumulator_value=0.25)
    assert q in opt.state and opt.state[q]["step"] == 0
    np.testing.assert_array_equal(_np(opt.state[q]["sum"]), np.full((3, 4), 0.25))
    set_grad(q, GRADS[0])
    opt.step()
    want = P0 - 0.1 * GRADS[0] / (np.sqrt(0.25 + GRADS[0] ** 2) + 1e-10)
    np.testing.assert_allclose(_np(q), want, rtol=1e-12)
