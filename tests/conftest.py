"""Shared helpers for the engine test suite: a float64 finite-difference gradient checker,
hypothesis strategies for shapes, and a device fixture.

The tests are laid out like the package (``tests/nn/test_linear.py`` tests
``remat/nn/modules/linear.py``, ``tests/checkpoint/`` the checkpoint entry points, ...); the
helpers beside this file (``op_registry``, ``_subprocess``, ``np_windows``) are importable from
every directory."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import remat

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Deterministic hypothesis runs: no wall-clock deadlines, no example database, fixed seed.
settings.register_profile(
    "remat",
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("remat")

DTYPES = [np.float32, np.float64]


def tol(dtype):
    """(rtol, atol) for comparing an op's result with a NumPy reference in `dtype`."""
    if np.dtype(dtype) == np.float32:
        return 2e-5, 2e-5
    return 1e-11, 1e-11


def assert_close(got, expected, dtype=None, rtol=None, atol=None):
    """Compare a remat tensor (or array) with a NumPy reference, shape and values."""
    got = np.asarray(got.numpy() if isinstance(got, remat.Tensor) else got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    if dtype is not None:
        r, a = tol(dtype)
        rtol = r if rtol is None else rtol
        atol = a if atol is None else atol
    np.testing.assert_allclose(
        got, expected, rtol=1e-6 if rtol is None else rtol, atol=1e-6 if atol is None else atol
    )


def t64(a, requires_grad=False):
    """A float64 remat tensor from array-like `a`."""
    return remat.tensor(np.asarray(a, dtype=np.float64), dtype=remat.float64,
                        requires_grad=requires_grad)


def check_grad(fn, *arrays, eps=1e-6, atol=1e-6, rtol=1e-5, seed=0):
    """Check the gradients of `fn(*tensors)` against central finite differences in float64.

    Every array becomes a float64 leaf with requires_grad; the output is reduced with a
    fixed random weighting w (loss = sum(out * w)) so every output element matters; each
    input's `.grad` after `loss.backward()` is compared with the numerical gradient.
    Returns the analytic gradients (NumPy arrays).
    """
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    leaves = [t64(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    assert isinstance(out, remat.Tensor), "fn must return a remat.Tensor"
    assert out.dtype == remat.float64, f"float64 inputs gave {out.dtype}"
    w = np.random.default_rng(seed).standard_normal(out.shape)
    loss = (out * t64(w)).sum()
    loss.backward()

    def f(*xs):
        with remat.no_grad():
            o = fn(*[t64(x) for x in xs])
        return float(np.sum(o.numpy().astype(np.float64) * w))

    analytic = []
    for i, (a, leaf) in enumerate(zip(arrays, leaves)):
        assert leaf.grad is not None, f"input {i} got no gradient"
        g = leaf.grad.numpy()
        assert g.shape == a.shape, f"input {i}: grad shape {g.shape} != {a.shape}"
        num = np.zeros_like(a)
        flat = num.reshape(-1)
        for j in range(a.size):
            xp = [x.copy() for x in arrays]
            xm = [x.copy() for x in arrays]
            xp[i].reshape(-1)[j] += eps
            xm[i].reshape(-1)[j] -= eps
            flat[j] = (f(*xp) - f(*xm)) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i} differs")
        analytic.append(g)
    return analytic


# ---------------------------------------------------------------- hypothesis strategies

def shapes(min_dims=0, max_dims=4, min_side=1, max_side=5):
    """Array shapes (tuples of ints)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcast_pairs(min_dims=0, max_dims=4, max_side=5):
    """Pairs of mutually broadcastable shapes."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side
    ).map(lambda bs: bs.input_shapes)


dtypes = st.sampled_from(DTYPES)
seeds = st.integers(0, 2**32 - 1)


def rand_array(shape, dtype=np.float64, seed=0, low=-2.0, high=2.0):
    """A reproducible uniform random array."""
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def away_from_zero(shape, dtype=np.float64, seed=0, low=0.2, high=2.0):
    """Random values with |x| in [low, high] and a random sign."""
    rng = np.random.default_rng(seed)
    mag = rng.uniform(low, high, size=shape)
    sign = np.where(rng.random(size=shape) < 0.5, -1.0, 1.0)
    return (mag * sign).astype(dtype)


def distinct(shape, dtype=np.float64, seed=0, gap=0.05):
    """Random values whose pairwise gaps are at least `gap` (no ties, for max)."""
    n = int(np.prod(shape, dtype=np.int64))
    vals = (np.arange(n) - n / 2) * gap * 3
    vals = np.random.default_rng(seed).permutation(vals)
    return vals.reshape(shape).astype(dtype)


def rdtype(np_dtype):
    """The remat dtype matching a NumPy dtype (float32 for the floats other than float64)."""
    d = np.dtype(np_dtype)
    if d == np.int64:
        return remat.int64
    if d == np.int32:
        return remat.int32
    if d == np.bool_:
        return remat.bool_
    return remat.float64 if d == np.float64 else remat.float32


# ---------------------------------------------------------------- fixtures

@pytest.fixture(params=["cpu", "cuda"])
def devices(request):
    """A device string; the cuda case is skipped unless a GPU is usable."""
    if request.param == "cuda" and not remat.cuda.is_available():
        pytest.skip("CUDA not available")
    return request.param


@pytest.fixture
def device(devices):
    return devices


@pytest.fixture(autouse=True)
def _restore_backend_flags():
    """Every test leaves the `remat.backends` flags as it found them (tests/backends sets
    them). One conftest for the whole suite: a second module named `conftest` would shadow
    this one for the `from conftest import ...` of the test modules."""
    from remat.backends import cuda

    saved = dict(cuda._SETTINGS)
    yield
    cuda._SETTINGS.clear()
    cuda._SETTINGS.update(saved)
