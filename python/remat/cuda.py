"""CUDA device queries: ``remat.cuda.is_available()``, ``device_count()``, ``synchronize()``,
``empty_cache()``.

Asking for a ``"cuda"`` tensor where no usable GPU exists raises ``remat.DeviceError`` with
the reason; these queries never raise.
"""

from __future__ import annotations

from . import _remat

__all__ = ["is_available", "device_count", "synchronize", "empty_cache"]


def is_available() -> bool:
    """Whether a usable CUDA device exists."""
    return _remat.cuda_is_available()


def device_count() -> int:
    """Number of usable CUDA devices."""
    return _remat.cuda_device_count()


def synchronize() -> None:
    """Wait for all queued GPU work to finish (no-op without a GPU)."""
    _remat.cuda_synchronize()


def empty_cache() -> None:
    """Give the device blocks remat's caching allocator keeps for reuse (and the pinned host
    blocks of offloading) back to the driver, like ``torch.cuda.empty_cache()``. Live tensors
    and ``memory_allocated`` are unaffected (no-op without a GPU)."""
    _remat.cuda_empty_cache()
