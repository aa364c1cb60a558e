"""remat.optim.lr_scheduler against the closed forms of PyTorch's schedules, over many
steps; momentum cycling of OneCycleLR; SequentialLR hand-over; state dicts; errors."""

import math

import numpy as np
import pytest

import remat
from remat.optim import lr_scheduler as sched


def _opt(kind="sgd", lr=0.1):
    p = remat.zeros(2, requires_grad=True)
    if kind == "sgd":
        return remat.optim.SGD([p], lr=lr, momentum=0.9)
    return remat.optim.Adam([p], lr=lr)


def _lrs(opt, s, steps):
    out = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        s.step()
        out.append(s.get_last_lr()[0])
        assert opt.param_groups[0]["lr"] == out[-1]
    return np.array(out)


@pytest.mark.parametrize(
    "make, closed",
    [
        (lambda o: sched.StepLR(o, 7, 0.5), lambda e: 0.1 * 0.5 ** (e // 7)),
        (lambda o: sched.MultiStepLR(o, [3, 10, 10]), lambda e: 0.1 * 0.1 ** (
            (e >= 3) + 2 * (e >= 10))),
        (lambda o: sched.ExponentialLR(o, 0.9), lambda e: 0.1 * 0.9**e),
        (lambda o: sched.CosineAnnealingLR(o, 12, 0.01),
         lambda e: 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * e / 12)) / 2),
        (lambda o: sched.LambdaLR(o, lambda e: 1 / (e + 1)), lambda e: 0.1 / (e + 1)),
        (lambda o: sched.LinearLR(o, 0.2, 1.0, 8), lambda e: 0.1 * (0.2 + 0.8 * min(e, 8) / 8)),
        (lambda o: sched.ConstantLR(o, 0.5, 4), lambda e: 0.1 * (0.5 if e < 4 else 1.0)),
    ],
)
def test_closed_forms(make, closed):
    opt = _opt()
    got = _lrs(opt, make(opt), 40)
    np.testing.assert_allclose(got, [closed(e) for e in range(41)], rtol=1e-12)


def test_one_cycle_two_and_three_phase_with_momentum():
    opt = _opt("sgd")
    s = sched.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25)
    lrs, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
    for _ in range(19):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    up_end = 0.25 * 20 - 1
    init, low = 1.0 / 25, 1.0 / 25 / 1e4

    def cos(a, b, pct):
        return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)

    for e in range(20):
        if e <= up_end:
            want, mom = cos(init, 1.0, e / up_end), cos(0.95, 0.85, e / up_end)
        else:
            pct = (e - up_end) / (19 - up_end)
            want, mom = cos(1.0, low, pct), cos(0.85, 0.95, pct)
        assert lrs[e] == pytest.approx(want, rel=1e-12)
        assert moms[e] == pytest.approx(mom, rel=1e-12)
    with pytest.raises(ValueError, match="Tried to step 21"):
        s.step()
        s.step()
    adam = _opt("adam")
    sched.OneCycleLR(adam, 0.5, total_steps=10, three_phase=True, anneal_strategy="linear")
    assert adam.param_groups[0]["betas"][0] == 0.95 and adam.param_groups[0]["lr"] == 0.02


def test_sequential_hands_over_at_milestones():
    opt = _opt()
    s = sched.SequentialLR(opt, [sched.LinearLR(opt, 0.1, 1.0, 5),
                                 sched.ExponentialLR(opt, 0.5)], milestones=[5])
    got = _lrs(opt, s, 8)
    want = [0.1 * (0.1 + 0.9 * e / 5) for e in range(5)] + [0.1 * 0.5**k for k in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_state_dict_round_trip_and_resume():
    opt = _opt()
    s = sched.StepLR(opt, 3, 0.5)
    for _ in range(4):
        opt.step()
        s.step()
    state = s.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 4
    opt2 = _opt()
    s2 = sched.StepLR(opt2, 3, 0.5)
    s2.load_state_dict(state)
    s.step()
    s2.step()
    assert s2.get_last_lr() == s.get_last_lr()
    lam = sched.LambdaLR(opt2, lambda e: 1.0)
    assert lam.state_dict()["lr_lambdas"] == [None]


def test_scheduler_errors_name_the_argument():
    opt = _opt()
    with pytest.raises(ValueError, match="step_size"):
        sched.StepLR(opt, 0)
    with pytest.raises(ValueError, match="T_max"):
        sched.CosineAnnealingLR(opt, 0)
    with pytest.raises(ValueError, match="total_steps"):
        sched.OneCycleLR(opt, 1.0)
    with pytest.raises(ValueError, match="anneal_strategy"):
        sched.OneCycleLR(opt, 1.0, total_steps=5, anneal_strategy="exp")
    with pytest.raises(TypeError, match="not an Optimizer"):
        sched.StepLR(object(), 1)
    with pytest.raises(ValueError, match="lr_lambdas"):
        sched.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0])
    with pytest.raises(ValueError, match="milestone"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 1)], milestones=[3])
