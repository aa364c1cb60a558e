"""LayerNorm, RMSNorm and GroupNorm modules against their formulas."""

import numpy as np
import pytest
import remat
from remat import nn


def _np(t):
    return np.asarray(t.detach().numpy())


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


def test_rms_norm_module_matches_formula():
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    m = nn.RMSNorm((3, 4))
    assert m.weight.shape == (3, 4) and np.all(_np(m.weight) == 1)
    eps = np.finfo(np.float32).eps
    want = x / np.sqrt((x * x).mean((1, 2), keepdims=True) + eps)
    np.testing.assert_allclose(_np(m(remat.tensor(x))), want, rtol=1e-5, atol=1e-6)
    assert nn.RMSNorm(4, elementwise_affine=False).weight is None


def test_group_norm_module_matches_formula():
    x = np.random.default_rng(2).standard_normal((2, 6, 5))
    m = nn.GroupNorm(3, 6, eps=1e-3).double()
    g = x.reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-3))
    np.testing.assert_allclose(_np(m(remat.tensor(x))), want.reshape(x.shape), rtol=1e-12)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
