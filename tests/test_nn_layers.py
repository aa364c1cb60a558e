"""The convolution, pooling, padding, normalisation and attention modules: PyTorch's
parameters, shapes and initialisation bounds, outputs against NumPy formulas, gradients
identical under checkpointing, and constructor errors naming the class and the argument."""

import math

import numpy as np
import pytest

import remat
from remat import nn
from remat.nn import functional as F


def _np(t):
    return t.detach().numpy()


# ---------------------------------------------------------------------- convolution modules

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


# --------------------------------------------------------------------------- normalisation

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


# ---------------------------------------------------------------------------- attention

def _mha_reference(m, q, k, v, mask=None):
    """PyTorch's MultiheadAttention as NumPy (batch first, additive float mask (L, S))."""
    e, h = m.embed_dim, m.num_heads
    d = e // h
    w, b = _np(m.in_proj_weight), _np(m.in_proj_bias)
    qp, kp, vp = q @ w[:e].T + b[:e], k @ w[e:2 * e].T + b[e:2 * e], v @ w[2 * e:].T + b[2 * e:]

    def heads(t):
        return t.reshape(t.shape[0], t.shape[1], h, d).transpose(0, 2, 1, 3)

    s = heads(qp) @ heads(kp).transpose(0, 1, 3, 2) / math.sqrt(d)
    if mask is not None:
        s = s + mask
    a = np.exp(s - s.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True)
    o = (a @ heads(vp)).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return o @ _np(m.out_proj.weight).T + _np(m.out_proj.bias), a.mean(1)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_matches_formula(need_weights):
    remat.manual_seed(4)
    m = nn.MultiheadAttention(8, 2, batch_first=True).double()
    rng = np.random.default_rng(3)
    q, kv = rng.standard_normal((3, 5, 8)), rng.standard_normal((3, 6, 8))
    bool_mask = np.triu(np.ones((5, 6), bool), 1)  # True: not allowed (PyTorch's MHA)
    out, weights = m(remat.tensor(q), remat.tensor(kv), remat.tensor(kv),
                     attn_mask=remat.tensor(bool_mask), need_weights=need_weights)
    want, want_w = _mha_reference(m, q, kv, kv, np.where(bool_mask, -np.inf, 0.0))
    np.testing.assert_allclose(_np(out), want, rtol=1e-10, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(_np(weights), want_w, rtol=1e-10, atol=1e-12)
    else:
        assert weights is None


def test_multihead_attention_sequence_first_and_padding_mask():
    remat.manual_seed(5)
    m = nn.MultiheadAttention(4, 1).double()  # batch_first=False: (L, N, E)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 2, 4))
    pad = np.array([[False, False, True], [False, False, False]])
    out, w = m(remat.tensor(x), remat.tensor(x), remat.tensor(x),
               key_padding_mask=remat.tensor(pad))
    assert out.shape == (3, 2, 4) and w.shape == (2, 3, 3)
    assert np.all(_np(w)[0, :, 2] == 0)  # the padded key gets no weight
    xb = x.transpose(1, 0, 2)
    mask = np.where(pad[:, None, None, :], -np.inf, 0.0)
    want, _ = _mha_reference(m, xb, xb, xb, mask)
    np.testing.assert_allclose(_np(out).transpose(1, 0, 2), want, rtol=1e-10, atol=1e-12)


def test_multihead_attention_parameters_and_init():
    remat.manual_seed(6)
    m = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, add_bias_kv=True)
    names = sorted(n for n, _ in m.named_parameters())
    assert names == ["bias_k", "bias_v", "in_proj_bias", "k_proj_weight", "out_proj.bias",
                     "out_proj.weight", "q_proj_weight", "v_proj_weight"]
    assert m.k_proj_weight.shape == (6, 4) and m.v_proj_weight.shape == (6, 5)
    assert np.all(_np(m.in_proj_bias) == 0) and np.all(_np(m.out_proj.bias) == 0)
    bound = math.sqrt(6 / (6 + 4))  # xavier_uniform of (6, 4)
    assert np.abs(_np(m.k_proj_weight)).max() <= bound
    out, _ = m(remat.randn(3, 2, 6), remat.randn(4, 2, 4), remat.randn(4, 2, 5))
    assert out.shape == (3, 2, 6)  # (L, N, E): batch_first=False


# ------------------------------------------------------------------------------- errors

@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: nn.Conv2d(3, 4, 3, groups=2), ("Conv2d", "groups")),
        (lambda: nn.Conv2d(0, 4, 3), ("Conv2d", "in_channels")),
        (lambda: nn.Conv1d(2, 2, 3, padding="full"), ("Conv1d", "padding")),
        (lambda: nn.Conv2d(2, 2, 3, padding_mode="mirror"), ("Conv2d", "padding_mode")),
        (lambda: nn.Conv2d(2, 2, (3, 3, 3)), ("kernel_size",)),
        (lambda: nn.GroupNorm(4, 6), ("GroupNorm", "num_groups")),
        (lambda: nn.GroupNorm(2, 4, eps=-1), ("GroupNorm", "eps")),
        (lambda: nn.RMSNorm(()), ("RMSNorm", "normalized_shape")),
        (lambda: nn.MultiheadAttention(6, 4), ("MultiheadAttention", "num_heads")),
        (lambda: nn.MultiheadAttention(6, 2, dropout=1.5), ("MultiheadAttention", "dropout")),
    ],
)
def test_constructor_errors_name_class_and_argument(make, words):
    with pytest.raises((ValueError, TypeError)) as e:
        make()
    for w in words:
        assert w in str(e.value)


def test_forward_errors_name_the_op_and_shapes():
    with pytest.raises(remat.ShapeError, match=r"conv2d.*\(1, 3, 5, 5\)"):
        nn.Conv2d(2, 4, 3)(remat.randn(1, 3, 5, 5))
    # A weight of another rank: the error names the convolution called, not another one.
    for w in (remat.randn(4, 3, 3), remat.randn(4, 3, 3, 3, 3)):
        with pytest.raises(remat.ShapeError, match=r"^conv2d: expected a 4-D weight"):
            remat.nn.functional.conv2d(remat.randn(1, 3, 8, 8), w)
    with pytest.raises(remat.ShapeError, match="group_norm"):
        nn.GroupNorm(2, 4)(remat.randn(2, 6, 3))
    with pytest.raises(remat.ShapeError, match="MultiheadAttention"):
        nn.MultiheadAttention(4, 2, batch_first=True)(*(remat.randn(2, 3, 5),) * 3)
    with pytest.raises(remat.ShapeError, match="MultiheadAttention.*batch"):
        m = nn.MultiheadAttention(4, 2, batch_first=True)
        m(remat.randn(2, 3, 4), remat.randn(3, 3, 4), remat.randn(3, 3, 4))
