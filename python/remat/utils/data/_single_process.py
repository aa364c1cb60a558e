"""The iterator a :class:`DataLoader` returns: what every epoch shares (the sampler's
iterator, the base seed of the workers), and loading in this process (``num_workers=0``)."""

from __future__ import annotations

from typing import Any

from ._fetch import make_fetcher
from .sampler import draw_seed


class BaseLoaderIter:
    """One pass over a loader. As PyTorch's iterators, it draws the workers' base seed from
    the loader's generator (or the global stream) when it is created, with or without
    workers, so ``num_workers`` does not change which random numbers the sampler and the
    training loop see."""

    def __init__(self, loader: Any) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader.batch_sampler is not None
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        self._timeout = loader.timeout
        self._num_workers = loader.num_workers
        self._persistent_workers = loader.persistent_workers
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = draw_seed(loader.generator)
        self._num_yielded = 0

    def __iter__(self) -> BaseLoaderIter:
        return self

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self) -> Any:
        raise TypeError(f"{type(self).__name__} cannot be pickled")


class SingleProcessIter(BaseLoaderIter):
    """Loads each batch in this process, when it is asked for."""

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self._fetcher = make_fetcher(self._iterable, self._dataset, self._auto_collation,
                                     self._collate_fn, self._drop_last)

    def _next_data(self) -> Any:
        index = next(self._sampler_iter)  # StopIteration ends the epoch
        return self._fetcher.fetch(index)  # so does an exhausted iterable dataset
