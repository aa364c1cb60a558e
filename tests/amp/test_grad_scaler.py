"""``remat.amp.GradScaler`` as ``torch.amp.GradScaler``: scaling, unscaling, skipped steps
on inf/NaN, growth and backoff, per-optimizer stages, state dicts, and clipping after
``unscale_``."""

import math
import warnings

import numpy as np
import pytest

import remat
import remat.nn as nn


def _setup(scale=1024.0, **kw):
    remat.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = remat.optim.SGD(model.parameters(), lr=0.1)
    return model, opt, remat.amp.GradScaler("cpu", init_scale=scale, **kw)


def test_scaled_step_equals_the_unscaled_step():
    model, opt, scaler = _setup()
    ref = nn.Linear(3, 2)
    ref.load_state_dict(model.state_dict())
    ref_opt = remat.optim.SGD(ref.parameters(), lr=0.1)
    x = remat.randn(4, 3)
    scaler.scale(model(x).pow(2).mean()).backward()
    assert model.weight.grad.abs().max().item() > 10  # scaled by 1024
    scaler.step(opt)
    scaler.update()
    ref(x).pow(2).mean().backward()
    ref_opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy(), ref.weight.detach().numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_inf_or_nan_skips_the_step_and_backs_off(bad):
    model, opt, scaler = _setup()
    before = model.weight.detach().numpy().copy()
    (model(remat.ones(1, 3)).sum() * bad).backward()
    assert scaler.step(opt) is None
    scaler.update()
    np.testing.assert_array_equal(model.weight.detach().numpy(), before)
    assert scaler.get_scale() == 512.0


def test_growth_after_the_interval():
    model, opt, scaler = _setup(scale=4.0, growth_interval=3)
    scales = []
    for _ in range(7):
        opt.zero_grad()
        scaler.scale(model(remat.ones(1, 3)).sum()).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [4.0, 4.0, 8.0, 8.0, 8.0, 16.0, 16.0]


def test_clip_grad_norm_after_unscale_sees_true_gradients():
    model, opt, scaler = _setup(scale=2.0**10)
    scaler.scale(model(remat.ones(2, 3)).sum()).backward()
    scaler.unscale_(opt)
    true = np.sqrt(sum(float((p.grad * p.grad).sum().item()) for p in model.parameters()))
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    assert abs(float(norm) - true) < 1e-5 * true
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)  # no second unscale
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0**10


def test_state_dict_round_trip_and_disabled_scaler():
    _, opt, scaler = _setup(scale=8.0, growth_interval=5)
    other = remat.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 8.0 and other.get_growth_interval() == 5
    off = remat.amp.GradScaler("cpu", enabled=False)
    x = remat.tensor(2.0)
    assert off.scale(x) is x and off.state_dict() == {} and off.get_scale() == 1.0
    with pytest.raises(RuntimeError, match="disabled instance"):
        other.load_state_dict({})


def test_float16_gradients_are_refused():
    w = nn.Parameter(remat.ones(2).half())
    opt = remat.optim.SGD([w], lr=0.1)
    scaler = remat.amp.GradScaler("cpu")
    scaler.scale(w.float().sum()).backward()
    with pytest.raises(ValueError, match="unscale FP16 gradients"):
        scaler.unscale_(opt)


def test_cuda_scaler_without_a_gpu_warns_and_passes_through():
    if remat.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        s = remat.amp.GradScaler()
    assert not s.is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not remat.cuda.amp.GradScaler().is_enabled()


def test_bad_factors_raise():
    with pytest.raises(ValueError, match="growth_factor"):
        remat.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(ValueError, match="backoff_factor"):
        remat.amp.GradScaler("cpu", backoff_factor=1.5)
