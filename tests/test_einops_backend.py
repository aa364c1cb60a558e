"""einops on remat tensors (remat/_einops_backend.py): rearrange, reduce, repeat, einsum,
pack and unpack against einops on NumPy arrays, their gradients (finite differences), the
layers in a Sequential, a checkpointed block using rearrange, and remat without einops."""

import numpy as np
import pytest
from _subprocess import assert_clean_exit, run_python
from conftest import check_grad

import remat
from remat import nn

einops = pytest.importorskip("einops")


def _np(t):
    return t.detach().numpy()


def _x(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_remat_tensors_get_remats_backend():
    from remat._einops_backend import RematBackend

    backend = einops._backends.get_backend(remat.zeros(2))
    assert isinstance(backend, RematBackend) and backend.framework_name == "remat"
    assert einops._backends.get_backend(nn.Parameter(remat.zeros(2))) is backend
    assert backend.layers().Rearrange is nn.Rearrange


REARRANGES = [
    ("a b c -> c b a", {}),
    ("a b c -> a (b c)", {}),
    ("a (b p) c -> a b p c", {"p": 2}),
    ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", {"p1": 2, "p2": 2}),
    ("a ... -> ... a", {}),
    ("a b c -> a 1 b c ()", {}),
    ("a b 1 -> b a", {}),
]


@pytest.mark.parametrize("pattern,lengths", REARRANGES, ids=[p for p, _ in REARRANGES])
def test_rearrange_matches_numpy(pattern, lengths):
    shape = (2, 4, 4, 6) if pattern.startswith("b c (h") else (2, 4, 1) if "b 1" in pattern \
        else (2, 4, 3)
    x = _x(shape)
    got = einops.rearrange(remat.tensor(x), pattern, **lengths)
    want = einops.rearrange(x, pattern, **lengths)
    assert isinstance(got, remat.Tensor)
    np.testing.assert_array_equal(_np(got), want)


def test_rearrange_against_plain_numpy():
    x = np.arange(24.0).reshape(2, 3, 4)
    got = _np(einops.rearrange(remat.tensor(x), "a b c -> (c a) b"))
    np.testing.assert_array_equal(got, x.transpose(2, 0, 1).reshape(8, 3))
    # A list of tensors is stacked on a new first axis.
    parts = [remat.tensor(x[0]), remat.tensor(x[1])]
    np.testing.assert_array_equal(_np(einops.rearrange(parts, "n b c -> b (n c)")),
                                  x.transpose(1, 0, 2).reshape(3, 8))


@pytest.mark.parametrize("reduction", ["min", "max", "sum", "mean", "prod"])
@pytest.mark.parametrize("pattern", ["a b c -> a", "a b c -> c a", "a (b 2) c -> a b c",
                                     "a b c -> a () c"])
def test_reduce_matches_numpy(reduction, pattern):
    x = _x((2, 4, 3), seed=1)
    got = einops.reduce(remat.tensor(x), pattern, reduction)
    np.testing.assert_allclose(_np(got), einops.reduce(x, pattern, reduction), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("reduction", ["any", "all"])
def test_boolean_reductions(reduction):
    x = _x((3, 4, 2), seed=2) > 0
    got = einops.reduce(remat.tensor(x), "a b c -> b", reduction)
    np.testing.assert_array_equal(_np(got), getattr(np, reduction)(x, axis=(0, 2)))


def test_mean_of_integers_is_refused_as_einops_does():
    with pytest.raises(NotImplementedError, match="non-floating"):
        einops.reduce(remat.arange(6).reshape(2, 3), "a b -> a", "mean")


@pytest.mark.parametrize("pattern,lengths", [
    ("a b -> a b r", {"r": 3}),
    ("a b -> (r a) b", {"r": 2}),
    ("a b -> a (b r)", {"r": 2}),
    ("b -> n b", {"n": 4}),
])
def test_repeat_matches_numpy(pattern, lengths):
    x = _x((2, 3) if pattern.startswith("a") else (3,), seed=3)
    got = einops.repeat(remat.tensor(x), pattern, **lengths)
    np.testing.assert_array_equal(_np(got), einops.repeat(x, pattern, **lengths))


def test_einsum_matches_numpy():
    a, b = _x((2, 3, 4), seed=4), _x((2, 4, 5), seed=5)
    got = einops.einsum(remat.tensor(a), remat.tensor(b), "batch i k, batch k j -> batch i j")
    np.testing.assert_allclose(_np(got), a @ b, rtol=1e-12, atol=1e-12)
    got = einops.einsum(remat.tensor(a), "batch i k -> k")
    np.testing.assert_allclose(_np(got), a.sum((0, 1)), rtol=1e-12, atol=1e-12)


def test_pack_and_unpack_match_numpy():
    xs = [_x((2, 3), 6), _x((2, 3, 4), 7), _x((2, 3, 2, 5), 8)]
    packed, shapes = einops.pack([remat.tensor(x) for x in xs], "a b *")
    want, want_shapes = einops.pack(xs, "a b *")
    assert shapes == want_shapes
    np.testing.assert_array_equal(_np(packed), want)
    for got, x in zip(einops.unpack(packed, shapes, "a b *"), xs):
        np.testing.assert_array_equal(_np(got), x)


# ------------------------------------------------------------------ gradients

def test_rearrange_gradient():
    check_grad(lambda x: einops.rearrange(x, "b c (h p) w -> b (h w) (p c)", p=2),
               _x((2, 3, 4, 2), 9))


@pytest.mark.parametrize("reduction", ["min", "max", "sum", "mean", "prod"])
def test_reduce_gradient(reduction):
    check_grad(lambda x: einops.reduce(x, "a (b 2) c -> a c", reduction), _x((2, 4, 3), 10))


def test_repeat_gradient():
    check_grad(lambda x: einops.repeat(x, "a b -> (r a) b s", r=2, s=3), _x((2, 3), 11))


def test_einsum_gradient():
    check_grad(lambda a, b: einops.einsum(a, b, "i k, k j -> j i"),
               _x((3, 4), 12), _x((4, 2), 13))


def test_pack_unpack_gradient():
    def fn(a, b):
        packed, shapes = einops.pack([a, b], "n *")
        first, second = einops.unpack(packed * packed, shapes, "n *")
        return einops.rearrange(first, "n x y -> n (x y)") + second.sum(-1, keepdim=True)

    check_grad(fn, _x((2, 3, 2), 14), _x((2, 4), 15))


# ------------------------------------------------------------------ layers

def test_layers_in_sequential_match_numpy_and_train():
    remat.manual_seed(0)
    model = nn.Sequential(
        nn.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2),
        nn.Linear(12, 5),
        nn.Reduce("b n d -> b d", "mean"),
    ).double()
    x = _x((3, 3, 4, 4), 16)
    lin = model[1]
    patches = einops.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2)
    want = (patches @ _np(lin.weight).T + _np(lin.bias)).mean(1)
    out = model(remat.tensor(x))
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-12)
    out.sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.shape == (5, 12)
    assert [name for name, _ in model.named_parameters()] == ["1.weight", "1.bias"]
    assert repr(model[0]) == "Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=2, p2=2)"


def test_checkpointed_block_with_rearrange_is_bit_identical():
    remat.manual_seed(1)
    qkv, proj = nn.Linear(8, 24), nn.Linear(8, 8)
    merge = nn.Rearrange("b h n d -> b n (h d)")

    def block(x):
        q, k, v = einops.rearrange(qkv(x), "b n (three h d) -> three b h n d", three=3, h=2)
        att = einops.einsum(q, k, "b h i d, b h j d -> b h i j").softmax(-1)
        y = merge(einops.einsum(att, v, "b h i j, b h j d -> b h i d"))
        return x + einops.reduce(proj(y), "b n (d r) -> b n d", "max", r=1)

    x0 = _x((2, 5, 8), 17, np.float32)

    def run(checkpointed):
        x = remat.tensor(x0, requires_grad=True)
        h = remat.checkpoint(block, x) if checkpointed else block(x)
        h = remat.checkpoint(block, h) if checkpointed else block(h)
        loss = (h * h).mean()
        for p in (*qkv.parameters(), *proj.parameters()):
            p.grad = None
        loss.backward()
        return [_np(loss), _np(x.grad)] + [_np(p.grad).copy() for p in
                                            (*qkv.parameters(), *proj.parameters())]

    for a, b in zip(run(False), run(True)):
        np.testing.assert_array_equal(a, b)


def test_remat_imports_without_einops():
    run = run_python("""
        import sys
        sys.modules["einops"] = None  # as if it were not installed
        import remat
        assert "remat._einops_backend" not in sys.modules
        assert "Rearrange" not in remat.nn.__all__
        try:
            remat.nn.Rearrange
        except AttributeError as e:
            assert "needs einops" in str(e), e
        else:
            raise SystemExit("remat.nn.Rearrange existed without einops")
        print("ok")
    """)
    assert_clean_exit("import without einops", run)
    assert run.returncode == 0 and "ok" in run.stdout, run.tail()
