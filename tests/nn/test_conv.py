"""Convolution modules: PyTorch's parameters and initialisation, padding modes, and a CNN's
gradients identical under checkpointing."""

import math
import numpy as np
import pytest
import remat
from remat import nn
from remat.nn import functional as F


def _np(t):
    return t.detach().numpy()


def test_conv2d_parameters_and_init_bounds():
    remat.manual_seed(0)
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    assert conv.weight.shape == (6, 2, 3, 3) and conv.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 3 * 3)
    assert np.abs(_np(conv.weight)).max() <= bound and np.abs(_np(conv.bias)).max() <= bound
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    out = conv(remat.randn(2, 4, 7, 7))
    assert out.shape == (2, 6, 4, 4)
    assert "kernel_size=(3, 3)" in repr(conv) and "groups=2" in repr(conv)


def test_conv_modules_call_the_functions():
    remat.manual_seed(1)
    x = remat.randn(2, 3, 9)
    c1 = nn.Conv1d(3, 4, 3, padding="same", bias=False)
    np.testing.assert_array_equal(_np(c1(x)), _np(F.conv1d(x, c1.weight, None, padding="same")))
    x3 = remat.randn(1, 2, 4, 4, 4)
    c3 = nn.Conv3d(2, 3, 2)
    assert c3(x3).shape == (1, 3, 3, 3, 3)


@pytest.mark.parametrize("mode, np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                           ("circular", "wrap")])
def test_conv_padding_mode_pads_before_an_unpadded_conv(mode, np_mode):
    remat.manual_seed(2)
    conv = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode)
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 6)).astype(np.float32)
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (2, 2)], mode=np_mode)
    want = F.conv2d(remat.tensor(padded), conv.weight, conv.bias)
    np.testing.assert_allclose(_np(conv(remat.tensor(x))), _np(want), rtol=1e-6, atol=1e-6)


def test_cnn_gradients_identical_under_checkpoint():
    remat.manual_seed(3)
    block = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 4, 3, padding=1, groups=2), nn.GroupNorm(2, 4),
                          nn.SiLU(), nn.AvgPool2d(2))
    x = remat.randn(2, 2, 8, 8)

    def grads(ckpt):
        block.zero_grad()
        y = remat.checkpoint(block, x) if ckpt else block(x)
        (y * y).sum().backward()
        return [_np(p.grad).copy() for p in block.parameters()]

    for a, b in zip(grads(False), grads(True)):
        np.testing.assert_array_equal(a, b)
