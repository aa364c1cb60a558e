"""remat.accelerator: is_available / current_accelerator / device_count follow remat.cuda (with
and without a GPU, the GPU case mocked), current_device_index is 0, synchronize waits."""

import inspect

import pytest

import remat
from remat import accelerator


@pytest.fixture
def gpus(monkeypatch):
    def set_count(n):
        monkeypatch.setattr(remat.cuda, "is_available", lambda: n > 0)
        monkeypatch.setattr(remat.cuda, "device_count", lambda: n)
    return set_count


def test_follows_remat_cuda():
    assert accelerator.is_available() == remat.cuda.is_available()
    assert accelerator.device_count() == remat.cuda.device_count()
    acc = accelerator.current_accelerator()
    assert (acc is not None) == remat.cuda.is_available()


def test_without_a_gpu(gpus):
    gpus(0)
    assert accelerator.is_available() is False
    assert accelerator.current_accelerator() is None
    assert accelerator.current_accelerator(check_available=True) is None
    assert accelerator.device_count() == 0
    accelerator.synchronize()  # a no-op


def test_with_gpus(gpus):
    gpus(2)
    assert accelerator.is_available() is True
    acc = accelerator.current_accelerator()
    assert acc == remat.device("cuda") and acc.type == "cuda" and acc.index is None
    assert isinstance(acc, remat.device)
    assert accelerator.current_accelerator(True) == "cuda"
    assert accelerator.device_count() == 2
    assert accelerator.current_device_index() == 0


def test_module_attribute():
    assert remat.accelerator is accelerator
    assert set(accelerator.__all__) == {"is_available", "current_accelerator", "device_count",
                                        "current_device_index", "synchronize"}


def test_matches_torch_where_both_answer_at_run_time():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() != remat.cuda.is_available():
        pytest.skip("torch and remat see different GPUs")
    assert accelerator.is_available() == torch.accelerator.is_available()
    assert accelerator.device_count() == torch.accelerator.device_count()
    theirs = torch.accelerator.current_accelerator(check_available=True)
    mine = accelerator.current_accelerator(check_available=True)
    assert (None if theirs is None else theirs.type) == (None if mine is None else mine.type)
    for name in ("is_available", "current_accelerator", "device_count"):
        assert (list(inspect.signature(getattr(accelerator, name)).parameters)
                == list(inspect.signature(getattr(torch.accelerator, name)).parameters))
