"""`remat.where` with a bool condition and operands that repeat along the output (a mask
under a batch of score matrices, a scalar fill) runs without gathering; every combination
of full, trailing-suffix, scalar and non-contiguous operands must equal NumPy, forward and
backward."""

from __future__ import annotations

import numpy as np
import pytest

import remat

SHAPE = (3, 2, 5, 7)


def _operand(kind: str, rng: np.random.Generator) -> np.ndarray:
    return {
        "full": lambda: rng.standard_normal(SHAPE),
        "suffix": lambda: rng.standard_normal(SHAPE[-2:]),
        "ones": lambda: rng.standard_normal((1, 1) + SHAPE[-2:]),
        "row": lambda: rng.standard_normal(SHAPE[-1:]),
        "scalar": lambda: np.array(rng.standard_normal()),
    }[kind]().astype(np.float32)


KINDS = ["full", "suffix", "ones", "row", "scalar"]


@pytest.mark.parametrize("cond_kind", KINDS)
@pytest.mark.parametrize("a_kind", KINDS)
@pytest.mark.parametrize("b_kind", ["full", "scalar", "suffix"])
def test_where_matches_numpy_for_repeating_operands(cond_kind, a_kind, b_kind):
    rng = np.random.default_rng(hash((cond_kind, a_kind, b_kind)) % 2**32)
    c = _operand(cond_kind, rng) > 0
    a, b = _operand(a_kind, rng), _operand(b_kind, rng)
    ta = remat.tensor(a, requires_grad=True)
    tb = remat.tensor(b, requires_grad=True)
    out = remat.where(remat.tensor(c), ta, tb)
    want = np.where(c, a, b)
    np.testing.assert_array_equal(out.detach().numpy(), want)
    g = rng.standard_normal(want.shape).astype(np.float32)
    out.backward(remat.tensor(g))

    def reduce_to(x: np.ndarray, shape: tuple) -> np.ndarray:
        while x.ndim > len(shape):
            x = x.sum(0)
        return x.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)

    cb = np.broadcast_to(c, want.shape)
    np.testing.assert_allclose(ta.grad.detach().numpy(), reduce_to(np.where(cb, g, 0), a.shape),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tb.grad.detach().numpy(), reduce_to(np.where(cb, 0, g), b.shape),
                               rtol=1e-5, atol=1e-5)


def test_non_contiguous_operands_and_views_with_an_offset():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((7, 5)).astype(np.float32)
    c = rng.standard_normal((5, 7)) > 0
    ta = remat.tensor(a).transpose(0, 1)  # (5, 7), not contiguous
    np.testing.assert_array_equal(remat.where(remat.tensor(c), ta, -1.0).detach().numpy(),
                                  np.where(c, a.T, -1.0))
    big = rng.standard_normal((4, 5, 7)).astype(np.float32)
    view = remat.tensor(big)[2]  # contiguous, at an offset
    np.testing.assert_array_equal(remat.where(remat.tensor(c), view, 0.0).detach().numpy(),
                                  np.where(c, big[2], 0.0))


def test_a_large_causal_mask_under_scores():
    """Big enough to be split among threads (chunks start mid-period)."""
    rng = np.random.default_rng(2)
    s = rng.standard_normal((4, 3, 100, 100)).astype(np.float32)
    mask = np.tril(np.ones((100, 100), dtype=bool))
    out = remat.where(remat.tensor(mask), remat.tensor(s), float("-inf"))
    np.testing.assert_array_equal(out.detach().numpy(), np.where(mask, s, -np.inf))


def test_one_argument_where_and_the_method_form():
    c = np.array([[0, 3, 0], [1, 0, 2]])
    got = remat.where(remat.tensor(c))
    assert isinstance(got, tuple) and len(got) == 2
    for g, want in zip(got, np.where(c)):
        assert g.dtype == remat.int64
        np.testing.assert_array_equal(g.numpy(), want)
    (flat,) = remat.where(remat.tensor([False, True, True]))
    assert flat.tolist() == [1, 2]
    assert remat.where(remat.zeros(2, 0, dtype=remat.bool))[0].shape == (0,)
    with pytest.raises(TypeError, match="where"):
        remat.where(remat.tensor([True]), 1.0)
    x = remat.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.where(x > 0, 0.5)
    assert y.tolist() == [1.0, 0.5, 3.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
