"""``DistributedDataParallel``, as ``torch.nn.parallel.distributed``: the module replicated in
every process of a ``remat.distributed`` job, its gradients averaged across the ranks in
buckets that are all-reduced while backward runs (the reducer is ``_reducer``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import remat

from ... import _remat
from ..modules.module import Module
from ._reducer import Reducer

__all__ = ["DistributedDataParallel"]


def _dist() -> Any:
    import remat.distributed as dist

    return dist


class DistributedDataParallel(Module):
    """Data parallelism across processes, as ``torch.nn.parallel.DistributedDataParallel``:
    the constructor takes PyTorch's arguments and, as PyTorch, first needs the default
    process group (``remat.distributed.init_process_group``).

    At construction the parameters and buffers are broadcast from rank 0, so every rank
    starts from the same model. In backward each parameter's gradient, once accumulated,
    joins a bucket (``bucket_cap_mb``); a full bucket is averaged across the ranks with one
    asynchronous all-reduce while backward goes on, and when backward returns every
    ``.grad`` holds the average over the ranks, as if one process had run the whole batch.
    This holds under every checkpoint entry point (checkpoint, checkpoint_sequential, scopes,
    groups, the module flag, policies, the budget planner, ``auto_checkpoint``,
    ``memory_limit``, offload): the reduction hangs on gradient accumulation, which a
    recompute never repeats, so each gradient is reduced exactly once per backward and no
    collective is recomputed. ``no_sync()`` accumulates gradients locally.

    ``last_sync_stats`` tells, for the last synchronised backward, the buckets, the bytes
    all-reduced, the seconds the all-reduces took on the communication thread
    (``comm_seconds``) and the seconds backward waited for them at its end
    (``wait_seconds``): ``1 - wait_seconds / comm_seconds`` is the share of communication
    hidden behind backward.

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
        init_process_group." (the error is also a ValueError), or when both
        ``process_group`` and ``device_mesh`` are given; in a forward, when the previous
        backward did not reduce every parameter (a parameter unused without
        ``find_unused_parameters=True``); in backward, when a parameter receives a second
        gradient in one iteration.
    ValueError
        When only one of ``delay_all_reduce_named_params`` and ``param_to_hook_all_reduce``
        is given, or ``device_mesh`` is given (remat has no device meshes).

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
        dist = _dist()
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
        if process_group is None and device_mesh is None and not dist.is_initialized():
            raise dist._work.ProcessGroupNotInitializedError(
                f"{name}: Default process group has not been initialized, please make sure "
                "to call init_process_group."
            )
        if device_mesh is not None:
            raise ValueError(f"{name}: remat has no device meshes; pass process_group")
        if not isinstance(module, Module):
            raise TypeError(f"{name}: module must be a remat.nn.Module, got "
                            f"{type(module).__name__}")
        if bucket_cap_mb is not None and not bucket_cap_mb > 0:
            raise ValueError(f"{name}: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else None
        self.output_device = output_device
        self.dim = dim
        group = process_group if process_group is not None else dist.GroupMember.WORLD
        self.process_group = group
        self.broadcast_buffers = (forward_sync_buffers if forward_sync_buffers is not None
                                  else broadcast_buffers is not False)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.static_graph = bool(static_graph)
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb)
                                    * 1024 * 1024)
        self.require_backward_grad_sync = True
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError(f"{name}: DistributedDataParallel is not needed when a module "
                               "doesn't have any parameter that requires a gradient.")
        if init_sync:
            self._sync_from_rank0([p for _, p in module.named_parameters()]
                                  + [b for _, b in module.named_buffers()])
        self.reducer = Reducer([p for _, p in named], [n for n, _ in named], group,
                               self.bucket_bytes_cap, self.find_unused_parameters)

    def _sync_from_rank0(self, tensors: list[Any]) -> None:
        """Broadcast ``tensors`` from the group's first rank, all queued before one wait."""
        dist = _dist()
        if dist.get_world_size(self.process_group) <= 1:
            return
        src = self.process_group.ranks[0]
        works = [dist.broadcast(t, src=src, group=self.process_group, async_op=True)
                 for t in tensors]
        for w in works:
            if w is not None:
                w.wait()

    @property
    def last_sync_stats(self) -> dict[str, float]:
        """The last synchronised backward's buckets, bytes, ``comm_seconds`` and
        ``wait_seconds`` (see the class docstring)."""
        return dict(self.reducer.stats)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the module; with grad enabled (and outside ``no_sync``), start the reduction
        round that the following backward completes.

        With ``broadcast_buffers`` the module's buffers are first broadcast from the
        group's first rank. When the following backward returns, every parameter's
        ``.grad`` holds the average over the ranks. Without grad, under ``no_sync``, or in a
        checkpoint's recompute, no round starts (and nothing is communicated for it).

        Parameters
        ----------
        *inputs : Any
            The module's positional arguments.
        **kwargs : Any
            The module's keyword arguments.

        Returns
        -------
        Any
            The module's output.

        Raises
        ------
        RuntimeError
            When the previous synchronised backward did not reduce every parameter
            ("Expected to have finished reduction in the prior iteration before starting a
            new one", naming the parameters that received no gradient): a parameter was
            unused without ``find_unused_parameters=True``.
        DistBackendError
            When the buffers' broadcast fails (a destroyed or broken group, a timeout).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> model = remat.nn.parallel.DistributedDataParallel(remat.nn.Linear(2, 1))
        >>> out = model(remat.ones(4, 2))
        >>> out.shape
        (4, 1)
        >>> out.sum().backward()  # the gradient, averaged over the ranks
        >>> model.module.weight.grad
        tensor([[4., 4.]])
        >>> dist.destroy_process_group()
        """
        recomputing = _remat._is_recomputing()
        sync = (remat.is_grad_enabled() and self.require_backward_grad_sync
                and not recomputing)
        if self.broadcast_buffers and not recomputing:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                self._sync_from_rank0(buffers)
        if not sync and not recomputing:
            self.reducer.cancel()
        out = self.module(*inputs, **kwargs)
        if sync:
            self.reducer.prepare(out)
        return out

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Within this context the backwards of forwards run in it accumulate ``.grad``
        locally, without communicating; the first synchronised backward after it reduces
        the accumulated gradients.

        As PyTorch's ``no_sync``: a context manager to disable gradient synchronizations
        across DDP processes, for gradient accumulation over several micro-batches. The
        forward must run inside the context; the backward may run outside it.

        Returns
        -------
        contextlib.AbstractContextManager
            A context manager; entering it gives None. On exit (also after an exception)
            synchronisation is as it was before.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> model = remat.nn.parallel.DistributedDataParallel(remat.nn.Linear(2, 1))
        >>> x = remat.ones(4, 2)
        >>> with model.no_sync():
        ...     model(x).sum().backward()  # accumulates locally, no communication
        >>> model.last_sync_stats["bytes"]
        0
        >>> model(x).sum().backward()  # reduces the accumulated gradients
        >>> model.module.weight.grad
        tensor([[8., 8.]])
        >>> model.last_sync_stats["bytes"] > 0
        True
        >>> dist.destroy_process_group()
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
