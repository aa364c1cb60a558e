"""Tensor hooks, retain_grad, inference_mode, Tensor.data, remat.device and
remat.autograd.Function (custom ops in Python), including inside every checkpoint entry
point."""

import numpy as np
import pytest

import remat
from remat.autograd import Function


# ----------------------------------------------------------------------------------- hooks

def test_hook_sees_and_replaces_a_non_leaf_gradient():
    x = remat.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    np.testing.assert_array_equal(seen[0], [4.0, 8.0, 12.0])
    np.testing.assert_array_equal(x.grad.numpy(), [80.0, 160.0, 240.0])


def test_leaf_hook_runs_before_accumulation_and_handle_removes_it():
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: g + 1)
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0])
    h.remove()
    h.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_hooks_apply_to_grad_results():
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: -g)
    (g,) = remat.grad((x * x).sum(), [x])
    np.testing.assert_array_equal(g.numpy(), [-2.0, -4.0])
    assert x.grad is None


def test_hook_errors():
    with pytest.raises(remat.GraphError, match="doesn't require gradient"):
        remat.ones(2).register_hook(lambda g: g)
    x = remat.ones(2, requires_grad=True)
    x.register_hook(lambda g: remat.ones(3))
    with pytest.raises(remat.GraphError, match="shape"):
        (x * 1).sum().backward()

    y = remat.ones(2, requires_grad=True)

    def boom(g):
        raise KeyError("from the hook")

    y.register_hook(boom)
    with pytest.raises(KeyError, match="from the hook"):
        (y * 2).sum().backward()
    z = remat.ones(2, requires_grad=True)
    (z * 2).sum().backward()  # the engine still works
    assert z.grad.tolist() == [2.0, 2.0]


def test_retain_grad_keeps_intermediate_gradients_and_runs_after_hooks():
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert not y.retains_grad
    y.retain_grad()
    y.retain_grad()  # idempotent
    y.register_hook(lambda g: g * 10)  # registered later, runs first
    assert y.retains_grad
    (y * y).sum().backward(retain_graph=True)
    np.testing.assert_array_equal(y.grad.numpy(), [40.0, 80.0])
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [80.0, 160.0])  # accumulates
    x.retain_grad()  # no-op on a leaf
    with pytest.raises(remat.GraphError):
        remat.ones(1).retain_grad()


def test_hooks_inside_a_checkpoint_segment_see_the_same_gradient():
    def run(checkpointed):
        remat.manual_seed(0)
        w = remat.randn(4, 4, requires_grad=True)
        x = remat.randn(3, 4)
        seen = []

        def f(x):
            h = (x @ w).tanh()
            if h.requires_grad:
                h.register_hook(lambda g: seen.append(g.numpy().copy()))
            return (h @ w).sum()

        loss = remat.checkpoint(f, x) if checkpointed else f(x)
        loss.backward()
        return w.grad.numpy(), seen

    plain, seen_plain = run(False)
    ck, seen_ck = run(True)
    np.testing.assert_array_equal(plain, ck)
    np.testing.assert_array_equal(seen_plain[-1], seen_ck[-1])


def test_post_accumulate_grad_hook_runs_once_per_backward_after_the_grad_is_summed():
    # PyTorch's register_post_accumulate_grad_hook: the hook gets the parameter, once its
    # .grad holds every contribution of this backward (w is used twice here).
    w = remat.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.numpy().copy()))
    (w * 2 + w * 3).sum().backward()
    (w * w).sum().backward()
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[0], [5.0, 5.0])
    np.testing.assert_array_equal(seen[1], [7.0, 9.0])  # accumulated onto the first
    remat.grad((w * 2).sum(), [w])  # grad() accumulates nothing: no call
    assert len(seen) == 2
    h.remove()
    (w * 2).sum().backward()
    assert len(seen) == 2


@pytest.mark.parametrize("entry", ["checkpoint", "checkpoint_sequential"])
def test_post_accumulate_grad_hook_runs_once_under_a_checkpoint(entry):
    lin = remat.nn.Linear(3, 3)
    calls = {id(p): 0 for p in lin.parameters()}
    for p in lin.parameters():
        p.register_post_accumulate_grad_hook(lambda p: calls.__setitem__(id(p), calls[id(p)] + 1))
    x = remat.randn(2, 3)
    if entry == "checkpoint":
        y = remat.checkpoint(lambda t: lin(lin(t)).tanh(), x)
    else:
        y = remat.checkpoint_sequential(remat.nn.Sequential(lin, remat.nn.Tanh(), lin), 2, x)
    y.sum().backward()
    assert set(calls.values()) == {1}


def test_post_accumulate_grad_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        remat.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    x = remat.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda p: None)


# --------------------------------------------------------------------- inference mode, data

def test_inference_mode_context_and_decorator():
    x = remat.ones(2, requires_grad=True)
    with remat.inference_mode():
        assert remat.is_inference_mode_enabled() and not remat.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert remat.is_grad_enabled() and not remat.is_inference_mode_enabled()
    with remat.inference_mode(False):
        assert (x * 2).requires_grad

    @remat.inference_mode()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and remat.is_grad_enabled()


def test_data_shares_storage_and_assignment_copies():
    p = remat.tensor([1.0, 2.0], requires_grad=True)
    d = p.data
    assert not d.requires_grad and d.is_leaf
    d.mul_(2.0)
    np.testing.assert_array_equal(p.detach().numpy(), [2.0, 4.0])
    p.data = remat.tensor([7.0, 8.0])
    np.testing.assert_array_equal(p.detach().numpy(), [7.0, 8.0])
    assert p.requires_grad and p.is_leaf
    with pytest.raises(RuntimeError, match="shape and dtype"):
        p.data = remat.ones(3)


def test_device_objects():
    t = remat.ones(1)
    assert isinstance(t.device, remat.device) and t.device == "cpu" and t.device.type == "cpu"
    assert t.device.index is None and repr(t.device) == "device(type='cpu')"
    d = remat.device("cuda", 1)
    assert d == "cuda:1" and d.type == "cuda" and d.index == 1
    assert remat.device("cuda:0") == remat.device(0)
    assert repr(remat.device("cuda:2")) == "device(type='cuda', index=2)"
    assert remat.zeros(2, device=remat.device("cpu")).device == "cpu"
    assert {remat.device("cpu"): 1}["cpu"] == 1
    with pytest.raises(RuntimeError, match="device type"):
        remat.device("tpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        remat.device("cuda:x")


# --------------------------------------------------------------------------------- Function

class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class ScaledMul(Function):
    """Two tensor inputs, a non-tensor argument and an attribute on ctx."""

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.scale = scale
        ctx.save_for_backward(a, b)
        return a * b * scale

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b * ctx.scale, g * a * ctx.scale, None


class SplitTwo(Function):
    """Two outputs and an intermediate saved tensor."""

    @staticmethod
    def forward(ctx, x):
        s = x.sin()
        ctx.save_for_backward(x.cos())
        return s, x * 3

    @staticmethod
    def backward(ctx, gs, gt):
        (c,) = ctx.saved_tensors
        return gs * c + gt * 3


def _x(values=(0.3, -1.2, 2.0)):
    return remat.tensor(list(values), dtype=remat.float64, requires_grad=True)


def test_function_forward_backward_and_grad_fn_name():
    x = _x()
    y = Exp.apply(x)
    assert "Exp" in repr(y)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()))


def test_function_with_several_inputs_and_non_tensor_args():
    a, b = _x(), _x((1.0, 2.0, 3.0))
    (ScaledMul.apply(a, b, 0.5) ** 2).sum().backward()
    an, bn = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_allclose(a.grad.numpy(), 2 * (an * bn * 0.5) * bn * 0.5)
    np.testing.assert_allclose(b.grad.numpy(), 2 * (an * bn * 0.5) * an * 0.5)


def test_function_with_two_outputs_and_an_intermediate():
    x = _x()
    s, t = SplitTwo.apply(x)
    (s * 2 + t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(x.detach().numpy()) + 3)
    x.grad = None
    s, _ = SplitTwo.apply(x)
    s.sum().backward()  # the unused output's gradient is materialised as zeros
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()))


def test_function_second_order_through_a_remat_backward():
    x = _x()
    (g,) = remat.grad(Exp.apply(x).sum(), [x], create_graph=True)
    (h,) = remat.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), np.exp(x.detach().numpy()))


def test_function_without_grad_returns_plain_results():
    x = remat.tensor([1.0])
    assert not Exp.apply(x).requires_grad
    with remat.no_grad():
        assert not Exp.apply(_x()).requires_grad


def test_function_finite_differences():
    from conftest import check_grad

    check_grad(lambda a, b: ScaledMul.apply(a, b, 1.5).sin(),
               np.array([0.3, -0.7]), np.array([1.1, 0.4]))


def _loss_with(entry):
    remat.manual_seed(0)
    w = remat.randn(5, 5, dtype=remat.float64, requires_grad=True)
    x = remat.randn(4, 5, dtype=remat.float64)

    def block(h):
        return ScaledMul.apply(Exp.apply((h @ w).tanh()), h, 0.5)

    if entry == "plain":
        out = block(block(x))
    elif entry == "checkpoint_fn":
        out = remat.checkpoint(block, remat.checkpoint(block, x))
    elif entry == "checkpoint_tensor":
        out = block(remat.checkpoint(block(x)))
    elif entry == "segment":
        out = remat.checkpoint_segment(lambda h: block(block(h)), x)
    elif entry == "sequential":
        out = remat.checkpoint_sequential([block, block], 2, x)
    elif entry == "scope":
        with remat.checkpoint_scope():
            out = block(block(x))
    else:
        raise AssertionError(entry)
    out.sum().backward()
    return w.grad.numpy()


@pytest.mark.parametrize(
    "entry", ["checkpoint_fn", "checkpoint_tensor", "segment", "sequential", "scope"]
)
def test_function_gradients_identical_under_every_checkpoint_entry_point(entry):
    np.testing.assert_array_equal(_loss_with(entry), _loss_with("plain"))


def test_function_saved_tensors_are_version_checked():
    x = _x()
    y = Exp.apply(x)
    with remat.no_grad():
        y.mul_(2.0)
    with pytest.raises(remat.GraphError, match="inplace"):
        y.sum().backward()


def test_function_backward_errors():
    class WrongCount(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        WrongCount.apply(_x(), _x()).sum().backward()

    class WrongShape(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    with pytest.raises(remat.ShapeError, match="invalid gradient"):
        WrongShape.apply(_x()).sum().backward()
    with pytest.raises(TypeError, match="save_for_backward"):
        class BadSave(Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(3)
                return a

        BadSave.apply(_x())
    with pytest.raises(NotImplementedError):
        Function.apply(_x())


# ------------------------------------------------------------------ grad-mode decorators

def test_grad_mode_decorators_on_generators_and_without_parentheses():
    @remat.no_grad()
    def gen():
        yield remat.is_grad_enabled()
        yield 2
        return 5

    assert list(gen()) == [False, 2] and remat.is_grad_enabled()
    it = gen()
    next(it), next(it)
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == 5

    @remat.no_grad
    def doubled(x):
        return x * 2

    assert not doubled(remat.ones(2, requires_grad=True)).requires_grad

    @remat.inference_mode
    def inside():
        return remat.is_inference_mode_enabled()

    assert inside() and not remat.is_inference_mode_enabled()


def test_set_grad_enabled_as_a_decorator_leaves_the_mode_alone():
    @remat.set_grad_enabled(False)
    def mode():
        return remat.is_grad_enabled()

    assert remat.is_grad_enabled()  # decorating did not switch it off
    assert mode() is False and remat.is_grad_enabled()
