"""What runs inside a :class:`DataLoader` worker process: its seeding, ``get_worker_info``,
and the loop that turns the index batches it is sent into batches it sends back.

Every message back is pickled here, in the worker's own thread, before it is queued: a batch
that cannot be pickled then comes back as an error naming the worker instead of being lost
in the queue's feeder thread (which would leave the main process waiting for it)."""

from __future__ import annotations

import os
import pickle
import queue
import random
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

import remat

from ._fetch import make_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

# How often an idle worker checks that the process that started it is still there.
_POLL_INTERVAL = 1.0

_worker_info: WorkerInfo | None = None


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a :class:`DataLoader` worker process (as
    PyTorch's ``WorkerInfo``): the worker's ``id`` (``0 .. num_workers - 1``), the number of
    workers, the ``seed`` its random streams were seeded with, and its own copy of the
    ``dataset``.

    Parameters
    ----------
    id : int
        This worker's index, ``0 .. num_workers - 1``.
    num_workers : int
        How many workers the loader runs.
    seed : int
        The seed of this worker's remat, ``random`` and NumPy streams: the loader's base
        seed (drawn once per iterator) plus ``id``.
    dataset : Any
        This process's copy of the dataset (not the main process's object).

    Raises
    ------
    dataclasses.FrozenInstanceError
        When a field is assigned.

    Examples
    --------
    >>> from remat.utils.data._worker import WorkerInfo
    >>> info = WorkerInfo(id=1, num_workers=4, seed=7, dataset=range(8))
    >>> info.id, info.num_workers, list(info.dataset)[info.id :: info.num_workers]
    (1, 4, [1, 5])
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> WorkerInfo | None:
    """Information about the current :class:`DataLoader` worker process, or None in the main
    process (as ``torch.utils.data.get_worker_info``).

    In a worker (inside the dataset's ``__getitem__``/``__iter__``, ``collate_fn`` or
    ``worker_init_fn``) it has ``id``, ``num_workers``, ``seed`` and ``dataset`` (see
    :class:`~remat.utils.data._worker.WorkerInfo`): an :class:`IterableDataset` uses it to
    give each worker its own share of the stream.

    Returns
    -------
    WorkerInfo or None
        This worker's information; None outside a worker.

    Raises
    ------
    None
        Nothing is raised.

    Examples
    --------
    >>> from remat.utils.data import DataLoader, IterableDataset, get_worker_info
    >>> get_worker_info() is None  # the main process
    True
    >>> class Shards(IterableDataset):
    ...     def __iter__(self):
    ...         info = get_worker_info()
    ...         start, step = (0, 1) if info is None else (info.id, info.num_workers)
    ...         return iter(range(start, 8, step))
    >>> sorted(int(x) for b in DataLoader(Shards(), batch_size=2, num_workers=2, timeout=60)
    ...        for x in b)
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    return _worker_info


def numpy_seed(base_seed: int, worker_id: int) -> np.ndarray:
    """NumPy's legacy ``np.random.seed`` takes 32-bit words: the base seed and the worker id
    mixed into four of them, so each worker's NumPy stream differs and follows the seed."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32]
    return np.random.SeedSequence(entropy).generate_state(4)


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this process's remat, ``random`` and NumPy streams for ``worker_id``, as
    PyTorch's workers are seeded (``base_seed + worker_id``); returns that seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    remat.manual_seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    return seed


class KeyErrorMessage(str):
    """A KeyError's message shown as written: KeyError prints the ``repr`` of its argument,
    which would turn the traceback's newlines into ``\\n``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


class WorkerError:
    """An exception raised in a worker, carried to the main process as its type and its
    formatted traceback (the traceback object itself cannot cross processes)."""

    def __init__(self, where: str) -> None:
        import sys

        exc_type, exc, tb = sys.exc_info()
        self.exc_type: type[BaseException] | None = exc_type
        self.type_name = exc_type.__name__ if exc_type is not None else "Exception"
        self.text = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def __reduce__(self) -> tuple:
        # An exception class the main process cannot import (defined inside a function)
        # travels by name only and is re-raised as RuntimeError.
        exc_type = self.exc_type
        try:
            pickle.dumps(exc_type)
        except Exception:
            exc_type = None
        return (_rebuild_error, (exc_type, self.type_name, self.text, self.where))

    def reraise(self) -> None:
        """Raise it here, with the worker's traceback in the message."""
        # Raised straight from the call, never held in a local: a frame of the traceback
        # holding the exception would be a cycle, keeping the loader's iterator (and so its
        # workers) alive until the garbage collector runs.
        raise self._exception()

    def _exception(self) -> BaseException:
        msg = f"Caught {self.type_name} {self.where}.\nOriginal {self.text}"
        if self.exc_type is None:
            return RuntimeError(msg)
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            return self.exc_type(msg)
        except Exception:  # an exception class whose constructor wants other arguments
            return RuntimeError(msg)


def _rebuild_error(exc_type: Any, type_name: str, text: str, where: str) -> WorkerError:
    err = WorkerError.__new__(WorkerError)
    err.exc_type, err.type_name, err.text, err.where = exc_type, type_name, text, where
    return err


@dataclass(frozen=True)
class IterableEnd:
    """The reply of a worker whose iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class Resume:
    """Start a new epoch (persistent workers): a fresh iterator, a fresh fetcher."""


def _send(result_queue: Any, idx: Any, data: Any, where: str) -> None:
    try:
        payload = pickle.dumps((idx, data), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        err = WorkerError(f"{where} while pickling its batch for the main process")
        payload = pickle.dumps((idx, err), protocol=pickle.HIGHEST_PROTOCOL)
    result_queue.put(payload)


def worker_loop(iterable: bool, dataset: Any, index_queue: Any, result_queue: Any,
                done_event: Any, auto_collation: bool, collate_fn: Any, drop_last: bool,
                base_seed: int, init_fn: Any, worker_id: int, num_workers: int) -> None:
    """A worker process: seed, run ``init_fn``, then answer ``(idx, index)`` tasks with
    ``(idx, batch)`` until it receives ``None`` or the process that started it is gone."""
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    parent = os.getppid()
    try:
        # Each worker is one of several processes loading at once: the engine's own thread
        # pool would oversubscribe the cores (PyTorch's workers also run one thread).
        try:
            remat.set_num_threads(1)
        except Exception:
            pass
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        fetcher = None
        init_error: WorkerError | None = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = WorkerError(where)
        ended = False
        while True:
            try:
                task = index_queue.get(timeout=_POLL_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent:  # orphaned: nobody will read the results
                    break
                continue
            if task is None:
                break
            if isinstance(task, Resume):
                ended = False
                if init_error is None:
                    try:
                        fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn,
                                               drop_last)
                    except Exception:
                        fetcher, init_error = None, WorkerError(where)
                _send(result_queue, task, None, where)
                continue
            if done_event.is_set() or ended:
                continue  # left over from an epoch that is over: no reply is awaited
            idx, index = task
            data: Any
            if fetcher is None:
                data = init_error
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if iterable:
                        data, ended = IterableEnd(worker_id), True
                    else:
                        data = WorkerError(where)
                except Exception:
                    data = WorkerError(where)
            _send(result_queue, idx, data, where)
            del data, task, index
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches the whole process group; the main process handles it
    finally:
        _worker_info = None
    if done_event.is_set():
        # Results nobody will read must not keep this process from exiting.
        result_queue.cancel_join_thread()
        result_queue.close()
