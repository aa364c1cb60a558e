"""``remat.utils.data.dataloader``: ``DataLoader`` (in this process or in worker processes),
``default_collate``, ``default_convert`` and ``get_worker_info``, with
``torch.utils.data``'s batching rules.

Batches are collated as PyTorch's ``default_collate`` does: Tensors are stacked along a new
first axis, Python numbers become a 1-D tensor, NumPy arrays are stacked into a tensor, and
tuples, lists and dicts are collated field by field. Indices come from a sampler, iterated
lazily: a sampler of any length (``RandomSampler(..., num_samples=10**10)``) costs only the
batch being built. With ``num_workers > 0`` the batches are loaded by worker processes
(``_multi_process.py``) and yielded in the same order as without them."""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Callable
from typing import Any

from ._collate import default_collate, default_convert
from ._fetch import _InfiniteConstantSampler
from ._multi_process import MultiProcessIter
from ._single_process import BaseLoaderIter, SingleProcessIter
from ._worker import get_worker_info
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        bound = "non-negative" if minimum == 0 else "positive"
        raise ValueError(f"DataLoader: {name} should be a {bound} integer, but got "
                         f"{name}={value!r}")
    return value


def _usable_cpus() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


class DataLoader:
    """Iterates over ``dataset`` in batches of ``batch_size`` samples, in order or shuffled
    each epoch, loading in this process or in ``num_workers`` worker processes (as
    ``torch.utils.data.DataLoader``).

    Batching: ``collate_fn`` merges the samples of a batch (default:
    :func:`default_collate`); ``batch_size=None`` yields the samples one at a time, each
    passed through ``collate_fn`` (default: :func:`default_convert`); ``drop_last`` drops a
    final short batch. Shuffling draws a new permutation each epoch from ``generator`` (or
    remat's global stream), so ``remat.manual_seed`` makes the order reproducible.

    Workers (``num_workers > 0``): each worker process holds its own copy of the dataset
    (and of ``collate_fn``); the batches of indices are sent to them round-robin, at most
    ``prefetch_factor`` ahead per worker, and yielded in the sampler's order, so the batches
    are those of ``num_workers=0``. Tensors come back pickled (values, dtype,
    ``requires_grad``). Processes start with the platform's default start method
    (``fork`` on Linux) or ``multiprocessing_context``; ``spawn`` and ``forkserver`` need a
    picklable dataset, ``collate_fn`` and ``worker_init_fn``. Each iterator draws a base
    seed from ``generator`` (or the global stream), also without workers, and worker ``i``
    seeds remat's global stream, Python's ``random`` and NumPy's legacy ``np.random`` from
    ``base_seed + i``: random augmentations in ``__getitem__`` are reproducible under
    ``remat.manual_seed`` and differ between workers; :func:`get_worker_info` tells the
    dataset which worker it runs in (an :class:`IterableDataset` uses it to split its
    stream; otherwise every worker yields all of it). A worker's exception is re-raised here
    with the worker's traceback in the message (``Caught ValueError in DataLoader worker
    process 0. Original Traceback ...``); a worker that dies raises RuntimeError naming its
    pid. The workers stop when the epoch ends (unless ``persistent_workers``), and when the
    iterator is dropped early (``break``, ``del``, an exception); they are daemon processes,
    so they never outlive this one.

    Parameters
    ----------
    dataset : Dataset, IterableDataset or sequence
        Anything with ``len()`` and indexing, or an :class:`IterableDataset` (batched in
        the order it yields).
    batch_size : int or None, optional
        Samples per batch; None yields the samples one at a time, not batched.
        Default: ``1``.
    shuffle : bool, optional
        Visit the samples in a new random order each epoch (a :class:`RandomSampler`).
        Default: ``None`` (in order: a :class:`SequentialSampler`).
    sampler : iterable of int, optional
        The indices to visit, in order (instead of ``shuffle``); iterated lazily, so its
        length does not matter. Default: ``None``.
    batch_sampler : iterable of list of int, optional
        The batches of indices (instead of ``batch_size``, ``shuffle``, ``sampler`` and
        ``drop_last``). Default: ``None``.
    num_workers : int, optional
        How many worker processes load the batches; 0 loads them in this process.
        Default: ``0``.
    collate_fn : callable, optional
        Merges a list of samples into a batch (or, with ``batch_size=None``, converts one
        sample). Default: ``None`` (:func:`default_collate`, or :func:`default_convert`
        without batching).
    pin_memory : bool, optional
        Accepted for PyTorch compatibility; a no-op (remat copies batches to a GPU from
        ordinary host memory, and on the CPU there is nothing to pin). Default: ``False``.
    drop_last : bool, optional
        Drop a final batch shorter than ``batch_size``. Default: ``False``.
    timeout : float, optional
        With workers: raise RuntimeError when no batch arrives within this many seconds;
        0 waits as long as the workers are alive. Default: ``0``.
    worker_init_fn : callable, optional
        Called as ``worker_init_fn(worker_id)`` once in each worker, after its seeding and
        before it loads anything. Default: ``None``.
    multiprocessing_context : str or multiprocessing context, optional
        The start method of the workers (``"fork"``, ``"spawn"``, ``"forkserver"``) or a
        context from ``multiprocessing.get_context``. Default: ``None`` (the platform's
        default).
    generator : remat.Generator, optional
        The random stream for shuffling and for the workers' base seed. Default: ``None``
        (the global one).
    prefetch_factor : int, optional
        With workers: how many batches each worker may have in flight. Default: ``None``
        (2 when ``num_workers > 0``).
    persistent_workers : bool, optional
        Keep the workers (and their dataset copies and random streams) alive from one epoch
        to the next instead of starting new ones. Default: ``False``.
    pin_memory_device : str, optional
        Accepted for PyTorch compatibility and ignored. Default: ``""``.
    in_order : bool, optional
        With workers: yield the batches in the sampler's order; False yields each as soon
        as it arrives. Default: ``True``.

    Raises
    ------
    ValueError
        When ``batch_size`` is not a positive int or None, ``num_workers`` is negative,
        ``timeout`` negative (or set without workers), ``prefetch_factor`` not positive (or
        given without workers), ``persistent_workers`` or ``multiprocessing_context`` given
        without workers, a start method is unknown, ``shuffle`` is combined with
        ``sampler``, ``batch_sampler`` with ``batch_size`` (other than 1), ``shuffle``,
        ``sampler`` or ``drop_last``, ``batch_size=None`` with ``drop_last``, or an
        :class:`IterableDataset` with ``shuffle``, ``sampler`` or ``batch_sampler``.
    TypeError
        When ``multiprocessing_context`` is neither a start method's name nor a context.
    RuntimeError
        While iterating: a worker died, or ``timeout`` passed without a batch. (An
        exception in a worker is re-raised as its own type.)

    Examples
    --------
    >>> from remat.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(remat.arange(10.0).reshape(5, 2), remat.arange(5))
    >>> for x, y in DataLoader(ds, batch_size=2):
    ...     print(x.shape, y)
    (2, 2) tensor([0, 1])
    (2, 2) tensor([2, 3])
    (1, 2) tensor([4])
    >>> len(DataLoader(ds, batch_size=2, drop_last=True))
    2
    >>> remat.manual_seed(0)
    >>> [y.tolist() for _, y in DataLoader(ds, batch_size=2, shuffle=True)]
    [[0, 4], [1, 3], [2]]

    Two worker processes give the same batches, in the same order:

    >>> g = remat.Generator().manual_seed(1)
    >>> loader = DataLoader(ds, batch_size=2, shuffle=True, generator=g, num_workers=2,
    ...                     timeout=60)
    >>> order = [y.tolist() for _, y in loader]
    >>> _ = g.manual_seed(1)
    >>> order == [y.tolist() for _, y in DataLoader(ds, batch_size=2, shuffle=True, generator=g)]
    True
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0
        ):
            raise ValueError(
                "batch_size should be a positive integer value, but got "
                f"batch_size={batch_size!r}"
            )
        _check_int("num_workers", num_workers, 0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be a non-negative number, "
                             f"but got timeout={timeout!r}")
        if num_workers == 0 and timeout > 0:
            raise ValueError("DataLoader: timeout is for waiting on worker processes; it needs "
                             f"num_workers > 0, but got timeout={timeout!r} with num_workers=0")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing. "
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                f"to None (got prefetch_factor={prefetch_factor!r})"
            )
        if num_workers > 0:
            prefetch_factor = 2 if prefetch_factor is None else _check_int(
                "prefetch_factor", prefetch_factor, 1)
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value:
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, "
                        f"but got {name}={value!r}"
                    )
        if shuffle and sampler is not None:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if iterable:  # samples come from iterating the dataset; see _fetch.py
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = bool(persistent_workers)
        self.in_order = bool(in_order)
        self._iterable = iterable
        self._iterator: BaseLoaderIter | None = None
        cpus = _usable_cpus()
        if num_workers > 0 and (cpus is None or num_workers > cpus):
            warnings.warn(
                f"This DataLoader will create {num_workers} worker processes in total, more "
                f"than the {cpus} CPUs this process may use; excessive worker creation might "
                "get DataLoader running slow or even freeze",
                stacklevel=2,
            )

    @property
    def multiprocessing_context(self) -> Any:
        """The context the workers start from (None: the platform's default).

        Examples
        --------
        >>> from remat.utils.data import DataLoader
        >>> DataLoader(range(4), num_workers=1, multiprocessing_context="spawn"
        ...            ).multiprocessing_context.get_start_method()
        'spawn'
        """
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context: Any) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start method "
                        f"in {methods!r}, but got multiprocessing_context={context!r}"
                    )
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a "
                    "string specifying the start method, but got "
                    f"multiprocessing_context={context!r}"
                )
        self._multiprocessing_context = context

    @property
    def _index_sampler(self) -> Any:
        """What the iterator draws from: batches of indices, or single indices unbatched."""
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _get_iterator(self) -> BaseLoaderIter:
        if self.num_workers == 0:
            return SingleProcessIter(self)
        return MultiProcessIter(self)

    def __iter__(self) -> BaseLoaderIter:
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        # One iterator, and one set of workers, for every epoch.
        it = self._iterator
        if it is None or it._pool.closed:  # type: ignore[attr-defined]
            self._iterator = self._get_iterator()
        else:
            it._reset(self)
        assert self._iterator is not None
        return self._iterator

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)
