"""PyTorch's CPU autocast lists, one test per list: lower precision (matrix products,
convolutions, attention, recurrent layers), float32 (losses, the reflection and replication
pads, prod, trace, 3-d pools) and promotion (cat, stack); every other op runs on its inputs
as they are. Where PyTorch is installed, each row's output dtype is also compared with
``torch.autocast("cpu")``'s on the same inputs. CUDA's lists are checked on a GPU."""

import numpy as np
import pytest

import remat
import remat.nn.functional as F

R = np.random.default_rng(0)


def _t(*shape):
    return R.standard_normal(shape).astype(np.float32)


X3, M3, A2, B2 = _t(2, 3, 4), _t(2, 4, 3), _t(3, 4), _t(4, 5)
IMG, K2 = _t(1, 2, 8, 8), _t(3, 2, 3, 3)
SIG, K1 = _t(1, 2, 8), _t(3, 2, 3)
VOL = _t(1, 2, 4, 4, 4)
Q = _t(1, 2, 4, 8)
W, BIAS = _t(5, 4), _t(5)
LABELS = np.array([0, 1, 2])

# name: (remat fn, torch fn, arrays); each fn takes the module (remat or torch) namespace.
LOWER_PRECISION = {
    "matmul": (lambda m, a, b: m.matmul(a, b), (X3, M3)),
    "mm": (lambda m, a, b: m.mm(a, b), (A2, B2)),
    "bmm": (lambda m, a, b: m.bmm(a, b), (X3, M3)),
    "addmm": (lambda m, c, a, b: m.addmm(c, a, b), (_t(3, 5), A2, B2)),
    "baddbmm": (lambda m, c, a, b: m.baddbmm(c, a, b), (_t(2, 3, 3), X3, M3)),
    "linear": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), (X3, W, BIAS)),
    "einsum": (lambda m, a, b: m.einsum("bij,bjk->bik", a, b), (X3, M3)),
    "conv1d": (lambda m, x, k: m.nn.functional.conv1d(x, k), (SIG, K1)),
    "conv2d": (lambda m, x, k: m.nn.functional.conv2d(x, k), (IMG, K2)),
    "conv_transpose2d": (lambda m, x, k: m.nn.functional.conv_transpose2d(x, k),
                         (IMG, _t(2, 3, 3, 3))),
    "scaled_dot_product_attention": (
        lambda m, q: m.nn.functional.scaled_dot_product_attention(q, q, q), (Q,)),
}

FLOAT32 = {
    "cross_entropy": (lambda m, x, t: m.nn.functional.cross_entropy(x, t), (A2, LABELS)),
    "nll_loss": (lambda m, x, t: m.nn.functional.nll_loss(x, t), (A2, LABELS)),
    "mse_loss": (lambda m, a, b: m.nn.functional.mse_loss(a, b), (X3, X3 * 0.5)),
    "l1_loss": (lambda m, a, b: m.nn.functional.l1_loss(a, b), (X3, X3 * 0.5)),
    "binary_cross_entropy_with_logits": (
        lambda m, a, b: m.nn.functional.binary_cross_entropy_with_logits(a, b),
        (X3, np.abs(X3) / 4)),
    "binary_cross_entropy": (lambda m, a, b: m.nn.functional.binary_cross_entropy(a, b),
                             (np.abs(X3) / 4, np.abs(X3) / 5)),
    "prod": (lambda m, x: m.prod(x), (X3,)),
    "trace": (lambda m, x: m.trace(x), (A2[:, :3].copy(),)),
    "reflection_pad": (lambda m, x: m.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"),
                       (IMG,)),
    "replication_pad": (lambda m, x: m.nn.functional.pad(x, (1, 1, 1, 1), mode="replicate"),
                        (IMG,)),
    "max_pool3d": (lambda m, x: m.nn.functional.max_pool3d(x, 2), (VOL,)),
    "avg_pool3d": (lambda m, x: m.nn.functional.avg_pool3d(x, 2), (VOL,)),
    "adaptive_avg_pool3d": (lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 2), (VOL,)),
}

PROMOTE = {
    "cat": (lambda m, a, b: m.cat([a, b]), (X3, X3)),
    "stack": (lambda m, a, b: m.stack([a, b]), (X3, X3)),
}

# Ops in no CPU list: they run in the dtype of their inputs (bf16 in, bf16 out).
UNLISTED = {
    "softmax": (lambda m, x: m.nn.functional.softmax(x, -1), (X3,)),
    "log_softmax": (lambda m, x: m.nn.functional.log_softmax(x, -1), (X3,)),
    "layer_norm": (lambda m, x: m.nn.functional.layer_norm(x, (4,)), (X3,)),
    "group_norm": (lambda m, x: m.nn.functional.group_norm(x, 2), (IMG,)),
    "sum": (lambda m, x: m.sum(x), (X3,)),
    "mean": (lambda m, x: m.mean(x), (X3,)),
    "cumsum": (lambda m, x: m.cumsum(x, 0), (X3,)),
    "exp": (lambda m, x: m.exp(x), (X3,)),
    "logsumexp": (lambda m, x: m.logsumexp(x, -1), (X3,)),
    "gelu": (lambda m, x: m.nn.functional.gelu(x), (X3,)),
    "pad": (lambda m, x: m.nn.functional.pad(x, (1, 1)), (IMG,)),
    "max_pool2d": (lambda m, x: m.nn.functional.max_pool2d(x, 2), (IMG,)),
    "interpolate": (lambda m, x: m.nn.functional.interpolate(x, scale_factor=2), (IMG,)),
    "add": (lambda m, a, b: m.add(a, b), (X3, X3)),
}


def _remat_inputs(arrays, dtype):
    out = []
    for a in arrays:
        t = remat.tensor(a)
        out.append(t.to(dtype) if t.is_floating_point() else t)
    return out


def _run(table, name, in_dtype, ac_dtype=remat.bfloat16):
    fn, arrays = table[name]
    with remat.autocast("cpu", dtype=ac_dtype):
        return fn(remat, *_remat_inputs(arrays, in_dtype))


@pytest.mark.parametrize("half", [remat.bfloat16, remat.float16], ids=str)
@pytest.mark.parametrize("name", list(LOWER_PRECISION))
def test_lower_precision_list(name, half):
    """float32 inputs come out in the autocast dtype, and the values are the op's on the
    rounded inputs (the casts happen before the op)."""
    y = _run(LOWER_PRECISION, name, remat.float32, half)
    assert y.dtype == half, name
    fn, arrays = LOWER_PRECISION[name]
    want = fn(remat, *[t.to(half) for t in _remat_inputs(arrays, remat.float32)])
    assert np.array_equal(y.float().numpy(), want.float().numpy()), name


@pytest.mark.parametrize("name", list(FLOAT32))
def test_float32_list(name):
    """bfloat16 inputs come out in float32."""
    assert _run(FLOAT32, name, remat.bfloat16).dtype == remat.float32, name


@pytest.mark.parametrize("name", list(PROMOTE))
def test_promote_list(name):
    fn, arrays = PROMOTE[name]
    a, b = _remat_inputs(arrays, remat.float32)
    with remat.autocast("cpu"):
        assert fn(remat, a.bfloat16(), b).dtype == remat.float32
        assert fn(remat, a.bfloat16(), b.bfloat16()).dtype == remat.bfloat16


@pytest.mark.parametrize("name", list(UNLISTED))
def test_ops_in_no_list_keep_their_dtype(name):
    assert _run(UNLISTED, name, remat.bfloat16).dtype == remat.bfloat16, name
    assert _run(UNLISTED, name, remat.float32).dtype == remat.float32, name


def test_float64_is_never_cast():
    a = remat.tensor(A2).double()
    with remat.autocast("cpu"):
        assert remat.mm(a, remat.tensor(B2).double()).dtype == remat.float64


def test_integer_inputs_are_never_cast():
    with remat.autocast("cpu"):
        y = F.cross_entropy(remat.tensor(A2), remat.tensor(LABELS))
        assert y.dtype == remat.float32


ALL_TABLES = {"lower": LOWER_PRECISION, "float32": FLOAT32, "promote": PROMOTE,
              "unlisted": UNLISTED}


@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("row", [(t, n) for t, tab in ALL_TABLES.items() for n in tab],
                         ids=lambda r: f"{r[0]}-{r[1]}")
def test_each_row_matches_torch_autocast(row, in_dtype):
    torch = pytest.importorskip("torch")
    table, name = ALL_TABLES[row[0]], row[1]
    fn, arrays = table[name]
    tdt = getattr(torch, in_dtype)
    targs = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    targs = [t.to(tdt) if t.is_floating_point() else t for t in targs]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = fn(torch, *targs).dtype
    got = _run(table, name, getattr(remat, in_dtype)).dtype
    assert str(got) == str(want).replace("torch.", ""), f"{name}: {got} vs PyTorch's {want}"
