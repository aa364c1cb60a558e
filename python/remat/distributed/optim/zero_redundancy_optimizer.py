"""``ZeroRedundancyOptimizer``: ZeRO stage 1, optimizer state sharded across the ranks of a
data-parallel job, as ``torch.distributed.optim.ZeroRedundancyOptimizer``.

Every rank holds all the parameters (and, after ``DistributedDataParallel``'s all-reduce,
the same gradients), but only one rank, its owner, keeps a parameter's optimizer state and
updates it: the parameters are partitioned once, greedily by size (largest first, each to the
rank with the fewest elements so far, ties to the lowest rank: the same partition on every
rank, PyTorch's), and each rank wraps a local ``optimizer_class`` over its shard. ``step()``
runs the local optimizer and then broadcasts every parameter from its owner, all broadcasts
queued before one wait, so that the ranks end every step with the same parameters and each
holds about ``1 / world_size`` of the optimizer state (Adam's two moments).

``param_groups`` is the full list of groups over all parameters (what a learning-rate
scheduler sets); the hyperparameters are copied to the local optimizer before each step and
back after it. ``state_dict()`` needs ``consolidate_state_dict(to=rank)`` first, on every
rank: it gathers the shards to that rank, and the result is numbered as a plain
``optimizer_class`` over all parameters numbers it, so that the two load each other's dicts.
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

import remat
from remat.optim import Optimizer

from ..._remat import Tensor

__all__ = ["ZeroRedundancyOptimizer"]

_NAME = "ZeroRedundancyOptimizer"
# Group entries that belong to one optimizer's parameters, never copied between optimizers.
_OWN_KEYS = ("params", "param_names")


def _dist() -> Any:
    import remat.distributed as dist

    return dist


class _Slot:
    """Where a tensor stood in a pickled state: the index of its flat buffer (one per dtype),
    its offset and shape there."""

    __slots__ = ("buffer", "offset", "shape")

    def __init__(self, buffer: int, offset: int, shape: tuple) -> None:
        self.buffer, self.offset, self.shape = buffer, offset, shape

    def __getstate__(self) -> tuple:
        return self.buffer, self.offset, self.shape

    def __setstate__(self, state: tuple) -> None:
        self.buffer, self.offset, self.shape = state


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps ``optimizer_class`` so that each rank keeps the optimizer state of its shard of
    the parameters only (ZeRO stage 1), as ``torch.distributed.optim.ZeroRedundancyOptimizer``.

    Use it in place of the optimizer, on every rank, with the same parameters (typically
    those of a ``DistributedDataParallel`` model, whose gradients are equal on every rank
    after backward): ``step()`` updates this rank's shard with the local optimizer, then
    broadcasts each parameter from the rank that owns it. The parameters are partitioned
    greedily by size (sorted largest first, each given to the rank with the smallest total
    so far), the same way on every rank, so a model's state is split about evenly.

    Parameters
    ----------
    params : iterable of Tensor, iterable of (str, Tensor) or iterable of dict
        All the parameters (the same, in the same order, on every rank), or param-group
        dicts, as any optimizer takes them.
    optimizer_class : type
        The local optimizer, a subclass of ``remat.optim.Optimizer`` (``remat.optim.Adam``).
    process_group : ProcessGroup, optional
        The ranks that share the state. Default: ``None`` (the default group).
    parameters_as_bucket_view : bool, optional
        Broadcast each rank's parameters in one flat buffer per dtype and device (one
        collective per rank) instead of one collective per parameter; the parameters stay
        tensors of their own. Default: ``False``.
    overlap_with_ddp : bool, optional
        PyTorch's overlap of the step with DDP's gradient all-reduce; not supported (remat's
        ``DistributedDataParallel`` has no communication hooks). Default: ``False``.
    **defaults
        The local optimizer's hyperparameters (``lr=...``), passed to ``optimizer_class``.

    Raises
    ------
    TypeError
        When ``optimizer_class`` is not a subclass of ``remat.optim.Optimizer``, ``params``
        is a Tensor or not iterable, a flag is not a bool, or ``optimizer_class`` rejects a
        hyperparameter's type.
    ValueError
        When ``params`` is empty or repeats a parameter, this rank is not in
        ``process_group``, or ``optimizer_class`` rejects a hyperparameter's value.
    NotImplementedError
        When ``overlap_with_ddp`` is true.
    remat.distributed.ProcessGroupNotInitializedError
        When no process group is given and the default one does not exist.

    Examples
    --------
    One rank of ``mpirun -np 2 python train.py``::

        import remat, remat.distributed as dist
        from remat.distributed.optim import ZeroRedundancyOptimizer
        from remat.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("mpi")
        model = DDP(remat.nn.Linear(4, 2))
        opt = ZeroRedundancyOptimizer(model.parameters(), remat.optim.Adam, lr=0.01)
        model(remat.randn(8, 4)).sum().backward()
        opt.step()                      # each rank updates its shard, then broadcasts it
        opt.consolidate_state_dict(to=0)
        if dist.get_rank() == 0:
            remat.save(opt.state_dict(), "optim.pt")

    In one process (a group of one rank, everything is this rank's shard):

    >>> import remat.distributed as dist                     # doctest: +SKIP
    >>> dist.init_process_group("mpi")                       # doctest: +SKIP
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)    # doctest: +SKIP
    >>> opt = ZeroRedundancyOptimizer([w], remat.optim.Adam, lr=0.1)  # doctest: +SKIP
    >>> (w * w).sum().backward(); opt.step(); w              # doctest: +SKIP
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(self, params: Any, optimizer_class: type, process_group: Any = None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False,
                 **defaults: Any) -> None:
        if not (inspect.isclass(optimizer_class) and issubclass(optimizer_class, Optimizer)):
            got = (repr(optimizer_class) if inspect.isclass(optimizer_class)
                   else f"a {type(optimizer_class).__name__} object")
            raise TypeError(f"{_NAME}: optimizer_class must be a subclass of "
                            f"remat.optim.Optimizer (remat.optim.Adam, ...), got {got}")
        if issubclass(optimizer_class, ZeroRedundancyOptimizer):
            raise TypeError(f"{_NAME}: optimizer_class cannot be a ZeroRedundancyOptimizer")
        for flag, value in (("parameters_as_bucket_view", parameters_as_bucket_view),
                            ("overlap_with_ddp", overlap_with_ddp)):
            if not isinstance(value, bool):
                raise TypeError(f"{_NAME}: {flag} must be a bool, got {value!r}")
        if overlap_with_ddp:
            raise NotImplementedError(
                f"{_NAME}: overlap_with_ddp=True is not supported: remat's "
                "DistributedDataParallel has no communication hooks to run the step in; "
                "call step() after backward() instead")
        params = self._verify_params(params)
        dist = _dist()
        if process_group is None and not dist.is_initialized():
            raise dist.ProcessGroupNotInitializedError(
                f"{_NAME}: Default process group has not been initialized, please make sure "
                "to call init_process_group.")
        group = process_group if process_group is not None else dist.GroupMember.WORLD
        if group is dist.GroupMember.NON_GROUP_MEMBER:
            raise ValueError(f"{_NAME}: this rank is not a member of process_group")
        # The base constructor adds the groups through add_param_group, which only
        # re-partitions once the local optimizer exists.
        self._initialized = False
        self._partition_cache: list[list[dict]] | None = None
        super().__init__(params, defaults)
        self.process_group = group
        self.world_size: int = dist.get_world_size(group)
        self.rank: int = dist.get_rank(group)
        self.global_rank: int = group.ranks[self.rank]
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._optim_class = optimizer_class
        self._optim_defaults = dict(defaults)
        self._device = self._all_params()[0].device
        self.optim: Optimizer = optimizer_class(self._partition_parameters()[self.rank],
                                                **defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        #: Each rank's state, numbered globally, after consolidate_state_dict to this rank.
        self._all_state_dicts: list[dict[int, dict]] = []
        self._initialized = True

    # -- parameters and their partition -----------------------------------------------------

    @staticmethod
    def _verify_params(params: Any) -> list:
        if isinstance(params, Tensor):
            raise TypeError(f"{_NAME}: params argument should be an iterable of Tensors or "
                            "dicts, but got a Tensor")
        try:
            out = list(params)
        except TypeError as e:
            raise TypeError(f"{_NAME}: params argument should be an iterable of Tensors or "
                            f"dicts, but got {type(params).__name__}") from e
        if not out:
            raise ValueError(f"{_NAME} got an empty parameter list")
        kinds = {dict if isinstance(p, dict) else "param" for p in out}
        if len(kinds) > 1:
            raise TypeError(f"{_NAME}: params argument should be an iterable of Tensors or "
                            "dicts, not a mix of both")
        for i, g in enumerate(out):
            if isinstance(g, dict) and "params" not in g:
                raise ValueError(f"{_NAME}: each parameter group passed in params must have "
                                 f"a 'params' key mapping to its parameters (group {i} has "
                                 "none)")
        return out

    def _validate(self, group: dict) -> None:
        # The local optimizer checks the hyperparameters (with its own name in the messages).
        pass

    def _all_params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _clear_cache(self) -> None:
        self._partition_cache = None

    def _partition_parameters(self) -> list[list[dict]]:
        """Per rank, its param groups (one per global group, possibly empty, with the global
        group's hyperparameters): greedy by size over the groups in order, as PyTorch."""
        if self._partition_cache is None:
            world = self.world_size
            sizes = [0] * world
            parts: list[list[dict]] = [[] for _ in range(world)]
            for g in self.param_groups:
                per_rank: list[list[Tensor]] = [[] for _ in range(world)]
                for p in sorted(g["params"], key=lambda t: t.numel(), reverse=True):
                    r = sizes.index(min(sizes))
                    per_rank[r].append(p)
                    sizes[r] += p.numel()
                hyper = {k: v for k, v in g.items() if k not in _OWN_KEYS}
                for r in range(world):
                    parts[r].append({**hyper, "params": per_rank[r]})
            self._partition_cache = parts
        return self._partition_cache

    def _param_to_rank(self) -> dict[int, int]:
        """``id(param)`` to the rank that owns it."""
        return {id(p): r for r, groups in enumerate(self._partition_parameters())
                for g in groups for p in g["params"]}

    def _param_to_index(self) -> dict[int, int]:
        """``id(param)`` to its index in the state dict (group order, as a plain optimizer)."""
        return {id(p): i for i, p in enumerate(self._all_params())}

    @staticmethod
    def _sync_param_groups(src: list[dict], dst: list[dict]) -> None:
        """Copy every hyperparameter (all but the parameters and their names)."""
        for s, d in zip(src, dst):
            for k, v in s.items():
                if k not in _OWN_KEYS:
                    d[k] = v

    def _src(self, rank: int) -> int:
        return self.process_group.ranks[rank]

    # -- the optimizer's interface ----------------------------------------------------------

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters, partitioned across the ranks after the others.

        The parameters already in the optimizer keep their owners; the new group's are
        spread greedily from the ranks' current totals, and this rank's share joins its local
        optimizer (as a group of its own, possibly empty). Call it on every rank, with the
        same group.

        Parameters
        ----------
        param_group : dict
            ``"params"`` (a Tensor or an iterable of leaf Tensors) and any hyperparameters.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``param_group`` is not a dict or a parameter is not a Tensor.
        ValueError
            When ``"params"`` is missing, a parameter is already optimized, or the local
            optimizer rejects a hyperparameter.

        Examples
        --------
        >>> zero.add_param_group({"params": [frozen_layer.weight], "lr": 1e-4})  # doctest: +SKIP
        """
        super().add_param_group(param_group)
        if not self._initialized:
            return
        self._clear_cache()
        try:
            self.optim.add_param_group(self._partition_parameters()[self.rank][-1])
        except Exception:
            self.param_groups.pop()
            self._clear_cache()
            raise
        self._sync_param_groups(self.optim.param_groups[-1:], self.param_groups[-1:])

    @property
    def state(self) -> Any:
        """The optimizer state this rank holds: its local optimizer's, keyed by parameter
        (only the parameters of this rank's shard that have been stepped).

        Examples
        --------
        >>> sorted(zero.state[p]) if p in zero.state else None  # doctest: +SKIP
        ['exp_avg', 'exp_avg_sq', 'step']
        """
        return self.optim.state if self._initialized else super().state

    @state.setter
    def state(self, value: Any) -> None:
        # `opt.state = ...` (as some PyTorch code resets it) reaches the local optimizer.
        if self._initialized:
            self.optim.state = value
        else:
            Optimizer.state.fset(self, value)  # type: ignore[attr-defined]

    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        """Update this rank's shard with the local optimizer, then broadcast every parameter
        from its owner (all broadcasts queued, then waited on), in place.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss (passed to the local optimizer).
            Default: ``None``.
        **kwargs
            Passed to the local optimizer's ``step``.

        Returns
        -------
        Any
            What the local optimizer's ``step`` returned (the closure's loss, or None).

        Raises
        ------
        remat.distributed.DistBackendError
            When a broadcast fails (a rank that does not step, a timeout).

        Examples
        --------
        >>> loss.backward(); zero.step(); zero.zero_grad()  # doctest: +SKIP
        """
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(closure, **kwargs) if kwargs else self.optim.step(closure)
        self._sync_params()
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def _sync_params(self) -> None:
        if self.world_size <= 1:
            return
        dist = _dist()
        works: list[Any] = []
        unpack: list[tuple[Tensor, list[Tensor]]] = []
        for r, groups in enumerate(self._partition_parameters()):
            params = [p for g in groups for p in g["params"]]
            if not self.parameters_as_bucket_view:
                works += [dist.broadcast(p, src=self._src(r), group=self.process_group,
                                         async_op=True) for p in params]
                continue
            buckets: dict[tuple, list[Tensor]] = {}
            for p in params:
                buckets.setdefault((str(p.device), str(p.dtype)), []).append(p)
            for bucket in buckets.values():
                if r == self.rank:
                    flat = remat.cat([p.detach().reshape(-1) for p in bucket])
                else:
                    flat = remat.empty(sum(p.numel() for p in bucket), dtype=bucket[0].dtype,
                                       device=bucket[0].device)
                    unpack.append((flat, bucket))
                works.append(dist.broadcast(flat, src=self._src(r), group=self.process_group,
                                            async_op=True))
        for w in works:
            if w is not None:
                w.wait()
        with remat.no_grad():
            for flat, bucket in unpack:
                offset = 0
                for p in bucket:
                    n = p.numel()
                    p.copy_(flat[offset:offset + n].reshape(tuple(p.shape)))
                    offset += n

    def local_state_bytes(self) -> int:
        """The bytes of the optimizer state tensors this rank holds (its shard's: Adam's two
        moments per owned parameter; step counts kept as numbers are not counted).

        Returns
        -------
        int
            The sum of ``numel * element_size`` over the local optimizer's state tensors.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> zero.local_state_bytes()  # doctest: +SKIP
        4096
        """
        total = 0
        for p in self.optim.state:
            for v in self.optim.state[p].values():
                if isinstance(v, Tensor):
                    total += v.numel() * v.element_size()
        return total

    # -- state dicts ------------------------------------------------------------------------

    def _local_state_global(self) -> dict[int, dict]:
        """This rank's state as ``{global index: state}``, copied to the CPU."""
        local = self.optim.state_dict()["state"]
        params = [p for g in self.optim.param_groups for p in g["params"]]
        index = self._param_to_index()
        out = {}
        for i, st in local.items():
            out[index[id(params[int(i)])]] = {
                k: v.cpu() if isinstance(v, Tensor) else v for k, v in st.items()}
        return out

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard of the optimizer state to rank ``to`` (of the group), for
        :meth:`state_dict` there. Call it on every rank.

        Each rank's state is broadcast in turn (its structure pickled, its tensors in one flat
        buffer per dtype); rank ``to`` keeps them on the CPU, the others drop what they
        receive and hold no consolidated state (their ``state_dict()`` raises).

        Parameters
        ----------
        to : int, optional
            The rank, within the group, that receives the state. Default: ``0``.

        Returns
        -------
        None

        Raises
        ------
        ValueError
            When ``to`` is not a rank of the group.
        remat.distributed.DistBackendError
            When a broadcast fails (a rank that does not call it, a timeout).

        Examples
        --------
        >>> zero.consolidate_state_dict(to=0)            # doctest: +SKIP
        >>> if dist.get_rank() == 0:                     # doctest: +SKIP
        ...     remat.save(zero.state_dict(), "optim.pt")
        """
        if isinstance(to, bool) or not isinstance(to, (int, np.integer)) or not (
                0 <= int(to) < self.world_size):
            raise ValueError(f"{_NAME}.consolidate_state_dict: to must be a rank in "
                             f"[0, {self.world_size}), got {to!r}")
        to = int(to)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        mine = self._local_state_global()
        self._all_state_dicts = []
        for r in range(self.world_size):
            if r == to:
                if self.rank == to:
                    self._all_state_dicts.append(mine)
                continue
            got = self._broadcast_state(mine if r == self.rank else None, r,
                                        keep=self.rank == to)
            if self.rank == to:
                self._all_state_dicts.append(got)

    def _broadcast_state(self, state: Any, src: int, keep: bool = True) -> Any:
        """``state`` (on rank ``src``) on every rank: a pickled header (the structure with
        tensors replaced by slots) in an int64 tensor, then one flat buffer per dtype. A
        receiver that does not ``keep`` it takes part in the broadcasts and returns None."""
        dist = _dist()
        root, group, device = self._src(src), self.process_group, self._device
        sender = self.rank == src
        buffers: list[list[Tensor]] = []
        if sender:
            dtypes: list[str] = []

            def strip(v: Any) -> Any:
                if isinstance(v, Tensor):
                    name = str(v.dtype).removeprefix("remat.")
                    if name not in dtypes:
                        dtypes.append(name)
                        buffers.append([])
                    b = dtypes.index(name)
                    offset = sum(t.numel() for t in buffers[b])
                    buffers[b].append(v)
                    return _Slot(b, offset, tuple(v.shape))
                if isinstance(v, dict):
                    return {k: strip(x) for k, x in v.items()}
                if isinstance(v, (list, tuple)):
                    return type(v)(strip(x) for x in v)
                return v

            structure = strip(state)
            sizes = [sum(t.numel() for t in b) for b in buffers]
            raw = pickle.dumps((structure, dtypes, sizes))
            length = remat.tensor([len(raw)], dtype=remat.int64, device=device)
        else:
            length = remat.zeros(1, dtype=remat.int64, device=device)
        dist.broadcast(length, src=root, group=group)
        n = int(length.item())
        words = -(-n // 8)
        if sender:
            padded = np.frombuffer(raw + b"\0" * (words * 8 - n), dtype=np.int64).copy()
            header = remat.from_numpy(padded).to(device)
        else:
            header = remat.zeros(words, dtype=remat.int64, device=device)
        dist.broadcast(header, src=root, group=group)
        if not sender:
            structure, dtypes, sizes = pickle.loads(
                header.cpu().numpy().astype(np.int64).tobytes()[:n])
        flats: list[Tensor | None] = []
        for b, (name, size) in enumerate(zip(dtypes, sizes)):
            if size == 0:
                flats.append(None)
                continue
            if sender:
                flat = remat.cat([t.detach().reshape(-1).to(device) for t in buffers[b]])
            else:
                flat = remat.empty(size, dtype=getattr(remat, name), device=device)
            dist.broadcast(flat, src=root, group=group)
            flats.append(flat)
        if sender:
            return state
        if not keep:
            return None

        def fill(v: Any) -> Any:
            if isinstance(v, _Slot):
                count = int(np.prod(v.shape)) if v.shape else 1
                flat = flats[v.buffer]
                if flat is None or count == 0:
                    return remat.empty(v.shape, dtype=getattr(remat, dtypes[v.buffer]))
                with remat.no_grad():
                    return flat[v.offset:v.offset + count].reshape(v.shape).cpu().clone()
            if isinstance(v, dict):
                return {k: fill(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return type(v)(fill(x) for x in v)
            return v

        return fill(structure)

    def state_dict(self) -> dict:
        """The whole optimizer's state dict, on the rank that :meth:`consolidate_state_dict`
        gathered the state to: numbered as a plain ``optimizer_class`` over all the
        parameters numbers it, so that either loads the other's.

        It holds the state as of the last consolidation (call that again after more steps),
        with the current hyperparameters.

        Returns
        -------
        dict
            ``"state"``: per global parameter index, its state (tensors on the CPU);
            ``"param_groups"``: every group's hyperparameters and parameter indices.

        Raises
        ------
        RuntimeError
            When the state has not been consolidated to this rank.

        Examples
        --------
        >>> zero.consolidate_state_dict(to=0)                    # doctest: +SKIP
        >>> sd = zero.state_dict() if dist.get_rank() == 0 else None  # doctest: +SKIP
        """
        if not self._all_state_dicts:
            raise RuntimeError(
                f"{_NAME}: Optimizer state has not been consolidated on this rank. Please "
                f"call `consolidate_state_dict(to={self.rank})` on all ranks beforehand if "
                "you meant to save the global state.")
        out = super().state_dict()
        state: dict[int, dict] = {}
        for shard in self._all_state_dicts:
            for i, st in shard.items():
                state[i] = dict(st)
        out["state"] = dict(sorted(state.items()))
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state dict of :meth:`state_dict` (or of a plain ``optimizer_class`` over
        the same parameters): the hyperparameters of every group, and into the local
        optimizer the state of this rank's shard. Call it on every rank, with the same dict.

        Parameters
        ----------
        state_dict : dict
            A whole optimizer's state dict (``"state"`` and ``"param_groups"``).

        Returns
        -------
        None

        Raises
        ------
        ValueError
            When the number of groups, or of parameters in a group, differs.
        KeyError
            When ``"param_groups"`` or ``"state"`` is missing, or a state refers to a
            parameter index that does not exist.

        Examples
        --------
        >>> zero.load_state_dict(remat.load("optim.pt"))  # doctest: +SKIP
        """
        groups = state_dict["param_groups"]
        saved_state = {int(i): st for i, st in state_dict["state"].items()}
        if len(groups) != len(self.param_groups):
            raise ValueError(f"{_NAME}: loaded state dict has a different number of parameter "
                             "groups")
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError(f"{_NAME}: loaded state dict contains a parameter group that "
                                 "doesn't match the size of the optimizer's group")
        count = len(self._all_params())
        for i in saved_state:
            if not 0 <= i < count:
                raise KeyError(f"{_NAME}: the state dict has state for parameter index {i}, "
                               f"but the optimizer has {count} parameters")
        index = self._param_to_index()
        local_groups, local_state, li = [], {}, 0
        for mine, saved in zip(self.optim.param_groups, groups):
            ids = []
            for p in mine["params"]:
                gi = index[id(p)]
                if gi in saved_state:
                    local_state[li] = saved_state[gi]
                ids.append(li)
                li += 1
            local_groups.append({**{k: v for k, v in saved.items() if k not in _OWN_KEYS},
                                 "params": ids})
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        for mine, saved in zip(self.param_groups, groups):
            mine.update({k: v for k, v in saved.items() if k not in _OWN_KEYS})
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
