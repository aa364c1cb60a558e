"""The bfloat16 and float16 columns of the op registry (``op_registry.OPS``), for every float op:

- forward values against the op in float32 on the same (rounded) inputs, within the half
  dtype's tolerance, and the result in the half dtype;
- gradients in the half dtype against the float32 gradients of the same inputs;
- bit-identical gradients under every checkpoint entry point, as in float32.

A half op computes in float32 and rounds its result once (as PyTorch's CPU kernels do), so
a one-op row is its float32 value rounded; composite rows round between their pieces.
"""

import gc

import numpy as np
import pytest
from op_registry import DIFFERENTIABLE, OPS, arrays_for, example_ids, example_params

import remat

HALVES = {"bfloat16": remat.bfloat16, "float16": remat.float16}
#: Unit roundoff of each half dtype: 2**-8 for bfloat16's 8 significant bits, 2**-11 for
#: float16's 11.
UNIT = {"bfloat16": 2.0**-8, "float16": 2.0**-11}

FLOAT_OPS = [op for op in OPS if np.float32 in op.dtypes]
FLOAT_DIFF = [op for op in DIFFERENTIABLE if np.float32 in op.dtypes]


def _inputs(op, arrays, dtype, requires_grad=()):
    """The op's arguments with every tensor input in ``dtype`` (labels stay arrays)."""
    out = []
    for i, a in enumerate(arrays):
        if op.domain(i).tensor:
            t = remat.tensor(a).to(dtype).detach()
            t.requires_grad = i in requires_grad
            out.append(t)
        else:
            out.append(a)
    return out


def _rounded_arrays(op, case, half, k):
    """float32 inputs already rounded to ``half`` (so both runs see the same values)."""
    arrays = arrays_for(op, case, np.float32, seed=k)
    return [remat.tensor(a).to(half).float().numpy() if op.domain(i).tensor else a
            for i, a in enumerate(arrays)]


def _close(got, want, unit, what, scale=1.0):
    """``|got - want| <= 16 u (|want| + scale)``: a few roundings of each value, relative to
    its own size or to the size of the values it came from (``scale``)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, what
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite) or not finite.all(), what
    err = np.abs(got - want)[finite]
    bound = (16 * unit * (np.abs(want) + scale))[finite]
    assert (err <= bound).all(), f"{what}: max error {err.max() if err.size else 0}"


@pytest.mark.parametrize("half", list(HALVES))
@pytest.mark.parametrize("op,k", example_params(FLOAT_OPS), ids=example_ids(FLOAT_OPS))
def test_half_forward_matches_float32(op, k, half):
    dtype = HALVES[half]
    case = op.examples[k]
    arrays = _rounded_arrays(op, case, dtype, k)
    want = op(*_inputs(op, arrays, remat.float32), **case.params)
    got = op(*_inputs(op, arrays, dtype), **case.params)
    if op.out_dtype is None:
        assert got.dtype == dtype, f"{op.name}: {got.dtype} from {half} inputs"
    else:
        assert got.dtype == want.dtype, op.name
    assert got.shape == want.shape
    if not got.dtype.is_floating_point:
        # Integer and bool results (argmax, comparisons) of the same values are the same.
        assert np.array_equal(got.numpy(), want.numpy()), op.name
        return
    scale = max([float(np.abs(a).max()) for i, a in enumerate(arrays)
                 if op.domain(i).tensor and a.size] + [1.0])
    _close(got.float().numpy(), want.numpy(), UNIT[half], f"{op.name} in {half}", scale)


def _grads(op, case, arrays, dtype, di, w):
    ins = _inputs(op, arrays, dtype, di)
    y = op(*ins, seed=None, **case.params) if op.random else op(*ins, **case.params)
    (y.float() * remat.tensor(w)).sum().backward()
    return y, [ins[i].grad for i in di]


@pytest.mark.parametrize("half", list(HALVES))
@pytest.mark.parametrize("op,k", example_params(FLOAT_DIFF), ids=example_ids(FLOAT_DIFF))
def test_half_gradients_match_float32(op, k, half):
    dtype = HALVES[half]
    case = op.examples[k]
    arrays = _rounded_arrays(op, case, dtype, k)
    di = op.diff_inputs(case)
    with remat.no_grad():
        shape = op(*_inputs(op, arrays, remat.float32), **case.params).shape
    w = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
    w = remat.tensor(w).to(dtype).float().numpy()
    remat.manual_seed(5)
    _, want = _grads(op, case, arrays, remat.float32, di, w)
    remat.manual_seed(5)
    _, got = _grads(op, case, arrays, dtype, di, w)
    for i, g, r in zip(di, got, want):
        assert g is not None and g.dtype == dtype, f"{op.name}: gradient of input {i}"
        scale = float(np.abs(r.numpy()).max()) if r.numel() else 1.0
        _close(g.float().numpy(), r.numpy(), 4 * UNIT[half],
               f"{op.name} in {half}: gradient of input {i}", max(scale, 1e-3))


def _post(y):
    return y * y


ENTRY_POINTS = {
    "checkpoint(fn)": lambda f, ins: _post(remat.checkpoint(f, *ins)),
    "checkpoint_segment": lambda f, ins: _post(remat.checkpoint_segment(f, *ins)),
    "checkpoint_scope": None,
    "CheckpointGroup": lambda f, ins: _post(remat.CheckpointGroup().checkpoint_fn(f, *ins)[0]),
}


def _scope(f, ins):
    with remat.checkpoint_scope():
        y = f(*ins)
    return _post(y)


ENTRY_POINTS["checkpoint_scope"] = _scope


def _run(op, case, arrays, dtype, di, entry):
    ins = _inputs(op, arrays, dtype, di)

    def f(*args):
        return op(*args, seed=None, **case.params)

    remat.manual_seed(7)
    z = _post(f(*ins)) if entry is None else ENTRY_POINTS[entry](f, ins)
    w = np.random.default_rng(3).standard_normal(z.shape).astype(np.float32)
    (z.float() * remat.tensor(w)).sum().backward()
    return z.float().detach().numpy().copy(), [ins[i].grad.float().numpy() for i in di]


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("op", FLOAT_DIFF, ids=[op.name for op in FLOAT_DIFF])
def test_half_checkpoint_gradients_bit_identical(op, entry):
    for half, dtype in HALVES.items():
        for k, case in enumerate(op.examples):
            arrays = _rounded_arrays(op, case, dtype, k)
            di = op.diff_inputs(case)
            ref_out, ref = _run(op, case, arrays, dtype, di, None)
            out, got = _run(op, case, arrays, dtype, di, entry)
            what = f"{op.name} {case} {half} under {entry}"
            assert np.array_equal(out, ref_out, equal_nan=True), f"{what}: forward differs"
            for i, a, b in zip(di, ref, got):
                assert np.array_equal(a, b, equal_nan=True), f"{what}: gradient of input {i}"
            n = remat.live_checkpoint_state()
            if n:
                gc.collect()
                n = remat.live_checkpoint_state()
            assert n == 0, f"{what}: checkpoint state left"
