"""Activation modules against NumPy, and their reprs."""

import math
import numpy as np
import pytest
import remat
from remat import nn


def _np(t):
    return np.asarray(t.detach().numpy())


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


@pytest.mark.parametrize(
    "module, fn",
    [
        (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
        (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
        (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
        (nn.LogSoftmax(dim=-1), lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
        (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    ],
)
def test_activation_modules_match_numpy(module, fn):
    x = np.random.default_rng(0).standard_normal((3, 4))
    got = module(remat.tensor(x))
    np.testing.assert_allclose(got.detach().numpy(), fn(x), rtol=1e-10, atol=1e-12)


def test_activation_reprs():
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(negative_slope=0.1)"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert repr(nn.SiLU()) == "SiLU()"
