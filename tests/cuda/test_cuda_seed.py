"""remat.cuda.manual_seed / manual_seed_all: remat's one random stream serves every device, so
both seed it exactly as remat.manual_seed does (with or without a GPU)."""

import inspect

import numpy as np
import pytest

import remat


@pytest.mark.parametrize("fn", [remat.cuda.manual_seed, remat.cuda.manual_seed_all])
def test_seeds_the_global_stream_as_manual_seed(fn):
    fn(1234)
    assert remat.initial_seed() == 1234
    a = remat.rand(5).numpy()
    remat.manual_seed(1234)
    b = remat.rand(5).numpy()
    fn(1234)
    c = remat.rand(5).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    fn(-1)
    assert remat.initial_seed() == 2**64 - 1
    fn(np.int64(5))
    assert remat.initial_seed() == 5


@pytest.mark.parametrize("fn", [remat.cuda.manual_seed, remat.cuda.manual_seed_all])
def test_bad_seeds(fn):
    with pytest.raises(TypeError):
        fn(1.5)
    with pytest.raises(TypeError):
        fn("1")
    with pytest.raises(OverflowError):
        fn(2**200)


def test_listed_and_named_as_pytorch():
    assert {"manual_seed", "manual_seed_all"} <= set(remat.cuda.__all__)
    for fn in (remat.cuda.manual_seed, remat.cuda.manual_seed_all):
        assert list(inspect.signature(fn).parameters) == ["seed"]


@pytest.mark.skipif(not remat.cuda.is_available(), reason="CUDA not available")
def test_gpu_draws_are_reproducible():
    remat.cuda.manual_seed(9)
    a = remat.randn(64, device="cuda").cpu().numpy()
    remat.cuda.manual_seed_all(9)
    b = remat.randn(64, device="cuda").cpu().numpy()
    np.testing.assert_array_equal(a, b)


def test_signature_matches_torch():
    torch = pytest.importorskip("torch")
    for name in ("manual_seed", "manual_seed_all"):
        theirs = list(inspect.signature(getattr(torch.cuda, name)).parameters)
        assert list(inspect.signature(getattr(remat.cuda, name)).parameters) == theirs
