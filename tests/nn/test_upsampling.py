"""`F.interpolate` and `nn.Upsample` / `UpsamplingNearest2d` / `UpsamplingBilinear2d`: every
mode against PyTorch's source-position formulas in NumPy, `size` and `scale_factor` (with and
without recomputing the scale), `align_corners`, gradients, errors, and PyTorch's numbers
where it is installed."""

import numpy as np
import pytest
from np_resample import np_interpolate

import remat
import remat.nn as nn
import remat.nn.functional as F

CASES = [
    ((1, 2, 3, 4), dict(size=(5, 7))),
    ((1, 2, 3, 4), dict(scale_factor=2)),
    ((2, 1, 5), dict(scale_factor=0.5)),
    ((1, 1, 4, 4), dict(size=(3, 6), mode="nearest-exact")),
    ((1, 2, 3, 4), dict(size=(5, 7), mode="bilinear")),
    ((1, 2, 3, 4), dict(size=(5, 7), mode="bilinear", align_corners=True)),
    ((1, 1, 4, 4), dict(scale_factor=1.5, mode="bilinear")),
    ((2, 2, 6), dict(size=4, mode="linear")),
    ((1, 1, 2, 3, 2), dict(scale_factor=2, mode="trilinear", align_corners=True)),
    ((1, 2, 7, 5), dict(size=(3, 2), mode="area")),
    ((1, 1, 3, 3), dict(size=(1, 1), mode="bilinear", align_corners=True)),
]


@pytest.mark.parametrize("shape,kw", CASES)
def test_matches_the_formulas(shape, kw):
    x = np.random.default_rng(0).standard_normal(shape)
    got = F.interpolate(remat.tensor(x), **kw)
    np.testing.assert_allclose(got.numpy(), np_interpolate(x, **kw), rtol=1e-12, atol=1e-12)


def test_recompute_scale_factor_uses_the_output_size():
    x = np.random.default_rng(1).standard_normal((1, 1, 5))
    a = F.interpolate(remat.tensor(x), scale_factor=1.7, mode="linear")
    b = F.interpolate(remat.tensor(x), scale_factor=1.7, mode="linear",
                      recompute_scale_factor=True)
    np.testing.assert_allclose(a.numpy(), np_interpolate(x, scale_factor=1.7, mode="linear"))
    np.testing.assert_allclose(b.numpy(), np_interpolate(x, size=8, mode="linear"))


def test_gradient_scatters_into_the_picked_positions():
    x = remat.tensor(np.arange(6.0).reshape(1, 1, 2, 3), requires_grad=True)
    F.interpolate(x, scale_factor=2).sum().backward()
    assert (x.grad.numpy() == 4.0).all()  # each input pixel repeated 2 x 2 times
    y = remat.tensor(np.random.default_rng(2).standard_normal((1, 1, 3, 3)), requires_grad=True)
    F.interpolate(y, size=(5, 5), mode="bilinear", align_corners=True).sum().backward()
    # The weights of each output position sum to 1, so the gradients sum to 25.
    assert abs(float(y.grad.sum()) - 25.0) < 1e-5


def test_modules():
    x = remat.tensor(np.random.default_rng(3).standard_normal((1, 2, 3, 3)))
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    np.testing.assert_allclose(up(x).numpy(),
                               np_interpolate(x.numpy(), scale_factor=2, mode="bilinear"),
                               rtol=1e-6)
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert repr(nn.Upsample(size=(4, 4))) == "Upsample(size=(4, 4), mode='nearest')"
    assert nn.UpsamplingNearest2d(scale_factor=2)(x).shape == (1, 2, 6, 6)
    np.testing.assert_allclose(
        nn.UpsamplingBilinear2d(size=5)(x).numpy(),
        np_interpolate(x.numpy(), size=5, mode="bilinear", align_corners=True), rtol=1e-6)


@pytest.mark.parametrize("kw,exc,needle", [
    (dict(), ValueError, "either size or scale_factor"),
    (dict(size=2, scale_factor=2), ValueError, "only one"),
    (dict(size=2, mode="bicubic"), ValueError, "not supported"),
    (dict(size=2, mode="trilinear"), ValueError, "5-D"),
    (dict(size=2, align_corners=True), ValueError, "align_corners"),
    (dict(size=(2, 2, 2)), ValueError, "size"),
    (dict(scale_factor=-1.0), ValueError, "scale_factor"),
    (dict(size=2, antialias=True), NotImplementedError, "antialias"),
])
def test_errors(kw, exc, needle):
    with pytest.raises(exc, match="interpolate") as e:
        F.interpolate(remat.ones(1, 1, 3, 3), **kw)
    assert needle in str(e.value)
    with pytest.raises(remat.ShapeError, match="interpolate"):
        F.interpolate(remat.ones(3, 3), size=2)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    for shape, kw in CASES:
        x = rng.standard_normal(shape).astype(np.float32)
        xr, xp = remat.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yr = F.interpolate(xr, **kw)
        yp = torch.nn.functional.interpolate(xp, **kw)
        np.testing.assert_allclose(yr.detach().numpy(), yp.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        g = rng.standard_normal(yp.shape).astype(np.float32)
        (yr * remat.tensor(g)).sum().backward()
        (yp * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(xr.grad.numpy(), xp.grad.numpy(), rtol=1e-5, atol=1e-5)
