"""Tests generated from the op registry (``op_registry.OPS``), for every op:

- forward values against the NumPy reference (hypothesis shapes/values, float32 and float64),
  every function/method form giving the same result;
- float64 gradients against central finite differences;
- second-order gradients (``remat.grad(..., create_graph=True)`` then a Hessian-vector product)
  against finite differences of the first-order gradient, plain and inside a checkpoint;
- CUDA against the CPU (forward and gradients; skipped without a usable GPU);
- bit-identical gradients under every checkpoint entry point, with no checkpoint state left.

Error cases per op are generated in ``test_errors.py`` (next to the other error tests).
"""

import gc

import numpy as np
import pytest
from conftest import check_grad, rdtype, seeds, t64
from hypothesis import given, settings
from hypothesis import strategies as st
from op_registry import (
    DIFFERENTIABLE,
    OPS,
    arrays_for,
    example_ids,
    example_params,
    ids,
    reference,
    tensors_for,
)

import remat
from remat import nn

needs_gpu = pytest.mark.skipif(not remat.cuda.is_available(),
                               reason="CUDA not available (remat.cuda.is_available() is False)")


def _with(op, case, arrays, replace):
    """The op's arguments for ``arrays`` (tensors without grad, labels as arrays) with the
    inputs in ``replace`` ({index: tensor}) substituted."""
    ins = tensors_for(op, arrays)
    for i, t in replace.items():
        ins[i] = t
    return ins


# ---------------------------------------------------------------------------- coverage


def test_every_parameterless_unary_op_has_a_row():
    """The core's unary rows written ``fn(name)`` become ``remat.name`` without a line in the
    bindings; this makes sure each also gets its registry row (and so every test below)."""
    missing = sorted(set(remat._remat._unary_ops) - {op.name for op in OPS})
    assert missing == [], "add a unary(...) row to tests/op_registry.py"


# ---------------------------------------------------------------------------- forward


@pytest.mark.parametrize("op", OPS, ids=ids(OPS))
@settings(max_examples=15)
@given(data=st.data())
def test_forward_matches_numpy(op, data):
    case = data.draw(op.cases, label="case")
    dtype = data.draw(st.sampled_from(op.dtypes), label="dtype")
    arrays = arrays_for(op, case, dtype, data.draw(seeds, label="seed"))
    expected = reference(op, arrays, case)
    rtol, atol = op.tol32 if dtype == np.float32 else op.tol64
    first = None
    for label, form in op.forms():
        got = op(*tensors_for(op, arrays), form=form, **case.params)
        assert isinstance(got, remat.Tensor), label
        want = rdtype(op.out_dtype or dtype)
        assert got.dtype == want, f"{label}: {got.dtype} from {np.dtype(dtype)} inputs"
        assert got.shape == expected.shape, f"{label}: shape {got.shape} != {expected.shape}"
        np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=atol, err_msg=label)
        if first is None:
            first = got.numpy().copy()
        else:
            assert np.array_equal(got.numpy(), first, equal_nan=True), \
                f"{label} differs from {op.forms()[0][0]}"


# ---------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("op,k", example_params(DIFFERENTIABLE),
                         ids=example_ids(DIFFERENTIABLE))
def test_grad_matches_finite_differences(op, k):
    case = op.examples[k]
    arrays = arrays_for(op, case, np.float64, seed=k)
    di = op.diff_inputs(case)
    assert di, f"{op.name}: a differentiable op needs an input to differentiate"

    def fn(*leaves, form=None):
        return op(*_with(op, case, arrays, dict(zip(di, leaves))), form=form, **case.params)

    rtol, atol = op.grad_tol
    ref = check_grad(fn, *[arrays[i] for i in di], rtol=rtol, atol=atol, seed=k)
    # Every other form back-propagates exactly the same gradients.
    for label, form in op.forms()[1:]:
        leaves = [t64(arrays[i], requires_grad=True) for i in di]
        out = fn(*leaves, form=form)
        w = np.random.default_rng(k).standard_normal(out.shape)
        (out * t64(w)).sum().backward()
        for i, (leaf, g) in enumerate(zip(leaves, ref)):
            assert np.array_equal(leaf.grad.numpy(), g), f"{label}: gradient of input {di[i]}"


def _first_grads(op, case, arrays, di, xs, w, create_graph):
    """Leaves for ``xs`` and the gradients of sum(op(...) * w) w.r.t. them (zeros-free: None
    for an input the output does not depend on)."""
    leaves = [t64(x, requires_grad=True) for x in xs]
    out = op(*_with(op, case, arrays, dict(zip(di, leaves))), **case.params)
    loss = (out * t64(w)).sum()
    gs = remat.grad(loss, leaves, create_graph=create_graph, allow_unused=True)
    return leaves, out, gs


def _hvp(op, case, arrays, di, xs, w, vs, wrap=None):
    """d/dx of sum_i <g_i(x), v_i> by double backward; ``wrap`` runs the op (e.g. inside a
    checkpoint). Returns NumPy arrays (zeros where the second derivative vanishes)."""
    leaves = [t64(x, requires_grad=True) for x in xs]

    def f(*ls):
        return op(*_with(op, case, arrays, dict(zip(di, ls))), seed=None, **case.params)

    if op.random:
        remat.manual_seed(1234)
    out = f(*leaves) if wrap is None else wrap(f, *leaves)
    loss = (out * t64(w)).sum()
    gs = remat.grad(loss, leaves, create_graph=True, allow_unused=True)
    terms = [(g * t64(v)).sum() for g, v in zip(gs, vs) if g is not None]
    zeros = [np.zeros_like(x) for x in xs]
    if not terms:
        return zeros
    h = terms[0]
    for t in terms[1:]:
        h = h + t
    if not h.requires_grad:  # the gradient does not depend on the inputs: a linear op
        return zeros
    hv = remat.grad(h, leaves, allow_unused=True)
    return [z if g is None else g.numpy().copy() for z, g in zip(zeros, hv)]


def _second_order_setup(op, k):
    case = op.examples[k]
    arrays = arrays_for(op, case, np.float64, seed=k)
    di = op.diff_inputs(case)
    xs = [arrays[i] for i in di]
    rng = np.random.default_rng(100 + k)
    with remat.no_grad():
        out_shape = op(*tensors_for(op, arrays), **case.params).shape
    w = rng.standard_normal(out_shape)
    vs = [rng.standard_normal(x.shape) for x in xs]
    return case, arrays, di, xs, w, vs


@pytest.mark.parametrize("op,k", example_params(DIFFERENTIABLE),
                         ids=example_ids(DIFFERENTIABLE))
def test_second_order_grad_matches_finite_differences(op, k):
    """Needs ``remat.grad(..., create_graph=True, allow_unused=True)`` (API.md, Autograd)."""
    case, arrays, di, xs, w, vs = _second_order_setup(op, k)
    analytic = _hvp(op, case, arrays, di, xs, w, vs)

    def directional(xvals):
        _, _, gs = _first_grads(op, case, arrays, di, xvals, w, create_graph=False)
        return sum(float(np.sum(g.numpy() * v)) for g, v in zip(gs, vs) if g is not None)

    eps = 1e-5
    for i, x in enumerate(xs):
        num = np.zeros_like(x)
        for j in range(x.size):
            plus = [a.copy() for a in xs]
            minus = [a.copy() for a in xs]
            plus[i].reshape(-1)[j] += eps
            minus[i].reshape(-1)[j] -= eps
            num.reshape(-1)[j] = (directional(plus) - directional(minus)) / (2 * eps)
        assert analytic[i].shape == x.shape
        np.testing.assert_allclose(analytic[i], num, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{op.name}: Hessian-vector product, input {di[i]}")


# ---------------------------------------------------------------------------- CUDA


CUDA_TOL = {np.float32: (1e-4, 1e-5), np.float64: (1e-11, 1e-12)}


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("op,k", example_params(OPS), ids=example_ids(OPS))
def test_cuda_matches_cpu(op, k, dtype):
    if dtype not in op.dtypes:  # integer ops: their first and last dtype
        dtype = op.dtypes[0 if dtype is np.float32 else -1]
    case = op.examples[k]
    arrays = arrays_for(op, case, dtype, seed=k)
    di = op.diff_inputs(case) if op.differentiable else []
    rtol, atol = CUDA_TOL.get(dtype, (0, 0))
    ins = {d: tensors_for(op, arrays, d, di) for d in ("cpu", "cuda")}
    if not op.cuda:
        # No CUDA path yet: a clear DeviceError naming the op, never a panic.
        with pytest.raises(remat.DeviceError, match=op.op_name):
            op(*ins["cuda"], **case.params)
        return
    ys = {d: op(*ins[d], **case.params) for d in ins}
    assert str(ys["cuda"].device).startswith("cuda")
    assert ys["cuda"].dtype == ys["cpu"].dtype
    if ys["cpu"].dtype.is_floating_point:
        np.testing.assert_allclose(ys["cuda"].detach().numpy(), ys["cpu"].detach().numpy(),
                                   rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(ys["cuda"].cpu().numpy(), ys["cpu"].numpy())
    if not di:
        return
    w = np.random.default_rng(k).standard_normal(ys["cpu"].shape).astype(dtype)
    for d in ins:
        (ys[d] * remat.tensor(w, device=d)).sum().backward()
    for i in di:
        np.testing.assert_allclose(ins["cuda"][i].grad.numpy(), ins["cpu"][i].grad.numpy(),
                                   rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")


# ---------------------------------------------------------------------------- checkpointing


def _live_state():
    """``remat.live_checkpoint_state()``, collecting garbage only when something is left (a
    full collection per example would dominate the run time)."""
    n = remat.live_checkpoint_state()
    if n:
        gc.collect()
        n = remat.live_checkpoint_state()
    return n


def _post(y):
    """After the op: a product that saves y, so backward needs y's value."""
    return y * y


class _OpModule(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *inputs):
        return self.f(*inputs)


def _sequential(f, ins, di):
    """The op as a layer of a two-layer chain (op, post) whose first segment is checkpointed;
    the chain carries the first differentiable input, the others are captured."""
    c = di[0]

    def layer(h):
        return f(*ins[:c], h, *ins[c + 1:])

    layers = [layer, _post]
    plan = remat.sequential_plan(layers, 2, ins[c])
    assert any(ck for _, _, ck in plan), f"nothing checkpointed: {plan}"
    return remat.checkpoint_sequential(layers, 2, ins[c])


def _module(f, ins):
    m = _OpModule(f)
    m.activation_checkpointing = True
    return _post(m(*ins))


def _scope(f, ins):
    with remat.checkpoint_scope():
        y = f(*ins)
    return _post(y)


ENTRY_POINTS = {
    "checkpoint(tensor)": lambda f, ins, di: _post(remat.checkpoint(f(*ins))),
    "checkpoint(fn)": lambda f, ins, di: _post(remat.checkpoint(f, *ins)),
    "checkpoint_segment": lambda f, ins, di: _post(remat.checkpoint_segment(f, *ins)),
    "CheckpointGroup": lambda f, ins, di: _post(
        remat.CheckpointGroup().checkpoint_fn(f, *ins)[0]),
    "checkpoint_scope": lambda f, ins, di: _scope(f, ins),
    "checkpoint_sequential": _sequential,
    "Module.activation_checkpointing": lambda f, ins, di: _module(f, ins),
}


def _run(op, case, arrays, di, device, entry):
    """Forward (plain or through ``entry``) and backward of sum(post(op(...)) * w); returns
    the output and the gradients of the differentiable inputs."""
    ins = tensors_for(op, arrays, device, di)

    def f(*args):
        return op(*args, seed=None, **case.params)

    remat.manual_seed(7)
    z = _post(f(*ins)) if entry is None else ENTRY_POINTS[entry](f, ins, di)
    w = np.random.default_rng(3).standard_normal(z.shape).astype(arrays[di[0]].dtype)
    (z * remat.tensor(w, device=device)).sum().backward()
    out = z.detach().numpy().copy()
    grads = [ins[i].grad.numpy().copy() for i in di]
    return out, grads


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=ids(DIFFERENTIABLE))
def test_checkpoint_gradients_bit_identical(op, entry, devices):
    if devices == "cuda" and not op.cuda:
        pytest.skip(f"{op.name} has no CUDA path yet (test_cuda_matches_cpu checks its error)")
    for dtype in op.dtypes:
        for k, case in enumerate(op.examples):
            arrays = arrays_for(op, case, dtype, seed=k)
            di = op.diff_inputs(case)
            ref_out, ref = _run(op, case, arrays, di, devices, None)
            out, got = _run(op, case, arrays, di, devices, entry)
            what = f"{op.name} {case} {np.dtype(dtype)} under {entry}"
            assert np.array_equal(out, ref_out, equal_nan=True), f"{what}: forward differs"
            for i, (a, b) in zip(di, zip(ref, got)):
                assert a.dtype == b.dtype and a.shape == b.shape, what
                assert np.array_equal(a, b), \
                    f"{what}: gradient of input {i}, max diff {np.abs(a - b).max()}"
            assert _live_state() == 0, f"{what}: checkpoint state left"


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=ids(DIFFERENTIABLE))
def test_second_order_grad_inside_checkpoint_is_bit_identical(op, entry):
    """create_graph=True through every checkpoint entry point gives the plain run's
    Hessian-vector product bit for bit (API.md: higher-order gradients work inside
    checkpoints), and leaves no checkpoint state behind."""
    case, arrays, di, xs, w, vs = _second_order_setup(op, 0)
    plain = _hvp(op, case, arrays, di, xs, w, vs, wrap=lambda f, *ls: _post(f(*ls)))
    got = _hvp(op, case, arrays, di, xs, w, vs,
               wrap=lambda f, *ls: ENTRY_POINTS[entry](f, list(ls), list(range(len(ls)))))
    for i, (a, b) in enumerate(zip(plain, got)):
        assert np.array_equal(a, b), f"{op.name} under {entry}: input {di[i]}"
    gc.collect()
    assert remat.live_checkpoint_state() == 0


# ---------------------------------------------------------------------------- memory limit

#: Fractions of the plain run's extra peak (above the inputs) tried as the memory limit, the
#: tightest first.
_LIMIT_FRACTIONS = (0.5, 0.6, 0.7, 0.8, 0.9)


def _run_chain(op, case, arrays, di):
    """``_run`` with a tail of tanh layers (on broadcast copies of the output, many more
    elements than the inputs) after ``post``: their saved outputs dominate the peak, so a
    limit under it must evict and rebuild."""
    ins = tensors_for(op, arrays, "cpu", di)
    remat.manual_seed(7)
    z = _post(op(*ins, seed=None, **case.params))
    inputs = sum(a.size for a in arrays if isinstance(a, np.ndarray))
    z = z.unsqueeze(0).expand(max(8, 4 * inputs // max(z.numel(), 1)), *z.shape)
    for _ in range(4):
        z = z.tanh()
    w = np.random.default_rng(3).standard_normal(z.shape).astype(arrays[di[0]].dtype)
    (z * remat.tensor(w)).sum().backward()
    return z.detach().numpy().copy(), [ins[i].grad.numpy().copy() for i in di]


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=ids(DIFFERENTIABLE))
def test_gradients_under_a_tight_memory_limit_are_identical(op):
    """Under ``remat.memory_limit`` (dynamic rematerialisation) below the plain run's peak,
    activations are evicted and rebuilt (the op replayed), the peak never passes the limit,
    and forward and gradients are the plain run's bit for bit. A limit too tight to meet
    raises ``MemoryError`` naming the smallest working set and leaves the engine working."""
    for dtype in op.dtypes:
        for k, case in enumerate(op.examples):
            arrays = arrays_for(op, case, dtype, seed=k)
            di = op.diff_inputs(case)
            base = remat.memory_allocated()
            remat.reset_peak_memory_stats()
            ref_out, ref = _run_chain(op, case, arrays, di)
            extra = remat.max_memory_allocated() - base
            what = f"{op.name} {case} {np.dtype(dtype)}"
            met = []
            for fraction in _LIMIT_FRACTIONS:
                limit = base + int(extra * fraction)
                before = remat.memory_stats()
                remat.reset_peak_memory_stats()
                try:
                    with remat.memory_limit(limit):
                        out, got = _run_chain(op, case, arrays, di)
                except MemoryError as e:
                    assert "smallest working set" in str(e), f"{what}: {e}"
                    continue
                after = remat.memory_stats()
                assert remat.max_memory_allocated() <= limit, f"{what} at {fraction}"
                assert after["evictions"] > before["evictions"], f"{what} at {fraction}"
                assert after["rematerializations"] > before["rematerializations"], what
                assert np.array_equal(out, ref_out, equal_nan=True), f"{what}: forward differs"
                for i, (a, b) in zip(di, zip(ref, got)):
                    assert np.array_equal(a, b), f"{what} at {fraction}: gradient of input {i}"
                met.append(fraction)
            assert met, f"{what}: no limit under the plain peak was met"
            assert remat.memory_stats()["evictable_cells"] == 0, f"{what}: cells left"
