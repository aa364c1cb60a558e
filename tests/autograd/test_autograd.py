"""Autograd semantics: accumulation, retain_graph, remat.grad, grad modes, detach."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import t64

import remat


def make_leaf(values=(1.0, 2.0, 3.0)):
    return t64(values, requires_grad=True)


# ---------------------------------------------------------------- accumulation


def test_grad_accumulates_across_backward_calls():
    x = make_leaf()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0, 4.0, 6.0])
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), [5.0, 7.0, 9.0])
    x.grad = None
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), [3.0, 3.0, 3.0])


def test_grad_dtype_and_shape_match_leaf():
    for dtype in (remat.float32, remat.float64):
        x = remat.ones(2, 3, dtype=dtype, requires_grad=True)
        (x * 2).sum().backward()
        assert x.grad.dtype == dtype and x.grad.shape == (2, 3)
        assert not x.grad.requires_grad


def test_non_leaf_grad_is_none_and_no_grad_for_constants():
    x = make_leaf()
    c = t64([1.0, 1.0, 1.0])
    y = x * 2
    (y * c).sum().backward()
    assert y.grad is None
    assert c.grad is None
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0, 2.0, 2.0])


def test_diamond_graph_sums_gradients():
    x = make_leaf()
    a = x * 2
    b = x * 3
    (a * b).sum().backward()  # d/dx 6x^2 = 12x
    np.testing.assert_allclose(x.grad.detach().numpy(), 12 * np.array([1.0, 2.0, 3.0]))


def test_unused_leaf_gets_no_grad():
    x = make_leaf()
    z = make_leaf()
    (x * 2).sum().backward()
    assert z.grad is None


# ---------------------------------------------------------------- retain_graph / GraphError


def test_second_backward_raises_graph_error():
    x = make_leaf()
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(remat.GraphError) as info:
        y.backward()
    assert "retain_graph=True" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    (x * 1.0).sum().backward()  # the engine still works


def test_retain_graph_allows_second_backward():
    x = make_leaf()
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.detach().numpy(), 2 * 2 * np.array([1.0, 2.0, 3.0]))
    y.backward()  # the last one may free it
    np.testing.assert_allclose(x.grad.detach().numpy(), 3 * 2 * np.array([1.0, 2.0, 3.0]))
    with pytest.raises(remat.GraphError, match="retain_graph=True"):
        y.backward()


def test_shared_subgraph_freed_by_first_backward():
    x = make_leaf()
    h = x.exp()
    y1 = (h * 2).sum()
    y2 = (h * 3).sum()
    y1.backward()
    with pytest.raises(remat.GraphError, match="retain_graph=True"):
        y2.backward()


def test_non_scalar_backward_raises():
    x = make_leaf()
    y = x * 2
    with pytest.raises(remat.GraphError):
        y.backward()
    y.backward(gradient=t64([1.0, 1.0, 1.0]))  # an explicit grad makes it fine
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0, 2.0, 2.0])


def test_backward_with_explicit_grad():
    x = make_leaf()
    y = x * x
    y.backward(gradient=t64([1.0, 0.5, -1.0]))
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0, 2.0, -6.0])
    x2 = make_leaf()
    s = (x2 * 4).sum()
    s.backward(t64(2.0))
    np.testing.assert_allclose(x2.grad.detach().numpy(), [8.0, 8.0, 8.0])


def test_backward_grad_of_other_dtype_is_cast():
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).backward(gradient=t64([1.0, 0.5]))
    assert x.grad.dtype == remat.float32
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0, 1.0])


def test_backward_on_tensor_without_grad_raises():
    t = t64([1.0, 2.0]).sum()
    with pytest.raises(remat.GraphError):
        t.backward()


def test_backward_on_leaf_itself():
    x = t64(3.0, requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0


# ---------------------------------------------------------------- remat.grad


def test_grad_function_returns_tuple_without_touching_grad():
    x = make_leaf()
    w = make_leaf((0.5, -1.0, 2.0))
    y = (x * w).sum()
    gs = remat.grad(y, [x, w])
    assert isinstance(gs, tuple) and len(gs) == 2
    np.testing.assert_allclose(gs[0].detach().numpy(), [0.5, -1.0, 2.0])
    np.testing.assert_allclose(gs[1].detach().numpy(), [1.0, 2.0, 3.0])
    assert x.grad is None and w.grad is None


def test_grad_function_single_input_and_non_leaf():
    x = make_leaf()
    h = x * 2
    y = (h * h).sum()
    (gh,) = remat.grad(y, h, retain_graph=True)
    np.testing.assert_allclose(gh.detach().numpy(), 2 * 2 * np.array([1.0, 2.0, 3.0]))
    (gx,) = remat.grad(y, (x,))
    np.testing.assert_allclose(gx.detach().numpy(), 8 * np.array([1.0, 2.0, 3.0]))
    assert x.grad is None


def test_grad_function_grad_outputs_and_retain_graph():
    x = make_leaf()
    y = x * x
    (g,) = remat.grad(y, [x], grad_outputs=t64([1.0, 0.0, 2.0]), retain_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [2.0, 0.0, 12.0])
    (g2,) = remat.grad([y], [x], grad_outputs=[t64([1.0, 1.0, 1.0])])
    np.testing.assert_allclose(g2.detach().numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(remat.GraphError, match="retain_graph=True"):
        remat.grad(y, [x], grad_outputs=t64([1.0, 1.0, 1.0]))


def test_grad_function_frees_graph_by_default():
    x = make_leaf()
    y = (x * x).sum()
    remat.grad(y, [x])
    with pytest.raises(remat.GraphError, match="retain_graph=True"):
        y.backward()


def test_grad_function_unused_input():
    x = make_leaf()
    z = make_leaf()
    try:
        gs = remat.grad((x * 2).sum(), [x, z])
    except remat.GraphError as e:  # PyTorch without allow_unused
        assert "grad" in str(e)
    else:  # JAX / allow_unused=True style
        assert gs[1] is None or np.all(gs[1].detach().numpy() == 0)
        np.testing.assert_allclose(gs[0].detach().numpy(), [2.0, 2.0, 2.0])
    assert x.grad is None and z.grad is None


def test_grad_function_non_scalar_without_grad_outputs_raises():
    x = make_leaf()
    with pytest.raises(remat.GraphError):
        remat.grad(x * 2, [x])


# ---------------------------------------------------------------- grad modes


def test_no_grad_context_manager():
    x = make_leaf()
    assert remat.is_grad_enabled()
    with remat.no_grad():
        assert not remat.is_grad_enabled()
        y = x * 2
    assert remat.is_grad_enabled()
    assert not y.requires_grad and y.is_leaf
    with pytest.raises(remat.GraphError):
        y.sum().backward()


def test_no_grad_decorator_and_nesting():
    @remat.no_grad()
    def f(t):
        assert not remat.is_grad_enabled()
        with remat.enable_grad():
            assert remat.is_grad_enabled()
            inner = t * 2
        return t * 3, inner

    x = make_leaf()
    outer, inner = f(x)
    assert remat.is_grad_enabled()
    assert not outer.requires_grad
    assert inner.requires_grad
    inner.sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0, 2.0, 2.0])


def test_no_grad_nested_restores_state():
    with remat.no_grad():
        with remat.no_grad():
            assert not remat.is_grad_enabled()
        assert not remat.is_grad_enabled()
        with remat.enable_grad():
            with remat.no_grad():
                assert not remat.is_grad_enabled()
            assert remat.is_grad_enabled()
        assert not remat.is_grad_enabled()
    assert remat.is_grad_enabled()


def test_enable_grad_decorator():
    @remat.enable_grad()
    def g(t):
        return t * 2

    x = make_leaf()
    with remat.no_grad():
        y = g(x)
    assert y.requires_grad


def test_grad_mode_restored_after_exception():
    with pytest.raises(ZeroDivisionError):
        with remat.no_grad():
            raise ZeroDivisionError
    assert remat.is_grad_enabled()

    @remat.no_grad()
    def boom():
        raise KeyError("x")

    with pytest.raises(KeyError):
        boom()
    assert remat.is_grad_enabled()


def test_no_grad_decorator_preserves_name_and_return():
    @remat.no_grad()
    def named(a, b=2):
        return a + b

    assert named(1, b=3) == 4
    assert named.__name__ == "named"


# ---------------------------------------------------------------- detach / requires_grad_


def test_detach_shares_data_and_stops_gradient():
    x = make_leaf()
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    np.testing.assert_array_equal(d.detach().numpy(), x.detach().numpy())
    assert np.shares_memory(d.detach().numpy(), x.detach().numpy())
    y = (x * d).sum()  # d is a constant
    y.backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), [1.0, 2.0, 3.0])


def test_requires_grad_():
    t = t64([1.0, 2.0])
    r = t.requires_grad_()
    assert r is t or r.requires_grad
    assert t.requires_grad
    (t * t).sum().backward()
    np.testing.assert_allclose(t.grad.detach().numpy(), [2.0, 4.0])
    t.requires_grad_(False)
    assert not t.requires_grad
    assert not (t * 2).requires_grad


def test_requires_grad_propagation():
    a = make_leaf()
    b = t64([1.0, 1.0, 1.0])
    assert (a + b).requires_grad
    assert not (b + b).requires_grad
    assert (a * 2).sum().requires_grad
    assert remat.softmax(a).requires_grad
    assert a[0].requires_grad and a.reshape(3, 1).requires_grad


def test_float32_backward():
    x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).mean()
    y.backward()
    assert x.grad.dtype == remat.float32
    np.testing.assert_allclose(x.grad.detach().numpy(), [2 / 3, 4 / 3, 2.0], rtol=1e-6)


# ---------------------------------------------------------------- very long graphs


def test_long_graphs_do_not_overflow_the_stack():
    """A 200k-op chain must backward and, separately, be dropped without backward, without
    recursing once per node (run in a subprocess: a stack overflow kills the process)."""
    code = textwrap.dedent(
        """
        import remat
        x = remat.tensor([1.0], requires_grad=True)
        y = x
        for _ in range(200_000):
            y = y * 1.0
        y.sum().backward()
        print("backward", x.grad.tolist())
        y = x
        for _ in range(200_000):
            y = y + 0.0
        del y
        print("dropped")
        print(((remat.ones(2) * 3).sum()).item())
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, f"process died with {res.returncode}: {res.stderr[-1000:]}"
    assert res.stdout.split() == ["backward", "[1.0]", "dropped", "6.0"]


def test_grad_keeps_the_saved_tensors_of_the_part_it_did_not_run():
    # grad(c, b) stops at b: tanh's saved output must survive for a later grad(b, a).
    a = remat.tensor(np.array([0.5, -0.3]), requires_grad=True)
    b = a.tanh()
    c = b.sigmoid()
    (gb,) = remat.grad(c.sum(), b)
    s = 1 / (1 + np.exp(-np.tanh([0.5, -0.3])))
    np.testing.assert_allclose(gb.detach().numpy(), s * (1 - s))
    (ga,) = remat.grad(b.sum(), a)
    np.testing.assert_allclose(ga.detach().numpy(), 1 - np.tanh([0.5, -0.3]) ** 2)


def test_create_graph_gives_a_differentiable_gradient_and_backward_inputs_limits_accumulation():
    x = remat.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
    w = remat.tensor(np.array([1.5, 0.5, -1.0]), requires_grad=True)
    y = (x.sin() * w).sum()
    (gx,) = remat.grad(y, x, create_graph=True)
    assert gx.requires_grad
    np.testing.assert_allclose(gx.detach().numpy(), np.cos([0.3, -1.2, 2.0]) * [1.5, 0.5, -1.0])
    # A gradient penalty: d/dw sum(gx^2) = 2 cos(x)^2 w.
    (gx * gx).sum().backward(inputs=[w])
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.cos([0.3, -1.2, 2.0]) ** 2 * [1.5, 0.5, -1.0])


def test_allow_unused():
    x = remat.tensor(np.array([1.0, 2.0]), requires_grad=True)
    z = remat.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(remat.GraphError, match="allow_unused=True"):
        remat.grad(y, [x, z], retain_graph=True)
    gx, gz = remat.grad(y, [x, z], allow_unused=True)
    np.testing.assert_allclose(gx.detach().numpy(), [2.0, 4.0])
    assert gz is None


def test_backward_create_graph_accumulates_a_graph_into_grad():
    x = remat.tensor(np.array([0.5, 1.5]), requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    (h,) = remat.grad(g.sum(), x)
    np.testing.assert_allclose(h.detach().numpy(), 6 * np.array([0.5, 1.5]))
