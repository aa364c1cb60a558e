"""remat.nn.utils: gradient clipping by norm and by value, non-finite gradients."""

import math
import numpy as np
import pytest
import remat
from remat import nn


def test_clip_grad_norm_scales_all_gradients_together():
    a = remat.tensor([3.0], requires_grad=True)
    b = remat.tensor([4.0], requires_grad=True)
    (a * a / 2 + b * b / 2).sum().backward()  # grads 3 and 4: total norm 5
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    coef = 1.0 / (5.0 + 1e-6)
    assert a.grad.item() == pytest.approx(3 * coef) and b.grad.item() == pytest.approx(4 * coef)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0)  # below: untouched
    assert total.item() == pytest.approx(1.0, rel=1e-5)
    inf = nn.utils.clip_grad_norm_([a, b], max_norm=1.0, norm_type=float("inf"))
    assert inf.item() == pytest.approx(4 * coef, rel=1e-5)


def test_clip_grad_norm_float64_dtype_and_exact_scaling():
    rng = np.random.default_rng(4)
    ga, gb = rng.standard_normal((3, 4)) * 3, rng.standard_normal(5) * 3
    a, b = remat.zeros(3, 4, dtype=remat.float64), remat.zeros(5, dtype=remat.float64)
    a.requires_grad_(True)
    b.requires_grad_(True)
    a.grad, b.grad = remat.tensor(ga), remat.tensor(gb)
    total = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert total.dtype == remat.float64 and total.shape == ()
    want = np.linalg.norm([np.linalg.norm(ga), np.linalg.norm(gb)])
    np.testing.assert_allclose(total.item(), want, rtol=1e-15)
    coef = 1.0 / (total.item() + 1e-6)  # computed in float64, as PyTorch does
    np.testing.assert_allclose(a.grad.detach().numpy(), ga * coef, rtol=1e-15)
    np.testing.assert_allclose(b.grad.detach().numpy(), gb * coef, rtol=1e-15)
    # float32 gradients: a float32 total; mixed float32/float64: promoted to float64
    c = remat.zeros(2, requires_grad=True)
    c.grad = remat.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_([c], 10.0).dtype == remat.float32
    assert nn.utils.clip_grad_norm_([c, a], 10.0).dtype == remat.float64
    assert c.grad.dtype == remat.float32
    assert nn.utils.get_total_norm([]).dtype == remat.float32


def test_clip_grad_norm_nonfinite_gradients_scale_like_pytorch():
    p = remat.zeros(3, requires_grad=True)
    q = remat.zeros(2, requires_grad=True)
    p.grad = remat.tensor([1.0, float("nan"), 2.0])
    q.grad = remat.tensor([3.0, 4.0])
    total = nn.utils.clip_grad_norm_([p, q], 1.0)
    assert math.isnan(total.item())
    assert np.isnan(p.grad.numpy()).all() and np.isnan(q.grad.numpy()).all()  # scaled by NaN
    p.grad = remat.tensor([1.0, float("inf"), 2.0])
    q.grad = remat.tensor([3.0, 4.0])
    total = nn.utils.clip_grad_norm_([p, q], 1.0)
    assert total.item() == float("inf")
    # scaled by 0: the infinite element becomes NaN, the others 0
    np.testing.assert_array_equal(np.isnan(p.grad.detach().numpy()), [False, True, False])
    np.testing.assert_array_equal(q.grad.detach().numpy(), [0.0, 0.0])
    with pytest.warns(UserWarning, match="empty generator"):
        nn.utils.clip_grad_norm_((x for x in []), 1.0)


def test_clip_grad_value_and_nonfinite_error():
    p = remat.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (p * p).sum().backward()
    nn.utils.clip_grad_value_(p, 1.5)
    np.testing.assert_array_equal(p.grad.detach().numpy(), [1.5, -1.5, 1.5])
    p.grad = remat.tensor([float("inf"), 0.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
