"""remat.backends.cudnn: not available (remat does not use cuDNN), PyTorch's flag defaults,
bool checks, the flags() context manager; the values live in remat.backends.cuda._SETTINGS."""

import pytest

import remat
from remat.backends import cuda

cudnn = remat.backends.cudnn


def test_not_available_and_no_version():
    assert cudnn.is_available() is False
    assert cudnn.version() is None
    assert cudnn.benchmark_limit is None


def test_defaults_are_pytorchs():
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
        True, False, False, True)


@pytest.mark.parametrize("name", ["enabled", "benchmark", "deterministic", "allow_tf32"])
def test_flags_are_settable_and_stored_in_one_place(name):
    before = getattr(cudnn, name)
    setattr(cudnn, name, not before)
    assert getattr(cudnn, name) is (not before)
    assert cuda._SETTINGS["cudnn." + name] is (not before)
    import remat.backends.cudnn as same

    assert getattr(same, name) is (not before)
    with pytest.raises(RuntimeError, match=f"backends.cudnn.{name} expects a bool, but got "
                                           "int"):
        setattr(cudnn, name, 1)
    assert getattr(cudnn, name) is (not before)


def test_other_attributes_stay_plain():
    cudnn.benchmark_limit = 5
    assert cudnn.benchmark_limit == 5
    cudnn.benchmark_limit = None
    with pytest.raises(AttributeError, match="has no attribute 'no_such_flag'"):
        cudnn.no_such_flag  # noqa: B018
    assert "benchmark" in dir(cudnn)


def test_flags_context_sets_every_flag_and_restores():
    cudnn.benchmark = True
    with cudnn.flags(enabled=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (
            True, False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, False)
    with pytest.raises(ValueError, match="inside"):
        with cudnn.flags():
            assert cudnn.enabled is False
            raise ValueError("inside")
    assert cudnn.enabled is True
    with pytest.raises(RuntimeError, match="backends.cudnn.deterministic expects a bool"):
        with cudnn.flags(deterministic="yes"):
            pass
    assert cudnn.deterministic is False


def test_defaults_match_torch():
    torch = pytest.importorskip("torch")
    import subprocess
    import sys

    code = ("import torch; c = torch.backends.cudnn; "
            "print(c.enabled, c.benchmark, c.deterministic, c.allow_tf32)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    assert out == [str(v) for v in (True, False, False, True)]
    with pytest.raises(RuntimeError, match="expects a bool"):
        torch.backends.cudnn.benchmark = 1
