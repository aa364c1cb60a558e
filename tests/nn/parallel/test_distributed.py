"""remat.nn.parallel.DistributedDataParallel in one process: PyTorch's constructor arguments
and checks, PyTorch's error without a process group, and a one-rank group that trains as the
plain module (the two-rank tests are in tests/distributed)."""

import inspect

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


@pytest.fixture
def world_of_one():
    """A one-rank default group (MPI starts as a singleton without a launcher)."""
    pytest.importorskip("mpi4py")
    import remat.distributed as dist

    dist.init_process_group("mpi", timeout=60)
    yield dist
    dist.destroy_process_group()


def test_one_rank_trains_as_the_plain_module(world_of_one):
    remat.manual_seed(0)
    plain = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    wrapped = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    wrapped.load_state_dict(plain.state_dict())
    ddp = DistributedDataParallel(wrapped)
    assert ddp.module is wrapped
    assert list(ddp.state_dict())[0].startswith("module.")
    x = remat.randn(5, 3)
    plain(x).sum().backward()
    remat.checkpoint(ddp, x).sum().backward()
    for p, q in zip(plain.parameters(), wrapped.parameters()):
        assert p.grad.tolist() == q.grad.tolist()
    assert ddp.last_sync_stats["bytes"] > 0


def test_an_explicit_group_must_be_a_process_group(world_of_one):
    with pytest.raises(TypeError, match="ProcessGroup"):
        DistributedDataParallel(nn.Linear(2, 2), process_group=object())
    with pytest.raises(RuntimeError, match="doesn't have any parameter"):
        DistributedDataParallel(nn.ReLU())


def test_the_check_asks_remat_distributed(monkeypatch):
    import remat.distributed as dist

    monkeypatch.setattr(dist, "is_initialized", lambda: False)
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
