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
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__ defined")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no __len__ defined")


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of the given tensors (all the same length)."""

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
    """The samples of ``dataset`` at ``indices``."""

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
    fractions summing to 1, the remainder spread round-robin as PyTorch does)."""
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
    """Merge a list of samples into a batch (see the module docstring)."""
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
    :func:`default_collate`). Loading happens in this process (``num_workers`` must be 0)."""

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
