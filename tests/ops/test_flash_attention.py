"""``scaled_dot_product_attention``'s tiled kernel, as users call it: the bytes a qkv projection
plus attention keeps between forward and backward (q, k, v, the output and a log-sum-exp per
row, never the ``T × T`` weights), grouped-query attention, ``dots_saveable`` keeping the
output, and gradients identical under every checkpoint entry point."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import remat
import remat.nn.functional as F
from remat import checkpoint_policies as cp
from remat import nn

RNG = np.random.default_rng(0)


def _qkv_attention(x, proj, heads, causal):
    b, t, c = x.shape
    q, k, v = proj(x).split(c, dim=-1)
    q, k, v = (z.reshape(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("t", [128, 512])
def test_kept_bytes_are_qkv_output_and_logsumexp(t, causal):
    b, heads, c = 4, 4, 256
    remat.manual_seed(0)
    proj = nn.Linear(c, 3 * c)
    x = remat.randn(b, t, c)
    gc.collect()
    base = remat.memory_allocated()
    out = _qkv_attention(x, proj, heads, causal)
    kept = remat.memory_allocated() - base
    qkv = b * t * 3 * c * 4
    packed = b * heads * t * (c // heads + 1) * 4  # the output rows and their log-sum-exps
    assert kept == qkv + packed, (kept, qkv + packed)
    # PyTorch keeps 8.0 MiB here at T = 512 (q, k, v, the output, the log-sum-exps); the
    # math path's T × T weights would add b * heads * t * t * 4 bytes.
    assert kept < qkv + b * heads * t * t * 4
    out.sum().backward()
    del out


def _math(q, k, v, causal):
    s = (q @ np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_attention(causal):
    q = RNG.standard_normal((2, 6, 9, 8))
    k = RNG.standard_normal((2, 2, 11, 8))
    v = RNG.standard_normal((2, 2, 11, 5))
    got = F.scaled_dot_product_attention(
        remat.tensor(q), remat.tensor(k), remat.tensor(v), is_causal=causal, enable_gqa=True
    )
    want = _math(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1), causal)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(remat.ShapeError, match="enable_gqa"):
        k4, v4 = k[:, :1].repeat(4, 1), v[:, :1].repeat(4, 1)  # 4 heads do not divide 6
        F.scaled_dot_product_attention(
            remat.tensor(q), remat.tensor(k4), remat.tensor(v4), enable_gqa=True
        )


def _block(x, w, causal):
    b, t, c = x.shape
    qkv = x @ w
    q, k, v = (z.reshape(b, t, 4, c // 4).transpose(1, 2) for z in qkv.split(c, dim=-1))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return y.transpose(1, 2).reshape(b, t, c).tanh()


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_identical_under_every_checkpoint_entry_point(causal):
    remat.manual_seed(1)
    w = remat.randn(32, 96, requires_grad=True)
    x = remat.randn(2, 50, 32, requires_grad=True)

    def grads(run):
        w.grad = x.grad = None
        run().pow(2).mean().backward()
        return w.grad.numpy().copy(), x.grad.numpy().copy()

    plain = grads(lambda: _block(x, w, causal))
    runs = {
        "checkpoint": lambda: remat.checkpoint(_block, x, w, causal, use_reentrant=False),
        "segment": lambda: remat.checkpoint_segment(_block, x, w, causal),
        "dots_saveable": lambda: remat.checkpoint(_block, x, w, causal, policy=cp.dots_saveable),
        "scope": lambda: _scoped(x, w, causal),
    }
    for name, run in runs.items():
        got = grads(run)
        assert all(np.array_equal(a, b) for a, b in zip(got, plain)), name


def _scoped(x, w, causal):
    with remat.checkpoint_scope():
        return _block(x, w, causal)


def test_dots_saveable_keeps_the_attention_output_not_the_weights():
    remat.manual_seed(2)
    b, t, c = 2, 256, 64
    w = remat.randn(c, 3 * c, requires_grad=True)
    x = remat.randn(b, t, c)
    gc.collect()
    base = remat.memory_allocated()
    y = remat.checkpoint(_block, x, w, True, policy=cp.dots_saveable)
    kept = remat.memory_allocated() - base
    # The qkv product and the packed attention output (with its log-sum-exps), and the
    # block's output; never the 2 x 4 x 256 x 256 weights (2 MiB).
    qkv, packed, out = b * t * 3 * c * 4, b * 4 * t * (c // 4 + 1) * 4, b * t * c * 4
    assert kept == qkv + packed + out, (kept, qkv + packed + out)
    y.sum().backward()
