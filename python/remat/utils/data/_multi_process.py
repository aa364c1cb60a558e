"""Loading in worker processes (``num_workers > 0``), with PyTorch's protocol: each worker
has its own queue of ``(task, index batch)`` messages, sent round-robin; all of them answer
on one result queue; the iterator keeps at most ``prefetch_factor * num_workers`` tasks in
flight and yields the batches in task order (a reorder buffer holds the early ones).

The workers are daemon processes and a ``weakref.finalize`` shuts them down when the
iterator goes away (a ``break``, ``del``, an exception, or the interpreter exiting): a
``None`` in each queue, a bounded join, then ``terminate`` and ``kill`` for any still
running. Waiting for a result polls the workers, so one that dies (a segfault, a kill, an
out-of-memory kill) is an error naming it rather than a wait forever."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import queue
import signal
import time
import weakref
from typing import Any

from ._single_process import BaseLoaderIter
from ._worker import IterableEnd, Resume, WorkerError, worker_loop

# How long a wait for a result goes between checks that every worker is alive.
_STATUS_INTERVAL = 0.5
# How long shutdown waits for the workers to exit on their own before terminating them.
_JOIN_TIMEOUT = 2.0


def _exit_description(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class WorkerPool:
    """The worker processes of one iterator and their queues; ``shutdown`` is idempotent
    and does nothing in any process but the one that started them (a forked child holds a
    copy of this object too)."""

    def __init__(self, loader: Any, base_seed: int, iterable: bool, auto_collation: bool,
                 dataset: Any) -> None:
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self.owner = os.getpid()
        self.closed = False
        self.workers: list[Any] = []
        self.index_queues: list[Any] = []
        self.result_queue = ctx.Queue()
        self.done_event = ctx.Event()
        try:
            for worker_id in range(loader.num_workers):
                index_queue = ctx.Queue()
                # A worker that died leaves its queue unread: exiting must not wait on it.
                index_queue.cancel_join_thread()
                proc = ctx.Process(
                    target=worker_loop,
                    args=(iterable, dataset, index_queue, self.result_queue, self.done_event,
                          auto_collation, loader.collate_fn, loader.drop_last, base_seed,
                          loader.worker_init_fn, worker_id, loader.num_workers),
                    daemon=True,
                )
                self.index_queues.append(index_queue)
                proc.start()  # a spawn context pickles the dataset here
                self.workers.append(proc)
        except BaseException:
            self.shutdown()
            raise

    def shutdown(self) -> None:
        """Stop every worker: ask, wait a little, then terminate."""
        if self.closed or os.getpid() != self.owner:
            return
        self.closed = True
        try:
            self.done_event.set()
            for q in self.index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            deadline = time.monotonic() + _JOIN_TIMEOUT
            for proc in self.workers:
                proc.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in [*self.index_queues, self.result_queue]:
                q.cancel_join_thread()
                q.close()
        finally:
            for proc in self.workers:
                if proc.is_alive():
                    proc.terminate()
                    proc.join(timeout=_JOIN_TIMEOUT)
                if proc.is_alive():
                    proc.kill()
                    proc.join(timeout=_JOIN_TIMEOUT)


class MultiProcessIter(BaseLoaderIter):
    """One pass (or, with ``persistent_workers``, every pass) over a loader with workers."""

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._pool = WorkerPool(loader, self._base_seed, self._iterable,
                                self._auto_collation, self._dataset)
        self._workers = self._pool.workers
        self._finalizer = weakref.finalize(self, self._pool.shutdown)
        self._reset(loader, first_iter=True)

    @property
    def _max_tasks(self) -> int:
        return self._prefetch_factor * self._num_workers

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task to send
        self._rcvd_idx = 0  # the next task to yield (in order)
        # task -> [worker] while in flight, [worker, batch] once it came back early
        self._tasks: dict[int, list[Any]] = {}
        self._outstanding = 0  # tasks sent whose answer has not arrived
        self._active = [True] * self._num_workers
        self._worker_tasks = [0] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # Persistent workers: start their new epoch, and drop whatever the last one
            # left in flight (each worker answers in order, so its acknowledgement comes
            # after all of it).
            for q in self._pool.index_queues:
                q.put(Resume())
            waiting = self._num_workers
            while waiting:
                key, _ = self._get()
                if isinstance(key, Resume):
                    waiting -= 1
        for _ in range(self._max_tasks):
            self._try_put_index()

    def _try_put_index(self) -> None:
        if self._outstanding >= self._max_tasks:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next worker still loading, if any
            worker = next(self._cycle)
            if not self._active[worker]:
                continue
            if self._in_order or (
                self._worker_tasks[worker] < self._max_tasks // sum(self._active)
            ):
                break
        else:
            return  # every worker's iterable dataset is exhausted
        self._pool.index_queues[worker].put((self._send_idx, index))
        self._tasks[self._send_idx] = [worker]
        self._worker_tasks[worker] += 1
        self._outstanding += 1
        self._send_idx += 1

    def _check_workers(self) -> None:
        dead = [(i, w) for i, w in enumerate(self._workers)
                if self._active[i] and not w.is_alive()]
        if not dead:
            return
        pids = ", ".join(str(w.pid) for _, w in dead)
        how = "; ".join(f"worker {i} {_exit_description(w.exitcode)}" for i, w in dead)
        self._shutdown_workers()
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly ({how})")

    def _get(self) -> tuple[Any, Any]:
        """The next message from any worker, checking on them while it waits."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _STATUS_INTERVAL
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            try:
                payload = self._pool.result_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers()
                continue
            return pickle.loads(payload)

    def _retire(self, worker: int) -> None:
        """``worker``'s iterable dataset is exhausted: it answers none of its other tasks."""
        self._active[worker] = False
        for idx in [i for i, t in self._tasks.items() if t[0] == worker and len(t) == 1]:
            del self._tasks[idx]
            self._outstanding -= 1
            self._worker_tasks[worker] -= 1
        if not self._persistent_workers:
            self._pool.index_queues[worker].put(None)  # it can exit now

    def _next_data(self) -> Any:
        if self._pool.closed:
            raise StopIteration
        while True:
            while self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._tasks:
                self._rcvd_idx += 1  # a task of a worker that ran out of data
            if self._rcvd_idx >= self._send_idx:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            entry = self._tasks[self._rcvd_idx]
            if len(entry) == 2:
                del self._tasks[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(entry[0], entry[1])
            idx, data = self._get()
            if idx not in self._tasks:
                continue
            worker = self._tasks[idx][0]
            self._outstanding -= 1
            if isinstance(data, IterableEnd):
                del self._tasks[idx]
                self._worker_tasks[worker] -= 1
                self._retire(worker)
                for _ in range(self._max_tasks - self._outstanding):
                    self._try_put_index()
                continue
            if idx == self._rcvd_idx or not self._in_order:
                del self._tasks[idx]
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process(worker, data)
            self._tasks[idx].append(data)  # early: held until its turn

    def _process(self, worker: int, data: Any) -> Any:
        self._worker_tasks[worker] -= 1
        self._try_put_index()
        if isinstance(data, WorkerError):
            data.reraise()
        return data

    def _shutdown_workers(self) -> None:
        finalizer = getattr(self, "_finalizer", None)  # absent if starting them failed
        if finalizer is not None:
            finalizer()

    def __del__(self) -> None:
        self._shutdown_workers()
