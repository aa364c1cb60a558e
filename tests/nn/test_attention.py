"""nn.MultiheadAttention against its formula: masks, sequence-first layout, parameters."""

import math
import numpy as np
import pytest
import remat
from remat import nn


def _np(t):
    return t.detach().numpy()


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


def test_self_attention_keeps_o_of_t_between_forward_and_backward():
    """Without the weights asked for, the module runs the tiled attention op: what it keeps
    doubles with T, where the weights (T² per head) would quadruple."""
    b, e, h = 2, 32, 4
    m = nn.MultiheadAttention(e, h, batch_first=True)

    def kept(t):
        x = remat.randn(b, t, e, requires_grad=True)
        base = remat.memory_allocated()
        out, weights = m(x, x, x, need_weights=False)
        bytes_kept = remat.memory_allocated() - base
        assert weights is None
        out.sum().backward()
        assert x.grad is not None
        return bytes_kept

    short, long = kept(256), kept(512)
    assert long == 2 * short
    assert long < b * h * 512 * 512 * 4 // 4  # a quarter of the weights alone


def test_a_gpt_block_keeps_sixteen_activations_and_the_log_sum_exps():
    """examples/gpt.py's block keeps what PyTorch's keeps: sixteen (b, t, d) activations (the
    LayerNorms' and the projections' inputs, q, k and v, the attention output, the MLP's
    widths) and one log-sum-exp per query row and head; the attention output reshaped to
    tokens is a view, not a copy."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "gpt.py"
    spec = importlib.util.spec_from_file_location("gpt_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    b, t, d, h = 2, 64, 32, 4
    block = mod.Block(d, h, 0.0)
    x = remat.randn(b, t, d, requires_grad=True)
    base = remat.memory_allocated()
    y = block(x)
    kept = remat.memory_allocated() - base
    assert kept == 16 * b * t * d * 4 + b * h * t * 4
    y.sum().backward()


def test_multihead_attention_mask_shapes_are_checked():
    m = nn.MultiheadAttention(4, 2, batch_first=True)
    q, kv = remat.randn(3, 5, 4), remat.randn(3, 6, 4)
    with pytest.raises(remat.ShapeError, match=r"2-D attn_mask is \(5, 5\), but should be \(5, 6"):
        m(q, kv, kv, attn_mask=remat.zeros(5, 5))
    with pytest.raises(remat.ShapeError, match=r"3-D attn_mask is \(3, 5, 6\), but should be"):
        m(q, kv, kv, attn_mask=remat.zeros(3, 5, 6))
    with pytest.raises(remat.ShapeError, match="attn_mask must be 2-D or 3-D"):
        m(q, kv, kv, attn_mask=remat.zeros(1, 1, 5, 6))
    with pytest.raises(remat.ShapeError, match=r"key_padding_mask must have shape \(3, 6\)"):
        m(q, kv, kv, key_padding_mask=remat.zeros(3, 5, dtype=remat.bool_))
    # The shapes PyTorch accepts still work, with add_bias_kv's extra position too.
    m2 = nn.MultiheadAttention(4, 2, batch_first=True, add_bias_kv=True, add_zero_attn=True)
    out, w = m2(q, kv, kv, attn_mask=remat.zeros(6, 5, 6),
                key_padding_mask=remat.zeros(3, 6, dtype=remat.bool_))
    assert out.shape == (3, 5, 4) and w.shape == (3, 5, 8)
