"""Data parallelism in the layout of ``torch.nn.parallel``: :class:`DataParallel` (and
:func:`data_parallel`), which remat runs on one device, and :class:`DistributedDataParallel`,
whose constructor needs a default process group (``remat.distributed``, not built yet).

The submodules are PyTorch's paths, ``remat.nn.parallel.data_parallel`` and
``remat.nn.parallel.distributed`` (``from remat.nn.parallel.data_parallel import
DataParallel``); as in PyTorch, the package's attribute ``data_parallel`` is the function.
"""

from __future__ import annotations

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
