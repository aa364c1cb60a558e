"""The gradient reducer of ``DistributedDataParallel``: parameters in buckets, each bucket's
gradients averaged across the ranks with one asynchronous all-reduce as soon as all of them
are accumulated, so that the communication runs while backward goes on.

Each parameter gets a post-accumulate gradient hook (``register_post_accumulate_grad_hook``),
which the engine runs once per backward, after the parameter's ``.grad`` holds every
contribution of that backward, whatever was checkpointed or recomputed in between: a
recompute re-runs a forward, never a leaf's accumulation, so no gradient is reduced twice and
no collective runs in a recompute. Buckets are launched in their index order on every rank
(each rank's backward runs the same graph), and the last one to be launched also waits for
all of them and writes the averages back into ``.grad``, before backward returns.

With ``find_unused_parameters`` the forward's outputs are walked (``_reachable_leaves``) to
mark at once the parameters whose hook will not fire; each bucket carries one "used here"
flag per parameter, summed with the gradients, so that a parameter no rank used keeps
``grad=None``, as in PyTorch.
"""

from __future__ import annotations

import itertools
import time
import weakref
from collections.abc import Sequence
from typing import Any

import remat

from ..._remat import Tensor

__all__ = ["Reducer"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's: a small first bucket starts communicating early


class _Bucket:
    __slots__ = ("index", "params", "offsets", "numel", "ready", "work")

    def __init__(self, index: int, params: list[int], sizes: list[int]) -> None:
        self.index = index
        self.params = params
        self.offsets = [0, *itertools.accumulate(sizes)]
        self.numel = int(self.offsets[-1])
        self.ready = 0
        self.work: Any = None


class Reducer:
    """Buckets of ``params`` (reversed, so that the last layers' gradients, which backward
    makes first, fill the first bucket) of at most ``bucket_bytes`` each, one dtype each."""

    def __init__(self, params: Sequence[Tensor], names: Sequence[str], group: Any,
                 bucket_bytes: int, find_unused: bool) -> None:
        self.params = list(params)
        self.names = list(names)
        self.group = group
        self.find_unused = find_unused
        self.buckets: list[_Bucket] = []
        self.bucket_of: dict[int, int] = {}
        order = list(range(len(self.params)))[::-1]
        current: list[int] = []
        current_bytes, cap = 0, min(_FIRST_BUCKET_BYTES, bucket_bytes)
        for i in order:
            p = self.params[i]
            nbytes = p.numel() * p.element_size()
            if current and (current_bytes + nbytes > cap
                            or self.params[current[0]].dtype != p.dtype):
                self._add_bucket(current)
                current, current_bytes, cap = [], 0, bucket_bytes
            current.append(i)
            current_bytes += nbytes
        if current:
            self._add_bucket(current)
        self.ready_params: set[int] = set()
        self.next_bucket = 0
        # "idle": no round (no_sync, no grad); "active": waiting for gradients; "done": the
        # round's buckets are reduced, and a further gradient before the next forward is a
        # second backward of one forward.
        self.state = "idle"
        # The hooks hold the reducer weakly: a parameter outlives its DDP wrapper, and a
        # strong reference from its hook would keep the wrapper (and every bucket) alive.
        me = weakref.ref(self)
        self.handles = [p.register_post_accumulate_grad_hook(_hook(me, i))
                        for i, p in enumerate(self.params)]
        weakref.finalize(self, _remove_all, list(self.handles))
        self.stats = {"buckets": len(self.buckets), "comm_seconds": 0.0, "wait_seconds": 0.0,
                      "backward_seconds": 0.0, "bytes": 0}
        self._round_start = 0.0

    def _add_bucket(self, indices: list[int]) -> None:
        b = _Bucket(len(self.buckets), indices, [self.params[i].numel() for i in indices])
        for i in indices:
            self.bucket_of[i] = b.index
        self.buckets.append(b)

    # ---------------------------------------------------------------------------- a round
    def prepare(self, outputs: Any) -> None:
        """Start a round of reduction for the backward of a forward that returned
        ``outputs`` (marking the unused parameters ready now, when asked to find them)."""
        if self.state == "active":
            missing = [self.names[i] for i in range(len(self.params))
                       if i not in self.ready_params]
            raise RuntimeError(
                "DistributedDataParallel: Expected to have finished reduction in the prior "
                "iteration before starting a new one. This error indicates that your module "
                "has parameters that were not used in producing loss. Pass "
                "find_unused_parameters=True, or make sure every forward output takes part "
                f"in the loss. Parameters that did not receive a gradient: {missing}")
        self.ready_params = set()
        self.next_bucket = 0
        for b in self.buckets:
            b.ready, b.work = 0, None
        self.state = "active"
        self._round_start = time.perf_counter()
        self.stats.update(comm_seconds=0.0, wait_seconds=0.0, bytes=0)
        if self.find_unused:
            roots = [t for t in _tensors(outputs) if t.requires_grad]
            reached = remat._remat._reachable_leaves(roots, self.params)
            for i, used in enumerate(reached):
                if not used:
                    self._mark_ready(i)

    def cancel(self) -> None:
        """No round for this forward (under ``no_sync`` or without grad): gradients then
        accumulate locally."""
        if self.state == "done":
            self.state = "idle"

    def on_accumulated(self, i: int) -> None:
        """Parameter ``i``'s gradient is accumulated for this backward."""
        if self.state == "idle":
            return
        if i in self.ready_params or self.state == "done":
            raise RuntimeError(
                "DistributedDataParallel: Expected to mark a variable ready only once; "
                f"parameter {self.names[i]} received a second gradient in one iteration "
                "(a second backward after one forward). Use no_sync() to accumulate "
                "gradients over several backwards")
        self._mark_ready(i)

    def _mark_ready(self, i: int) -> None:
        self.ready_params.add(i)
        b = self.buckets[self.bucket_of[i]]
        b.ready += 1
        # Buckets start in index order on every rank, whatever order they fill in.
        while self.next_bucket < len(self.buckets):
            nxt = self.buckets[self.next_bucket]
            if nxt.ready < len(nxt.params):
                break
            self._launch(nxt)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finish()

    def _launch(self, b: _Bucket) -> None:
        from ...distributed._group import Signature

        first = self.params[b.params[0]]
        parts = []
        for i in b.params:
            g = self.params[i].grad
            parts.append(g.detach().reshape(-1) if g is not None
                         else remat.zeros(self.params[i].numel(), dtype=first.dtype,
                                          device=first.device))
        # One "used here" flag per parameter, summed with the gradients.
        parts.append(remat.tensor([0.0 if self.params[i].grad is None else 1.0
                                   for i in b.params], dtype=first.dtype, device=first.device))
        with remat.no_grad():
            flat = self.group.backend.stage(remat.cat(parts), owned=True)

        def job(backend: Any, deadline: float) -> Any:
            return backend.all_reduce(flat, "sum", deadline)

        self.stats["bytes"] += int((b.numel + len(b.params)) * first.element_size())
        sig = Signature("all_reduce", 1, -1, str(first.dtype).removeprefix("remat."),
                        (b.numel + len(b.params),))
        b.work = self.group.submit("DistributedDataParallel all_reduce", sig, job,
                                   lambda a, b=b: self._write(b, a))

    def _write(self, b: _Bucket, reduced: Any) -> None:
        """Write a bucket's sums, divided by the world size, into the gradients."""
        flat = reduced if isinstance(reduced, Tensor) else remat.from_numpy(reduced)
        size = self.group.size()
        used = flat[b.numel:].tolist()
        with remat.no_grad():
            for k, i in enumerate(b.params):
                if used[k] == 0:  # no rank used it: its grad stays as it is
                    continue
                p = self.params[i]
                values = (flat[b.offsets[k]:b.offsets[k + 1]] / size).reshape(tuple(p.shape))
                if p.grad is None:
                    p.grad = values.to(p.dtype).to(p.device)
                else:
                    p.grad.copy_(values)

    def _finish(self) -> None:
        start = time.perf_counter()
        try:
            for b in self.buckets:
                b.work.wait()
                self.stats["comm_seconds"] += b.work.seconds
        finally:
            self.state = "done"
            for b in self.buckets:
                b.work = None
        end = time.perf_counter()
        self.stats["wait_seconds"] = end - start
        self.stats["backward_seconds"] = end - self._round_start

    def remove(self) -> None:
        """Unregister the parameters' hooks."""
        _remove_all(self.handles)
        self.handles = []


def _hook(reducer: weakref.ref, i: int) -> Any:
    def hook(_: Tensor) -> None:
        r = reducer()
        if r is not None:
            r.on_accumulated(i)

    return hook


def _remove_all(handles: list[Any]) -> None:
    for h in handles:
        h.remove()


def _tensors(obj: Any) -> list[Tensor]:
    """Every Tensor in ``obj`` (through tuples, lists, dicts and dataclass-like outputs)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    return []
