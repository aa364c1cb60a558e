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
    Ops evict and later rebuild recomputable tensors to stay under the cap.

    Dynamic rematerialisation (DTR-style) without code changes: while the cap is set, an
    allocation that would exceed it first evicts resident tensors that can be recomputed
    (cheapest compute per byte and staleness first) and recomputes them, recursively, when
    they are next read, in forward or backward. Gradients are the same as without the cap.
    The cap counts all of ``memory_allocated(device)``, parameters included. The previous
    cap comes back on exit, also after an exception. See ``remat.set_memory_limit`` and
    ``remat.memory_stats``.

    Parameters
    ----------
    limit : int, str or None
        The cap in bytes, or a string with a binary unit (``"512KB"``, ``"8MB"``,
        ``"1.5GB"``: 1 MB is 1,048,576 bytes); None removes the cap inside the block.
    device : str or remat.device, optional
        The device whose bytes are capped. Default: ``"cpu"``.

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager; ``with remat.memory_limit(...):`` binds ``None``.

    Raises
    ------
    ValueError
        On entering, when ``limit`` is negative or a string that is not a byte count.
    TypeError
        On entering, when ``limit`` is not an int, str or None (a bool included).
    remat.DeviceError
        On entering, when ``device`` is not a device name.
    MemoryError
        Inside the block, when an op cannot fit under the cap even after evicting every
        recomputable tensor (the message states the smallest working set).

    Examples
    --------
    >>> x = remat.randn(128, 128, requires_grad=True)  # 64 KiB
    >>> base = remat.memory_allocated()
    >>> remat.reset_peak_memory_stats()
    >>> with remat.memory_limit(base + 400_000):
    ...     h = x
    ...     for _ in range(10):  # ten 64 KiB activations would need 640 KiB
    ...         h = h.tanh()
    ...     h.sum().backward()
    ...     del h
    ...     evicted = remat.memory_stats()["evictions"] > 0
    >>> evicted, remat.max_memory_allocated() - base <= 400_000
    (True, True)
    >>> remat.get_memory_limit() is None  # the previous setting (no cap) is back
    True
    """
    previous = _remat.get_memory_limit(device)
    _remat.set_memory_limit(limit, device)
    try:
        yield
    finally:
        _remat.set_memory_limit(previous, device)
