"""``remat.distributed.optim``: optimizers for data-parallel jobs, with
``torch.distributed.optim``'s names: :class:`ZeroRedundancyOptimizer` (ZeRO stage 1, the
optimizer state sharded across the ranks)."""

from __future__ import annotations

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
