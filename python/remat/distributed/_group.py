"""Process groups: a set of ranks, the backend communicator that joins them, and one
communication thread that runs the group's collectives in the order they were called.

Every collective goes through the thread, the blocking ones too, so that one thread at a
time talks to a communicator (MPI and NCCL both require the same order of collectives on
every rank, and an order fixed at call time gives it) and the caller may go on computing
while an asynchronous one runs: data-parallel training all-reduces gradient buckets there
during backward. The backend's collectives release the GIL and poll their request with a
deadline, so a rank that never joins makes the others fail with a timeout instead of
hanging. After a timeout the communicator is in an unknown state: the group is marked
broken and every later collective on it raises at once.

Before each collective the ranks exchange a small signature (which collective, reduction,
root, dtype and shape), so that ranks that disagree raise an error naming both instead of
exchanging mismatched bytes.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._work import DistBackendError, Work

__all__ = ["ProcessGroup", "Signature", "check_signatures"]

# The collectives and dtypes, numbered for the signature exchange.
_KINDS = (
    "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "barrier", "new_group",
)
_DTYPES = ("float32", "float64", "bfloat16", "float16", "int64", "int32", "bool", "uint8",
           "int8", "int16", "none")
_DIMS = 6  # dims carried in a signature; the product of the rest is the last one


class BrokenGroupError(DistBackendError):
    """A failure that leaves the communicator unusable (a timeout): the group is broken."""


def poll_until(done: Callable[[], bool], deadline: float, timed_out: Callable[[], str]) -> None:
    """Wait for ``done()`` with a backoff sleep (20 µs growing to 1 ms, so the waiting thread
    takes little CPU from the ranks' compute); past ``deadline`` raise ``BrokenGroupError``
    with the message ``timed_out()`` returns (which may abort the communicator first)."""
    delay = 2e-5
    while not done():
        if time.monotonic() > deadline:
            raise BrokenGroupError(timed_out())
        time.sleep(delay)
        delay = min(delay * 2, 1e-3)


class Signature:
    """What one rank is about to do in a collective, as a fixed-length row of integers."""

    __slots__ = ("kind", "op", "root", "dtype", "shape")

    def __init__(self, kind: str, op: int = 0, root: int = -1, dtype: str = "none",
                 shape: Sequence[int] = ()) -> None:
        self.kind, self.op, self.root, self.dtype = kind, op, root, dtype
        self.shape = tuple(int(d) for d in shape)

    def row(self) -> np.ndarray:
        dims = list(self.shape[:_DIMS])
        if len(self.shape) > _DIMS:
            dims[-1] = int(np.prod(self.shape[_DIMS - 1:]))
        dims += [-1] * (_DIMS - len(dims))
        return np.array([_KINDS.index(self.kind), self.op, self.root,
                         _DTYPES.index(self.dtype) if self.dtype in _DTYPES else len(_DTYPES),
                         len(self.shape), *dims], dtype=np.int64)

    @staticmethod
    def describe(row: np.ndarray) -> str:
        kind = _KINDS[int(row[0])] if 0 <= row[0] < len(_KINDS) else f"collective {row[0]}"
        if kind in ("barrier", "new_group"):
            return f"called {kind}"
        ndim = int(row[4])
        shape = tuple(int(d) for d in row[5:5 + min(ndim, _DIMS)])
        dtype = _DTYPES[int(row[3])] if row[3] < len(_DTYPES) else "another dtype"
        src = f" from group rank {int(row[2])}" if kind == "broadcast" else ""
        return f"called {kind}{src} with a {dtype} tensor of shape {shape}"


def check_signatures(op: str, table: np.ndarray, ranks: Sequence[int]) -> None:
    """Raise, the same error on every rank, when the ranks' signatures differ: a ShapeError
    or DTypeError for tensors that disagree, a DistBackendError for different collectives,
    reductions or roots. ``ranks`` are the group's ranks, as the error names them."""
    import remat

    first = table[0]
    for i in range(1, table.shape[0]):
        row = table[i]
        if np.array_equal(row, first):
            continue
        a, b = Signature.describe(first), Signature.describe(row)
        where = f"rank {ranks[0]} {a}, but rank {ranks[i]} {b}"
        if row[0] != first[0] or row[1] != first[1] or row[2] != first[2]:
            what = ("different reductions" if row[0] == first[0] and row[1] != first[1]
                    else "different roots" if row[0] == first[0] and row[2] != first[2]
                    else "different collectives")
            raise DistBackendError(f"{op}: the ranks called {what}: {where}")
        if row[3] != first[3]:
            raise remat.DTypeError(f"{op}: the ranks' tensors have different dtypes: {where}")
        raise remat.ShapeError(f"{op}: the ranks' tensors have different shapes: {where}")


class ProcessGroup:
    """A group of ranks with its communicator and communication thread.

    ``rank()`` and ``size()`` are this process's rank in the group and the group's size;
    ``ranks`` the group's members as global ranks. Collectives are queued with ``submit``.
    ``init_process_group`` makes the default group (``GroupMember.WORLD``) and ``new_group``
    the others; code passes them as ``group=`` rather than building one.

    Parameters
    ----------
    backend : object
        The backend's communicator (the mpi or nccl backend's): its ``rank``, ``size`` and
        ``name`` and the collectives the communication thread calls.
    ranks : sequence of int
        The group's members, as global ranks, in the group's rank order.
    timeout : float
        Seconds a collective waits for the other ranks before it raises
        ``DistBackendError`` (the group is then broken).
    name : str, optional
        The group's name, as its communication thread is named. Default: ``"default"``.

    Raises
    ------
    TypeError, ValueError
        When ``timeout`` is not a number (``float(timeout)`` fails).

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> pg = dist.GroupMember.WORLD
    >>> isinstance(pg, dist.ProcessGroup)
    True
    >>> pg.ranks, pg.name, pg.timeout  # timeout: the default 30 minutes
    ([0], 'default', 1800.0)
    >>> dist.destroy_process_group()
    """

    def __init__(self, backend: Any, ranks: Sequence[int], timeout: float,
                 name: str = "default") -> None:
        self.backend = backend
        self.ranks = list(ranks)
        self.timeout = float(timeout)
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._broken: str | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f"remat.distributed[{name}]")
        self._thread.start()

    def rank(self) -> int:
        """This process's rank within the group.

        Returns
        -------
        int
            The rank, from 0 to ``size() - 1`` (the position of this process's global rank
            in ``ranks``).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.GroupMember.WORLD.rank() == dist.get_rank()
        True
        >>> dist.destroy_process_group()
        """
        return int(self.backend.rank)

    def size(self) -> int:
        """How many ranks the group has.

        Returns
        -------
        int
            The group's size, ``len(ranks)``.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.GroupMember.WORLD.size() == dist.get_world_size()
        True
        >>> dist.destroy_process_group()
        """
        return int(self.backend.size)

    def backend_name(self) -> str:
        """The name of the group's backend.

        Returns
        -------
        str
            ``"mpi"`` or ``"nccl"`` (what ``get_backend(group)`` returns).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> dist.GroupMember.WORLD.backend_name()
        'mpi'
        >>> dist.destroy_process_group()
        """
        return str(self.backend.name)

    def submit(self, op: str, signature: Signature | None,
               job: Callable[[Any, float], Any],
               write: Callable[[Any], Any] | None = None) -> Work:
        """Queue ``job(backend, deadline)`` after the signature check; its return value goes
        to ``write`` on the thread that waits for the returned handle.

        The group's collectives are built on this: jobs run one at a time on the group's
        communication thread, in the order they were submitted. Before the job, unless
        ``signature`` is None or the group has one rank, the ranks exchange their
        signatures and every rank raises the same error when they differ.

        Parameters
        ----------
        op : str
            The collective's name, as the handle and its errors name it.
        signature : Signature or None
            What this rank is about to do (collective, reduction, root, dtype and shape),
            compared with the other ranks' before the job runs; None skips the check.
        job : callable
            ``job(backend, deadline)``, run on the communication thread with the group's
            communicator and the ``time.monotonic()`` deadline the group's timeout sets;
            what it returns goes to ``write``, what it raises to the waiter.
        write : callable, optional
            Called once, on the first thread that waits for the handle, with the job's
            return value; what it returns is the handle's ``result()``. Default: ``None``.

        Returns
        -------
        Work
            The handle to ``wait()`` on.

        Raises
        ------
        DistBackendError
            When the group was destroyed. The job's own error (or a timeout, or ranks whose
            signatures differ) is raised by the handle's ``wait()`` instead.

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> pg = dist.GroupMember.WORLD
        >>> work = pg.submit("barrier", None, lambda backend, deadline: backend.barrier(deadline))
        >>> work.wait()
        True
        >>> work = pg.submit("size", None, lambda backend, deadline: backend.size,
        ...                  write=lambda size: size * 10)
        >>> work.result()
        10
        >>> dist.destroy_process_group()
        """
        if self._closed:
            raise DistBackendError(f"{op}: the process group was destroyed")
        work = Work(op, write)
        self._queue.put((work, signature, job))
        return work

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, signature, job = item
            if self._broken is not None:
                work._complete(None, DistBackendError(
                    f"{work.op}: the process group is broken by an earlier failure "
                    f"({self._broken}); destroy it and start again"), 0.0)
                continue
            start = time.perf_counter()
            deadline = time.monotonic() + self.timeout
            arrays: Any = None
            error: BaseException | None = None
            try:
                if signature is not None and self.size() > 1:
                    table = self.backend.gather_rows(signature.row(), work.op, deadline)
                    check_signatures(work.op, table, self.ranks)
                arrays = job(self.backend, deadline)
            except BrokenGroupError as e:
                self._broken = str(e)
                error = e
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                error = e
            work._complete(arrays, error, time.perf_counter() - start)

    def close(self) -> None:
        """Stop the communication thread once the queued collectives ran.

        Waits (at most the group's timeout and 5 s) for the thread to end; a second call
        does nothing. Later collectives on the group raise ``DistBackendError``. The
        communicator stays open: ``destroy_process_group(group)`` closes the group and frees
        it, and is what programs call.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> group = dist.new_group()
        >>> group.close()
        >>> try:
        ...     dist.barrier(group=group)
        ... except dist.DistBackendError as e:
        ...     print(e)
        barrier: the process group was destroyed
        >>> dist.destroy_process_group()
        """
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join(self.timeout + 5.0)
