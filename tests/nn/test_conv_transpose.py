"""`nn.ConvTranspose1d/2d/3d` and `F.conv_transpose*`: values against a direct NumPy scatter
(every stride, padding, output_padding, groups and dilation), `output_size=`, PyTorch's weight
layout and initialisation bound, the adjoint identity with `conv2d`, bytes kept for backward,
checkpointing, and PyTorch's numbers where it is installed."""

import math

import numpy as np
import pytest
from np_resample import np_conv_transpose

import remat
import remat.nn as nn
import remat.nn.functional as F
from remat.checkpoint import checkpoint

CASES = [
    ((2, 4, 5, 5), (4, 3, 4, 4), dict(stride=2, padding=1)),
    ((1, 2, 3, 4), (2, 2, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    ((2, 4, 3, 3), (4, 1, 3, 3), dict(groups=2, dilation=2)),
    ((1, 6, 4, 4), (6, 2, 2, 2), dict(groups=3, stride=2)),
    ((3, 4, 4), (3, 2, 3, 3), dict(padding=1)),  # unbatched
]


@pytest.mark.parametrize("xs,ws,kw", CASES)
def test_conv_transpose2d_matches_the_scatter(xs, ws, kw):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[1] * kw.get("groups", 1))
    got = F.conv_transpose2d(remat.tensor(x), remat.tensor(w), remat.tensor(b), **kw)
    np.testing.assert_allclose(got.numpy(), np_conv_transpose(x, w, b, **kw), rtol=1e-12,
                               atol=1e-12)


def test_1d_and_3d():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 6)), rng.standard_normal((3, 2, 3))
    got = F.conv_transpose1d(remat.tensor(x), remat.tensor(w), stride=3, output_padding=2)
    np.testing.assert_allclose(got.numpy(),
                               np_conv_transpose(x, w, stride=3, output_padding=2), atol=1e-12)
    x, w = rng.standard_normal((1, 2, 3, 2, 3)), rng.standard_normal((2, 2, 2, 2, 2))
    got = F.conv_transpose3d(remat.tensor(x), remat.tensor(w), stride=2, padding=1)
    np.testing.assert_allclose(got.numpy(), np_conv_transpose(x, w, stride=2, padding=1),
                               atol=1e-12)


def test_is_the_adjoint_of_conv2d():
    """<conv(x), y> == <x, conv_transpose(y)> with one weight: the defining identity."""
    rng = np.random.default_rng(2)
    x = remat.tensor(rng.standard_normal((2, 3, 7, 7)))
    w = remat.tensor(rng.standard_normal((4, 3, 3, 3)))
    y = remat.tensor(rng.standard_normal((2, 4, 4, 4)))
    lhs = float((F.conv2d(x, w, stride=2, padding=1) * y).sum())
    rhs = float((x * F.conv_transpose2d(y, w, stride=2, padding=1)).sum())
    assert math.isclose(lhs, rhs, rel_tol=1e-12)


def test_module_layout_initialisation_and_output_size():
    remat.manual_seed(0)
    m = nn.ConvTranspose2d(8, 6, (3, 2), stride=2, groups=2, bias=True)
    assert m.weight.shape == (8, 3, 3, 2) and m.bias.shape == (6,)
    bound = 1 / math.sqrt(3 * 3 * 2)  # PyTorch's fan_in: weight.size(1) * prod(kernel)
    assert float(m.weight.abs().max()) <= bound and float(m.weight.abs().max()) > 0.8 * bound
    x = remat.ones(1, 8, 4, 4)
    assert m(x).shape == (1, 6, 9, 8)
    assert m(x, output_size=(10, 9)).shape == (1, 6, 10, 9)
    assert m(x, output_size=[1, 6, 10, 9]).shape == (1, 6, 10, 9)
    with pytest.raises(ValueError, match="ConvTranspose2d"):
        m(x, output_size=(12, 8))
    assert "ConvTranspose2d(8, 6, kernel_size=(3, 2), stride=(2, 2), groups=2)" == repr(m)
    assert set(dict(m.named_parameters())) == {"weight", "bias"}


def test_module_errors():
    with pytest.raises(ValueError, match="ConvTranspose2d"):
        nn.ConvTranspose2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="ConvTranspose1d"):
        nn.ConvTranspose1d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(remat.ShapeError, match="conv_transpose2d"):
        nn.ConvTranspose2d(3, 4, 3)(remat.ones(1, 2, 5, 5))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(remat.ones(1, 1, 3, 3), remat.ones(1, 1, 2, 2), output_padding=1)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    x = remat.tensor(rng.standard_normal((1, 2, 3, 3)), requires_grad=True)
    w = remat.tensor(rng.standard_normal((2, 2, 2, 2)), requires_grad=True)
    wt = rng.standard_normal((1, 2, 6, 6))

    def f(xv, wv):
        return float((np_conv_transpose(xv, wv, stride=2) * wt).sum())

    (F.conv_transpose2d(x, w, stride=2) * remat.tensor(wt)).sum().backward()
    for t, other, which in ((x, w, 0), (w, x, 1)):
        base = t.detach().numpy()
        fd = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            d = np.zeros_like(base)
            d[i] = 1e-6
            args = [(base + d), other.detach().numpy()] if which == 0 else \
                [other.detach().numpy(), base + d]
            args_m = [(base - d), other.detach().numpy()] if which == 0 else \
                [other.detach().numpy(), base - d]
            fd[i] = (f(*args) - f(*args_m)) / 2e-6
        np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_keeps_only_input_and_weight_and_checkpoints_bit_identically():
    remat.manual_seed(1)
    m = nn.ConvTranspose2d(16, 16, 4, stride=2, padding=1, bias=False)
    x = remat.randn(2, 16, 16, 16, requires_grad=True)
    before = remat.memory_allocated()
    y = m(x)
    kept = remat.memory_allocated() - before - y.nbytes
    # matmul keeps the weight (a view of the parameter) and the input; nothing else stays.
    assert kept == 0
    y.sum().backward()
    g = x.grad.numpy().copy()
    x.grad = None
    m.zero_grad()
    checkpoint(m, x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), g)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    for xs, ws, kw in CASES:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        xr, wr = remat.tensor(x, requires_grad=True), remat.tensor(w, requires_grad=True)
        xp, wp = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        yr = F.conv_transpose2d(xr, wr, **kw)
        yp = torch.nn.functional.conv_transpose2d(xp, wp, **kw)
        np.testing.assert_allclose(yr.detach().numpy(), yp.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
        g = rng.standard_normal(yp.shape).astype(np.float32)
        (yr * remat.tensor(g)).sum().backward()
        (yp * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(xr.grad.numpy(), xp.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(wr.grad.numpy(), wp.grad.numpy(), rtol=1e-4, atol=1e-4)
