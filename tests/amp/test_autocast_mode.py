"""``remat.autocast`` as PyTorch's ``torch.autocast``: context manager and decorator,
nesting, the state queries, the parameter-cast cache, and its errors and warnings."""

import threading
import warnings

import numpy as np
import pytest

import remat
import remat.nn as nn


def test_state_queries_and_nesting():
    assert not remat.is_autocast_enabled("cpu")
    assert remat.get_autocast_dtype("cpu") == remat.bfloat16
    assert remat.get_autocast_dtype("cuda") == remat.float16
    with remat.autocast("cpu"):
        assert remat.is_autocast_enabled("cpu") and not remat.is_autocast_enabled("cuda")
        with remat.autocast("cpu", dtype=remat.float16):
            assert remat.get_autocast_dtype("cpu") == remat.float16
            with remat.autocast("cpu", enabled=False):
                assert not remat.is_autocast_enabled("cpu")
                assert remat.mm(remat.ones(2, 2), remat.ones(2, 2)).dtype == remat.float32
            assert remat.mm(remat.ones(2, 2), remat.ones(2, 2)).dtype == remat.float16
        assert remat.get_autocast_dtype("cpu") == remat.bfloat16
    assert not remat.is_autocast_enabled("cpu")
    assert remat.is_autocast_enabled() is False  # no argument: CUDA's, as PyTorch


def test_one_instance_nests_and_the_decorator_reenters():
    ac = remat.autocast("cpu")
    with ac:
        with ac:
            assert remat.is_autocast_enabled("cpu")
        assert remat.is_autocast_enabled("cpu")
    assert not remat.is_autocast_enabled("cpu")

    @remat.autocast("cpu")
    def depth(n):
        assert remat.is_autocast_enabled("cpu")
        return remat.mm(remat.ones(1, 1), remat.ones(1, 1)).dtype if n == 0 else depth(n - 1)

    assert depth(3) == remat.bfloat16
    assert not remat.is_autocast_enabled("cpu")


def test_state_is_per_thread():
    seen = []
    with remat.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(remat.is_autocast_enabled("cpu")))
        t.start()
        t.join()
    assert seen == [False]


def test_an_exception_restores_the_state():
    with pytest.raises(ZeroDivisionError):
        with remat.autocast("cpu"):
            raise ZeroDivisionError
    assert not remat.is_autocast_enabled("cpu")


def test_amp_and_cuda_amp_names():
    assert remat.amp.autocast is remat.autocast
    assert issubclass(remat.cuda.amp.autocast, remat.autocast)
    from remat.cuda.amp import GradScaler, autocast  # noqa: F401


def test_errors_and_warnings_as_pytorch():
    with pytest.raises(ValueError, match="device_type"):
        remat.autocast(3)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'mps'"):
        remat.autocast("mps")
    with pytest.raises(remat.DTypeError, match="CUDA autocast only supports"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with remat.autocast("cuda", dtype=remat.float64):
                pass
    with pytest.warns(UserWarning, match="CPU autocast, but the target dtype is not supported"):
        ac = remat.autocast("cpu", dtype=remat.float64)
    with ac:
        assert not remat.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        remat.autocast("cpu")(3)
    with pytest.raises(remat.DTypeError):
        remat.set_autocast_dtype("cpu", remat.float32)


def test_parameters_stay_float32_and_get_float32_gradients():
    lin = nn.Linear(4, 4)
    x = remat.randn(5, 4)
    with remat.autocast("cpu"):
        y = lin(x)
        z = lin(y.float())  # the same weight twice: one cached cast
    assert y.dtype == z.dtype == remat.bfloat16
    z.float().sum().backward()
    assert lin.weight.dtype == lin.weight.grad.dtype == remat.float32
    # The gradient is the float32 sum over both uses, against a plain float32 reference
    # on the rounded weights.
    w16 = lin.weight.detach().bfloat16().float().requires_grad_()
    b16 = lin.bias.detach().bfloat16().float().requires_grad_()
    ref = (x.bfloat16().float() @ w16.T + b16).bfloat16().float()
    ref = (ref.bfloat16().float() @ w16.T + b16)
    ref.sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), w16.grad.numpy(), rtol=0.05, atol=0.05)


def test_cache_never_serves_a_stale_or_graphless_cast():
    lin = nn.Linear(3, 3)
    x = remat.randn(2, 3)
    with remat.autocast("cpu"):
        with remat.no_grad():
            lin(x)  # first cast under no_grad: not cached
        y = lin(x)
        y.float().sum().backward()
        assert lin.weight.grad is not None
        before = lin(x).float().detach().numpy()
        with remat.no_grad():
            lin.weight.add_(1.0)  # in place inside the region: cast again
        after = lin(x).float().detach().numpy()
    want = (x.bfloat16().float() @ lin.weight.detach().bfloat16().float().T
            + lin.bias.detach().bfloat16().float()).bfloat16().float().numpy()
    assert not np.array_equal(before, after)
    np.testing.assert_array_equal(after, want)


def test_clear_and_cache_switches():
    assert remat.is_autocast_cache_enabled()
    remat.set_autocast_cache_enabled(False)
    try:
        assert not remat.is_autocast_cache_enabled()
    finally:
        remat.set_autocast_cache_enabled(True)
    remat.clear_autocast_cache()
