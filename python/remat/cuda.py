"""CUDA device queries: ``remat.cuda.is_available()``, ``device_count()``, ``synchronize()``.

Asking for a ``"cuda"`` tensor where no usable GPU exists raises ``remat.DeviceError`` with
the reason; these queries never raise.
"""

from __future__ import annotations

from . import _remat

__all__ = ["is_available", "device_count", "synchronize"]


def is_available() -> bool:
    """Whether a usable CUDA device exists."""
    return _remat.cuda_is_available()


def device_count() -> int:
    """Number of usable CUDA devices."""
    return _remat.cuda_device_count()


def synchronize() -> None:
    """Wait for all queued GPU work to finish (no-op without a GPU)."""
    _remat.cuda_synchronize()
