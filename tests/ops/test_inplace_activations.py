"""In-place activations in a graph (``F.relu(inplace=True)``, ``Tensor.relu_``,
``F.leaky_relu(inplace=True)``, ``F.leaky_relu_``), against PyTorch's behaviour:

- gradients equal those of the out-of-place activation, bit for bit, plain, under every
  checkpoint entry point, under a memory limit and through a view;
- the write is recorded over the tensor's own storage: the step keeps one buffer (the engine's
  byte counters), not the overwritten input and a copy of the result;
- writing the result again before backward raises ``GraphError`` (the saved result changed),
  as PyTorch raises; a negative slope works (from a clone);
- leaves that require grad are refused; integer tensors follow the dtype rules.
"""

from __future__ import annotations

import numpy as np
import pytest

import remat
import remat.nn.functional as F

SHAPE = (8, 16, 12)


def _x(seed=0):
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)


ACTIVATIONS = {
    "relu": (lambda h: F.relu(h, inplace=True), lambda h: F.relu(h)),
    "relu_": (lambda h: h.relu_(), lambda h: F.relu(h)),
    "leaky_0.2": (lambda h: F.leaky_relu(h, 0.2, inplace=True), lambda h: F.leaky_relu(h, 0.2)),
    "leaky_0": (lambda h: F.leaky_relu_(h, 0.0), lambda h: F.leaky_relu(h, 0.0)),
    "leaky_-0.5": (lambda h: F.leaky_relu(h, -0.5, inplace=True),
                   lambda h: F.leaky_relu(h, -0.5)),
}


def _block(act):
    """A layer that writes its activation into an intermediate, then uses the result."""
    def f(x):
        h = x * 1.5 - 0.25
        out = act(h)
        return out * out + x
    return f


def _grads(f, run=None):
    x = remat.tensor(_x(), requires_grad=True)
    y = f(x) if run is None else run(f, x)
    w = remat.tensor(np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32))
    (y * w).sum().backward()
    return y.detach().numpy().copy(), x.grad.numpy().copy()


RUNS = {
    "plain": None,
    "checkpoint(fn)": lambda f, x: remat.checkpoint(f, x),
    "checkpoint_segment": lambda f, x: remat.checkpoint_segment(f, x),
    "checkpoint_sequential": lambda f, x: remat.checkpoint_sequential([f, lambda h: h * 2], 2, x),
}


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_gradients_equal_the_out_of_place_activation(name, run):
    in_place, out_of_place = ACTIVATIONS[name]
    ref_y, ref_g = _grads(_block(out_of_place), RUNS[run])
    y, g = _grads(_block(in_place), RUNS[run])
    assert np.array_equal(y, ref_y)
    assert np.array_equal(g, ref_g)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_gradients_are_identical_under_a_memory_limit(name):
    in_place, out_of_place = ACTIVATIONS[name]
    ref = _grads(_block(out_of_place))
    remat.set_memory_limit(60_000)
    try:
        got = _grads(_block(in_place))
    finally:
        remat.set_memory_limit(None)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


def test_a_write_through_a_view_reaches_the_root():
    def through_view(act):
        def f(x):
            h = x * 2.0
            act(h[:, 3:9])
            return h * h
        return f
    for in_place, out_of_place in ACTIVATIONS.values():
        def composed(x, act=out_of_place):
            h = x * 2.0
            mid = act(h[:, 3:9])
            h = remat.cat([h[:, :3], mid, h[:, 9:]], 1)
            return h * h
        ref = _grads(composed)
        got = _grads(through_view(in_place))
        np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=0)
        np.testing.assert_allclose(got[1], ref[1], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["relu", "relu_", "leaky_0.2", "leaky_0"])
def test_the_graph_keeps_one_buffer_for_the_written_tensor(name):
    in_place, _ = ACTIVATIONS[name]
    x = remat.tensor(_x(), requires_grad=True)
    h = x * 1.5
    before = remat.memory_allocated()
    out = in_place(h)
    assert out is h
    # The activation saved its result in h's own storage: nothing more is kept, where
    # computing out of place and copying back kept a second buffer.
    assert remat.memory_allocated() == before
    h.sum().backward()
    slope = np.float32(0.2) if name == "leaky_0.2" else np.float32(0.0)
    expected = np.where(_x() * 1.5 > 0, np.float32(1.5), np.float32(1.5) * slope)
    assert np.array_equal(x.grad.numpy(), expected)


def test_a_negative_slope_keeps_the_overwritten_input():
    x = remat.tensor(_x(), requires_grad=True)
    h = x * 1.5
    before = remat.memory_allocated()
    F.leaky_relu_(h, -0.5)
    assert remat.memory_allocated() - before == x.numel() * 4
    h.sum().backward()
    expected = np.where(_x() * 1.5 > 0, 1.5, -0.75).astype(np.float32)
    assert np.array_equal(x.grad.numpy(), expected)


@pytest.mark.parametrize("write", [lambda h: h.add_(1.0), lambda h: h.relu_(),
                                   lambda h: F.leaky_relu_(h, 0.1)])
@pytest.mark.parametrize("name", ["relu_", "leaky_0.2"])
def test_writing_the_saved_result_again_raises_at_backward(name, write):
    in_place, _ = ACTIVATIONS[name]
    x = remat.tensor(_x(), requires_grad=True)
    h = x * 1.5
    in_place(h)
    write(h)
    with pytest.raises(remat.GraphError, match="modified by an inplace operation"):
        h.sum().backward()


def test_the_engine_is_usable_after_the_error():
    x = remat.tensor(_x(), requires_grad=True)
    h = x * 1.0
    h.relu_()
    h.mul_(2.0)
    with pytest.raises(remat.GraphError):
        (h * h).sum().backward()
    h = x * 1.0
    h.relu_()
    h.sum().backward()
    assert np.array_equal(x.grad.numpy(), (_x() > 0).astype(np.float32))


def test_a_leaf_that_requires_grad_is_refused():
    w = remat.tensor(_x(), requires_grad=True)
    with pytest.raises(remat.GraphError, match="leaf"):
        w.relu_()
    with pytest.raises(remat.GraphError, match="leaf"):
        F.leaky_relu(w, 0.2, inplace=True)
    with remat.no_grad():
        assert F.leaky_relu(w, 0.2, inplace=True) is w
    assert np.array_equal(w.detach().numpy(), np.where(_x() > 0, _x(), np.float32(0.2) * _x()))


def test_second_order_gradients_through_the_write():
    def f(act):
        x = remat.tensor(_x(), requires_grad=True)
        h = x * x
        out = act(h)
        (g,) = remat.grad((out * out).sum(), [x], create_graph=True)
        (gg,) = remat.grad((g * g).sum(), [x])
        return g.detach().numpy(), gg.numpy()
    for in_place, out_of_place in ACTIVATIONS.values():
        ref, got = f(out_of_place), f(in_place)
        assert np.array_equal(ref[0], got[0]) and np.array_equal(ref[1], got[1])


def test_integer_tensors():
    t = remat.tensor([-2, 0, 3])
    assert t.relu_() is t and t.tolist() == [0, 0, 3]
    with pytest.raises(remat.DTypeError, match="leaky_relu_"):
        F.leaky_relu_(remat.tensor([-2, 3]), 0.1)


def test_modules_with_inplace_match_pytorch():
    torch = pytest.importorskip("torch")
    xs = _x()
    for mod, tmod in [(remat.nn.ReLU(inplace=True), torch.nn.ReLU(inplace=True)),
                      (remat.nn.LeakyReLU(0.2, inplace=True),
                       torch.nn.LeakyReLU(0.2, inplace=True))]:
        x = remat.tensor(xs, requires_grad=True)
        tx = torch.tensor(xs, requires_grad=True)
        y = mod(x * 3.0)
        ty = tmod(tx * 3.0)
        (y * y).sum().backward()
        (ty * ty).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


SPECIALS = np.array([-2.5, -1e-30, -0.0, 0.0, 1e-30, 3.0, np.inf, -np.inf, np.nan], np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_written_values_equal_the_out_of_place_activation_bit_for_bit(name, dtype, strided):
    # The write computes over the tensor itself (no result buffer copied back): it must give
    # the row's own values, signed zeros, infinities and NaN included, in every float dtype
    # and through a strided view.
    inplace, plain = ACTIVATIONS[name]
    values = np.concatenate([SPECIALS, _x().ravel()[:1531]]).reshape(-1, 11)
    base = remat.tensor(values).to(getattr(remat, dtype))
    want = plain(base.t() if strided else base)
    dst = base.clone()
    inplace(dst.t() if strided else dst)
    got = dst.t() if strided else dst
    as_bits = {"float32": np.uint32, "float64": np.uint64}.get(dtype, np.uint16)
    w = want.float().numpy() if as_bits is np.uint16 else want.numpy()
    g = got.float().numpy() if as_bits is np.uint16 else got.numpy()
    assert np.array_equal(np.isnan(w), np.isnan(g))
    ok = ~np.isnan(w)
    assert np.array_equal(np.ascontiguousarray(w[ok]).view(w.dtype).tobytes(),
                          np.ascontiguousarray(g[ok]).tobytes())
    assert np.array_equal(np.signbit(w[ok]), np.signbit(g[ok]))
