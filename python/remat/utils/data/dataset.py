"""``remat.utils.data.dataset``: map-style datasets (``Dataset``, ``TensorDataset``,
``Subset``, ``ConcatDataset``), iterable ones (``IterableDataset``, ``ChainDataset``) and
``random_split``, with ``torch.utils.data``'s names and rules."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

import remat

from ..._remat import Tensor
from .sampler import _permutation

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``.

    Any object with those two methods works with :class:`DataLoader`; subclassing
    documents the intent and gives ``a + b``, a :class:`ConcatDataset` (as
    ``torch.utils.data.Dataset``).

    Raises
    ------
    NotImplementedError
        From ``__getitem__`` or ``__len__`` when the subclass does not define it.

    Examples
    --------
    >>> from remat.utils.data import DataLoader, Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, i):
    ...         return i * i
    >>> [batch.tolist() for batch in DataLoader(Squares(), batch_size=3)]
    [[0, 1, 4], [9]]
    >>> len(Squares() + Squares())
    8
    >>> len(Dataset())
    Traceback (most recent call last):
        ...
    NotImplementedError: Dataset has no __len__ defined
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__ defined")

    def __add__(self, other: Any) -> ConcatDataset:
        return ConcatDataset([self, other])

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no __len__ defined")


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__`` (as
    ``torch.utils.data.IterableDataset``); :class:`DataLoader` batches what it yields, in
    order (no sampler, no shuffling); ``a + b`` is a :class:`ChainDataset`.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset, so each
    would yield the whole stream: ``__iter__`` uses :func:`get_worker_info` to take only its
    worker's share (the loader interleaves the workers' batches, one from each in turn).

    Raises
    ------
    NotImplementedError
        From ``__iter__`` when the subclass does not define it.

    Examples
    --------
    >>> from remat.utils.data import DataLoader, IterableDataset
    >>> class Counter(IterableDataset):
    ...     def __iter__(self):
    ...         return iter(range(5))
    >>> [b.tolist() for b in DataLoader(Counter(), batch_size=2)]
    [[0, 1], [2, 3], [4]]
    >>> from remat.utils.data import get_worker_info
    >>> class Sharded(IterableDataset):
    ...     def __iter__(self):
    ...         info = get_worker_info()
    ...         if info is None:  # no workers: all of it
    ...             return iter(range(6))
    ...         return iter(range(info.id, 6, info.num_workers))
    >>> [b.tolist() for b in DataLoader(Sharded(), batch_size=2, num_workers=2, timeout=60)]
    [[0, 2], [1, 3], [4], [5]]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} has no __iter__ defined")

    def __add__(self, other: Any) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other, lazily (``torch.utils.data``'s
    ``ChainDataset``); its length is the sum of theirs, where they have one.

    Parameters
    ----------
    datasets : iterable of IterableDataset
        The streams to chain, in order (iterated again at each epoch).

    Raises
    ------
    TypeError
        When one of them is not an :class:`IterableDataset` (on iteration or ``len()``, as
        PyTorch checks them), or has no length (on ``len()``).

    Examples
    --------
    >>> from remat.utils.data import ChainDataset, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter(range(self.n))
    ...     def __len__(self):
    ...         return self.n
    >>> ds = ChainDataset([Count(2), Count(3)])
    >>> list(ds), len(ds), list(Count(1) + Count(2))
    ([0, 1, 0, 1, 2], 5, [0, 0, 1])
    """

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = datasets

    def _check(self, d: Any) -> Any:
        if not isinstance(d, IterableDataset):
            raise TypeError(
                f"ChainDataset only supports IterableDataset, got a {type(d).__name__}"
            )
        return d

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            yield from self._check(d)

    def __len__(self) -> int:
        return sum(len(self._check(d)) for d in self.datasets)


class ConcatDataset(Dataset):
    """The samples of several datasets one after the other (``torch.utils.data``'s
    ``ConcatDataset``); ``cumulative_sizes`` holds the running lengths.

    Parameters
    ----------
    datasets : iterable of Dataset
        Map-style datasets (at least one).

    Raises
    ------
    ValueError
        When no dataset is given, or an index is out of range (negative ones count from
        the end).
    TypeError
        When one of them is an :class:`IterableDataset`.

    Examples
    --------
    >>> from remat.utils.data import ConcatDataset
    >>> ds = ConcatDataset([["a", "b"], ["c"]])
    >>> len(ds), ds[2], ds[-3], ds.cumulative_sizes
    (3, 'c', 'a', [2, 3])
    """

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes: list[int] = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        n = len(self)
        if index < 0:
            if -index > n:
                raise ValueError("absolute value of index should not exceed dataset length")
            index += n
        if index >= n:
            raise IndexError(f"ConcatDataset index {index} out of range for length {n}")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][index - start]


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of the given tensors (all the same length).

    ``dataset[i]`` is the tuple ``(t[i] for t in tensors)``; the tensors are kept as
    ``dataset.tensors``.

    Parameters
    ----------
    *tensors : Tensor
        One or more tensors with the same first dimension (at least 1-d).

    Raises
    ------
    ValueError
        When no tensor is given.
    TypeError
        When an argument is not a Tensor.
    remat.ShapeError
        When a tensor is 0-d, or the first dimensions differ.

    Examples
    --------
    >>> from remat.utils.data import TensorDataset
    >>> ds = TensorDataset(remat.arange(10.0).reshape(5, 2), remat.arange(5))
    >>> len(ds)
    5
    >>> ds[1]
    (tensor([2., 3.]), tensor(1))
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"TensorDataset: argument {i} is a {type(t).__name__}, not a Tensor"
                )
            if t.ndim == 0:
                raise remat.ShapeError(f"TensorDataset: argument {i} is a 0-d tensor")
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
            raise remat.ShapeError(f"TensorDataset: size mismatch between tensors ({shapes})")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``.

    ``subset[i]`` is ``dataset[indices[i]]``; the indices are not checked until used.

    Parameters
    ----------
    dataset : Dataset or sequence
        Any object indexable by the indices.
    indices : sequence of int
        The positions in ``dataset`` (kept as a list).

    Raises
    ------
    TypeError
        When ``indices`` is not iterable.

    Examples
    --------
    >>> from remat.utils.data import Subset
    >>> s = Subset(["a", "b", "c", "d"], [3, 0])
    >>> len(s), s[0], list(s)
    (2, 'd', ['d', 'a'])
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Any, lengths: Sequence[int | float], generator: Any = None
) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping subsets of the given lengths (or
    fractions summing to 1, the remainder spread round-robin as PyTorch does).

    The permutation comes from remat's seeded generator (or ``generator``), so
    ``remat.manual_seed`` makes it reproducible (PyTorch's draws differ).

    Parameters
    ----------
    dataset : Dataset or sequence
        Anything with ``len()`` and indexing.
    lengths : sequence of int or sequence of float
        The subset sizes (summing to ``len(dataset)``), or fractions summing to 1.
    generator : remat.Generator, optional
        The random stream to draw from. Default: ``None`` (the global one).

    Returns
    -------
    list of Subset
        One :class:`Subset` per length, in order.

    Raises
    ------
    ValueError
        When the lengths do not sum to the length of the dataset.

    Examples
    --------
    >>> from remat.utils.data import random_split
    >>> remat.manual_seed(0)
    >>> train, val = random_split(range(10), [7, 3])
    >>> list(train), list(val)
    ([5, 0, 4, 9, 3, 8, 6], [7, 2, 1])
    >>> [len(s) for s in random_split(range(10), [0.5, 0.3, 0.2])]
    [5, 3, 2]
    """
    n = len(dataset)
    if all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1.0) < 1e-9:
        sizes = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    else:
        sizes = [int(x) for x in lengths]
    if sum(sizes) != n:
        raise ValueError(
            "Sum of input lengths does not equal the length of the input dataset!"
        )
    order = _permutation(n, generator)
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, order[start : start + size]))
        start += size
    return out
