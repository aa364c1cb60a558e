"""remat.nn.init: fans, bounds and gains as PyTorch's; reproducible under manual_seed."""

import math
import numpy as np
import pytest
import remat
from remat import nn
from remat.nn import init


def _np(t):
    return t.detach().numpy()


def test_init_fans_and_bounds_follow_pytorch():
    remat.manual_seed(0)
    w = remat.zeros(64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = init.calculate_gain("leaky_relu", math.sqrt(5)) * math.sqrt(3.0 / fan_in)
    assert np.abs(np.asarray(w)).max() <= bound and np.abs(np.asarray(w)).max() > 0.95 * bound
    init.xavier_uniform_(w, gain=2.0)
    a = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(w.detach().numpy()).max() <= a and np.abs(w.detach().numpy()).max() > 0.95 * a
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.detach().numpy().std() == pytest.approx(math.sqrt(2.0 / fan_out), rel=0.05)
    init.xavier_normal_(w)
    assert w.detach().numpy().std() == pytest.approx(math.sqrt(2.0 / (fan_in + fan_out)), rel=0.05)


def test_init_simple_fills_and_gains():
    w = remat.zeros(3, 4)
    assert init.ones_(w) is w and np.all(w.detach().numpy() == 1)
    init.constant_(w, 2.5)
    assert np.all(w.detach().numpy() == 2.5)
    init.zeros_(w)
    assert np.all(w.detach().numpy() == 0)
    init.eye_(w)
    np.testing.assert_array_equal(w.detach().numpy(), np.eye(3, 4))
    init.uniform_(w, -0.1, 0.1)
    assert np.all(np.abs(w.detach().numpy()) <= 0.1)
    init.normal_(w, 5.0, 0.0)
    assert np.all(w.detach().numpy() == 5.0)
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("conv2d") == 1.0
    with pytest.raises(ValueError, match="nonlinearity"):
        init.calculate_gain("bogus")


def test_init_on_a_parameter_needs_no_no_grad_and_is_reproducible():
    lin = nn.Linear(10, 10)
    remat.manual_seed(3)
    init.trunc_normal_(lin.weight, std=0.5, a=-0.6, b=0.6)
    first = _np(lin.weight).copy()
    assert np.all(np.abs(first) <= 0.6) and lin.weight.is_leaf
    remat.manual_seed(3)
    init.trunc_normal_(lin.weight, std=0.5, a=-0.6, b=0.6)
    np.testing.assert_array_equal(_np(lin.weight), first)


def test_init_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(remat.zeros(3))
    with pytest.raises(remat.DTypeError, match="float"):
        init.normal_(remat.zeros(3, dtype=remat.int64))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_uniform_(remat.zeros(2, 2), mode="fan_avg")
