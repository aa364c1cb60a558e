"""``remat.utils.data``: ``Dataset``, ``TensorDataset`` and ``DataLoader`` with
``torch.utils.data``'s names and batching rules, so a training loop ports unchanged.

Batches are collated as PyTorch's ``default_collate`` does: Tensors are stacked along a new
first axis, Python numbers become a 1-D tensor, NumPy arrays are stacked into a tensor, and
tuples, lists and dicts are collated field by field. Shuffling draws its permutation from
remat's seeded generator, so ``remat.manual_seed`` makes the order reproducible."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import remat

from .._remat import Tensor

__all__ = ["Dataset", "TensorDataset", "DataLoader", "default_collate", "random_split",
           "Subset"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``.

    Any object with those two methods works with :class:`DataLoader`; subclassing only
    documents the intent (as ``torch.utils.data.Dataset``).

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
    >>> len(Dataset())
    Traceback (most recent call last):
        ...
    NotImplementedError: Dataset has no __len__ defined
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__ defined")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no __len__ defined")


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


def _permutation(n: int, generator: Any = None) -> list[int]:
    """A permutation of ``range(n)`` from remat's seeded generator (or ``generator``)."""
    if n == 0:
        return []
    keys = remat.rand(n, dtype=remat.float64, generator=generator).numpy()
    return [int(i) for i in np.argsort(keys, kind="stable")]


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
    dataset : Dataset or sequence
        Anything with ``len()`` and indexing.
    batch_size : int or None, optional
        Samples per batch; None yields the samples one at a time, not collated.
        Default: ``1``.
    shuffle : bool, optional
        Visit the samples in a new random order each epoch. Default: ``False``.
    sampler : iterable of int, optional
        The indices to visit, in order (instead of ``shuffle``). Default: ``None``.
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
        ``shuffle`` is combined with ``sampler``, or ``batch_sampler`` with
        ``batch_size`` (other than 1), ``shuffle``, ``sampler`` or ``drop_last``.

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
        shuffle: bool = False,
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
        if shuffle and sampler is not None:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler or drop_last):
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                "and drop_last"
            )
        self.dataset = dataset
        self.batch_size = None if batch_sampler is not None else batch_size
        self.shuffle = bool(shuffle)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = 0
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self.drop_last = bool(drop_last)
        self.generator = generator

    def _indices(self) -> list[int]:
        if self.sampler is not None:
            return list(self.sampler)
        n = len(self.dataset)
        return _permutation(n, self.generator) if self.shuffle else list(range(n))

    def _batches(self) -> Iterator[list[int]]:
        if self.batch_sampler is not None:
            yield from (list(b) for b in self.batch_sampler)
            return
        assert self.batch_size is not None
        idx, bs = self._indices(), self.batch_size
        for start in range(0, len(idx), bs):
            chunk = idx[start : start + bs]
            if len(chunk) < bs and self.drop_last:
                return
            yield chunk

    def __iter__(self) -> Iterator[Any]:
        if self.batch_size is None and self.batch_sampler is None:
            for i in self._indices():
                yield self.dataset[i]
            return
        for chunk in self._batches():
            yield self.collate_fn([self.dataset[i] for i in chunk])

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
