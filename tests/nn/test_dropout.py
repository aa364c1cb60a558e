"""nn.Dropout in training and evaluation."""

import numpy as np
import pytest
import remat
from remat import nn


def _np(t):
    return np.asarray(t.detach().numpy())


def test_dropout_train_and_eval():
    remat.manual_seed(0)
    d = nn.Dropout(0.5)
    x = remat.ones(1000, 10)
    y = _np(d(x))
    zero = y == 0
    assert 0.4 < zero.mean() < 0.6
    np.testing.assert_allclose(y[~zero], 2.0)
    d.eval()
    np.testing.assert_array_equal(_np(d(x)), np.ones((1000, 10), np.float32))
    d.train()
    np.testing.assert_array_equal(_np(nn.Dropout(0.0)(x)), np.ones((1000, 10), np.float32))
    with pytest.raises(ValueError):
        nn.Dropout(1.5)
