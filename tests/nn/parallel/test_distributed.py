"""remat.nn.parallel.DistributedDataParallel: PyTorch's constructor arguments and checks; with
no process group (there is no remat.distributed yet) construction raises PyTorch's error, and
the check asks remat.distributed.is_initialized() once that module exists."""

import inspect
import sys
import types

import pytest

import remat
from remat import nn
from remat.nn.parallel import DistributedDataParallel

MESSAGE = ("DistributedDataParallel: Default process group has not been initialized, please "
           "make sure to call init_process_group.")


def test_without_a_process_group_construction_raises_pytorchs_error():
    with pytest.raises(RuntimeError) as info:
        DistributedDataParallel(nn.Linear(2, 2))
    assert str(info.value) == MESSAGE
    # PyTorch 2.2+ raises it as a ValueError: either `except` catches it.
    assert isinstance(info.value, ValueError)
    with pytest.raises(RuntimeError, match="Default process group has not been initialized"):
        DistributedDataParallel(nn.Linear(2, 2), device_ids=[0], bucket_cap_mb=50,
                                find_unused_parameters=True, broadcast_buffers=False)


def test_module_paths():
    import remat.nn.parallel.distributed as mod

    assert mod.DistributedDataParallel is DistributedDataParallel
    assert remat.nn.parallel.DistributedDataParallel is DistributedDataParallel


def test_pytorchs_argument_checks_come_first():
    with pytest.raises(ValueError, match="delay_all_reduce_named_params and "
                                         "param_to_hook_all_reduce need to be set"):
        DistributedDataParallel(nn.Linear(2, 2), delay_all_reduce_named_params=[])
    with pytest.raises(RuntimeError, match="Cannot specify both process_group and device_mesh"):
        DistributedDataParallel(nn.Linear(2, 2), process_group=object(), device_mesh=object())


def test_an_explicit_group_reaches_the_missing_reducer():
    with pytest.raises(NotImplementedError, match="gradient reducer is not implemented yet"):
        DistributedDataParallel(nn.Linear(2, 2), process_group=object())


@pytest.mark.parametrize("initialized", [False, True])
def test_the_check_asks_remat_distributed_when_it_exists(monkeypatch, initialized):
    fake = types.ModuleType("remat.distributed")
    fake.is_initialized = lambda: initialized
    monkeypatch.setitem(sys.modules, "remat.distributed", fake)
    if initialized:
        with pytest.raises(NotImplementedError, match="gradient reducer"):
            DistributedDataParallel(nn.Linear(2, 2))
    else:
        with pytest.raises(RuntimeError, match="Default process group has not been"):
            DistributedDataParallel(nn.Linear(2, 2))


def test_signature_defaults():
    params = inspect.signature(DistributedDataParallel).parameters
    assert params["broadcast_buffers"].default is True
    assert params["bucket_cap_mb"].default == 25
    assert params["find_unused_parameters"].default is False
    assert params["device_ids"].default is None and params["dim"].default == 0


def test_signature_is_pytorchs():
    torch = pytest.importorskip("torch")
    theirs = inspect.signature(torch.nn.parallel.DistributedDataParallel).parameters
    mine = inspect.signature(DistributedDataParallel).parameters
    assert list(mine) == list(theirs)
    # remat spells two of PyTorch 2.15's None defaults by what they mean.
    differ = {k for k in mine if mine[k].default != theirs[k].default}
    assert differ == {"broadcast_buffers", "bucket_cap_mb"}
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
