"""Silent wrong values and unclear errors: byte order keeps the
dtype, NumPy operands of unsupported dtypes never take over an operator, state dicts load all
or nothing, and every error names the op, class or argument."""

from __future__ import annotations

import operator
import zipfile

import numpy as np
import pytest

import remat
from remat import nn, optim

# ---- byte order ---------------------------------------------------------------------------

# (NumPy dtype, the remat dtype an array of it becomes)
BYTE_ORDERS = [
    (">f8", remat.float64), ("<f8", remat.float64), ("=f8", remat.float64),
    (">f4", remat.float32), ("<f4", remat.float32),
    (">i8", remat.int64), (">i4", remat.int32), (">u2", remat.int64),
    (">f2", remat.float16), ("?", remat.bool),
]


@pytest.mark.parametrize("np_dtype,want", BYTE_ORDERS, ids=[d for d, _ in BYTE_ORDERS])
def test_byte_order_keeps_dtype_and_values(np_dtype, want):
    arr = np.arange(3).astype(np_dtype)
    native = arr.astype(arr.dtype.newbyteorder("="))
    for make in (remat.tensor, remat.from_numpy, remat.Tensor):
        t = make(arr)
        assert t.dtype == want, (make, t.dtype)
        assert t.dtype == make(native).dtype
        np.testing.assert_array_equal(t.detach().numpy(), native.astype(np.dtype(str(want))))


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
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
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
    return {k: v.numpy().copy() for k, v in m.state_dict().items()}


@pytest.mark.parametrize("bad", ["dtype", "shape", "ragged", "object"])
def test_load_state_dict_bad_entry_changes_nothing_and_names_key(bad):
    m = _model()
    before = _snapshot(m)
    sd = {k: np.full_like(v.numpy(), 7.0) for k, v in m.state_dict().items()}
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


# ---- unclear errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("fn,name", [
    (lambda: remat.zeros(2**63), "zeros"),
    (lambda: remat.ones(3, 2**64), "ones"),
    (lambda: remat.randn((2**63,)), "randn"),
    (lambda: remat.full((2**70,), 1.0), "full"),
    (lambda: remat.zeros(-(2**63) - 1), "zeros"),
    (lambda: remat.ones(4).reshape(2**63), "reshape"),
], ids=["zeros", "ones", "randn", "full", "zeros_negative", "reshape"])
def test_huge_dimension_is_out_of_range(fn, name):
    with pytest.raises(ValueError) as info:
        fn()
    msg = str(info.value)
    assert name in msg and "out of range" in msg, msg
    assert "must be integers" not in msg


@pytest.mark.parametrize("make,name", [
    (lambda: remat.zeros(2**40, 2**40), "zeros"),
    (lambda: remat.ones(2**40, 2**40), "ones"),
    (lambda: remat.full((2**40, 2**40), 1.0), "full"),
], ids=["zeros", "ones", "full"])
def test_constructors_label_errors_with_their_own_name(make, name):
    with pytest.raises(remat.ShapeError) as info:
        make()
    assert str(info.value).startswith(f"{name}:"), str(info.value)


def test_to_takes_dtype_objects_and_strings_are_devices():
    t = remat.ones(2)
    assert t.to(remat.float64).dtype == remat.float64
    assert t.to(remat.float32) is t
    assert t.to(remat.int32).dtype == remat.int32 and t.to(remat.bool).dtype == remat.bool
    # As PyTorch's "Invalid device string": a string is a device, whatever it spells.
    for name in ("float64", "int32", "uint8", "complex64", "float16"):
        with pytest.raises(RuntimeError) as info:
            t.to(name)
        msg = str(info.value)
        assert isinstance(info.value, remat.DeviceError)
        assert msg.startswith("to:") and repr(name).replace("'", '"') in msg, msg
    with pytest.raises(remat.DTypeError, match="int8"):
        t.to(np.int8)
    with pytest.raises(remat.DeviceError, match="tpu"):
        t.to("tpu")


@pytest.mark.parametrize("device", [-1, -(2**70), 2**70])
def test_cuda_bad_index_names_it(device):
    with pytest.raises(remat.DeviceError) as info:
        remat.ones(2).cuda(device)
    assert str(device) in str(info.value)
    assert "cuda" in str(info.value)


def test_cuda_device_argument_type():
    with pytest.raises(TypeError, match="cuda"):
        remat.ones(2).cuda(1.5)


@pytest.mark.parametrize("fn,exc,words", [
    (lambda: nn.Linear("a", 3), TypeError, ("Linear", "in_features")),
    (lambda: nn.Linear(3, None), TypeError, ("Linear", "out_features")),
    (lambda: nn.Linear(3, -2), ValueError, ("Linear", "out_features")),
    (lambda: nn.Linear(2.5, 3), TypeError, ("Linear", "in_features")),
    (lambda: nn.Dropout("a"), TypeError, ("Dropout", "p")),
    (lambda: nn.Dropout(1.5), ValueError, ("Dropout", "p")),
    (lambda: nn.Dropout(float("nan")), ValueError, ("Dropout", "p")),
    (lambda: nn.LayerNorm("a"), TypeError, ("LayerNorm", "normalized_shape")),
    (lambda: nn.LayerNorm(4, eps="x"), TypeError, ("LayerNorm", "eps")),
    (lambda: nn.Flatten("a"), TypeError, ("Flatten", "start_dim")),
    (lambda: optim.SGD([remat.ones(2, requires_grad=True)], lr="a"), TypeError, ("SGD", "lr")),
    (lambda: optim.SGD([remat.ones(2, requires_grad=True)], lr=-1.0), ValueError,
     ("SGD", "lr")),
    (lambda: optim.SGD([remat.ones(2, requires_grad=True)], lr=0.1, momentum="m"), TypeError,
     ("SGD", "momentum")),
    (lambda: optim.Adam([remat.ones(2, requires_grad=True)], betas=0.9), TypeError,
     ("Adam", "betas")),
    (lambda: optim.Adam([remat.ones(2, requires_grad=True)], betas=(0.9,)), TypeError,
     ("Adam", "betas")),
    (lambda: optim.Adam([remat.ones(2, requires_grad=True)], betas=(0.9, "x")), TypeError,
     ("Adam", "betas")),
    (lambda: optim.Adam([remat.ones(2, requires_grad=True)], betas=(0.9, 1.0)), ValueError,
     ("Adam", "betas")),
    (lambda: optim.AdamW([remat.ones(2, requires_grad=True)], eps=None), TypeError,
     ("AdamW", "eps")),
    (lambda: optim.SGD([{"params": [remat.ones(2, requires_grad=True)], "lr": "x"}]),
     TypeError, ("SGD", "lr")),
], ids=["linear_str", "linear_none", "linear_negative", "linear_float", "dropout_str",
        "dropout_range", "dropout_nan", "layernorm_str", "layernorm_eps", "flatten_str",
        "sgd_lr_str", "sgd_lr_negative", "sgd_momentum", "adam_betas_float", "adam_betas_short",
        "adam_betas_str", "adam_betas_range", "adamw_eps", "sgd_group_lr"])
def test_constructor_arguments_named(fn, exc, words):
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    for w in words:
        assert w in msg, (w, msg)
    assert "not supported between" not in msg and "unpack" not in msg


def test_optimizer_accepts_numbers_of_every_kind():
    p = remat.ones(2, requires_grad=True)
    optim.SGD([p], lr=np.float32(0.1), momentum=1)
    optim.Adam([p], lr=1, betas=[0.8, np.float64(0.9)])


@pytest.mark.parametrize("a,b,shown", [
    ((3,), (4,), ("(3,)", "(4,)")),
    ((2, 3), (4,), ("(2, 3)", "(4,)")),
    ((5,), (4, 2), ("(5,)", "(4, 2)")),
    ((2, 3, 4), (5, 4, 2), ("(2, 3, 4)", "(5, 4, 2)")),
])
def test_matmul_errors_show_the_users_shapes(a, b, shown):
    with pytest.raises(remat.ShapeError) as info:
        remat.ones(*a) @ remat.ones(*b)
    msg = str(info.value)
    assert msg.startswith("matmul:")
    for s in shown:
        assert s in msg, msg
    assert "(1, " not in msg and ", 1)" not in msg, msg


def _corrupt_header(path):
    """An archive whose one member has a header that is no valid Python literal."""
    with zipfile.ZipFile(path, "w") as zf:
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), \"\"\" }"
        header = header + b" " * (63 - len(header) % 64) + b"\n"
        magic = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
        zf.writestr("a.npy", magic + header + b"\x00" * 8)


@pytest.mark.parametrize("content", ["header", "garbage", "npy", "truncated"])
def test_load_of_corrupt_file_is_a_value_error_naming_it(tmp_path, content):
    path = tmp_path / f"bad_{content}.npz"
    if content == "header":
        _corrupt_header(path)
    elif content == "garbage":
        path.write_bytes(b"this is not an archive at all")
    elif content == "npy":
        np.save(open(path, "wb"), np.ones(3))
    else:
        remat.save({"a": remat.ones(100)}, path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError) as info:
        remat.load(path)
    assert str(path) in str(info.value)
    assert "remat.load" in str(info.value)


def test_load_missing_file_is_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        remat.load(tmp_path / "missing.npz")
