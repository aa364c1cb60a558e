"""The fused `linear` op: x @ W.T + b in one pass, as PyTorch's addmm."""

import numpy as np
import pytest

import remat

from conftest import check_grad


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_matches_numpy(shape, dtype):
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (shape, (6, 4), (6,)))
    got = remat.linear(remat.tensor(x), remat.tensor(w), remat.tensor(b)).numpy()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, x @ w.T + b, rtol=tol, atol=tol)
    nobias = remat.linear(remat.tensor(x), remat.tensor(w)).numpy()
    np.testing.assert_allclose(nobias, x @ w.T, rtol=tol, atol=tol)


def test_linear_gradients():
    rng = np.random.default_rng(2)
    check_grad(lambda x, w, b: remat.linear(x, w, b),
               rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)),
               rng.standard_normal(5))


def test_linear_rejects_mismatched_shapes():
    with pytest.raises(remat.ShapeError, match="linear"):
        remat.linear(remat.ones(2, 3), remat.ones(5, 4))
    with pytest.raises(remat.ShapeError, match="linear"):
        remat.linear(remat.ones(2, 4), remat.ones(5, 4), remat.ones(4))
