"""Silent wrong values (issue #11, item 12): byte order keeps the dtype, NumPy operands of
unsupported dtypes never take over an operator, and state dicts load all or nothing."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import remat
from remat import nn

# ---- byte order ---------------------------------------------------------------------------

# (NumPy dtype, the remat dtype an array of it becomes)
BYTE_ORDERS = [
    (">f8", remat.float64), ("<f8", remat.float64), ("=f8", remat.float64),
    (">f4", remat.float32), ("<f4", remat.float32),
    (">i8", remat.float32), (">i4", remat.float32), (">u2", remat.float32),
    (">f2", remat.float32), ("?", remat.float32),
]


@pytest.mark.parametrize("np_dtype,want", BYTE_ORDERS, ids=[d for d, _ in BYTE_ORDERS])
def test_byte_order_keeps_dtype_and_values(np_dtype, want):
    arr = np.arange(3).astype(np_dtype)
    native = arr.astype(arr.dtype.newbyteorder("="))
    for make in (remat.tensor, remat.from_numpy, remat.Tensor):
        t = make(arr)
        assert t.dtype == want, (make, t.dtype)
        assert t.dtype == make(native).dtype
        np.testing.assert_array_equal(t.numpy(), native.astype(np.dtype(str(want))))


@pytest.mark.parametrize("np_dtype", [">f8", ">f4"])
def test_byte_order_in_operands(np_dtype):
    arr = np.arange(1.0, 4.0).astype(np_dtype)
    native = arr.astype(arr.dtype.newbyteorder("="))
    t = remat.ones(3, requires_grad=True)
    for op in (operator.add, operator.mul, remat.add, remat.mul):
        got, want = op(t, arr), op(t, native)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    got = arr * t
    assert isinstance(got, remat.Tensor) and got.dtype == (native * t).dtype


def test_big_endian_float64_is_float64():
    t = remat.tensor(np.arange(3, dtype=">f8"))
    assert t.dtype == remat.float64
    assert t.tolist() == [0.0, 1.0, 2.0]


# ---- NumPy operands in operators -------------------------------------------------------------

OPS = [
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
    ("div", operator.truediv), ("pow", operator.pow), ("matmul", operator.matmul),
]


@pytest.mark.parametrize("name,op", OPS, ids=[n for n, _ in OPS])
@pytest.mark.parametrize("other", [np.array([1j, 2j]), np.complex128(1j), 1j,
                                   np.array(["a", "b"])],
                         ids=["complex_array", "complex_scalar", "python_complex", "str_array"])
def test_unsupported_numpy_operand_raises_naming_op_and_dtype(name, op, other):
    t = remat.ones(2, requires_grad=True)
    dtype = str(np.asarray(other).dtype)
    for lhs, rhs in ((t, other), (other, t)):
        with pytest.raises(TypeError) as info:
            got = op(lhs, rhs)
            pytest.fail(f"returned {type(got).__name__} instead of raising")
        msg = str(info.value)
        if isinstance(other, np.ndarray) or isinstance(other, np.generic):
            assert isinstance(info.value, remat.DTypeError)
            assert name in msg and (dtype in msg or dtype[:3] in msg), msg


@pytest.mark.parametrize("name,op", OPS, ids=[n for n, _ in OPS])
def test_float_ndarray_on_either_side_gives_tensor_with_graph(name, op):
    a = np.array([[1.5, 2.0], [0.5, 3.0]], dtype=np.float32)
    for reflected in (False, True):
        t = remat.tensor(np.array([[2.0, 1.0], [1.0, 2.0]]), dtype=remat.float32,
                         requires_grad=True)
        got = op(a, t) if reflected else op(t, a)
        assert isinstance(got, remat.Tensor), (name, reflected, type(got))
        assert got.requires_grad
        ref = remat.tensor(a)
        want = op(ref, t.detach()) if reflected else op(t.detach(), ref)
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-6)
        got.sum().backward()
        assert t.grad is not None


def test_custom_reflected_operator_still_gets_its_turn():
    """Objects remat cannot convert still get their reflected method (NotImplemented)."""

    class Other:
        def __radd__(self, other):
            return "radd"

        def __rmul__(self, other):
            return "rmul"

    t = remat.ones(2)
    assert t + Other() == "radd"
    assert t * Other() == "rmul"


# ---- load_state_dict: all or nothing ----------------------------------------------------------


def _model():
    remat.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def _snapshot(m):
    return {k: v.copy() for k, v in m.state_dict().items()}


@pytest.mark.parametrize("bad", ["dtype", "shape", "ragged", "object"])
def test_load_state_dict_bad_entry_changes_nothing_and_names_key(bad):
    m = _model()
    before = _snapshot(m)
    sd = {k: np.full_like(v, 7.0) for k, v in m.state_dict().items()}
    key = "2.weight"  # after 0.weight and 0.bias in the apply order
    if bad == "dtype":
        sd[key] = sd[key].astype(np.complex64)
        exc = remat.DTypeError
    elif bad == "shape":
        sd[key] = np.zeros((3, 3))
        exc = remat.ShapeError
    elif bad == "ragged":
        sd[key] = [[1.0, 2.0], [3.0]]
        exc = ValueError
    else:
        sd[key] = np.array([object()] * 8).reshape(2, 4)
        exc = TypeError
    with pytest.raises(exc) as info:
        m.load_state_dict(sd)
    assert key in str(info.value)
    assert "load_state_dict" in str(info.value)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)
    # and a good one still loads
    sd[key] = np.full((2, 4), 7.0)
    m.load_state_dict(sd)
    assert all((v == 7.0).all() for v in m.state_dict().values())


def test_load_state_dict_casts_tensors_and_arrays():
    m = _model()
    sd = {k: remat.tensor(np.ones_like(v), dtype=remat.float64) for k, v in
          m.state_dict().items()}
    m.load_state_dict(sd)
    assert all(p.dtype == remat.float32 for p in m.parameters())
