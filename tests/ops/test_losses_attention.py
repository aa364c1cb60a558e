"""Losses with PyTorch's options (cross_entropy: weight, ignore_index, reduction,
label_smoothing, N-d logits, probability targets; nll_loss; binary_cross_entropy_with_logits
with weight/pos_weight; l1_loss; mse_loss reductions), scaled_dot_product_attention (masks,
causal, scale, dropout) and layer_norm's PyTorch signature: values against NumPy formulas,
float64 finite-difference and second-order gradients, the loss modules, the attention's
memory, and errors."""

import numpy as np
import pytest
from conftest import check_grad

import remat
import remat.nn.functional as F
from remat import nn

RNG = np.random.default_rng(0)


def _logsoftmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_cross_entropy(x, t, w=None, ignore=-100, reduction="mean", ls=0.0):
    """PyTorch's formulas for class-index targets, axis 1 the classes."""
    c = x.shape[1]
    logp = _logsoftmax(x, 1)
    w = np.ones(c) if w is None else w
    keep = t != ignore
    safe = np.where(keep, t, 0)
    picked = np.take_along_axis(logp, safe[:, None], 1)[:, 0]
    wt = np.where(keep, w[safe], 0.0)
    nll = -picked * wt
    smooth = np.where(keep, -(logp * w[None, :]).sum(1), 0.0)
    if reduction == "mean":
        nll, smooth = nll.sum() / wt.sum(), smooth.sum() / wt.sum()
    elif reduction == "sum":
        nll, smooth = nll.sum(), smooth.sum()
    return (1 - ls) * nll + ls / c * smooth


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_options(reduction, weighted, ignore, ls):
    x = RNG.standard_normal((7, 5))
    t = RNG.integers(0, 5, 7)
    if ignore:
        t[[1, 4]] = -100
    w = RNG.random(5) + 0.1 if weighted else None
    got = F.cross_entropy(remat.tensor(x), remat.tensor(t),
                          weight=None if w is None else remat.tensor(w), reduction=reduction,
                          label_smoothing=ls)
    np.testing.assert_allclose(got.numpy(), np_cross_entropy(x, t, w, -100, reduction, ls),
                               rtol=1e-10, atol=1e-12)
    check_grad(lambda a: F.cross_entropy(a, remat.tensor(t), reduction=reduction,
                                         label_smoothing=ls,
                                         weight=None if w is None else remat.tensor(w)), x)


def test_cross_entropy_nd_logits_and_probabilities():
    x = RNG.standard_normal((2, 4, 3))
    t = RNG.integers(0, 4, (2, 3))
    got = F.cross_entropy(remat.tensor(x), remat.tensor(t))
    flat = np.moveaxis(x, 1, -1).reshape(-1, 4)
    np.testing.assert_allclose(got.item(), np_cross_entropy(flat, t.reshape(-1)), rtol=1e-10)
    p = RNG.random((5, 4))
    p /= p.sum(1, keepdims=True)
    xs = RNG.standard_normal((5, 4))
    w = RNG.random(4)
    got = F.cross_entropy(remat.tensor(xs), remat.tensor(p), weight=remat.tensor(w),
                          label_smoothing=0.1)
    q = p * 0.9 + 0.1 / 4
    want = -(_logsoftmax(xs, 1) * q * w).sum() / 5
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    check_grad(lambda a, b: F.cross_entropy(a, b), xs, p)


def test_nll_bce_l1_mse():
    x = RNG.standard_normal((6, 3))
    t = np.array([0, 2, 1, -100, 2, 0])
    w = np.array([0.5, 1.0, 2.0])
    logp = _logsoftmax(x, 1)
    got = F.nll_loss(remat.tensor(logp), remat.tensor(t), weight=remat.tensor(w))
    keep = t != -100
    safe = np.where(keep, t, 0)
    want = -(logp[np.arange(6), safe] * w[safe] * keep).sum() / (w[safe] * keep).sum()
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    y = RNG.random((6, 3))
    pw = np.array([1.5, 0.5, 2.0])
    got = F.binary_cross_entropy_with_logits(remat.tensor(x), remat.tensor(y),
                                             weight=remat.tensor(w), pos_weight=remat.tensor(pw),
                                             reduction="sum")
    sig = 1 / (1 + np.exp(-x))
    want = (-(pw * y * np.log(sig) + (1 - y) * np.log(1 - sig)) * w).sum()
    np.testing.assert_allclose(got.item(), want, rtol=1e-10)
    check_grad(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"), x, y)
    np.testing.assert_allclose(F.l1_loss(remat.tensor(x), remat.tensor(y)).item(),
                               np.abs(x - y).mean(), rtol=1e-12)
    np.testing.assert_allclose(F.mse_loss(remat.tensor(x), remat.tensor(y), reduction="none")
                               .numpy(), (x - y) ** 2, rtol=1e-12)
    check_grad(lambda a, b: F.l1_loss(a, b, reduction="sum"), x, y)


def test_second_order_through_the_losses():
    x = remat.tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    t = remat.tensor([0, 1, 2, 1])
    (g,) = remat.grad(F.cross_entropy(x, t, label_smoothing=0.1), [x], create_graph=True)
    (h,) = remat.grad((g * g).sum(), [x])
    assert np.all(np.isfinite(h.numpy())) and np.abs(h.numpy()).sum() > 0


def test_loss_modules_and_errors():
    x, t = remat.randn(4, 3), remat.tensor([0, 1, 2, 0])
    assert nn.CrossEntropyLoss(reduction="sum")(x, t).item() == pytest.approx(
        F.cross_entropy(x, t, reduction="sum").item())
    assert nn.NLLLoss(ignore_index=0)(x.log_softmax(1), t).shape == ()
    assert nn.BCEWithLogitsLoss(reduction="none")(x, remat.ones(4, 3)).shape == (4, 3)
    assert repr(nn.L1Loss(reduction="sum")) == "L1Loss(reduction='sum')"
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=2.0)
    with pytest.raises(ValueError, match="out of bounds"):
        F.cross_entropy(x, remat.tensor([0, 1, 5, 0]), reduction="sum")
    with pytest.raises(remat.ShapeError, match="cross_entropy"):
        F.cross_entropy(remat.randn(2, 3, 4), remat.tensor([0, 1]))
    with pytest.raises(remat.ShapeError, match="weight"):
        F.nll_loss(x, t, weight=remat.ones(2))
    with pytest.raises(ValueError, match="reduction"):
        F.l1_loss(x, x, reduction="bogus")


# --------------------------------------------------------------------------- attention

def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    if causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), bool))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "float", "scale"])
def test_sdpa_values_and_gradients(kind):
    q, k, v = (RNG.standard_normal(s) for s in [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)])
    mask = None
    if kind == "bool":
        mask = RNG.random((4, 5)) > 0.4
        mask[:, 0] = True
    elif kind == "float":
        mask = RNG.standard_normal((1, 3, 4, 5))
    kw = {"is_causal": kind == "causal", "scale": 0.3 if kind == "scale" else None}
    got = F.scaled_dot_product_attention(remat.tensor(q), remat.tensor(k), remat.tensor(v),
                                         attn_mask=None if mask is None else remat.tensor(mask),
                                         **kw)
    np.testing.assert_allclose(got.numpy(), np_sdpa(q, k, v, mask, kw["is_causal"],
                                                    kw["scale"]), rtol=1e-10, atol=1e-12)
    small = [a[:1, :1] for a in (q, k, v)]
    m = None if mask is None else remat.tensor(mask if mask.ndim == 2 else mask[:1, :1])
    check_grad(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=m, **kw),
               *small)


def test_sdpa_keeps_one_attention_matrix():
    b, h, t, e = 2, 2, 64, 8
    q, k, v = (remat.randn(b, h, t, e, requires_grad=True) for _ in range(3))
    before = remat.memory_allocated()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    kept = remat.memory_allocated() - before
    matrix = b * h * t * t * 4
    # the output, the (B, H, L, S) softmax weights, and the small (L, S) causal mask
    assert kept <= out.nbytes + matrix + t * t
    out.sum().backward()
    assert q.grad is not None and k.grad is not None and v.grad is not None


def test_sdpa_dropout_is_seeded_and_errors():
    q = remat.randn(1, 2, 4, 4)
    remat.manual_seed(3)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    remat.manual_seed(3)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(remat.ShapeError, match="last dimension"):
        F.scaled_dot_product_attention(q, remat.randn(1, 2, 4, 3), q)
    with pytest.raises(remat.ShapeError, match="sequence length"):
        F.scaled_dot_product_attention(q, q, remat.randn(1, 2, 5, 4))
    with pytest.raises(ValueError, match="is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=remat.ones(4, 4, dtype=remat.bool_),
                                       is_causal=True)
    with pytest.raises(remat.ShapeError, match="attn_mask"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=remat.ones(3, 4, dtype=remat.bool_))
    with pytest.raises(remat.DTypeError, match="attn_mask"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=remat.ones(4, 4, dtype=remat.int64))


def test_layer_norm_pytorch_signature():
    x = RNG.standard_normal((2, 3, 4))
    got = F.layer_norm(remat.tensor(x), (3, 4), weight=remat.ones(3, 4, dtype=remat.float64))
    flat = x.reshape(2, 12)
    want = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got.numpy(), want.reshape(2, 3, 4), rtol=1e-9)
    with pytest.raises(remat.ShapeError, match="trailing"):
        F.layer_norm(remat.tensor(x), (4, 4))
    with pytest.raises(TypeError, match="normalized_shape"):
        F.layer_norm(remat.tensor(x), remat.ones(4))


@pytest.mark.parametrize("target,expected", [(1.0, -0.5), (0.0, 0.5), (0.25, 0.25)])
def test_bce_with_logits_gradient_at_a_zero_logit(target, expected):
    # d/dx = sigmoid(x) - t = 0.5 - t at x = 0 (zero-initialised logits hit exactly this);
    # the composed stable formula once gave abs'/relu' subgradients of 0 there.
    x = remat.zeros(1, requires_grad=True)
    t = remat.tensor([target])
    F.binary_cross_entropy_with_logits(x, t).backward()
    assert x.grad.item() == pytest.approx(expected)
    xw = remat.zeros(1, requires_grad=True)
    F.binary_cross_entropy_with_logits(xw, t, pos_weight=remat.tensor([3.0])).backward()
    # (pw t + 1 - t) sigmoid(x) - pw t at x = 0
    assert xw.grad.item() == pytest.approx((3 * target + 1 - target) * 0.5 - 3 * target)


@pytest.mark.parametrize("name, fn", [("mse_loss", lambda d: d * d), ("l1_loss", np.abs)])
def test_regression_losses_broadcast_a_target_with_a_warning(name, fn):
    loss = getattr(F, name)
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    xt, yt = remat.tensor(x, requires_grad=True), remat.tensor(y, requires_grad=True)
    with pytest.warns(UserWarning, match="different to the input size"):
        got = loss(xt, yt)
    np.testing.assert_allclose(got.item(), fn(x - y).mean(), rtol=1e-12)
    got.backward()
    # gradients sum back over the broadcast axis
    d = x - y
    dfn = 2 * d if name == "mse_loss" else np.sign(d)
    np.testing.assert_allclose(xt.grad.numpy(), dfn / 12, rtol=1e-12)
    np.testing.assert_allclose(yt.grad.numpy(), -(dfn / 12).sum(0), rtol=1e-12)
    with pytest.warns(UserWarning):
        none = loss(remat.tensor(RNG.standard_normal((2, 1, 4))), remat.tensor(y[:3, None]),
                    reduction="none")
    assert none.shape == (2, 3, 4)
    with pytest.warns(UserWarning):  # the loss modules follow the same rule
        mod = getattr(nn, "MSELoss" if name == "mse_loss" else "L1Loss")()
        assert mod(remat.tensor(x), remat.tensor(y)).item() == pytest.approx(fn(x - y).mean())
    with pytest.raises(remat.ShapeError), pytest.warns(UserWarning):
        loss(remat.tensor(x), remat.tensor(RNG.standard_normal(3)))


def test_regression_losses_weight_and_mixed_dtypes():
    x, y, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.random((3, 4))
    got = F.mse_loss(remat.tensor(x), remat.tensor(y), weight=remat.tensor(w))
    np.testing.assert_allclose(got.item(), (w * (x - y) ** 2).sum() / w.sum(), rtol=1e-12)
    got = F.l1_loss(remat.tensor(x), remat.tensor(y), weight=remat.tensor(w), reduction="sum")
    np.testing.assert_allclose(got.item(), (w * np.abs(x - y)).sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="same size"):
        F.mse_loss(remat.tensor(x), remat.tensor(y), weight=remat.ones(4))
    # a float32 target next to a float64 input gets its gradient too (PyTorch promotes)
    t = remat.tensor(y.astype(np.float32), requires_grad=True)
    xt = remat.tensor(x, requires_grad=True)
    loss = F.mse_loss(xt, t)
    assert loss.dtype == remat.float64
    loss.backward()
    assert t.grad.dtype == remat.float32
    np.testing.assert_allclose(t.grad.numpy(), -2 * (x - y.astype(np.float32)) / 12, rtol=1e-6)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_row_with_every_key_masked_is_zero_with_zero_gradient(kind):
    # PyTorch's safe softmax: a fully masked row gives 0 and passes no gradient (was NaN,
    # and NaN in all of v.grad).
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), \
        RNG.standard_normal((2, 5, 3))
    keep = np.ones((3, 5), bool)
    keep[1] = False
    mask = remat.tensor(keep if kind == "bool" else np.where(keep, 0.0, -np.inf))
    out = F.scaled_dot_product_attention(remat.tensor(q), remat.tensor(k), remat.tensor(v),
                                         attn_mask=mask)
    np.testing.assert_array_equal(out.numpy()[:, 1], np.zeros((2, 3)))
    g = check_grad(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask),
                   q, k, v)
    np.testing.assert_array_equal(g[0][:, 1], np.zeros((2, 4)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ls", [0.0, 0.1])
def test_cross_entropy_with_every_target_ignored_has_zero_gradient(reduction, ls):
    for shape, t in [((3, 4), [-100] * 3), ((2, 4, 3), [[-100] * 3] * 2)]:
        x = remat.tensor(RNG.standard_normal(shape), requires_grad=True)
        loss = F.cross_entropy(x, remat.tensor(t), reduction=reduction, label_smoothing=ls)
        assert np.isnan(loss.item()) if reduction == "mean" else not loss.detach().numpy().any()
        loss.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(shape))
    x = remat.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    F.nll_loss(x, remat.tensor([-100] * 3), weight=remat.tensor(np.ones(4)),
               reduction=reduction).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4)))


@pytest.mark.parametrize("loss", [F.mse_loss, F.l1_loss, nn.MSELoss(reduction="sum"),
                                  lambda a, b: F.binary_cross_entropy_with_logits(
                                      a, remat.sigmoid(b))])
def test_two_tensor_losses_of_mixed_float_dtypes_differentiate_both(loss):
    for swap in (False, True):
        x = remat.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
        y = remat.tensor(RNG.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
        (loss(y, x) if swap else loss(x, y)).backward()
        assert x.grad is not None and y.grad is not None
        assert (x.grad.dtype, y.grad.dtype) == (remat.float64, remat.float32)
