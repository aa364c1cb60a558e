"""The ``nccl`` backend: collectives on CUDA tensors through NCCL.

remat loads ``libnccl`` at run time through cudarc, as it loads cuBLAS, so the same wheel
works with or without it (``remat._remat._NcclComm``, from ``remat_core::cuda::nccl``). The
ranks agree on an NCCL unique id through MPI when an MPI launcher started them, else through
``env://``, ``tcp://`` or ``file://`` (``_rendezvous``). Collectives are queued on the
communicator's own CUDA stream; the communication thread then polls for their completion
against the group's deadline and aborts the communicator when it passes, so a missing rank
makes the others fail instead of hanging.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import remat

from .. import _remat
from . import _rendezvous
from ._buffers import write_into
from ._group import poll_until

__all__ = ["NCCLBackend", "available", "init"]

_INSTALL = ("the nccl backend needs a CUDA GPU and libnccl: pip install nvidia-nccl-cu13 "
            "(or the system's NCCL); for CPU tensors use backend='mpi'")


def available() -> bool:
    """Whether remat was built with CUDA, a GPU is visible and libnccl loads."""
    probe = getattr(_remat, "_nccl_available", None)
    return bool(probe()[0]) if probe is not None else False


def _why() -> str:
    probe = getattr(_remat, "_nccl_available", None)
    return probe()[1] if probe is not None else "remat was built without NCCL support"


class NCCLBackend:
    """One NCCL communicator and the collectives remat runs on it (on CUDA tensors)."""

    name = "nccl"

    def __init__(self, comm: Any, device: str) -> None:
        self.comm = comm
        self.device = device
        self.rank = comm.rank
        self.size = comm.size

    # -- staging: a device snapshot of the input, and the result copied into the caller's
    def stage(self, t: Any, owned: bool = False) -> Any:
        d = t.detach()
        if str(d.device) != self.device:
            raise remat.DeviceError(f"nccl: the tensor is on {d.device}, but this process "
                                    f"group's GPU is {self.device}")
        d = d.contiguous()
        return d if owned else d.clone()

    def _wait(self, op: str, deadline: float) -> None:
        def timed_out() -> str:
            self.comm.abort()
            return (f"{op}: timed out: rank {self.rank} of {self.size} waited for the other "
                    "ranks past the process group's timeout; the NCCL communicator was aborted")

        poll_until(self.comm.is_completed, deadline, timed_out)

    def gather_rows(self, row: np.ndarray, op: str, deadline: float) -> np.ndarray:
        mine = remat.from_numpy(row).to(self.device)
        out = remat.zeros(self.size * row.size, dtype=remat.int64, device=self.device)
        self.comm.all_gather(out, mine)
        self._wait(op, deadline)
        return out.cpu().numpy().reshape(self.size, row.size)

    def all_reduce(self, t: Any, op: str, deadline: float) -> Any:
        self.comm.all_reduce(t, op)
        self._wait("all_reduce", deadline)
        return t

    def broadcast(self, t: Any, root: int, deadline: float) -> Any:
        self.comm.broadcast(t, root)
        self._wait("broadcast", deadline)
        return t

    def all_gather(self, t: Any, deadline: float) -> Any:
        out = remat.empty((self.size, *t.shape), dtype=t.dtype, device=self.device)
        self.comm.all_gather(out, t)
        self._wait("all_gather", deadline)
        return out

    def reduce_scatter(self, t: Any, op: str, deadline: float) -> Any:
        out = remat.empty((t.numel() // self.size,), dtype=t.dtype, device=self.device)
        self.comm.reduce_scatter(out, t.reshape(-1), op)
        self._wait("reduce_scatter_tensor", deadline)
        return out

    def barrier(self, deadline: float) -> None:
        self.all_reduce(remat.zeros(1, device=self.device), "sum", deadline)

    def split(self, members: list[int], deadline: float) -> NCCLBackend | None:
        """A communicator of ``members``: the first member's new id reaches every rank by a
        broadcast on this communicator (every rank calls this; non-members get None)."""
        ident = np.zeros(_rendezvous.ID_BYTES, dtype=np.int64)
        member = self.rank in members
        if self.rank == members[0]:
            ident[:] = np.frombuffer(_remat._nccl_unique_id(), dtype=np.uint8)
        t = remat.from_numpy(ident).to(self.device)
        self.broadcast(t, members[0], deadline)
        if not member:
            return None
        raw = bytes(t.cpu().numpy().astype(np.uint8).tolist())
        index = int(self.device.split(":")[1])
        comm = _remat._NcclComm(raw, members.index(self.rank), len(members), index)
        return NCCLBackend(comm, self.device)

    def unstage(self, t: Any, result: Any) -> Any:
        return write_into(t, result)

    def close(self) -> None:
        self.comm = None


def _device_index(device_id: Any, rank: int) -> int:
    if isinstance(device_id, int) and not isinstance(device_id, bool):
        return device_id
    if device_id is not None:
        return remat.device(device_id).index or 0
    local = os.environ.get("LOCAL_RANK")
    if local is not None:
        return int(local)
    count = remat.cuda.device_count()
    return rank % max(count, 1)


def init(init_method: Any, rank: int, world_size: int, timeout: float, device_id: Any) -> Any:
    """The NCCL communicator of this rank, after the rendezvous that shares its id."""
    if not available():
        raise RuntimeError(f"init_process_group: {_INSTALL} ({_why()})")
    from . import _launched_by_mpi

    if init_method is None and _launched_by_mpi() and "MASTER_ADDR" not in os.environ:
        from . import _mpi

        world = _mpi.load_mpi().COMM_WORLD
        r, n = world.Get_rank(), world.Get_size()
        ident = _remat._nccl_unique_id() if r == 0 else None
        ident = world.bcast(ident, root=0)
    else:
        r, n = _rendezvous.rank_and_size(init_method, rank, world_size)
        ident = _rendezvous.exchange(init_method, r, n, _remat._nccl_unique_id, timeout)
    index = _device_index(device_id, r)
    comm = _remat._NcclComm(ident, r, n, index)
    return NCCLBackend(comm, f"cuda:{index}")
