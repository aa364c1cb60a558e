"""Equation forms of ``einsum`` and PyTorch's rules for ``mm`` / ``bmm`` / ``addmm`` /
``baddbmm`` / ``outer``, beyond the op registry rows (which cover forward values against NumPy,
gradients, second order, CUDA parity and checkpoints for every op).

einsum: explicit and implicit output, ``...`` broadcasting, 1..4 operands, sums over letters of
one operand, diagonals (a letter repeated within a term), size-1 broadcasting of letters,
spaces, the list form; bad equations raise ``ShapeError`` naming the equation. The attention
contraction runs as one batched GEMM on views: bit-identical to ``q @ k.mT`` and allocating
nothing but its output.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import check_grad, t64

import remat

RNG = np.random.default_rng(7)


def arr(*shape):
    return RNG.standard_normal(shape)


def check(eq, *arrays, expected=None):
    got = remat.einsum(eq, *[t64(a) for a in arrays])
    ref = np.einsum(eq, *arrays) if expected is None else expected
    assert got.shape == np.shape(ref), f"{eq}: {got.shape} != {np.shape(ref)}"
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-11, atol=1e-11, err_msg=eq)
    return got


# ---------------------------------------------------------------- equation forms


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),           # implicit: the letters seen once, sorted
    ("ba", [(2, 3)]),                       # implicit output sorts: a transpose
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("i,i", [(4,), (4,)]),                  # dot product
    ("i,i->i", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),              # outer product
    ("ij,ij->ij", [(2, 3), (2, 3)]),        # elementwise
    ("ij,kj->ik", [(3, 4), (5, 4)]),        # rhs read transposed
    ("ji,jk->ik", [(4, 3), (4, 5)]),        # lhs read transposed
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),   # merged row group
    ("abc,bcd->ad", [(2, 3, 4), (3, 4, 5)]),  # merged contraction group
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bqk,bkd->bqd", [(2, 4, 6), (2, 6, 5)]),
    ("ij,k->kj", [(2, 3), (4,)]),           # i only in operand 0: summed first
    ("ab,cd->abcd", [(2, 3), (4, 2)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),        # upper-case letters
    ("aB,Ba", [(2, 3), (3, 2)]),
    (",i->i", [(), (3,)]),                  # a 0-d operand
    (",", [(), ()]),
])
def test_forms_match_numpy(eq, shapes):
    check(eq, *[arr(*s) for s in shapes])


@pytest.mark.parametrize("eq,shapes", [
    ("...ij->...ji", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),  # batch axes broadcast
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),             # implicit: ... first
    ("i...->...", [(2, 3, 4)]),
    ("i...", [(2, 3, 4)]),                               # implicit: i moves last
    ("...i,...i->...", [(3, 4), (4,)]),
    ("b...i,bi->b...", [(2, 3, 4), (2, 4)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("ij...,j...->i...", [(2, 3), (3,)]),               # ... of no axes
])
def test_ellipsis(eq, shapes):
    check(eq, *[arr(*s) for s in shapes])


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl", [(2, 3), (3, 4), (4, 5)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("bi,bj,bk->bijk", [(2, 2), (2, 3), (2, 1)]),
    ("ij,jk,kl,lm->mi", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("ab,bc,ca->", [(2, 3), (3, 4), (4, 2)]),            # a ring: a kept until the end
])
def test_three_or_more_operands(eq, shapes):
    check(eq, *[arr(*s) for s in shapes])


@pytest.mark.parametrize("eq,shapes", [
    ("ii->i", [(3, 3)]),        # diagonal
    ("ii", [(3, 3)]),           # trace
    ("ii->", [(4, 4)]),
    ("iij->ij", [(3, 3, 2)]),
    ("iji->j", [(3, 2, 3)]),    # repeated axes not adjacent
    ("bii->bi", [(2, 3, 3)]),
    ("iii->i", [(2, 2, 2)]),    # three times
    ("ii,ij->j", [(3, 3), (3, 2)]),
    ("aab,b->a", [(3, 3, 2), (2,)]),
])
def test_diagonals(eq, shapes):
    check(eq, *[arr(*s) for s in shapes])


def test_diagonal_gradients():
    for eq, shapes in [("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iji->j", [(3, 2, 3)]),
                       ("ii,ij->j", [(3, 3), (3, 2)])]:
        check_grad(lambda *ts, eq=eq: remat.einsum(eq, *ts), *[arr(*s) for s in shapes])


def test_letters_of_extent_one_broadcast():
    a, b = arr(2, 1), arr(3, 4)
    check("ij,kj->ik", a, b, expected=np.einsum("ij,kj->ik", np.broadcast_to(a, (2, 4)), b))
    a, b = arr(1, 3), arr(2, 3)
    check("ij,ij->ij", a, b, expected=a * b)
    check_grad(lambda x, y: remat.einsum("ij,kj->ik", x, y), arr(2, 1), arr(3, 4))


def test_spaces_and_list_forms():
    a, b = arr(2, 3), arr(3, 4)
    ref = a @ b
    for call in (lambda x, y: remat.einsum(" i j , j k -> i k ", x, y),
                 lambda x, y: remat.einsum("ij,jk->ik", [x, y]),
                 lambda x, y: remat.einsum("ij,jk->ik", (x, y))):
        np.testing.assert_allclose(call(t64(a), t64(b)).numpy(), ref, rtol=1e-12)


def test_zero_extents():
    got = check("ij,jk->ik", arr(2, 0), arr(0, 3))
    assert np.all(got.numpy() == 0)
    check("ij,jk->ik", arr(0, 2), arr(2, 3))
    check("ii->i", arr(0, 0))


def test_identity_equation_is_a_new_tensor_with_gradients():
    x = t64(arr(2, 3), requires_grad=True)
    y = remat.einsum("ij->ij", x)
    assert not y.is_leaf
    (y * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_float32_keeps_dtype():
    a, b = arr(2, 3).astype(np.float32), arr(3, 4).astype(np.float32)
    got = remat.einsum("ij,jk->ik", remat.tensor(a), remat.tensor(b))
    assert got.dtype == remat.float32
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_second_order_through_a_chain():
    """Hessian-vector product of a three-operand contraction against finite differences."""
    xs = [arr(2, 3), arr(3, 4), arr(4, 2)]
    w = arr(2, 2)
    v = arr(3, 4)

    def grad_b(b_arr):
        ts = [t64(xs[0]), t64(b_arr, requires_grad=True), t64(xs[2])]
        loss = (remat.einsum("ij,jk,kl->il", *ts) ** 2 * t64(w)).sum()
        (g,) = remat.grad(loss, [ts[1]], create_graph=True)
        return ts[1], g

    b, g = grad_b(xs[1])
    (hv,) = remat.grad((g * t64(v)).sum(), [b])
    eps = 1e-6
    num = (grad_b(xs[1] + eps * v)[1].detach().numpy()
           - grad_b(xs[1] - eps * v)[1].detach().numpy()) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), num, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- routing to GEMM


def test_attention_scores_are_one_gemm_on_views():
    """``bhqd,bhkd->bhqk`` reads both operands through strides: the same GEMM as
    ``q @ k.mT`` (bit-identical) and no copy (the step's peak is the output alone)."""
    q = remat.tensor(arr(2, 3, 16, 8).astype(np.float32))
    k = remat.tensor(arr(2, 3, 12, 8).astype(np.float32))
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    s = remat.einsum("bhqd,bhkd->bhqk", q, k)
    assert remat.max_memory_allocated() - base == s.nbytes
    assert np.array_equal(s.numpy(), (q @ k.mT).numpy())
    # A column-major operand is taken transposed, again without a copy.
    a = remat.tensor(arr(40, 30).astype(np.float32)).T  # (30, 40), strides (1, 30)
    b = remat.tensor(arr(40, 20).astype(np.float32))
    base = remat.memory_allocated()
    remat.reset_peak_memory_stats()
    c = remat.einsum("ij,jk->ik", a, b)
    assert remat.max_memory_allocated() - base == c.nbytes
    assert np.array_equal(c.numpy(), (a @ b).numpy())


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("eq,shapes,words", [
    ("ij,jk->ik", [(2, 3)], ["1 operand", "2 term"]),
    ("ij,jk->il", [(2, 3), (3, 4)], ["'l'", "no input"]),
    ("ij->ii", [(2, 3)], ["'i'", "twice"]),
    ("ij,jk->ik", [(2, 3), (4, 5)], ["'j'", "(2, 3)", "(4, 5)"]),
    ("i1->i", [(2, 3)], ["'1'"]),
    ("i.j->i", [(2, 3)], ["..."]),
    ("i......->i", [(2, 3)], ["..."]),
    ("ijk->i", [(2, 3)], ["(2, 3)", "3"]),
    ("i->i", [(2, 3)], ["(2, 3)"]),
    ("ii->i", [(2, 3)], ["'i'", "(2, 3)"]),
    ("ij->i->j", [(2, 3)], ["'-'"]),
])
def test_bad_equations_name_the_equation(eq, shapes, words):
    with pytest.raises(remat.ShapeError) as info:
        remat.einsum(eq, *[remat.ones(*s) for s in shapes])
    msg = str(info.value)
    assert msg.startswith("einsum:") and f"'{eq}'" in msg, msg
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"


def test_einsum_argument_errors():
    with pytest.raises(remat.ShapeError, match="at least one operand"):
        remat.einsum("i->i")
    with pytest.raises(remat.DTypeError, match="einsum"):
        remat.einsum("i,i->", remat.ones(2), remat.ones(2, dtype=remat.float64))
    with pytest.raises(TypeError):
        remat.einsum("i", "x")
    with pytest.raises(TypeError):
        remat.einsum(3, remat.ones(2))


# ---------------------------------------------------------------- mm family


def test_mm_family_errors_name_op_and_shapes():
    cases = [
        (lambda: remat.mm(remat.ones(2, 3, 4), remat.ones(4, 5)),
         "mm: expected 2-D tensors, got (2, 3, 4) and (4, 5)"),
        (lambda: remat.mm(remat.ones(2, 3), remat.ones(4, 5)), "mm: shapes (2, 3) and (4, 5)"),
        (lambda: remat.bmm(remat.ones(2, 3), remat.ones(3, 4)),
         "bmm: expected 3-D tensors, got (2, 3) and (3, 4)"),
        (lambda: remat.bmm(remat.ones(2, 2, 3), remat.ones(3, 3, 4)),
         "bmm: batch sizes of (2, 2, 3) and (3, 3, 4) differ"),
        (lambda: remat.addmm(remat.ones(3, 3), remat.ones(2, 3), remat.ones(3, 4)),
         "addmm: input (3, 3) cannot be broadcast"),
        (lambda: remat.baddbmm(remat.ones(2), remat.ones(2, 2, 3), remat.ones(2, 3, 4)),
         "baddbmm: input (2,) cannot be broadcast"),
        (lambda: remat.outer(remat.ones(2, 2), remat.ones(2)),
         "outer: expected 1-D tensors, got (2, 2) and (2,)"),
    ]
    for fn, text in cases:
        with pytest.raises(remat.ShapeError) as info:
            fn()
        assert text in str(info.value), str(info.value)


def test_mm_family_needs_one_dtype_as_pytorch():
    a32, a64 = remat.ones(2, 2), remat.ones(2, 2, dtype=remat.float64)
    for fn in (lambda: remat.mm(a32, a64), lambda: remat.bmm(a32[None], a64[None]),
               lambda: remat.addmm(a32, a32, a64), lambda: remat.baddbmm(a64, a32[None],
                                                                         a32[None])):
        with pytest.raises(remat.DTypeError) as info:
            fn()
        assert "float32" in str(info.value) and "float64" in str(info.value)
    # outer promotes, as PyTorch's does.
    assert remat.outer(remat.ones(2), remat.ones(3, dtype=remat.float64)).dtype == remat.float64


def test_addmm_beta_zero_ignores_nan_input():
    x = remat.full((2, 2), float("nan"), dtype=remat.float64)
    a, b = t64(arr(2, 3)), t64(arr(3, 2))
    got = remat.addmm(x, a, b, beta=0, alpha=2)
    np.testing.assert_allclose(got.numpy(), 2 * (a.numpy() @ b.numpy()), rtol=1e-12)
    got = x[None].baddbmm(a[None], b[None], beta=0.0)
    np.testing.assert_allclose(got.numpy(), (a.numpy() @ b.numpy())[None], rtol=1e-12)


def test_addmm_scalings_and_methods():
    x, a, b = arr(4), arr(3, 2), arr(2, 4)
    ref = -0.5 * x + 3 * (a @ b)
    np.testing.assert_allclose(t64(x).addmm(t64(a), t64(b), beta=-0.5, alpha=3).numpy(), ref,
                               rtol=1e-12)
    np.testing.assert_allclose(remat.addmm(t64(x), t64(a), t64(b), beta=-0.5, alpha=3).numpy(),
                               ref, rtol=1e-12)
    assert np.array_equal(remat.mm(t64(a), t64(b)).numpy(), t64(a).mm(t64(b)).numpy())
    # mm is matmul's GEMM: bit-identical.
    assert np.array_equal(remat.mm(t64(a), t64(b)).numpy(), (t64(a) @ t64(b)).numpy())


def _int_matmul(a, b):
    """NumPy's integer matmul in int64, wrapping (as PyTorch's CPU kernels), in ``a``'s dtype."""
    return np.matmul(np.asarray(a, np.int64), np.asarray(b, np.int64)).astype(np.asarray(a).dtype)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_products_are_exact_and_keep_the_dtype(dtype):
    rng = np.random.default_rng(3)
    a = rng.integers(-50, 50, (2, 3, 4)).astype(dtype)
    b = rng.integers(-50, 50, (2, 4, 5)).astype(dtype)
    ta, tb = remat.tensor(a), remat.tensor(b)
    for got, want in [
        (ta @ tb, _int_matmul(a, b)),
        (remat.matmul(ta[0], tb[1]), _int_matmul(a[0], b[1])),
        (remat.mm(ta[0], tb[0]), _int_matmul(a[0], b[0])),
        (ta[1].mm(tb[1]), _int_matmul(a[1], b[1])),
        (remat.bmm(ta, tb), _int_matmul(a, b)),
        (ta @ tb[0], _int_matmul(a, b[0])),               # broadcast batch
        (ta[0] @ tb[0, :, 0], _int_matmul(a[0], b[0, :, 0])),  # matrix @ vector
        (ta[0, 0] @ ta[1, 0], _int_matmul(a[0, 0], a[1, 0])),  # dot product: 0-d
        (ta[0].mT @ ta[1], _int_matmul(a[0].T, a[1])),    # strided operand
        (remat.einsum("bij,bjk->bik", ta, tb), np.einsum("bij,bjk->bik", a, b)),
        (remat.einsum("ij,kj->ik", ta[0], ta[1]), np.einsum("ij,kj->ik", a[0], a[1])),
        (remat.outer(ta[0, 0], tb[0, 0]), np.outer(a[0, 0], b[0, 0])),
        (remat.addmm(tb[0, 0], ta[0], tb[0], beta=2, alpha=-3),
         2 * b[0, 0] - 3 * _int_matmul(a[0], b[0])),
        (remat.baddbmm(tb[:, :1], ta, tb, beta=0), _int_matmul(a, b)),
    ]:
        assert got.dtype == dtype, (got.dtype, dtype)
        np.testing.assert_array_equal(got.numpy(), want)
        assert got.grad_fn is None and not got.requires_grad


def test_integer_products_are_exact_beyond_float_precision_and_wrap():
    big = 2**53 + 1
    got = remat.tensor([[big, 1]]) @ remat.tensor([[3], [1]])
    assert got.tolist() == [[3 * big + 1]]  # a float64 detour would lose the last digit
    assert (remat.tensor([[2**62]]) @ remat.tensor([[4]])).tolist() == [[0]]  # wraps: 2**64
    i32 = remat.tensor([[2**30]], dtype=remat.int32)
    five = remat.tensor([[5]], dtype=remat.int32)
    assert (i32 @ five).tolist() == [[2**30]]  # 5 * 2**30 mod 2**32
    # addmm takes beta and alpha as integers (truncated), as PyTorch does.
    m = remat.tensor([[1, 2], [3, 4]])
    assert remat.addmm(m, m, m, beta=0.5, alpha=1.5).tolist() == [[7, 10], [15, 22]]


def test_integer_products_follow_pytorchs_dtype_rules():
    i, i32 = remat.tensor([[1, 2]]), remat.tensor([[1], [2]], dtype=remat.int32)
    f = remat.tensor([[1.0], [2.0]])
    cases = [
        (lambda: i @ f, "matmul", "int64 and float32"),
        (lambda: f.mT @ i.mT, "matmul", "float32 and int64"),
        (lambda: i @ i32, "matmul", "int64 and int32"),
        (lambda: remat.mm(i, f), "mm", "int64 and float32"),
        (lambda: remat.bmm(i[None], i32[None]), "bmm", "int64 and int32"),
        (lambda: remat.einsum("ij,jk->ik", i, f), "einsum", "int64 and float32"),
        (lambda: remat.addmm(f[:1], i, i.mT), "addmm", "float32 and int64"),
        (lambda: (i > 0) @ (i.mT > 0), "matmul", "bool"),
        (lambda: remat.mm(i > 0, i.mT > 0), "mm", "bool"),
    ]
    for fn, op, words in cases:
        with pytest.raises(remat.DTypeError) as info:
            fn()
        msg = str(info.value)
        assert msg.startswith(op + ":") and words in msg, msg
