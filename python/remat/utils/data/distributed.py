"""``remat.utils.data.distributed``: ``DistributedSampler``, the sampler that gives each rank
of a data-parallel job its own slice of a dataset, as ``torch.utils.data.DistributedSampler``.

Every rank builds the same index list (the dataset's order, or with ``shuffle`` a permutation
drawn from a generator seeded with ``seed + epoch``, identical on every rank without any
communication), pads it by repeating indices from its start (or, with ``drop_last``, cuts its
tail) to a multiple of the number of replicas, and takes every ``num_replicas``-th index from
its own rank on: ``indices[rank:total_size:num_replicas]``. The ranks' slices are disjoint
(apart from the padding), of equal length, and together cover the dataset.

Unshuffled, the indices are PyTorch's exactly; shuffled, they are a permutation drawn from
remat's generator (so a different one from PyTorch's for the same seed).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from typing import Any

import remat

from .sampler import Sampler, _permutation

__all__ = ["DistributedSampler"]


def _check_int(name: str, value: Any) -> int:
    """``value`` as an int (Python's or NumPy's integers); a TypeError naming ``name``."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"DistributedSampler: {name} must be an int, got "
                    f"{type(value).__name__} {value!r}")


def _default(name: str) -> int:
    """The default group's world size or rank; a RuntimeError when there is none."""
    import remat.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            f"DistributedSampler: Requires distributed package to be available and "
            f"initialized to infer {name}: call remat.distributed.init_process_group() "
            f"first, or pass num_replicas= and rank="
        )
    return dist.get_world_size() if name == "num_replicas" else dist.get_rank()


class DistributedSampler(Sampler):
    """The indices of this rank's share of ``dataset``, as
    ``torch.utils.data.DistributedSampler``: each of ``num_replicas`` ranks gets
    ``len(self)`` indices, disjoint from the other ranks' apart from the padding.

    Without ``drop_last`` the index list is padded by repeating its first indices until its
    length is a multiple of ``num_replicas`` (so some samples are seen twice per epoch); with
    it the tail is dropped instead. With ``shuffle`` the list is a permutation drawn from a
    generator seeded with ``seed + epoch``: the same on every rank, a new one after each
    :meth:`set_epoch`. Pass it to ``DataLoader(sampler=...)`` (not with ``shuffle=True``).

    Parameters
    ----------
    dataset : sized
        The dataset (only its length is used).
    num_replicas : int, optional
        How many ranks share the dataset. Default: ``None`` (the default process group's
        world size, ``remat.distributed.get_world_size()``).
    rank : int, optional
        This rank, in ``[0, num_replicas - 1]``. Default: ``None``
        (``remat.distributed.get_rank()``).
    shuffle : bool, optional
        Shuffle the indices (the same way on every rank). Default: ``True``.
    seed : int, optional
        The seed of the shuffle; must be the same on every rank. Default: ``0``.
    drop_last : bool, optional
        Drop the tail of the index list instead of padding it, so that it divides evenly.
        Default: ``False``.

    Raises
    ------
    RuntimeError
        When ``num_replicas`` or ``rank`` is not given and no default process group exists
        (``remat.distributed.init_process_group`` was not called).
    ValueError
        When ``rank`` is outside ``[0, num_replicas - 1]`` or ``num_replicas`` is not
        positive.
    TypeError
        When ``num_replicas``, ``rank`` or ``seed`` is not an int.

    Examples
    --------
    >>> from remat.utils.data import DataLoader, DistributedSampler
    >>> [list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False))
    ...  for r in range(3)]
    [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    >>> list(DistributedSampler(range(10), num_replicas=3, rank=0, shuffle=False,
    ...                         drop_last=True))
    [0, 3, 6]
    >>> s = DistributedSampler(range(8), num_replicas=2, rank=1, seed=7)
    >>> s.set_epoch(3)
    >>> sorted(s) == sorted(DistributedSampler(range(8), num_replicas=2, rank=1, seed=7))
    False
    >>> [b.tolist() for b in DataLoader(list(range(6)), batch_size=2,
    ...  sampler=DistributedSampler(range(6), num_replicas=2, rank=0, shuffle=False))]
    [[0, 2], [4]]
    >>> DistributedSampler(range(4), num_replicas=2, rank=2)
    Traceback (most recent call last):
        ...
    ValueError: DistributedSampler: Invalid rank 2, rank should be in the interval [0, 1]
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _default("num_replicas")
        if rank is None:
            rank = _default("rank")
        num_replicas = _check_int("num_replicas", num_replicas)
        rank = _check_int("rank", rank)
        if num_replicas <= 0:
            raise ValueError(f"DistributedSampler: num_replicas should be a positive integer, "
                             f"got num_replicas={num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"DistributedSampler: Invalid rank {rank}, rank should be in the "
                             f"interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = bool(drop_last)
        n = len(dataset)
        if self.drop_last and n % num_replicas != 0:
            # The largest count that every replica can get without padding.
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = bool(shuffle)
        self.seed = _check_int("seed", seed)

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = remat.Generator().manual_seed(self.seed + self.epoch)
            indices = _permutation(n, g)
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if indices and padding > 0:
                # Repeat the first indices (the whole list as often as needed) to pad it.
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise RuntimeError(f"DistributedSampler: the dataset has {n} samples, too few for "
                               f"the {self.total_size} this sampler was made for: its length "
                               "changed since")
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch, which seeds the shuffle (``seed + epoch``).

        Call it at the start of each epoch, before iterating (and before creating the
        ``DataLoader`` iterator), on every rank with the same value: otherwise each epoch
        repeats the same order.

        Parameters
        ----------
        epoch : int
            The epoch number.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``epoch`` is not an int.

        Examples
        --------
        >>> from remat.utils.data import DistributedSampler
        >>> s = DistributedSampler(range(6), num_replicas=2, rank=0, seed=1)
        >>> first = list(s)
        >>> s.set_epoch(1)
        >>> s.epoch, list(s) == first, len(s)
        (1, False, 3)
        """
        self.epoch = _check_int("epoch", epoch)
