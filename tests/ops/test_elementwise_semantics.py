"""PyTorch's semantics of the elementwise ops at the points the registry's generated tests stay
away from: ties, bounds, kinks, NaN, signed zeros and exact halves. Expected values are written
out from PyTorch's documented rules (checked against torch 2.15 when written), not computed
with torch, which the suite does not need."""

import math

import numpy as np
import pytest

import remat

nan, inf = float("nan"), float("inf")


def t64(values, requires_grad=False):
    return remat.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def grads(fn, *arrays):
    """The value of ``fn(*leaves)`` and the gradients of its sum (None: no gradient)."""
    leaves = [t64(a, requires_grad=True) for a in arrays]
    y = fn(*leaves)
    y.sum().backward()
    return y.detach().numpy(), [None if x.grad is None else x.grad.detach().numpy() for x in leaves]


def same(got, expected):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected, dtype=np.float64))


# ---------------------------------------------------------------- rounding and sign


@pytest.mark.parametrize("dtype", [remat.float32, remat.float64])
def test_round_halves_to_even(dtype):
    x = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, 1e20, -7.0]
    got = remat.round(remat.tensor(x, dtype=dtype)).detach().numpy()
    same(got, np.round(np.asarray(x, dtype=got.dtype)))
    assert math.copysign(1.0, got[2]) == -1.0  # round(-0.5) is -0.0, as in PyTorch


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2, -3])
def test_round_decimals_is_the_scaled_round_in_the_elements_dtype(dtype, decimals):
    # PyTorch's formula, in the element's dtype: rint(x * 10**d) / 10**d, or for a negative d
    # rint(x / 10**-d) * 10**-d, the scale being float(10**|d|).
    x = np.array([1.25, 1.35, -1.25, 2.675, 0.5, 1234.5, 1250.0, -0.04, 3e37, nan, inf, -inf],
                 dtype=dtype)
    s = dtype(10.0 ** abs(decimals))
    with np.errstate(all="ignore"):
        want = np.rint(x * s) / s if decimals > 0 else np.rint(x / s) * s
    got = remat.round(remat.tensor(x), decimals=decimals).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(remat.tensor(x).round(decimals=decimals).numpy(), want)


def test_round_decimals_values_dtypes_and_gradient():
    x32 = remat.tensor([1.25, 1.35, -1.25, 2.675])
    np.testing.assert_array_equal(remat.round(x32, decimals=1).numpy(),
                                  np.array([1.2, 1.4, -1.2, 2.7], dtype=np.float32))
    np.testing.assert_array_equal(remat.round(remat.tensor([1234.5, 1250.0]), decimals=-2).numpy(),
                                  [1200.0, 1200.0])
    # A scale beyond the dtype's range gives NaN everywhere (x * inf / inf), as in PyTorch.
    assert np.isnan(remat.round(x32, decimals=40).numpy()).all()
    assert np.isnan(remat.round(x32, decimals=-40).numpy()).all()
    assert np.isfinite(remat.round(x32.double(), decimals=40).numpy()).all()
    # decimals=0 is plain round, integers included; integers take no other decimals.
    ints = remat.tensor([15, -25])
    assert remat.round(ints, decimals=0).tolist() == [15, -25]
    with pytest.raises(remat.DTypeError, match=r"^round: decimals=1 .*int64.*\(2,\)"):
        remat.round(ints, decimals=1)
    with pytest.raises(TypeError):
        remat.round(x32, 1)  # keyword-only, as in PyTorch
    value, (g,) = grads(lambda t: remat.round(t, decimals=1), [1.25, 2.26, -0.05])
    same(value, [1.2, 2.3, -0.0])
    same(g, [0.0, 0.0, 0.0])


def test_sign_of_nan_and_zeros_is_zero():
    got = remat.sign(t64([nan, -0.0, 0.0, -3.0, 2.0])).detach().numpy()
    same(got, [0.0, 0.0, 0.0, -1.0, 1.0])
    assert math.copysign(1.0, got[1]) == 1.0


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round"])
def test_piecewise_constant_ops_have_zero_gradients(name):
    _, (g,) = grads(getattr(remat, name), [-1.5, -0.5, 0.0, 0.5, 2.0])
    same(g, np.zeros(5))


def test_abs_gradient_is_sign_and_builtin_abs_works():
    y, (g,) = grads(abs, [-2.0, -0.0, 0.0, 3.0, nan])
    same(y[:4], [2.0, 0.0, 0.0, 3.0])
    same(g, [-1.0, 0.0, 0.0, 1.0, 0.0])
    assert math.copysign(1.0, y[1]) == 1.0


# ---------------------------------------------------------------- special values


def test_rsqrt_log1p_expm1_special_values():
    same(remat.rsqrt(t64([0.0, 4.0, inf])).detach().numpy(), [inf, 0.5, 0.0])
    assert np.isnan(remat.rsqrt(t64([-1.0])).item())
    same(remat.log1p(t64([-1.0, 0.0])).detach().numpy(), [-inf, 0.0])
    assert np.isnan(remat.log1p(t64([-2.0])).item())
    # Accurate where 1 + x rounds: the point of log1p / expm1.
    assert remat.log1p(t64([1e-12])).item() == pytest.approx(1e-12, rel=1e-15)
    assert remat.expm1(t64([1e-12])).item() == pytest.approx(1e-12, rel=1e-15)
    assert remat.expm1(t64([-inf])).item() == -1.0


@pytest.mark.parametrize("dtype", [remat.float32, remat.float64])
def test_erf_matches_math_erf(dtype):
    x = np.linspace(-5.0, 5.0, 41)
    got = remat.erf(remat.tensor(x, dtype=dtype)).detach().numpy()
    want = [math.erf(v) for v in x.astype(got.dtype)]
    tol = 2e-7 if dtype == remat.float32 else 1e-15
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---------------------------------------------------------------- activations


def test_silu_saturates_without_nan():
    y, (g,) = grads(remat.silu, [-800.0, 0.0, 800.0])
    same(y, [-0.0, 0.0, 800.0])
    same(g, [0.0, 0.5, 1.0])


def test_softplus_threshold_and_beta():
    x = [-30.0, -1.0, 0.0, 1.0, 19.9, 20.5, 30.0]
    y, (g,) = grads(lambda t: remat.softplus(t, beta=2.0, threshold=20.0), x)
    xs = np.asarray(x)
    lin = 2.0 * xs > 20.0
    same(y[lin], xs[lin])
    np.testing.assert_allclose(y[~lin], np.log1p(np.exp(2.0 * xs[~lin])) / 2.0, rtol=1e-15)
    np.testing.assert_allclose(g, np.where(lin, 1.0, 1.0 / (1.0 + np.exp(-2.0 * xs))),
                               rtol=1e-14)
    # Default beta 1, threshold 20: linear only above 20.
    same(remat.softplus(t64([20.0, 21.0])).detach().numpy(), [math.log1p(math.exp(20.0)), 21.0])


def test_leaky_relu_gradient_at_zero_is_the_slope():
    y, (g,) = grads(lambda t: remat.leaky_relu(t, 0.2), [-1.0, 0.0, 2.0])
    np.testing.assert_allclose(y, [-0.2, 0.0, 2.0], rtol=1e-15)
    np.testing.assert_allclose(g, [0.2, 0.2, 1.0], rtol=1e-15)
    same(remat.leaky_relu(t64([-100.0])).detach().numpy(), [-1.0])  # default slope 0.01


# ---------------------------------------------------------------- clamp


def test_clamp_constant_bounds_pass_no_gradient_at_the_bounds():
    y, (g,) = grads(lambda t: remat.clamp(t, 2.0, 2.5), [1.0, 2.0, 2.2, 2.5, 3.0, nan])
    same(y[:5], [2.0, 2.0, 2.2, 2.5, 2.5])
    assert np.isnan(y[5])
    same(g, [0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    _, (g,) = grads(lambda t: t.clamp(min=2.0), [1.0, 2.0, 3.0])
    same(g, [0.0, 0.0, 1.0])
    _, (g,) = grads(lambda t: t.clip(max=2.0), [1.0, 2.0, 3.0])
    same(g, [1.0, 0.0, 0.0])


def test_clamp_inverted_and_nan_bounds():
    y, (g,) = grads(lambda t: remat.clamp(t, 3.0, 2.0), [1.0, 5.0])
    same(y, [2.0, 2.0])
    same(g, [0.0, 0.0])
    assert np.isnan(remat.clamp(t64([1.0, 2.0]), min=nan).detach().numpy()).all()
    assert np.isnan(remat.clamp(t64([1.0, 2.0]), max=nan).detach().numpy()).all()


@pytest.mark.parametrize("fn", [remat.clamp, remat.clip, remat.Tensor.clamp])
def test_clamp_without_bounds_is_an_error(fn):
    with pytest.raises(ValueError, match="At least one of 'min' or 'max' must not be None"):
        fn(t64([1.0]))
    with pytest.raises(ValueError, match="clamp"):
        fn(t64([1.0]), None, None)


def test_clamp_with_one_tensor_bound_is_maximum_or_minimum():
    x, b = [1.0, 2.0, 3.0, nan, 2.0], [2.0, 2.0, 2.0, 2.0, nan]
    for kw, ref in (("min", remat.maximum), ("max", remat.minimum)):
        y, gs = grads(lambda t, u, kw=kw: remat.clamp(t, **{kw: u}), x, b)
        y_ref, gs_ref = grads(ref, x, b)
        same(y, y_ref)
        for g, g_ref in zip(gs, gs_ref):
            same(g, g_ref)


def test_clamp_mixes_a_constant_and_a_tensor_bound():
    y, (gx, ghi) = grads(lambda t, hi: remat.clamp(t, -1.0, hi), [-3.0, 0.5, 4.0], [1.0, 1.0, 2.0])
    same(y, [-1.0, 0.5, 2.0])
    same(gx, [0.0, 1.0, 0.0])
    same(ghi, [0.0, 0.0, 1.0])


# ---------------------------------------------------------------- maximum / minimum


def test_maximum_minimum_propagate_nan_and_split_ties():
    a, b = [1.0, 2.0, nan, 3.0, 0.0], [1.0, 3.0, 1.0, nan, -1.0]
    y, (ga, gb) = grads(remat.maximum, a, b)
    same(y[[0, 1, 4]], [1.0, 3.0, 0.0])
    assert np.isnan(y[2]) and np.isnan(y[3])
    same(ga, [0.5, 0.0, 1.0, 1.0, 1.0])
    same(gb, [0.5, 1.0, 1.0, 1.0, 0.0])
    y, (ga, gb) = grads(remat.minimum, a, b)
    same(y[[0, 1, 4]], [1.0, 2.0, -1.0])
    assert np.isnan(y[2]) and np.isnan(y[3])
    same(ga, [0.5, 1.0, 1.0, 1.0, 0.0])
    same(gb, [0.5, 0.0, 1.0, 1.0, 1.0])


def test_maximum_broadcasts_and_reduces_gradients():
    y, (ga, gb) = grads(remat.maximum, [[0.0], [2.0]], [1.0, 1.0, 3.0])
    same(y, [[1.0, 1.0, 3.0], [2.0, 2.0, 3.0]])
    same(ga, [[0.0], [2.0]])
    same(gb, [1.0, 1.0, 2.0])


# ---------------------------------------------------------------- lerp


def test_lerp_is_exact_at_the_ends_and_its_gradients():
    same(remat.lerp(t64([1e8]), t64([1.0]), 1.0).detach().numpy(), [1.0])
    same(remat.lerp(t64([1e8]), t64([1.0]), 0.0).detach().numpy(), [1e8])
    y, (gs, ge) = grads(lambda s, e: s.lerp(e, 0.25), [1.0, 2.0], [3.0, 6.0])
    same(y, [1.5, 3.0])
    same(gs, [0.75, 0.75])
    same(ge, [0.25, 0.25])
    y, (gs, ge, gw) = grads(remat.lerp, [1.0, 2.0], [3.0, 6.0], [0.5, 0.25])
    same(y, [2.0, 3.0])
    same(gs, [0.5, 0.75])
    same(ge, [0.5, 0.25])
    same(gw, [2.0, 4.0])
