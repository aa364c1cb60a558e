"""``nn.RNN``, ``nn.LSTM``, ``nn.GRU`` and their cells (``remat.nn.modules.rnn``): values and
gradients against a float64 NumPy reference of PyTorch's equations (every option: layers,
directions, ``batch_first``, biases, given or default states, unbatched inputs, dropout in
train and eval mode), finite differences, parameter names, shapes and initialisation, errors
naming the layer and the shapes, bit-identical results under checkpoints, the
``checkpoint_steps`` chunking (same forward, fewer bytes kept) and, where PyTorch is installed,
the same numbers as PyTorch's modules with copied weights."""

from __future__ import annotations

import gc
import math
import warnings

import numpy as np
import pytest
from conftest import check_grad, t64

import remat
from remat import nn
from remat.nn.modules import rnn as rnn_module

MODES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def make(mode, *args, **kwargs):
    """The module for ``mode`` (the RNN's nonlinearity from the mode)."""
    if mode.startswith("RNN"):
        kwargs["nonlinearity"] = "relu" if mode == "RNN_RELU" else "tanh"
        return nn.RNN(*args, **kwargs)
    return getattr(nn, mode)(*args, **kwargs)


# ------------------------------------------------------------------------------ reference


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of PyTorch's cell equations (float64): ``(h', c')``."""
    gi = x @ w_ih.T + (0 if b_ih is None else b_ih)
    gh = h @ w_hh.T + (0 if b_hh is None else b_hh)
    hid = w_hh.shape[1]

    def part(g, k):
        return g[..., k * hid:(k + 1) * hid]

    if mode == "LSTM":
        i, f, g, o = (part(gi, k) + part(gh, k) for k in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    if mode == "GRU":
        r = _sigmoid(part(gi, 0) + part(gh, 0))
        z = _sigmoid(part(gi, 1) + part(gh, 1))
        n = np.tanh(part(gi, 2) + r * part(gh, 2))
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0.0)), None


def np_module(mode, params, x, h0=None, c0=None, num_layers=1, bidirectional=False,
              batch_first=False, masks=None):
    """PyTorch's multi-layer recurrence (float64) on ``x`` ``(T, B, I)`` (``(B, T, I)`` with
    ``batch_first``): ``(output, h_n, c_n)``. ``masks[k]``: the scaled dropout mask applied
    to layer ``k``'s output (training mode)."""
    if batch_first:
        x = x.transpose(1, 0, 2)
    steps, batch = x.shape[:2]
    dirs = 2 if bidirectional else 1
    hid = params["weight_hh_l0"].shape[1]
    h0 = np.zeros((num_layers * dirs, batch, hid)) if h0 is None else h0
    c0 = np.zeros_like(h0) if c0 is None else c0
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            sfx = "_reverse" if d else ""
            p = [params.get(f"{n}_l{layer}{sfx}") for n in
                 ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            h, c = h0[layer * dirs + d], c0[layer * dirs + d]
            out = np.zeros((steps, batch, hid))
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                h, c = np_cell(mode, x[t], h, c, *p)
                out[t] = h
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = np.concatenate(outs, -1)
        if masks is not None and layer < num_layers - 1:
            x = x * masks[layer]
    out = x.transpose(1, 0, 2) if batch_first else x
    return out, np.stack(hs), (np.stack(cs) if mode == "LSTM" else None)


def params_of(module):
    return {k: v.detach().numpy().astype(np.float64) for k, v in module.state_dict().items()}


def outputs(mode, result):
    """``(output, h_n, c_n)`` from a module's result."""
    out, hid = result
    if mode == "LSTM":
        return out, hid[0], hid[1]
    return out, hid, None


def rng_arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, size=s) for s in shapes]


# ------------------------------------------------------------------------------ values

OPTIONS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True},
    {"batch_first": True},
    {"bias": False},
    {"num_layers": 2, "bidirectional": True, "batch_first": True, "bias": False},
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(o) or "default")
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("given", [False, True], ids=["zero_state", "given_state"])
def test_module_matches_numpy(mode, opts, given):
    remat.manual_seed(1)
    m = make(mode, 3, 4, dtype=remat.float64, **opts)
    layers, dirs = opts.get("num_layers", 1), 2 if opts.get("bidirectional") else 1
    x_shape = (2, 5, 3) if opts.get("batch_first") else (5, 2, 3)
    x, h0, c0 = rng_arrays(7, x_shape, (layers * dirs, 2, 4), (layers * dirs, 2, 4))
    if given:
        hx = (t64(h0), t64(c0)) if mode == "LSTM" else t64(h0)
        want = np_module(mode, params_of(m), x, h0, c0, layers, dirs == 2,
                         opts.get("batch_first", False))
    else:
        hx = None
        want = np_module(mode, params_of(m), x, None, None, layers, dirs == 2,
                         opts.get("batch_first", False))
    got = outputs(mode, m(t64(x), hx))
    assert got[0].shape == want[0].shape
    for g, w in zip(got, want):
        if w is not None:
            np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input_is_a_batch_of_one(mode, batch_first):
    remat.manual_seed(2)
    m = make(mode, 3, 4, num_layers=2, bidirectional=True, batch_first=batch_first,
             dtype=remat.float64)
    x, h0, c0 = rng_arrays(3, (6, 3), (4, 4), (4, 4))
    hx = (t64(h0), t64(c0)) if mode == "LSTM" else t64(h0)
    got = outputs(mode, m(t64(x), hx))
    assert got[0].shape == (6, 8) and got[1].shape == (4, 4)
    want = np_module(mode, params_of(m), x[:, None] if not batch_first else x[None],
                     h0[:, None], c0[:, None], 2, True, batch_first)
    np.testing.assert_allclose(got[0].detach().numpy(),
                               want[0][:, 0] if not batch_first else want[0][0], rtol=1e-12)
    np.testing.assert_allclose(got[1].detach().numpy(), want[1][:, 0], rtol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(got[2].detach().numpy(), want[2][:, 0], rtol=1e-12)


@pytest.mark.parametrize("mode", list(MODES))
def test_float32_matches_the_float64_reference(mode):
    remat.manual_seed(3)
    m = make(mode, 5, 8, num_layers=2, bidirectional=True)
    (x,) = rng_arrays(4, (20, 3, 5))
    got = outputs(mode, m(remat.tensor(x.astype(np.float32))))
    want = np_module(mode, params_of(m), x, num_layers=2, bidirectional=True)
    for g, w in zip(got, want):
        if w is not None:
            assert g.dtype == remat.float32
            np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ gradients


def _loss_weights(mode, result, seed):
    parts = [p for p in outputs(mode, result) if p is not None]
    rng = np.random.default_rng(seed)
    return parts, [rng.standard_normal(p.shape) for p in parts]


@pytest.mark.parametrize("opts", OPTIONS[:4] + [OPTIONS[6]], ids=lambda o: ",".join(o) or "default")
@pytest.mark.parametrize("mode", list(MODES))
def test_gradients_match_finite_differences(mode, opts):
    """Gradients of the input, the initial states and every parameter, in float64."""
    remat.manual_seed(4)
    m = make(mode, 2, 3, dtype=remat.float64, **opts)
    layers, dirs = opts.get("num_layers", 1), 2 if opts.get("bidirectional") else 1
    x_shape = (2, 3, 2) if opts.get("batch_first") else (3, 2, 2)
    x, h0, c0 = rng_arrays(5, x_shape, (layers * dirs, 2, 3), (layers * dirs, 2, 3))

    def fn(x, h, c):
        out, hid, cc = outputs(mode, m(x, (h, c) if mode == "LSTM" else h))
        pieces = [out.reshape(-1), hid.reshape(-1)] + ([cc.reshape(-1)] if cc is not None else [])
        return remat.cat(pieces)

    if mode == "LSTM":
        check_grad(fn, x, h0, c0, rtol=1e-5, atol=1e-7)
    else:
        check_grad(lambda x, h: fn(x, h, None), x, h0, rtol=1e-5, atol=1e-7)

    # The parameters: analytic gradients against central differences of the loss.
    xs, hs, cs = t64(x), t64(h0), t64(c0)
    w = np.random.default_rng(9).standard_normal(fn(xs, hs, cs).shape)
    m.zero_grad()
    (fn(xs, hs, cs) * t64(w)).sum().backward()
    eps = 1e-6
    for name, p in m.named_parameters():
        g = p.grad.numpy().copy()
        num = np.zeros_like(g)
        base = p.detach().numpy().copy()
        for j in range(base.size):
            vals = []
            for d in (eps, -eps):
                v = base.copy()
                v.reshape(-1)[j] += d
                with remat.no_grad():
                    p.copy_(remat.tensor(v))
                    vals.append(float(np.sum(fn(xs, hs, cs).numpy() * w)))
            num.reshape(-1)[j] = (vals[0] - vals[1]) / (2 * eps)
        with remat.no_grad():
            p.copy_(remat.tensor(base))
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7, err_msg=f"{mode} {name}")


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_second_order_gradients_exist_and_match_finite_differences(mode):
    """``grad(create_graph=True)`` and a Hessian-vector product of the input."""
    remat.manual_seed(5)
    m = make(mode, 2, 2, dtype=remat.float64)
    (x, v) = rng_arrays(6, (3, 1, 2), (3, 1, 2))

    def grad_dot_v(xv, create_graph):
        xt = t64(xv, requires_grad=True)
        out = outputs(mode, m(xt))[0]
        (g,) = remat.grad((out * out).sum(), [xt], create_graph=create_graph)
        return xt, (g * t64(v)).sum()

    xt, gv = grad_dot_v(x, True)
    (hv,) = remat.grad(gv, [xt])
    eps = 1e-5
    num = np.zeros_like(x)
    for j in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp.reshape(-1)[j] += eps
        xm.reshape(-1)[j] -= eps
        num.reshape(-1)[j] = (grad_dot_v(xp, False)[1].item()
                              - grad_dot_v(xm, False)[1].item()) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), num, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ dropout


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_dropout_applies_between_layers_in_training_only(mode):
    remat.manual_seed(6)
    m = make(mode, 3, 4, num_layers=3, dropout=0.5, dtype=remat.float64)
    (x,) = rng_arrays(8, (5, 2, 3))
    plain = np_module(mode, params_of(m), x, num_layers=3)
    m.eval()
    got = outputs(mode, m(t64(x)))
    np.testing.assert_allclose(got[0].detach().numpy(), plain[0], rtol=1e-12)
    m.train()
    remat.manual_seed(11)
    got = outputs(mode, m(t64(x)))
    # The same draws, layer by layer: dropout's masks on the first two layers' outputs.
    remat.manual_seed(11)
    masks = [F_dropout_mask((5, 2, 4), 0.5) for _ in range(2)]
    want = np_module(mode, params_of(m), x, num_layers=3, masks=masks)
    for g, w in zip(got, want):
        if w is not None:
            np.testing.assert_allclose(g.detach().numpy(), w, rtol=1e-12, atol=1e-12)
    assert not np.allclose(got[0].detach().numpy(), plain[0])
    # The gradient flows through the kept elements only.
    outputs(mode, m(t64(x)))[0].sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def F_dropout_mask(shape, p):
    """The scaled mask ``F.dropout`` draws next from the global generator."""
    return nn.functional.dropout(remat.ones(*shape, dtype=remat.float64), p,
                                 training=True).numpy()


def test_dropout_with_one_layer_warns_and_bad_dropout_raises():
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(2, 3, dropout=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(2, 3, num_layers=2, dropout=0.2)
    with pytest.raises(ValueError, match="LSTM: dropout"):
        nn.LSTM(2, 3, num_layers=2, dropout=1.5)


# ------------------------------------------------------------------------------ cells


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mode", list(MODES))
def test_cells_match_one_step_of_the_equations(mode, bias):
    remat.manual_seed(7)
    if mode.startswith("RNN"):
        cell = nn.RNNCell(3, 4, bias=bias, nonlinearity="relu" if mode == "RNN_RELU" else "tanh",
                          dtype=remat.float64)
    else:
        cell = getattr(nn, mode + "Cell")(3, 4, bias=bias, dtype=remat.float64)
    p = params_of(cell)
    weights = [p.get(n) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    x, h, c = rng_arrays(9, (2, 3), (2, 4), (2, 4))
    for batched in (True, False):
        xs, hs, cs = (x, h, c) if batched else (x[0], h[0], c[0])
        want_h, want_c = np_cell(mode, xs, hs, cs, *weights)
        if mode == "LSTM":
            got_h, got_c = cell(t64(xs), (t64(hs), t64(cs)))
            np.testing.assert_allclose(got_c.detach().numpy(), want_c, rtol=1e-12)
        else:
            got_h = cell(t64(xs), t64(hs))
        assert got_h.shape == want_h.shape
        np.testing.assert_allclose(got_h.detach().numpy(), want_h, rtol=1e-12, atol=1e-14)
    # Without a state: zeros.
    zero_h, zero_c = np_cell(mode, x, np.zeros((2, 4)), np.zeros((2, 4)), *weights)
    got = cell(t64(x))
    got_h = got[0] if mode == "LSTM" else got
    np.testing.assert_allclose(got_h.detach().numpy(), zero_h, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cell_gradients_match_finite_differences(name):
    remat.manual_seed(8)
    cell = getattr(nn, name)(2, 3, dtype=remat.float64)
    x, h, c = rng_arrays(10, (2, 2), (2, 3), (2, 3))
    if name == "LSTMCell":
        check_grad(lambda x, h, c: remat.cat([t.reshape(-1) for t in cell(x, (h, c))]), x, h, c)
    else:
        check_grad(lambda x, h: cell(x, h), x, h)


def test_a_cell_unrolled_equals_the_layer():
    """An LSTMCell stepped over a sequence gives the LSTM's output (the same weights; to
    rounding: a long sequence's product reads W_hh transposed once, a step's reads it as it
    is)."""
    remat.manual_seed(9)
    lstm = nn.LSTM(3, 4, dtype=remat.float64)
    cell = nn.LSTMCell(3, 4, dtype=remat.float64)
    cell.load_state_dict({k[:-3]: v for k, v in lstm.state_dict().items()})
    (x,) = rng_arrays(11, (6, 2, 3))
    out, (h_n, c_n) = lstm(t64(x))
    h = c = remat.zeros(2, 4, dtype=remat.float64)
    for t in range(6):
        h, c = cell(t64(x[t]), (h, c))
        np.testing.assert_allclose(h.detach().numpy(), out[t].detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(c.detach().numpy(), c_n[0].detach().numpy(), rtol=1e-13)


# ------------------------------------------------------------------------------ parameters


def test_parameter_names_and_shapes_are_pytorchs():
    m = nn.LSTM(10, 20, num_layers=2, bidirectional=True)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    want = {}
    for layer, width in ((0, 10), (1, 40)):
        for sfx in ("", "_reverse"):
            want[f"weight_ih_l{layer}{sfx}"] = (80, width)
            want[f"weight_hh_l{layer}{sfx}"] = (80, 20)
            want[f"bias_ih_l{layer}{sfx}"] = (80,)
            want[f"bias_hh_l{layer}{sfx}"] = (80,)
    assert list(shapes) == list(want) and shapes == want
    assert list(nn.GRU(3, 5, bias=False).state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert nn.RNN(3, 5).weight_hh_l0.shape == (5, 5)
    cell = nn.GRUCell(3, 5)
    assert {k: tuple(v.shape) for k, v in cell.state_dict().items()} == {
        "weight_ih": (15, 3), "weight_hh": (15, 5), "bias_ih": (15,), "bias_hh": (15,)}
    assert nn.LSTMCell(3, 5, bias=False).bias_ih is None


def test_initialisation_is_uniform_in_one_over_root_hidden_and_seeded():
    remat.manual_seed(10)
    a = nn.GRU(8, 16, num_layers=2)
    remat.manual_seed(10)
    b = nn.GRU(8, 16, num_layers=2)
    bound = 1 / math.sqrt(16)
    values = np.concatenate([p.detach().numpy().reshape(-1) for p in a.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.std() > 0.8 * bound / math.sqrt(3)  # spread over the interval
    for p, q in zip(a.parameters(), b.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())
    assert all(p.requires_grad for p in a.parameters())


def test_reprs_and_the_no_op_flatten_parameters():
    assert (repr(nn.LSTM(3, 4, 2, bidirectional=True))
            == "LSTM(3, 4, num_layers=2, bidirectional=True)")
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4, nonlinearity='relu')"
    assert repr(nn.GRUCell(3, 4)) == "GRUCell(3, 4)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity='relu')"
    m = nn.GRU(3, 4)
    assert m.flatten_parameters() is None
    assert [len(w) for w in m.all_weights] == [4]
    assert isinstance(m, nn.RNNBase) and isinstance(nn.LSTMCell(2, 2), nn.RNNCellBase)


def test_dtype_and_to():
    m = nn.LSTM(3, 4, dtype=remat.float64)
    assert all(p.dtype == remat.float64 for p in m.parameters())
    out, _ = m(remat.ones(2, 1, 3, dtype=remat.float64))
    assert out.dtype == remat.float64


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("mode", list(MODES))
def test_wrong_input_size_names_the_layer_and_shapes(mode):
    m = make(mode, 3, 4)
    name = "LSTM" if mode == "LSTM" else "GRU" if mode == "GRU" else "RNN"
    with pytest.raises(remat.ShapeError, match=rf"{name}: input.size\(-1\) must be equal to "
                                               r"input_size. Expected 3, got 5 \(input of "
                                               r"shape \(6, 2, 5\)\)"):
        m(remat.ones(6, 2, 5))
    with pytest.raises(remat.ShapeError, match=rf"{name}: expected a 2-D .* got shape \(6,\)"):
        m(remat.ones(6))
    with pytest.raises(remat.ShapeError, match=name):
        m(remat.ones(2, 6, 2, 3))


def test_wrong_state_shapes_name_the_layer_and_shapes():
    lstm = nn.LSTM(3, 4, num_layers=2)
    x = remat.ones(6, 2, 3)
    with pytest.raises(remat.ShapeError,
                       match=r"LSTM: expected h_0 of shape \(2, 2, 4\).*got \(1, 2, 4\)"):
        lstm(x, (remat.zeros(1, 2, 4), remat.zeros(2, 2, 4)))
    with pytest.raises(remat.ShapeError,
                       match=r"LSTM: expected c_0 of shape \(2, 2, 4\).*got \(2, 3, 4\)"):
        lstm(x, (remat.zeros(2, 2, 4), remat.zeros(2, 3, 4)))
    with pytest.raises(remat.ShapeError, match=r"LSTM: for batched 3-D input, hx should also "
                                               r"be 3-D but got 2-D"):
        lstm(x, (remat.zeros(2, 4), remat.zeros(2, 4)))
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h_0, c_0\)"):
        lstm(x, remat.zeros(2, 2, 4))
    gru = nn.GRU(3, 4, bidirectional=True)
    with pytest.raises(remat.ShapeError, match=r"GRU: expected h_0 of shape \(2, 2, 4\)"):
        gru(x, remat.zeros(1, 2, 4))
    with pytest.raises(remat.ShapeError, match=r"GRU: for unbatched 2-D input, hx should "
                                               r"also be 2-D but got 3-D"):
        gru(remat.ones(6, 3), remat.zeros(2, 1, 4))


def test_constructor_and_dtype_errors():
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="RNNCell"):
        nn.RNNCell(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="GRU: hidden_size must be >= 1"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="LSTM: input_size must be an int"):
        nn.LSTM(3.0, 4)
    with pytest.raises(TypeError, match="LSTM: batch_first must be a bool"):
        nn.LSTM(3, 4, batch_first=1)
    with pytest.raises(ValueError, match=r"LSTM: input dtype \(float64\) does not match "
                                         r"weight dtype \(float32\)"):
        nn.LSTM(3, 4)(remat.ones(2, 1, 3, dtype=remat.float64))


def test_cell_errors_name_the_cell_and_shapes():
    cell = nn.LSTMCell(3, 4)
    with pytest.raises(remat.ShapeError, match=r"LSTMCell: input has inconsistent input_size: "
                                               r"got 5 expected 3"):
        cell(remat.ones(2, 5))
    with pytest.raises(remat.ShapeError, match=r"LSTMCell: Expected input to be 1D or 2D, "
                                               r"got 3D"):
        cell(remat.ones(1, 2, 3))
    with pytest.raises(remat.ShapeError, match=r"LSTMCell: expected hx\[1\] of shape \(2, 4\) "
                                               r"\(batch, hidden_size\), got \(2, 5\)"):
        cell(remat.ones(2, 3), (remat.zeros(2, 4), remat.zeros(2, 5)))
    with pytest.raises(TypeError, match="LSTMCell: hx must be a tuple"):
        cell(remat.ones(2, 3), remat.zeros(2, 4))
    with pytest.raises(remat.ShapeError, match=r"GRUCell: expected hx of shape \(2, 4\)"):
        nn.GRUCell(3, 4)(remat.ones(2, 3), remat.zeros(3, 4))


def test_layer_op_errors_name_the_op_and_shapes():
    with pytest.raises(remat.ShapeError, match=r"lstm_layer: h0 must be \(batch, hidden_size\) "
                                               r"= \(2, 3\), got \(3, 3\)"):
        remat.lstm_layer(remat.ones(4, 2, 12), remat.ones(3, 3), remat.ones(2, 3),
                         remat.ones(12, 3))
    with pytest.raises(remat.ShapeError, match=r"gru_layer: x_proj must be .* got \(4, 2, 8\)"):
        remat.gru_layer(remat.ones(4, 2, 8), remat.ones(2, 3), remat.ones(9, 3))
    with pytest.raises(ValueError, match="rnn_layer: unknown nonlinearity 'gelu'"):
        remat.rnn_layer(remat.ones(4, 2, 3), remat.ones(2, 3), remat.ones(3, 3),
                        nonlinearity="gelu")
    with pytest.raises(remat.DTypeError, match="rnn_layer"):
        remat.rnn_layer(remat.ones(4, 2, 3, dtype=remat.int64), remat.ones(2, 3),
                        remat.ones(3, 3))


# ------------------------------------------------------------------------------ checkpoints


def _step(m, mode, x, hx=None):
    """Loss and the gradients of the input and every parameter of one training step."""
    m.zero_grad()
    x.grad = None
    out, h, c = outputs(mode, m(x, hx))
    loss = (out * out).sum() + h.sum() + (0 if c is None else (c * c).sum())
    loss.backward()
    return loss.item(), [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("entry", ["checkpoint(module)", "activation_checkpointing"])
def test_checkpointing_the_module_gives_the_same_bits(mode, entry):
    remat.manual_seed(12)
    m = make(mode, 5, 6, num_layers=2, bidirectional=True)
    (xv,) = rng_arrays(13, (7, 3, 5))
    x = remat.tensor(xv.astype(np.float32), requires_grad=True)
    want = _step(m, mode, x)

    class Wrapped(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x, hx=None):
            if entry == "checkpoint(module)":
                return remat.checkpoint(self.inner, x)
            return self.inner(x, hx)

    w = Wrapped(m)
    if entry == "activation_checkpointing":
        m.activation_checkpointing = True
    got = _step(w, mode, x)
    m.activation_checkpointing = False
    assert got[0] == want[0]
    for a, b in zip(got[1], want[1]):
        assert np.array_equal(a, b)
    gc.collect()
    assert remat.live_checkpoint_state() == 0


def _kept_bytes(m, mode, x):
    """Bytes the forward leaves alive for backward (its result included)."""
    gc.collect()
    base = remat.memory_allocated()
    result = m(x)
    kept = remat.memory_allocated() - base
    del result
    return kept


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("opts", [{}, {"num_layers": 2, "bidirectional": True}],
                         ids=["one_layer", "two_layers_bidirectional"])
def test_checkpoint_steps_keeps_fewer_bytes_with_the_same_numbers(mode, opts, monkeypatch):
    """``checkpoint_steps = k``: each chunk of k steps is a checkpoint segment. The forward is
    the plain run's bit for bit, the gradients the plain run's to rounding (the weights'
    are summed per chunk) and, bit for bit, those of the same chunks run without
    checkpoints; far fewer bytes stay alive between forward and backward."""
    remat.manual_seed(14)
    m = make(mode, 8, 16, **opts)
    (xv,) = rng_arrays(15, (48, 4, 8))
    x = remat.tensor(xv.astype(np.float32), requires_grad=True)
    plain = _step(m, mode, x)
    plain_kept = _kept_bytes(m, mode, x)
    m.checkpoint_steps = 8
    chunked = _step(m, mode, x)
    chunked_kept = _kept_bytes(m, mode, x)
    assert chunked[0] == plain[0], "the chunked forward differs"
    for a, b in zip(chunked[1], plain[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # Per step the plain run keeps the output and the gates (six or five slabs); the chunked
    # one the output. An RNN keeps only its output anyway and runs unchunked.
    if mode in ("LSTM", "GRU"):
        assert chunked_kept * 3 < plain_kept, (chunked_kept, plain_kept)
    else:
        assert chunked_kept == plain_kept
        assert all(np.array_equal(a, b) for a, b in zip(chunked[1], plain[1]))
    # The same chunks without checkpoints: the same bits.
    monkeypatch.setattr(rnn_module, "_checkpoint", lambda fn, *args: fn(*args))
    unchecked = _step(m, mode, x)
    assert unchecked[0] == chunked[0]
    for a, b in zip(unchecked[1], chunked[1]):
        assert np.array_equal(a, b)
    gc.collect()
    assert remat.live_checkpoint_state() == 0


def test_checkpoint_steps_of_a_whole_sequence_or_without_grad_is_the_plain_run():
    remat.manual_seed(16)
    m = nn.LSTM(3, 4)
    x = remat.tensor(np.ones((5, 2, 3), np.float32), requires_grad=True)
    want = _step(m, "LSTM", x)
    m.checkpoint_steps = 10
    got = _step(m, "LSTM", x)
    assert got[0] == want[0] and all(np.array_equal(a, b) for a, b in zip(got[1], want[1]))
    m.checkpoint_steps = 2
    with remat.no_grad():
        out, _ = m(x)
    assert not out.requires_grad
    m.checkpoint_steps = 0
    with pytest.raises(ValueError, match="LSTM: checkpoint_steps must be >= 1"):
        m(x)


# ------------------------------------------------------------------------------ PyTorch


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("opts", [{}, {"num_layers": 2, "bidirectional": True},
                                  {"batch_first": True, "bias": False}],
                         ids=["default", "two_layers_bidirectional", "batch_first_nobias"])
def test_same_numbers_as_pytorch_with_copied_weights(mode, opts):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    kw = dict(opts)
    if mode.startswith("RNN"):
        kw["nonlinearity"] = "relu" if mode == "RNN_RELU" else "tanh"
        tm = torch.nn.RNN(5, 7, **kw)
    else:
        tm = getattr(torch.nn, mode)(5, 7, **kw)
    m = make(mode, 5, 7, **opts)
    m.load_state_dict({k: remat.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    layers, dirs = opts.get("num_layers", 1), 2 if opts.get("bidirectional") else 1
    x_shape = (3, 6, 5) if opts.get("batch_first") else (6, 3, 5)
    x, h0, c0 = (a.astype(np.float32) for a in rng_arrays(17, x_shape, (layers * dirs, 3, 7),
                                                         (layers * dirs, 3, 7)))
    tx = torch.tensor(x, requires_grad=True)
    rx = remat.tensor(x, requires_grad=True)
    if mode == "LSTM":
        thx = (torch.tensor(h0, requires_grad=True), torch.tensor(c0, requires_grad=True))
        rhx = (remat.tensor(h0, requires_grad=True), remat.tensor(c0, requires_grad=True))
    else:
        thx = torch.tensor(h0, requires_grad=True)
        rhx = remat.tensor(h0, requires_grad=True)
    t_out = outputs(mode, tm(tx, thx))
    r_out = outputs(mode, m(rx, rhx))
    ws = [np.random.default_rng(i).standard_normal(t.shape).astype(np.float32)
          for i, t in enumerate(t_out) if t is not None]
    for t, r in zip(t_out, r_out):
        if t is not None:
            np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                       atol=1e-5)
    sum((t * torch.from_numpy(w)).sum() for t, w in zip(t_out, ws)).backward()
    sum((r * remat.tensor(w)).sum() for r, w in zip(r_out, ws)).backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    states = zip(rhx, thx) if mode == "LSTM" else [(rhx, thx)]
    for r, t in states:
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)
    tp = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
    # And back: remat's state dict loads into PyTorch's module and gives its numbers again.
    tm2 = type(tm)(5, 7, **kw)
    tm2.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                         for k, v in m.state_dict().items()})
    np.testing.assert_allclose(outputs(mode, tm2(tx, thx))[0].detach().numpy(),
                               r_out[0].detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_give_pytorchs_numbers(name):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    tc = getattr(torch.nn, name)(4, 6)
    cell = getattr(nn, name)(4, 6)
    cell.load_state_dict({k: remat.tensor(v.detach().numpy()) for k, v in tc.state_dict().items()})
    x, h, c = (a.astype(np.float32) for a in rng_arrays(18, (3, 4), (3, 6), (3, 6)))
    tx, rx = torch.tensor(x, requires_grad=True), remat.tensor(x, requires_grad=True)
    if name == "LSTMCell":
        t_out = tc(tx, (torch.from_numpy(h), torch.from_numpy(c)))
        r_out = cell(rx, (remat.tensor(h), remat.tensor(c)))
        (t_out[0].sum() + t_out[1].sum()).backward()
        (r_out[0].sum() + r_out[1].sum()).backward()
        t_out, r_out = t_out[0], r_out[0]
    else:
        t_out, r_out = tc(tx, torch.from_numpy(h)), cell(rx, remat.tensor(h))
        t_out.sum().backward()
        r_out.sum().backward()
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for n, p in cell.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), dict(tc.named_parameters())[n].grad.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=n)
