"""The memory cap as a context manager (dynamic rematerialisation lives in remat-core's
``dtr`` module; ``set_memory_limit`` and friends are its thin bindings)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import _remat


@contextmanager
def memory_limit(limit: int | str | None, device: Any = "cpu") -> Iterator[None]:
    """Cap the live tensor bytes of ``device`` at ``limit`` (bytes, or a string such as
    ``"8MB"``; None: no cap) inside the ``with`` block, restoring the previous cap after it.
    Ops evict and later rebuild recomputable tensors to stay under the cap."""
    previous = _remat.get_memory_limit(device)
    _remat.set_memory_limit(limit, device)
    try:
        yield
    finally:
        _remat.set_memory_limit(previous, device)
