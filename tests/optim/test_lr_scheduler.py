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
    # As in PyTorch, resuming restores the optimizer too: the chainable forms scale its lr
    opt2.load_state_dict(opt.state_dict())
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


# ------------------------------------------------------------------ chained schedulers


def _chain(opt, scheds, steps):
    """Step every scheduler each epoch (as a PyTorch loop with several schedulers does)."""
    out = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        for s in scheds:
            s.step()
        out.append(opt.param_groups[0]["lr"])
        assert scheds[-1].get_last_lr()[0] == out[-1]
    return np.array(out)


def _cos(e, t):
    return (1 + math.cos(math.pi * e / t)) / 2


@pytest.mark.parametrize(
    "make, closed",
    [
        # chainable forms multiply: each scheduler scales the rate the other one left
        (lambda o: [sched.StepLR(o, 4, 0.5), sched.ExponentialLR(o, 0.95)],
         lambda e: 0.1 * 0.5 ** (e // 4) * 0.95**e),
        (lambda o: [sched.CosineAnnealingLR(o, 12), sched.MultiStepLR(o, [5, 9, 9], 0.5)],
         lambda e: 0.1 * _cos(e, 12) * 0.5 ** ((e >= 5) + 2 * (e >= 9))),
        (lambda o: [sched.LinearLR(o, 0.2, 1.0, 5), sched.ExponentialLR(o, 0.9)],
         lambda e: 0.1 * (0.2 + 0.8 * min(e, 5) / 5) * 0.9**e),
        (lambda o: [sched.ConstantLR(o, 0.5, 3), sched.StepLR(o, 2, 0.1)],
         lambda e: 0.1 * (0.5 if e < 3 else 1.0) * 0.1 ** (e // 2)),
        # LambdaLR is not chainable: stepped last, it sets base * lambda(e) whatever came before
        (lambda o: [sched.ExponentialLR(o, 0.5), sched.LambdaLR(o, lambda e: 1 / (e + 1))],
         lambda e: 0.1 / (e + 1)),
    ],
)
def test_chained_schedulers_compose(make, closed):
    opt = _opt()
    got = _chain(opt, make(opt), 12)
    np.testing.assert_allclose(got, [closed(e) for e in range(13)], rtol=1e-12)


def test_chained_step_and_exponential_hand_computed():
    opt = _opt()
    got = _chain(opt, [sched.StepLR(opt, 4, 0.5), sched.ExponentialLR(opt, 0.95)], 5)
    # epochs 1-3: 0.1 * 0.95^e; epoch 4: also halved
    want = [0.1, 0.095, 0.09025, 0.0857375, 0.0857375 * 0.95 * 0.5, 0.0857375 * 0.95**2 * 0.5]
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_cosine_recursive_form_follows_an_lr_changed_by_hand():
    opt = _opt(lr=1.0)
    s = sched.CosineAnnealingLR(opt, T_max=4)
    opt.step()
    s.step()
    assert s.get_last_lr()[0] == pytest.approx(_cos(1, 4), rel=1e-15)
    opt.param_groups[0]["lr"] = 0.5  # the next step scales this, PyTorch's recursive form
    opt.step()
    s.step()
    assert s.get_last_lr()[0] == pytest.approx(0.5 * _cos(2, 4) / _cos(1, 4), rel=1e-15)


def test_chained_scheduler_class_and_sequential_with_a_chained_one():
    opt = _opt(lr=1.0)
    s = sched.ChainedScheduler([sched.ConstantLR(opt, 0.5, 2), sched.ExponentialLR(opt, 0.5)])
    assert s.get_last_lr() == [0.5]
    got = _chain(opt, [s], 4)
    np.testing.assert_allclose(got, [0.5, 0.25, 0.25, 0.125, 0.0625], rtol=1e-15)
    assert len(s.state_dict()["_schedulers"]) == 2
    with pytest.raises(ValueError, match="at least one"):
        sched.ChainedScheduler([])
    # SequentialLR restarts the first scheduler; an ExponentialLR stepped alongside scales
    # whatever the active scheduler set
    opt = _opt(lr=1.0)
    seq = sched.SequentialLR(opt, [sched.ConstantLR(opt, 0.5, 2), sched.StepLR(opt, 2, 0.1)],
                             milestones=[3])
    exp = sched.ExponentialLR(opt, 0.5)
    got = _chain(opt, [seq, exp], 5)
    # e0: 0.5; e1: 0.5*.5; e2: constant ends (x2) then x.5 -> 0.25; e3: StepLR restarts at its
    # epoch 0 (closed form: the base 1.0) then x.5; e4: x.5; e5: StepLR epoch 2 (x0.1) x.5
    np.testing.assert_allclose(got, [0.5, 0.25, 0.25, 0.5, 0.25, 0.0125], rtol=1e-15)


def test_step_with_epoch_uses_the_closed_form_and_get_lr_warns_outside_step():
    opt = _opt()
    s = sched.StepLR(opt, 3, 0.5)
    s.step(7)
    assert s.last_epoch == 7 and s.get_last_lr() == [0.1 * 0.5**2]
    with pytest.warns(UserWarning, match="get_last_lr"):
        assert s.get_lr() == [0.1 * 0.5**2]  # epoch 7 is no multiple of 3: the current lr
    state = s.state_dict()
    assert state["_step_count"] == 2 and state["_is_initial"] is False
