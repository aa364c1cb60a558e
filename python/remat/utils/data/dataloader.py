"""``remat.utils.data.dataloader``: ``DataLoader`` and ``default_collate`` with
``torch.utils.data``'s batching rules.

Batches are collated as PyTorch's ``default_collate`` does: Tensors are stacked along a new
first axis, Python numbers become a 1-D tensor, NumPy arrays are stacked into a tensor, and
tuples, lists and dicts are collated field by field. Indices come from a sampler, iterated
lazily: a sampler of any length (``RandomSampler(..., num_samples=10**10)``) costs only the
batch being built."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import remat

from ..._remat import Tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate"]


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of samples into a batch (see the module docstring).

    As PyTorch's: Tensors are stacked along a new first axis; NumPy arrays are stacked into
    a tensor; bools, ints and floats become a 1-d tensor (bool, int64, float64); strings
    and bytes stay a list; dicts are collated per key, namedtuples per field, and other
    tuples and lists per position (into a list).

    Parameters
    ----------
    batch : sequence
        The samples, all of the same kind as the first.

    Returns
    -------
    Any
        The batch, in the samples' structure.

    Raises
    ------
    TypeError
        When the samples are of a kind it does not collate.
    RuntimeError
        When list or tuple samples differ in length.
    remat.ShapeError
        When tensors to stack differ in shape.
    IndexError
        When ``batch`` is empty.

    Examples
    --------
    >>> from remat.utils.data import default_collate
    >>> default_collate([remat.tensor([1.0, 2.0]), remat.tensor([3.0, 4.0])])
    tensor([[1., 2.],
            [3., 4.]])
    >>> default_collate([(1, 2.0), (3, 4.0)])
    [tensor([1, 3]), tensor([2., 4.], dtype=remat.float64)]
    >>> default_collate([{"x": remat.tensor([1.0]), "y": 0}, {"x": remat.tensor([2.0]), "y": 1}])
    {'x': tensor([[1.],
            [2.]]), 'y': tensor([0, 1])}
    """
    first = batch[0]
    if isinstance(first, Tensor):
        return remat.stack(list(batch))
    if isinstance(first, np.ndarray):
        return remat.tensor(np.stack(batch))
    if isinstance(first, (bool, np.bool_)):
        return remat.tensor([bool(b) for b in batch])
    if isinstance(first, (int, np.integer)):
        return remat.tensor([int(b) for b in batch])
    if isinstance(first, (float, np.floating)):
        return remat.tensor([float(b) for b in batch], dtype=remat.float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # namedtuple
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, (tuple, list)):
        size = len(first)
        if any(len(s) != size for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(first).__name__}"
    )


class DataLoader:
    """Iterates over ``dataset`` in batches of ``batch_size`` samples (``None``: one sample
    at a time, not collated), in order or shuffled each epoch; ``drop_last`` drops a final
    short batch. ``collate_fn`` merges the samples of a batch (default:
    :func:`default_collate`). Loading happens in this process (``num_workers`` must be 0).

    Shuffling draws a new permutation at each iteration from remat's seeded generator (or
    ``generator``), so ``remat.manual_seed`` makes the order reproducible.

    Parameters
    ----------
    dataset : Dataset, IterableDataset or sequence
        Anything with ``len()`` and indexing, or an :class:`IterableDataset` (batched in
        the order it yields).
    batch_size : int or None, optional
        Samples per batch; None yields the samples one at a time, not collated.
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
        Must be 0: loading runs in this process. Default: ``0``.
    collate_fn : callable, optional
        Merges a list of samples into a batch. Default: ``None``
        (:func:`default_collate`).
    pin_memory : bool, optional
        Accepted for PyTorch compatibility and ignored. Default: ``False``.
    drop_last : bool, optional
        Drop a final batch shorter than ``batch_size``. Default: ``False``.
    generator : remat.Generator, optional
        The random stream for shuffling. Default: ``None`` (the global one).

    Raises
    ------
    ValueError
        When ``batch_size`` is not a positive int or None, ``num_workers`` is not 0,
        ``shuffle`` is combined with ``sampler``, ``batch_sampler`` with ``batch_size``
        (other than 1), ``shuffle``, ``sampler`` or ``drop_last``, or an
        :class:`IterableDataset` with ``shuffle``, ``sampler`` or ``batch_sampler``.

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
    [[0, 4], [3, 2], [1]]
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        generator: Any = None,
    ) -> None:
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0
        ):
            raise ValueError(
                "batch_size should be a positive integer value, but got "
                f"batch_size={batch_size!r}"
            )
        if num_workers != 0:
            raise ValueError("DataLoader: num_workers must be 0 (loading runs in this process)")
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
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler or drop_last):
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                "and drop_last"
            )
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        if sampler is None and not iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = 0
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self.pin_memory = bool(pin_memory)
        self.generator = generator
        self._iterable = iterable

    def _stream_batches(self) -> Iterator[list[Any]]:
        """An IterableDataset's samples in lists of ``batch_size``, as they come."""
        assert self.batch_size is not None
        batch: list[Any] = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __iter__(self) -> Iterator[Any]:
        if self._iterable:
            if self.batch_size is None:
                yield from self.dataset
                return
            for samples in self._stream_batches():
                yield self.collate_fn(samples)
            return
        if self.batch_sampler is None:  # batch_size=None: the samples one at a time
            for i in self.sampler:
                yield self.dataset[i]
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
