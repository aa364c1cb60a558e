"""``remat.utils.data``: datasets, samplers and ``DataLoader`` with ``torch.utils.data``'s
names, module paths (``remat.utils.data.dataset``, ``.sampler``, ``.dataloader``) and
batching rules, so a training loop ports unchanged.

Samplers are iterated lazily; shuffling and random samplers draw from remat's seeded
generator, so ``remat.manual_seed`` makes the order reproducible. ``DataLoader`` loads in
this process or, with ``num_workers > 0``, in worker processes (``get_worker_info``)."""

from ._worker import get_worker_info
from .dataloader import DataLoader, default_collate, default_convert
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
    "random_split", "DataLoader", "default_collate", "default_convert", "get_worker_info",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
]
