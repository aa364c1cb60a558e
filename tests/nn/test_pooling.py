"""Pooling and padding modules; max pooling's gradient goes to the maximum only."""

import numpy as np
import remat
from remat import nn
from remat.nn import functional as F


def _np(t):
    return t.detach().numpy()


def test_pooling_modules():
    x = remat.tensor(np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4))
    assert _np(nn.MaxPool2d(2)(x)).tolist() == [[[[5, 7], [13, 15]], [[21, 23], [29, 31]]]]
    v, i = nn.MaxPool2d(2, return_indices=True)(x)
    assert _np(i)[0, 0].tolist() == [[5, 7], [13, 15]]
    np.testing.assert_allclose(_np(nn.AvgPool2d(2)(x))[0, 0], [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_allclose(_np(nn.AdaptiveAvgPool2d(1)(x)).ravel(), [7.5, 23.5])
    assert nn.AdaptiveAvgPool2d((None, 2))(x).shape == (1, 2, 4, 2)
    assert nn.ZeroPad2d((1, 0, 2, 1))(x).shape == (1, 2, 7, 5)
    assert nn.ReflectionPad1d(2)(remat.randn(1, 3, 5)).shape == (1, 3, 9)
    np.testing.assert_array_equal(_np(nn.ConstantPad1d(1, 3.5)(remat.zeros(1, 2)))[0],
                                  [3.5, 0, 0, 3.5])


def test_max_pool_gradient_goes_to_the_maximum_only():
    x = remat.tensor(np.array([[[1.0, 3.0, 2.0, 0.0]]]), requires_grad=True)
    F.max_pool1d(x, 2).sum().backward()
    assert _np(x.grad).tolist() == [[[0.0, 1.0, 1.0, 0.0]]]
