"""CUDA paths of the integer-aware ops and the index-returning ops, bit for bit against the
CPU (NaN payloads aside) on the inputs the registry's random draws rarely hit: every dtype
pair of the logical, bitwise and exact integer ops, NaN and infinities, integer floor division and
remainder with negative operands, `MIN // -1` and zero divisors, cumsum's -0.0, max(dim)
ties and NaN, max pooling with NaN and with windows wholly in the padding. Skips where no
GPU is usable."""

import numpy as np
import pytest

import remat

pytestmark = pytest.mark.skipif(not remat.cuda.is_available(), reason="CUDA not available")

INTS = (np.int64, np.int32)
ALL = (np.float32, np.float64, np.int64, np.int32, np.bool_)


def both(a, **kw):
    """`a` as a CPU tensor and as a CUDA tensor."""
    return remat.tensor(a, **kw), remat.tensor(a, device="cuda", **kw)


def same(gpu, cpu):
    """The CUDA result equals the CPU's: dtype, shape and every bit (NaN where NaN)."""
    assert str(gpu.device).startswith("cuda")
    assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    g, c = gpu.detach().numpy(), cpu.detach().numpy()
    np.testing.assert_array_equal(g, c)
    if g.dtype.kind == "f":
        # Every bit, except NaN payloads (CUDA's canonical NaN differs from the CPU's).
        keep = ~np.isnan(c)
        np.testing.assert_array_equal(np.isnan(g), ~keep)
        np.testing.assert_array_equal(g[keep].view(f"u{g.itemsize}"),
                                      c[keep].view(f"u{c.itemsize}"))


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype is np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(-4, 5, size=shape).astype(dtype)


@pytest.mark.parametrize("da", ALL)
@pytest.mark.parametrize("db", ALL)
def test_logical_ops_every_dtype_pair(da, db):
    a, b = sample(da, (3, 4), 1), sample(db, (4,), 2)
    (ca, ga), (cb, gb) = both(a), both(b)
    for name in ("logical_and", "logical_or", "logical_xor"):
        f = getattr(remat, name)
        same(f(ga, gb), f(ca, cb))
    same(remat.logical_not(ga), remat.logical_not(ca))


@pytest.mark.parametrize("da", INTS + (np.bool_,))
@pytest.mark.parametrize("db", INTS + (np.bool_,))
def test_bitwise_ops_integer_and_bool(da, db):
    a, b = sample(da, (2, 5), 3), sample(db, (2, 1), 4)
    (ca, ga), (cb, gb) = both(a), both(b)
    same(ga & gb, ca & cb)
    same(ga | gb, ca | cb)
    same(ga ^ gb, ca ^ cb)
    same(~ga, ~ca)


@pytest.mark.parametrize("da", INTS + (np.bool_,))
@pytest.mark.parametrize("db", INTS + (np.bool_,))
def test_integer_add_sub_mul_max_min_exact_and_wrapping(da, db):
    a, b = sample(da, (3, 4), 9), sample(db, (4,), 10)
    if da is np.int64:
        a[0, :2] = [2**62, -(2**63)]  # wraps on + and *, as on the CPU
    (ca, ga), (cb, gb) = both(a), both(b)
    same(ga + gb, ca + cb)
    same(ga * gb, ca * cb)
    same(remat.maximum(ga, gb), remat.maximum(ca, cb))
    same(remat.minimum(ga, gb), remat.minimum(ca, cb))
    if not (da is np.bool_ and db is np.bool_):
        same(ga - gb, ca - cb)


def test_logical_ops_treat_nan_as_true():
    (c, g) = both(np.array([np.nan, 0.0, -0.0, np.inf, 1.0], np.float32))
    same(remat.logical_and(g, g), remat.logical_and(c, c))
    same(remat.logical_not(g), remat.logical_not(c))


@pytest.mark.parametrize("dtype", ALL)
def test_float_classes(dtype):
    if dtype in (np.float32, np.float64):
        a = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0], dtype)
    else:
        a = sample(dtype, (6,), 5)
    c, g = both(a)
    for name in ("isnan", "isinf", "isfinite"):
        same(getattr(remat, name)(g), getattr(remat, name)(c))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_floor_divide_remainder_and_trunc(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, 0, 5, info.min, info.min, info.max, -1], dtype)
    b = np.array([2, 2, -2, -2, 3, -5, -1, 7, -3, info.max], dtype)
    (ca, ga), (cb, gb) = both(a), both(b)
    same(remat.floor_divide(ga, gb), remat.floor_divide(ca, cb))
    same(remat.remainder(ga, gb), remat.remainder(ca, cb))
    same(remat.div(ga, gb, rounding_mode="trunc"), remat.div(ca, cb, rounding_mode="trunc"))
    np.testing.assert_array_equal(remat.remainder(ga, gb).numpy(), np.remainder(a, b))


def test_integer_zero_divisor_is_an_error_on_the_gpu_too():
    g = remat.tensor([1, 2, 3], device="cuda")
    for f in (lambda: g // remat.tensor([1, 0, 2], device="cuda"),
              lambda: g % remat.tensor(0, device="cuda")):
        with pytest.raises(ValueError, match="division by zero"):
            f()
    assert (g // 1).tolist() == [1, 2, 3]


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_float_floor_divide_and_remainder_signs_and_ieee(dtype):
    a = np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1.0, -1.0, np.inf, np.nan, 5.0], dtype)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 2.0, 1.0, np.inf], dtype)
    (ca, ga), (cb, gb) = both(a), both(b)
    same(remat.floor_divide(ga, gb), remat.floor_divide(ca, cb))
    same(remat.remainder(ga, gb), remat.remainder(ca, cb))
    same(remat.div(ga, gb, rounding_mode="trunc"), remat.div(ca, cb, rounding_mode="trunc"))


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_cumsum_every_axis_bit_identical(dtype):
    a = np.random.default_rng(6).standard_normal((3, 40, 5)).astype(dtype)
    a[0, 0, 0] = -0.0
    c, g = both(a, requires_grad=True)
    for dim in (0, 1, 2, -1):
        same(remat.cumsum(g, dim), remat.cumsum(c, dim))
    remat.cumsum(c, 1).sum().backward()
    remat.cumsum(g, 1).sum().backward()
    same(g.grad, c.grad)


def test_cumsum_of_integers_on_the_gpu():
    c, g = both(np.arange(-6, 6, dtype=np.int32).reshape(3, 4))
    same(remat.cumsum(g, 1), remat.cumsum(c, 1))


def test_max_and_min_dim_ties_nan_and_gradient():
    a = np.array([[1.0, 3.0, 3.0, 0.0], [np.nan, 2.0, np.nan, 5.0], [-1.0, -1.0, -2.0, -2.0]],
                 np.float32)
    for f in (remat.max, remat.min):
        for dim, keepdim in ((1, False), (0, True), (-1, True)):
            c, g = both(a, requires_grad=True)
            (vc, ic), (vg, ig) = f(c, dim, keepdim), f(g, dim, keepdim)
            same(vg, vc)
            same(ig, ic)
            w = np.random.default_rng(7).standard_normal(vc.shape).astype(np.float32)
            (vc * remat.tensor(w)).sum().backward()
            (vg * remat.tensor(w, device="cuda")).sum().backward()
            same(g.grad, c.grad)


def test_max_dim_of_a_0d_tensor_keeps_the_device():
    v, i = remat.max(remat.tensor(2.5, device="cuda"), 0)
    assert str(v.device).startswith("cuda") and str(i.device).startswith("cuda")
    assert (v.item(), i.item()) == (2.5, 0)


@pytest.mark.parametrize("rank", (1, 2))
def test_max_pool_nan_and_windows_in_the_padding(rank):
    rng = np.random.default_rng(8)
    f = remat.nn.functional.max_pool1d if rank == 1 else remat.nn.functional.max_pool2d
    # The second geometry (kernel 2, dilation 4, padding 2 over an extent of 2) has windows
    # that read only padding: -inf and no gradient, as in PyTorch.
    for spatial, kw in (((9,) if rank == 1 else (7, 6),
                         {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
                        ((2,) if rank == 1 else (2, 6),
                         {"kernel_size": 2, "stride": 1, "padding": 2, "dilation": 4})):
        a = rng.standard_normal((2, 3) + spatial)
        a.reshape(-1)[[4, 5, 9]] = np.nan
        c, g = both(a, requires_grad=True)
        (yc, ic) = f(c, return_indices=True, **kw)
        (yg, ig) = f(g, return_indices=True, **kw)
        same(yg, yc)
        same(ig, ic)
        w = rng.standard_normal(yc.shape)
        (remat.where(remat.isfinite(yc), yc, 0.0) * remat.tensor(w)).sum().backward()
        (remat.where(remat.isfinite(yg), yg, 0.0) * remat.tensor(w, device="cuda")).sum().backward()
        same(g.grad, c.grad)
    assert not np.isfinite(yc.detach().numpy()).all()
