"""`F.binary_cross_entropy` / `nn.BCELoss`: PyTorch's clamped formula and its gradient (finite
at probabilities of exactly 0 and 1), weights and reductions, the target's gradient, second
order, and the errors; compared with PyTorch where it is installed."""

import numpy as np
import pytest

import remat
import remat.nn as nn
import remat.nn.functional as F


def np_bce(x, t, w=None):
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100.0) + (1 - t) * np.maximum(np.log1p(-x), -100.0))
    return loss if w is None else loss * w


def test_values_at_the_boundaries_are_clamped():
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.3])
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.6])
    got = F.binary_cross_entropy(remat.tensor(x, dtype=remat.float64),
                                 remat.tensor(t, dtype=remat.float64), reduction="none")
    np.testing.assert_allclose(got.numpy(), np_bce(x, t), rtol=1e-12)
    assert got.numpy()[0] == 100.0 and got.numpy()[2] == 0.0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weight_and_reduction(reduction):
    rng = np.random.default_rng(0)
    x, t = rng.uniform(0.01, 0.99, (4, 3)), rng.uniform(0, 1, (4, 3))
    w = rng.uniform(0.5, 2.0, (3,))
    got = nn.BCELoss(weight=remat.tensor(w), reduction=reduction)(
        remat.tensor(x, dtype=remat.float64), remat.tensor(t, dtype=remat.float64))
    ref = np_bce(x, t, w)
    ref = {"mean": ref.mean(), "sum": ref.sum(), "none": ref}[reduction]
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)


def test_input_gradient_is_pytorchs_formula_even_at_0_and_1():
    x = np.array([0.0, 1.0, 0.0, 0.25, 1.0])
    t = np.array([1.0, 0.0, 0.0, 0.5, 1.0])
    xt = remat.tensor(x, dtype=remat.float64, requires_grad=True)
    F.binary_cross_entropy(xt, remat.tensor(t, dtype=remat.float64), reduction="sum").backward()
    ref = (x - t) / np.maximum(x * (1 - x), 1e-12)
    np.testing.assert_allclose(xt.grad.numpy(), ref, rtol=1e-12)
    assert np.isfinite(xt.grad.numpy()).all()


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def test_gradients_of_input_and_target_match_finite_differences():
    rng = np.random.default_rng(1)
    x, t = rng.uniform(0.1, 0.9, (3, 2)), rng.uniform(0.1, 0.9, (3, 2))
    xt = remat.tensor(x, dtype=remat.float64, requires_grad=True)
    tt = remat.tensor(t, dtype=remat.float64, requires_grad=True)
    F.binary_cross_entropy(xt, tt).backward()
    np.testing.assert_allclose(xt.grad.numpy(), _fd(lambda v: np_bce(v, t).mean(), x), rtol=1e-6)
    np.testing.assert_allclose(tt.grad.numpy(), _fd(lambda v: np_bce(x, v).mean(), t), rtol=1e-6)


def test_second_order_matches_finite_differences_of_the_gradient():
    rng = np.random.default_rng(2)
    x, t = rng.uniform(0.1, 0.9, (4,)), rng.uniform(0, 1, (4,))
    xt = remat.tensor(x, dtype=remat.float64, requires_grad=True)
    (g,) = remat.grad(F.binary_cross_entropy(xt, remat.tensor(t, dtype=remat.float64),
                                             reduction="sum"), [xt], create_graph=True)
    (h,) = remat.grad(g.sum(), [xt])
    grad = lambda v: ((v - t) / (v * (1 - v))).sum()  # noqa: E731
    np.testing.assert_allclose(h.numpy(), _fd(grad, x), rtol=1e-5)


def test_checkpointed_loss_is_bit_identical():
    from remat.checkpoint import checkpoint
    rng = np.random.default_rng(3)
    w = remat.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    x, t = remat.tensor(rng.standard_normal((4, 5))), remat.tensor(rng.uniform(0, 1, (4, 3)))

    def f(w):
        return F.binary_cross_entropy((x @ w).sigmoid(), t)

    f(w).backward()
    plain = w.grad.numpy().copy()
    w.grad = None
    checkpoint(f, w).backward()
    np.testing.assert_array_equal(w.grad.numpy(), plain)


def test_errors_name_the_op():
    with pytest.raises(ValueError, match="binary_cross_entropy.*between 0 and 1"):
        F.binary_cross_entropy(remat.tensor([1.5]), remat.tensor([1.0]))
    with pytest.raises(ValueError, match="binary_cross_entropy.*between 0 and 1"):
        F.binary_cross_entropy(remat.tensor([float("nan")]), remat.tensor([1.0]))
    with pytest.raises(remat.ShapeError, match="binary_cross_entropy"):
        F.binary_cross_entropy(remat.tensor([0.5, 0.5]), remat.tensor([1.0]))
    with pytest.raises(ValueError, match="reduction"):
        nn.BCELoss(reduction="avg")(remat.tensor([0.5]), remat.tensor([1.0]))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(0, 1, 10), [0.0, 1.0]]).astype(np.float32)
    t = np.concatenate([rng.uniform(0, 1, 10), [1.0, 0.0]]).astype(np.float32)
    w = rng.uniform(0.5, 2, 12).astype(np.float32)
    for reduction in ("mean", "sum", "none"):
        xr = remat.tensor(x, requires_grad=True)
        tr = remat.tensor(t, requires_grad=True)
        lr = F.binary_cross_entropy(xr, tr, weight=remat.tensor(w), reduction=reduction)
        xp = torch.tensor(x, requires_grad=True)
        tp = torch.tensor(t, requires_grad=True)
        lp = torch.nn.functional.binary_cross_entropy(xp, tp, weight=torch.tensor(w),
                                                      reduction=reduction)
        np.testing.assert_allclose(lr.detach().numpy(), lp.detach().numpy(), rtol=1e-6)
        lr.sum().backward()
        lp.sum().backward()
        np.testing.assert_allclose(xr.grad.numpy(), xp.grad.numpy(), rtol=1e-5)
        np.testing.assert_allclose(tr.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-5)
