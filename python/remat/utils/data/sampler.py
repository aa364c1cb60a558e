"""``remat.utils.data.sampler``: the index samplers of ``torch.utils.data`` (``Sampler``,
``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler``,
``BatchSampler``).

Every sampler is lazy: it yields its indices as they are asked for, drawing random ones in
small chunks, so a sampler of ``10**10`` draws costs nothing until iterated and only what is
consumed after. Random draws come from remat's seeded generator (or ``generator``), so
``remat.manual_seed`` makes every order reproducible (the draws themselves differ from
PyTorch's)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

import remat

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

# Random indices are drawn this many at a time (as PyTorch's RandomSampler does).
_CHUNK = 32


def _permutation(n: int, generator: Any = None) -> list[int]:
    """A permutation of ``range(n)`` from remat's seeded generator (or ``generator``)."""
    if n == 0:
        return []
    keys = remat.rand(n, dtype=remat.float64, generator=generator).numpy()
    return [int(i) for i in np.argsort(keys, kind="stable")]


def draw_seed(generator: Any = None) -> int:
    """A seed in ``[0, 2**63 - 1)`` drawn from ``generator`` (or the global stream): one
    draw, as PyTorch's ``torch.empty((), dtype=torch.int64).random_(generator)``."""
    return int(remat.randint(0, 2**63 - 1, (), generator=generator).item())


def _check_count(cls: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{cls}: {name} should be a positive integer value, but got "
                         f"{name}={value!r}")
    return value


class Sampler:
    """The base of index samplers: subclasses define ``__iter__`` (and ``__len__`` where the
    length is known), as ``torch.utils.data.Sampler``.

    Parameters
    ----------
    data_source : Any, optional
        Accepted for PyTorch compatibility (its constructor took one). Default: ``None``.

    Raises
    ------
    NotImplementedError
        From ``__iter__`` when the subclass does not define it.

    Examples
    --------
    >>> from remat.utils.data import DataLoader, Sampler
    >>> class Evens(Sampler):
    ...     def __iter__(self):
    ...         return iter(range(0, 6, 2))
    ...     def __len__(self):
    ...         return 3
    >>> [b.tolist() for b in DataLoader(list(range(6)), batch_size=2, sampler=Evens())]
    [[0, 2], [4]]
    """

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} has no __iter__ defined")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``, in order.

    Parameters
    ----------
    data_source : sized
        The dataset (only its length is used).

    Raises
    ------
    TypeError
        When ``data_source`` has no length (on ``len()`` or iteration).

    Examples
    --------
    >>> from remat.utils.data import SequentialSampler
    >>> list(SequentialSampler("abc"))
    [0, 1, 2]
    """

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices into ``data_source``: a new permutation per epoch, or with
    ``replacement`` independent uniform draws; ``num_samples`` of them (default: the
    dataset's length). Lazy: draws are made 32 at a time as the indices are consumed.

    Without replacement, ``num_samples`` beyond the length continues with further
    permutations (as PyTorch's). Without ``generator``, each epoch draws one seed from the
    global stream when it starts and draws its indices from a generator of its own (as
    PyTorch's), so how far ahead the indices are read (a loader's workers prefetch) does not
    change the random numbers the rest of the program sees.

    Parameters
    ----------
    data_source : sized
        The dataset (only its length is used).
    replacement : bool, optional
        Draw with replacement. Default: ``False``.
    num_samples : int, optional
        How many indices an epoch yields. Default: ``None`` (``len(data_source)``).
    generator : remat.Generator, optional
        The random stream. Default: ``None`` (the global one).

    Raises
    ------
    TypeError
        When ``replacement`` is not a bool.
    ValueError
        When ``num_samples`` is not a positive int.

    Examples
    --------
    >>> from remat.utils.data import RandomSampler
    >>> remat.manual_seed(0)
    >>> sorted(RandomSampler(range(5)))
    [0, 1, 2, 3, 4]
    >>> s = RandomSampler(range(5), replacement=True, num_samples=10**10)
    >>> len(s), all(0 <= i < 5 for i, _ in zip(s, range(100)))
    (10000000000, True)
    """

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement!r}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if num_samples is not None:
            _check_count("RandomSampler", "num_samples", num_samples)

    @property
    def num_samples(self) -> int:
        """How many indices an epoch yields."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, total = len(self.data_source), self.num_samples
        generator = self.generator
        if generator is None:
            generator = remat.Generator().manual_seed(draw_seed())
        if self.replacement:
            left = total
            while left > 0:
                k = min(_CHUNK, left)
                yield from remat.randint(0, n, (k,), generator=generator).tolist()
                left -= k
            return
        for _ in range(total // n):
            yield from _permutation(n, generator)
        if total % n:
            yield from _permutation(n, generator)[: total % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order each epoch.

    Parameters
    ----------
    indices : sequence of int
        The indices to sample from.
    generator : remat.Generator, optional
        The random stream. Default: ``None`` (the global one).

    Raises
    ------
    TypeError
        When ``indices`` has no length or cannot be indexed.

    Examples
    --------
    >>> from remat.utils.data import SubsetRandomSampler
    >>> sorted(SubsetRandomSampler([7, 3, 5]))
    [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _permutation(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices ``0 .. len(weights) - 1`` drawn with probabilities proportional
    to ``weights`` (``torch.multinomial``'s rule): with replacement, independent draws made
    lazily 32 at a time; without, a weighted random order (each index at most once).

    Parameters
    ----------
    weights : sequence of float
        Non-negative weights, not all zero (need not sum to one).
    num_samples : int
        How many indices an epoch yields.
    replacement : bool, optional
        Draw with replacement. Default: ``True``.
    generator : remat.Generator, optional
        The random stream. Default: ``None`` (the global one).

    Raises
    ------
    ValueError
        When ``num_samples`` is not a positive int, a weight is negative or not finite, all
        weights are zero, or (without replacement) ``num_samples`` exceeds the number of
        non-zero weights.
    TypeError
        When ``replacement`` is not a bool.

    Examples
    --------
    >>> from remat.utils.data import WeightedRandomSampler
    >>> remat.manual_seed(0)
    >>> list(WeightedRandomSampler([0.0, 1.0, 0.0], 4))
    [1, 1, 1, 1]
    >>> sorted(WeightedRandomSampler([1.0, 2.0, 3.0], 3, replacement=False))
    [0, 1, 2]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        _check_count("WeightedRandomSampler", "num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement!r}"
            )
        w = np.asarray(weights.detach().numpy() if isinstance(weights, remat.Tensor)
                       else weights, dtype=np.float64).reshape(-1)
        if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative "
                             "and not all zero")
        if not replacement and num_samples > int(np.count_nonzero(w)):
            raise ValueError(
                f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                f"from {int(np.count_nonzero(w))} non-zero weights"
            )
        self.weights = remat.tensor(w)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator
        self._cdf = np.cumsum(w) / w.sum()
        self._w = w

    def __iter__(self) -> Iterator[int]:
        if self.replacement:
            left = self.num_samples
            while left > 0:
                k = min(_CHUNK, left)
                u = remat.rand(k, dtype=remat.float64, generator=self.generator).numpy()
                picks = np.searchsorted(self._cdf, u, side="right")
                yield from (int(i) for i in np.minimum(picks, len(self._w) - 1))
                left -= k
            return
        # Efraimidis-Spirakis: the largest keys u**(1/w) are a weighted sample without
        # replacement; zero weights get key -1 and are never taken.
        u = remat.rand(len(self._w), dtype=remat.float64, generator=self.generator).numpy()
        with np.errstate(divide="ignore"):
            keys = np.where(self._w > 0, np.log(u) / np.where(self._w > 0, self._w, 1.0), -np.inf)
        order = np.argsort(-keys, kind="stable")[: self.num_samples]
        yield from (int(i) for i in order)

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``), lazily.

    Parameters
    ----------
    sampler : iterable of int
        The indices (a sampler, or any iterable).
    batch_size : int
        Indices per batch.
    drop_last : bool
        Drop a final batch shorter than ``batch_size``.

    Raises
    ------
    ValueError
        When ``batch_size`` is not a positive int or ``drop_last`` not a bool.

    Examples
    --------
    >>> from remat.utils.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    >>> len(BatchSampler(range(5), 2, drop_last=True))
    2
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        _check_count("BatchSampler", "batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(
                f"drop_last should be a boolean value, but got drop_last={drop_last!r}"
            )
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
