"""nn.Linear and nn.Identity: shapes, the formula, PyTorch's initialisation bounds."""

import math
import numpy as np
import remat
from remat import nn


def _np(t):
    return np.asarray(t.detach().numpy())


def test_linear_shapes_and_formula():
    lin = nn.Linear(5, 3)
    assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    y = lin(remat.tensor(x))
    assert y.shape == (4, 3)
    np.testing.assert_allclose(_np(y), x @ _np(lin.weight).T + _np(lin.bias), rtol=1e-5, atol=1e-5)
    # batched input and no bias
    lin2 = nn.Linear(5, 2, bias=False)
    assert lin2.bias is None
    assert [n for n, _ in lin2.named_parameters()] == ["weight"]
    assert lin2(remat.tensor(np.zeros((2, 3, 5), np.float32))).shape == (2, 3, 2)


def test_linear_init_bounds_and_seed():
    remat.manual_seed(123)
    lin = nn.Linear(64, 200)
    bound = 1 / math.sqrt(64)
    w, b = _np(lin.weight), _np(lin.bias)
    assert w.dtype == np.float32
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound)
    # uniform over the whole interval, not a narrow part of it
    assert w.max() > 0.9 * bound and w.min() < -0.9 * bound
    assert abs(w.mean()) < 0.05 * bound * 4
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    remat.manual_seed(123)
    lin2 = nn.Linear(64, 200)
    np.testing.assert_array_equal(_np(lin2.weight), w)
    np.testing.assert_array_equal(_np(lin2.bias), b)
    lin3 = nn.Linear(64, 200)
    assert not np.array_equal(_np(lin3.weight), w)
