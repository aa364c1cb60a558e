"""remat.optim.Adadelta, Adamax, NAdam and RAdam against NumPy versions of PyTorch's update
formulas (every option, several steps, float64 and float32), their state names and state-dict
round trips, argument checks, and (when torch is installed) against torch.optim itself."""

import numpy as np
import pytest

import remat
from remat import optim


def _np(t):
    return np.asarray(t.detach().numpy())


def make_param(a, dtype=None):
    return remat.tensor(np.array(a, dtype=dtype), requires_grad=True)


def set_grad(p, g):
    p.grad = remat.tensor(np.asarray(g, dtype=_np(p).dtype))


rng = np.random.default_rng(1)
P0 = rng.standard_normal((3, 4))
GRADS = [rng.standard_normal((3, 4)) for _ in range(8)]


# ---------------------------------------------------------------- NumPy references (PyTorch)


def _grad(g, p, maximize, weight_decay, lr=0.0, decoupled=False):
    """The gradient after ``maximize`` and weight decay, and the (maybe decayed) parameter."""
    g = -g if maximize else g
    if weight_decay:
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    return g, p


def adadelta_ref(p, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    v = np.zeros_like(p)
    u = np.zeros_like(p)
    for g in grads:
        g, p = _grad(g, p, maximize, weight_decay)
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
    return p, {"square_avg": v, "acc_delta": u}


def adamax_ref(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
               maximize=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    u = np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g, p = _grad(g, p, maximize, weight_decay)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1**t) * m / u
    return p, {"exp_avg": m, "exp_inf": u}


def nadam_ref(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    mu_product = 1.0
    for t, g in enumerate(grads, start=1):
        g, p = _grad(g, p, maximize, weight_decay, lr, decoupled_weight_decay)
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        # PyTorch keeps the product in a float32 tensor.
        mu_product = float(np.float32(mu_product) * np.float32(mu))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2**t)) + eps
        p = p - lr * (1 - mu) / (1 - mu_product) * g / denom
        p = p - lr * mu_next / (1 - mu_product * mu_next) * m / denom
    return p, {"exp_avg": m, "exp_avg_sq": v, "mu_product": mu_product}


def radam_ref(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(grads, start=1):
        g, p = _grad(g, p, maximize, weight_decay, lr, decoupled_weight_decay)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1**t)
        rho_t = rho_inf - 2 * t * b2**t / (1 - b2**t)
        if rho_t > 5:
            rect = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                           / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * np.sqrt(1 - b2**t) / (np.sqrt(v) + eps) * rect
        else:
            p = p - lr * m_hat
    return p, {"exp_avg": m, "exp_avg_sq": v}


REFS = {"Adadelta": adadelta_ref, "Adamax": adamax_ref, "NAdam": nadam_ref,
        "RAdam": radam_ref}

# Every option of every optimizer; betas (0.3, 0.9) also takes lerp's other rounding branch
# and gives RAdam a short warm-up (rho_inf = 19), so its rectified branch runs within 8 steps.
CASES = [
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4)),
    ("Adadelta", dict(weight_decay=0.1, maximize=True)),
    ("Adadelta", dict(rho=0.0)),
    ("Adadelta", dict(rho=1.0)),
    ("Adamax", {}),
    ("Adamax", dict(lr=0.01, betas=(0.3, 0.5), eps=1e-3)),
    ("Adamax", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.01, betas=(0.3, 0.9), eps=1e-4, momentum_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", {}),
    ("RAdam", dict(lr=0.01, betas=(0.3, 0.9), eps=1e-4)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True)),
]
IDS = [f"{name}-{'-'.join(kw) or 'defaults'}" for name, kw in CASES]


def run_steps(name, p0, grads, **kw):
    p = make_param(p0)
    opt = getattr(optim, name)([p], **kw)
    for g in grads:
        set_grad(p, g)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_matches_the_formula_in_float64(name, kw):
    p, opt = run_steps(name, P0, GRADS, **kw)
    want, state = REFS[name](P0, GRADS, **kw)
    np.testing.assert_allclose(_np(p), want, rtol=1e-12, atol=1e-14)
    assert opt.state[p]["step"] == len(GRADS)
    for key, value in state.items():
        got = opt.state[p][key]
        got = got if isinstance(got, float) else _np(got)
        np.testing.assert_allclose(got, value, rtol=1e-12,
                                   atol=1e-14, err_msg=key)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_matches_the_formula_in_float32(name, kw):
    p0 = P0.astype(np.float32)
    grads = [g.astype(np.float32) for g in GRADS]
    p, opt = run_steps(name, p0, grads, **kw)
    assert p.dtype == remat.float32
    assert all(v.dtype == remat.float32 for v in opt.state[p].values()
               if isinstance(v, remat.Tensor))
    want, _ = REFS[name](P0, GRADS, **kw)
    # float32 rounding of each op, relative to how far the parameter moved.
    moved = np.abs(want - P0).max()
    np.testing.assert_allclose(_np(p), want, rtol=0, atol=2e-6 * max(1.0, moved) + 1e-6)


@pytest.mark.parametrize("name,keys", [
    ("Adadelta", {"step", "square_avg", "acc_delta"}),
    ("Adamax", {"step", "exp_avg", "exp_inf"}),
    ("NAdam", {"step", "mu_product", "exp_avg", "exp_avg_sq"}),
    ("RAdam", {"step", "exp_avg", "exp_avg_sq"}),
])
def test_state_names_are_pytorchs_and_created_on_the_first_step(name, keys):
    p, q = make_param(P0), make_param(P0[0])
    opt = getattr(optim, name)([p, q])
    assert len(opt.state) == 0
    set_grad(p, GRADS[0])
    opt.step()
    assert set(opt.state[p]) == keys and q not in opt.state
    if name == "NAdam":
        mu = 0.9 * (1 - 0.5 * 0.96**4e-3)
        assert opt.state[p]["mu_product"] == float(np.float32(mu))


def test_defaults_are_pytorchs():
    p = make_param(P0)
    expect = {
        "Adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False,
                         foreach=None, capturable=False, differentiable=False),
        "Adamax": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                       maximize=False, foreach=None, capturable=False, differentiable=False),
        "NAdam": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                      momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False,
                      foreach=None, capturable=False, differentiable=False),
        "RAdam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                      decoupled_weight_decay=False, maximize=False, foreach=None,
                      capturable=False, differentiable=False),
    }
    for name, defaults in expect.items():
        opt = getattr(optim, name)([p])
        assert opt.defaults == defaults, name
        group = dict(opt.param_groups[0])
        assert group.pop("params") == [p] and group == defaults, name


@pytest.mark.parametrize("name,kw", [
    ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9))),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_state_dict_round_trips(name, kw, dtype, tmp_path):
    make = getattr(optim, name)
    p, q = make_param(P0, dtype), make_param(P0[0], dtype)
    opt = make([p, q], **kw)
    for g in GRADS[:3]:
        set_grad(p, g)
        set_grad(q, g[0])
        opt.step()
    sd = opt.state_dict()
    for i in (0, 1):
        for key, v in sd["state"][i].items():
            assert isinstance(v, remat.Tensor) and not v.requires_grad, key
            if key in ("step", "mu_product"):  # PyTorch's 0-d float32 tensors
                assert v.dtype == remat.float32 and v.shape == ()
    assert sd["state"][0]["step"].item() == 3.0
    if name == "NAdam":
        assert sd["state"][0]["mu_product"].item() == opt.state[p]["mu_product"]
    remat.save(sd, tmp_path / "opt.pt")
    legacy = {"param_groups": sd["param_groups"], "state": {
        i: {k: v.item() if k in ("step", "mu_product") else _np(v) for k, v in st.items()}
        for i, st in sd["state"].items()}}
    copies = []
    for saved in (sd, remat.load(tmp_path / "opt.pt"), legacy):
        p2, q2 = make_param(_np(p)), make_param(_np(q))
        opt2 = make([p2, q2], lr=123.0)
        opt2.load_state_dict(saved)
        assert opt2.param_groups[0]["lr"] == kw["lr"]
        assert opt2.state[p2]["step"] == 3 and isinstance(opt2.state[p2]["step"], int)
        if name == "NAdam":
            assert opt2.state[p2]["mu_product"] == opt.state[p]["mu_product"]
            assert isinstance(opt2.state[p2]["mu_product"], float)
        copies.append((opt2, p2, q2))
    for g in GRADS[3:5]:
        for o, a, b in [(opt, p, q)] + copies:
            set_grad(a, g)
            set_grad(b, g[0])
            o.step()
    for _, p2, q2 in copies:
        np.testing.assert_array_equal(_np(p2), _np(p))
        np.testing.assert_array_equal(_np(q2), _np(q))


def test_param_groups_and_parameters_without_grad():
    a, b, c = make_param(P0), make_param(P0), make_param(P0)
    opt = optim.RAdam([{"params": [a]}, {"params": [b, c], "lr": 0.05}], lr=0.01)
    for g in GRADS:
        set_grad(a, g)
        set_grad(b, g)
        opt.step()
    np.testing.assert_allclose(_np(a), radam_ref(P0, GRADS, lr=0.01)[0], rtol=1e-12)
    np.testing.assert_allclose(_np(b), radam_ref(P0, GRADS, lr=0.05)[0], rtol=1e-12)
    np.testing.assert_array_equal(_np(c), P0)
    assert c not in opt.state


@pytest.mark.parametrize("name,kw,match", [
    ("Adadelta", dict(lr=-1.0), "Adadelta: lr must be >= 0, got -1.0"),
    ("Adadelta", dict(rho=1.5), r"Adadelta: rho must be in \[0.0, 1.0\], got 1.5"),
    ("Adadelta", dict(rho=-0.1), r"Adadelta: rho must be in \[0.0, 1.0\], got -0.1"),
    ("Adadelta", dict(eps=-1e-6), "Adadelta: eps must be >= 0"),
    ("Adadelta", dict(weight_decay=-0.1), "Adadelta: weight_decay must be >= 0"),
    ("Adamax", dict(lr=-0.1), "Adamax: lr must be >= 0"),
    ("Adamax", dict(betas=(1.0, 0.9)), r"Adamax: betas\[0\] must be in \[0.0, 1.0\), got 1.0"),
    ("Adamax", dict(betas=(0.9, -0.1)), r"Adamax: betas\[1\] must be in"),
    ("Adamax", dict(eps=-1.0), "Adamax: eps must be >= 0"),
    ("Adamax", dict(weight_decay=-1.0), "Adamax: weight_decay must be >= 0"),
    ("NAdam", dict(momentum_decay=-1.0), "NAdam: momentum_decay must be >= 0, got -1.0"),
    ("NAdam", dict(betas=(0.9, 1.0)), r"NAdam: betas\[1\] must be in"),
    ("NAdam", dict(eps=-1.0), "NAdam: eps must be >= 0"),
    ("NAdam", dict(weight_decay=-1.0), "NAdam: weight_decay must be >= 0"),
    ("RAdam", dict(lr=-1.0), "RAdam: lr must be >= 0"),
    ("RAdam", dict(betas=(-0.5, 0.9)), r"RAdam: betas\[0\] must be in"),
    ("RAdam", dict(eps=-1.0), "RAdam: eps must be >= 0"),
    ("RAdam", dict(weight_decay=-1.0), "RAdam: weight_decay must be >= 0"),
])
def test_out_of_range_arguments_raise_value_error(name, kw, match):
    with pytest.raises(ValueError, match=match):
        getattr(optim, name)([make_param(P0)], **kw)


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam"])
def test_bad_betas_and_types_raise_type_error(name):
    p = make_param(P0)
    with pytest.raises(TypeError, match=f"{name}: betas must be a pair"):
        getattr(optim, name)([p], betas=(0.9,))
    with pytest.raises(TypeError, match=f"{name}: lr must be a number"):
        getattr(optim, name)([p], lr="0.1")
    with pytest.raises(ValueError, match="empty parameter list"):
        getattr(optim, name)([])


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam"])
def test_implementation_switches_are_accepted_and_differentiable_refused(name):
    cls = getattr(optim, name)
    ref, _ = run_steps(name, P0, GRADS[:3], lr=0.01)
    p = make_param(P0)
    opt = cls([p], lr=0.01, foreach=True, capturable=True)
    assert opt.param_groups[0]["foreach"] is True
    for g in GRADS[:3]:
        set_grad(p, g)
        opt.step()
    np.testing.assert_array_equal(_np(p), _np(ref))
    with pytest.raises(NotImplementedError, match=f"{name}: differentiable=True is not"):
        cls([p], differentiable=True)


# ---------------------------------------------------------------- against PyTorch


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_matches_torch_optim(name, kw):
    torch = pytest.importorskip("torch")
    p0 = P0.astype(np.float32)
    grads = [g.astype(np.float32) for g in GRADS[:5]]
    tp = torch.tensor(p0, requires_grad=True)
    topt = getattr(torch.optim, name)([tp], **kw)
    p = make_param(p0)
    opt = getattr(optim, name)([p], **kw)
    for g in grads:
        tp.grad = torch.tensor(g)
        topt.step()
        set_grad(p, g)
        opt.step()
        np.testing.assert_allclose(_np(p), tp.detach().numpy(), rtol=1e-6, atol=1e-6)
    for key, value in topt.state[tp].items():
        got = opt.state[p][key]
        if isinstance(got, remat.Tensor):
            np.testing.assert_allclose(_np(got), value.numpy(), rtol=1e-5, atol=1e-7,
                                       err_msg=key)
        else:
            assert got == value.item(), key
    # A state dict saved by torch loads and continues the same way.
    sd = topt.state_dict()
    mine = {"param_groups": sd["param_groups"], "state": {
        i: {k: v.numpy() for k, v in st.items()} for i, st in sd["state"].items()}}
    p2 = make_param(tp.detach().numpy())
    opt2 = getattr(optim, name)([p2])
    opt2.load_state_dict(mine)
    tp.grad = torch.tensor(grads[0])
    topt.step()
    set_grad(p2, grads[0])
    opt2.step()
    np.testing.assert_allclose(_np(p2), tp.detach().numpy(), rtol=1e-6, atol=1e-6)
