"""Gradients of checkpointed gradients: a checkpointed region is recomputed once per backward
that needs it, at every level of ``create_graph``, however checkpoints and ``grad`` nest.

Ported from PyTorch's ``test/test_autograd.py::TestNestedCheckpoint`` (``test_nested_checkpoint``
and ``test_nested_checkpoint_two_children``, with early stop on and off) and JAX's
``tests/api_test.py`` (``test_remat_of_scan``, ``test_remat_of_cond`` under ``check_grads(...,
order=2, modes=["rev"])``). Each runs in two variants: *faithful*, spelled as the original
(``remat.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)``, ``remat.checkpoint(f)``),
and *substitute*, through remat's own entry point (``remat.checkpoint_segment``).

PyTorch's ``check_graph_dies`` walks ``grad_fn.next_functions`` and attaches weak references
to node metadata; remat's substitute asserts what that check stands for: once the result is
dropped, no more checkpoint state is alive than before and the byte counters are back where
they started.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import remat
import remat.utils.checkpoint as utils_checkpoint
from remat import checkpoint_policies as cp


# ---------------------------------------------------------------------------------------------
# PyTorch's TestNestedCheckpoint


def grad(fn):
    def wrapper(x):
        with remat.enable_grad():
            out = fn(x)
            (grad_input,) = remat.autograd.grad(out, inputs=(x,), create_graph=True)
        return grad_input

    return wrapper


def sum_(fn):
    def wrapped(x):
        return fn(x).sum()

    return wrapped


def faithful(fn):
    def wrapped(*args, **kwargs):
        return utils_checkpoint.checkpoint(fn, *args, use_reentrant=False, **kwargs)

    return wrapped


def substitute(fn):
    def wrapped(*args):
        return remat.checkpoint_segment(fn, *args)

    return wrapped


VARIANTS = {"faithful": faithful, "substitute": substitute}


def get_tests(fn, c):
    return (
        (fn, (c(fn), c(c(fn)))),
        (grad(fn), (grad(c(fn)), grad(c(c(fn))))),
        (
            grad(grad(fn)),
            (grad(c(grad(fn))), c(grad(grad(c(fn)))), grad(c(grad(c(fn))))),
        ),
        (
            grad(grad(grad(fn))),
            (grad(c(grad(grad(c(fn))))), grad(c(grad(c(grad(c(fn))))))),
        ),
    )


def check_graph_dies(fn):
    gc.collect()
    base = remat.memory_allocated()
    live = remat.live_checkpoint_state()

    def scope():
        a = remat.randn((), requires_grad=True, dtype=remat.float64)
        out = fn(a)
        assert out.requires_grad
        return float(out.item())

    scope()
    gc.collect()
    assert remat.live_checkpoint_state() == live, (remat.live_checkpoint_state(), live)
    assert remat.memory_allocated() == base


def f_chain(x):
    return x.sin().exp().sin()


def g_inner_grads(x):
    a = x.sin().exp().sin()
    b = x.sin().exp().sin()
    (ga,) = remat.autograd.grad(a, x)
    (gb,) = remat.autograd.grad(b, x)
    return x.sin()


@pytest.fixture(params=[True, False], ids=["early_stop", "no_early_stop"])
def early_stop(request):
    previous = remat.set_checkpoint_early_stop(request.param)
    yield request.param
    remat.set_checkpoint_early_stop(previous)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("fn", [f_chain, g_inner_grads], ids=["f", "g"])
def test_nested_checkpoint(early_stop, variant, fn):
    c = VARIANTS[variant]
    x = remat.randn((), requires_grad=True, dtype=remat.float64)
    for level, (expected_fn, actual_fns) in enumerate(get_tests(fn, c)):
        expected = expected_fn(x)
        for actual_fn in actual_fns:
            actual = actual_fn(x)
            assert remat.allclose(expected, actual), (level, expected, actual)
            check_graph_dies(actual_fn)


@pytest.mark.parametrize("variant", VARIANTS)
def test_nested_checkpoint_two_children(early_stop, variant):
    c = VARIANTS[variant]

    def f(x):
        return x.sin().exp().sin()

    def g(x):
        return x.cos().sin().exp()

    def hc(x):
        return c(g)(c(f)(x))

    def h(x):
        return g(f(x))

    a = remat.randn(3, 3, requires_grad=True, dtype=remat.float64)
    expected = grad(sum_(grad(sum_(h))))(a)
    actual = grad(sum_(grad(sum_(c(hc)))))(a)
    assert remat.allclose(expected, actual)

    actual = grad(sum_(c(grad(sum_(c(hc))))))(a)
    assert remat.allclose(expected, actual)

    check_graph_dies(grad(c(hc)))
    check_graph_dies(grad(sum_(grad(sum_(c(hc))))))
    check_graph_dies(grad(sum_(c(grad(sum_(c(hc)))))))


def test_checkpointed_second_order_is_bit_identical_to_plain():
    # remat's own promise on top of PyTorch's allclose: the same bits.
    x = remat.randn(5, requires_grad=True, dtype=remat.float64)
    for c in VARIANTS.values():
        plain = grad(sum_(grad(sum_(f_chain))))(x).detach().numpy()
        for fn in (grad(sum_(c(grad(sum_(c(f_chain)))))), c(grad(sum_(grad(sum_(c(f_chain))))))):
            assert np.array_equal(fn(x).detach().numpy(), plain)


# ---------------------------------------------------------------------------------------------
# JAX's test_remat_of_scan / test_remat_of_cond, order 2, reverse mode


def _leaves(arrays):
    return [remat.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]


def _flat(outs):
    return list(outs) if isinstance(outs, (tuple, list)) else [outs]


def _vjp(f, args, cts, create_graph=False):
    """JAX's ``vjp(f, *args)[1](cts)``: zero for an argument the outputs do not use."""
    outs = _flat(f(*args))
    pairs = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
    if not pairs:
        return [remat.zeros_like(a) for a in args]
    gs = remat.grad(
        [o for o, _ in pairs],
        args,
        grad_outputs=[c for _, c in pairs],
        create_graph=create_graph,
        allow_unused=True,
    )
    return [remat.zeros_like(a) if g is None else g for g, a in zip(gs, args)]


def check_grads(f, args, order, eps=1e-6, seed=0):
    """``jax.test_util.check_grads(f, args, order, modes=["rev"])``: the vector-Jacobian
    product against central differences, then (order 2) the same for the function
    ``(args, cotangents) -> vjp``, which differentiates the checkpointed backward."""
    rng = np.random.default_rng(seed)
    args = [np.asarray(a, dtype=np.float64) for a in args]
    outs = [o.detach().numpy() for o in _flat(f(*_leaves(args)))]
    cts = [rng.standard_normal(o.shape) for o in outs]
    got = [g.detach().numpy() for g in _vjp(f, _leaves(args), _leaves(cts))]
    for i, a in enumerate(args):
        numeric = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            sides = []
            for sign in (1.0, -1.0):
                moved = [x.copy() for x in args]
                moved[i][idx] += sign * eps
                values = [t.detach().numpy() for t in _flat(f(*_leaves(moved)))]
                sides.append(sum(float((v * c).sum()) for v, c in zip(values, cts)))
            numeric[idx] = (sides[0] - sides[1]) / (2 * eps)
        np.testing.assert_allclose(got[i], numeric, rtol=1e-5, atol=1e-6)
    if order > 1:
        n = len(args)

        def f_vjp(*args_and_cts):
            return tuple(
                _vjp(f, list(args_and_cts[:n]), list(args_and_cts[n:]), create_graph=True)
            )

        check_grads(f_vjp, args + cts, order - 1, eps, seed + 1)


def scan(body, carry, length):
    """``lax.scan`` with ``xs=None``: a Python loop, stacking the per-step outputs."""
    ys = []
    for _ in range(length):
        carry, y = body(carry, None)
        ys.append(y)
    return carry, remat.stack(ys)


def cond(pred, operand, true_fn, false_fn):
    return true_fn(operand) if pred else false_fn(operand)


JAX_REMATS = {
    # jax.remat(f)
    "faithful": lambda f: lambda *a: remat.checkpoint(f, *a),
    # jax.remat(f, policy=lambda *_, **__: False): save nothing
    "faithful_policy": lambda f: lambda *a: remat.checkpoint(f, *a, policy=cp.nothing_saveable),
    "substitute": lambda f: lambda *a: remat.checkpoint_segment(f, *a),
}


@pytest.mark.parametrize("variant", JAX_REMATS)
def test_remat_of_scan(variant):
    rematted = JAX_REMATS[variant]

    def to_scan(c, _):
        return remat.sin(c), remat.sin(c)

    def f(x):
        return scan(to_scan, x, length=3)

    check_grads(rematted(f), (3.0,), order=2)
    gc.collect()
    assert remat.live_checkpoint_state() == 0


@pytest.mark.parametrize("variant", JAX_REMATS)
@pytest.mark.parametrize("x", [3.0, 1.0])
def test_remat_of_cond(variant, x):
    rematted = JAX_REMATS[variant]

    def true_fn(c):
        return c, c

    def false_fn(c):
        return remat.sin(c), remat.sin(c)

    def f(x):
        return cond(x.item() > 2.0, x, true_fn, false_fn)

    check_grads(rematted(f), (x,), order=2)
    gc.collect()
    assert remat.live_checkpoint_state() == 0
