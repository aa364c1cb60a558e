"""``DistributedDataParallel``, as ``torch.nn.parallel.distributed``: PyTorch's constructor,
checking for the default process group as PyTorch does.

The gradient reducer is not built yet and remat has no ``remat.distributed`` yet, so no
process group can exist: construction raises PyTorch's "Default process group has not been
initialized" error. The check asks ``remat.distributed.is_initialized()`` once that module
exists, so the distributed work plugs in here.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class ProcessGroupNotInitializedError(RuntimeError, ValueError):
    """No default process group. A RuntimeError, as PyTorch raised it up to 2.1, and a
    ValueError, as it raises it since, so that either ``except`` catches it."""


def _default_group_initialized() -> bool:
    """Whether ``remat.distributed`` exists and its default process group is initialized."""
    try:
        dist = importlib.import_module("remat.distributed")
    except ModuleNotFoundError as e:
        if e.name != "remat.distributed":
            raise
        return False
    return bool(dist.is_initialized())


class DistributedDataParallel(Module):
    """Data parallelism across processes, as ``torch.nn.parallel.DistributedDataParallel``:
    the constructor takes PyTorch's arguments and, as PyTorch, first needs the default
    process group (``remat.distributed.init_process_group``).

    remat has no process groups yet, so constructing one raises PyTorch's error (a
    RuntimeError that is also the ValueError PyTorch 2.2+ raises); once
    ``remat.distributed`` exists the check asks its ``is_initialized()``. With a process
    group the gradient reducer, which is not built yet, raises NotImplementedError.

    Parameters
    ----------
    module : Module
        The module to replicate in each process.
    device_ids : sequence of int or device, optional
        The one CUDA device of this process (PyTorch takes at most one). Default: ``None``.
    output_device : int or device, optional
        Where the output goes. Default: ``None``.
    dim : int, optional
        The batch dimension. Default: ``0``.
    broadcast_buffers : bool, optional
        Synchronise buffers from rank 0 at every forward. Default: ``True`` (PyTorch 2.15
        spells this default ``None``, meaning the same).
    init_sync : bool, optional
        Broadcast the parameters and buffers from rank 0 at construction. Default: ``True``.
    process_group : optional
        The process group to reduce over. Default: ``None`` (the default group).
    bucket_cap_mb : float, optional
        Size of the gradient buckets in MiB. Default: ``25`` (PyTorch 2.15 spells it
        ``None``, meaning 25).
    find_unused_parameters : bool, optional
        Find the parameters the forward did not use. Default: ``False``.
    check_reduction : bool, optional
        Deprecated by PyTorch, accepted. Default: ``False``.
    gradient_as_bucket_view : bool, optional
        Gradients as views into the buckets. Default: ``False``.
    static_graph : bool, optional
        The graph is the same at every iteration. Default: ``False``.
    delay_all_reduce_named_params : list of (str, Parameter), optional
        Parameters whose all-reduce is delayed. Default: ``None``.
    param_to_hook_all_reduce : Parameter, optional
        The parameter whose gradient hook runs the delayed all-reduce. Default: ``None``.
    mixed_precision : optional
        PyTorch's reducer mixed-precision settings. Default: ``None``.
    device_mesh : optional
        A one-dimensional device mesh instead of ``process_group``. Default: ``None``.
    skip_all_reduce_unused_params : bool, optional
        Skip the all-reduce of unused parameters. Default: ``False``.
    bucket_cap_mb_list : list of int, optional
        Sizes of the individual buckets. Default: ``None``.
    batched_grad_copy : bool, optional
        Copy gradients into the buckets in batches. Default: ``False``.
    forward_sync_buffers : bool, optional
        PyTorch's newer name for ``broadcast_buffers``. Default: ``None``.
    lazy_bucket_allocation : bool, optional
        Allocate the buckets at the first backward. Default: ``False``.

    Raises
    ------
    RuntimeError
        When no default process group exists and ``process_group`` is None: "Default
        process group has not been initialized, please make sure to call
        init_process_group." (always, until ``remat.distributed`` exists; the error is also
        a ValueError), or when both ``process_group`` and ``device_mesh`` are given.
    ValueError
        When only one of ``delay_all_reduce_named_params`` and ``param_to_hook_all_reduce``
        is given.
    NotImplementedError
        With a process group: remat's gradient reducer is not built yet.

    Examples
    --------
    >>> try:
    ...     remat.nn.parallel.DistributedDataParallel(remat.nn.Linear(2, 2))
    ... except RuntimeError as e:
    ...     print(e)
    DistributedDataParallel: Default process group has not been initialized, ...
    """

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool | None = True,
        init_sync: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = 25,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params: Any = None,
        param_to_hook_all_reduce: Any = None,
        mixed_precision: Any = None,
        device_mesh: Any = None,
        skip_all_reduce_unused_params: bool = False,
        bucket_cap_mb_list: list[int] | None = None,
        batched_grad_copy: bool = False,
        forward_sync_buffers: bool | None = None,
        lazy_bucket_allocation: bool = False,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        # PyTorch's checks, in its order.
        if (delay_all_reduce_named_params is None) != (param_to_hook_all_reduce is None):
            raise ValueError(
                f"{name}: delay_all_reduce_named_params and param_to_hook_all_reduce need to "
                "be set at the same time."
            )
        if process_group is not None and device_mesh is not None:
            raise RuntimeError(
                f"{name}: Cannot specify both process_group and device_mesh arguments."
            )
        if process_group is None and device_mesh is None and not _default_group_initialized():
            raise ProcessGroupNotInitializedError(
                f"{name}: Default process group has not been initialized, please make sure "
                "to call init_process_group."
            )
        raise NotImplementedError(
            f"{name}: the gradient reducer is not implemented yet (a process group exists, "
            "but remat cannot synchronise gradients across processes)"
        )
