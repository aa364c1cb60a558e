"""How one index from the loader's sampler becomes one batch: the same fetchers run in the
main process (``num_workers=0``) and in each worker process, so both load identically."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .sampler import Sampler


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the sampler of an :class:`IterableDataset`, whose samples come from
    iterating it, not from indices (PyTorch's ``_InfiniteConstantSampler``). Batched by a
    ``BatchSampler`` it gives ``[None] * batch_size``: how many samples each batch takes."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class _MapFetcher:
    """A map-style dataset: a batch is ``collate_fn([dataset[i] for i in indices])`` (or
    ``dataset.__getitems__(indices)`` where the dataset defines it), a single index without
    batching ``collate_fn(dataset[i])``."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            return self.collate_fn(getitems(index))
        return self.collate_fn([self.dataset[i] for i in index])


class _IterableFetcher:
    """An iterable dataset: each batch takes the next ``len(index)`` samples of one iterator
    over it. Raises StopIteration once it is exhausted (and, with ``drop_last``, instead of a
    short final batch)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        samples = []
        for _ in index:
            try:
                samples.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not samples or (self.drop_last and len(samples) < len(index)):
            raise StopIteration
        return self.collate_fn(samples)


def make_fetcher(iterable: bool, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> _MapFetcher | _IterableFetcher:
    """The fetcher for ``dataset`` (a fresh iterator over it when ``iterable``)."""
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
