"""CUDA device queries: ``remat.cuda.is_available()``, ``device_count()``, ``synchronize()``,
``empty_cache()``; and the seeding calls ``manual_seed(seed)`` / ``manual_seed_all(seed)``.

Asking for a ``"cuda"`` tensor where no usable GPU exists raises ``remat.DeviceError`` with
the reason; these queries never raise.
"""

from __future__ import annotations

from .. import _remat
from . import amp  # noqa: F401  (remat.cuda.amp, as torch.cuda.amp)

__all__ = ["is_available", "device_count", "synchronize", "empty_cache", "manual_seed",
           "manual_seed_all"]


def is_available() -> bool:
    """Whether a usable CUDA device exists.

    False when the build has no CUDA support, no driver is found, or no device is present;
    in those cases asking for a ``"cuda"`` tensor raises ``remat.DeviceError`` with the
    reason.

    Returns
    -------
    bool
        True when at least one CUDA device can be used.

    Raises
    ------
    TypeError
        When given an argument (it takes none); it never raises otherwise.

    Examples
    --------
    >>> device = "cuda" if remat.cuda.is_available() else "cpu"
    >>> remat.ones(2, device=device).device.type == device
    True
    """
    return _remat.cuda_is_available()


def device_count() -> int:
    """Number of usable CUDA devices.

    Returns
    -------
    int
        The number of devices (``"cuda:0"`` to ``"cuda:N-1"``); 0 without a usable GPU.

    Raises
    ------
    TypeError
        When given an argument (it takes none); it never raises otherwise.

    Examples
    --------
    >>> n = remat.cuda.device_count()
    >>> n == 0 or remat.cuda.is_available()
    True
    """
    return _remat.cuda_device_count()


def synchronize() -> None:
    """Wait for all queued GPU work to finish (no-op without a GPU).

    Kernels run asynchronously; call it before timing GPU work.

    Returns
    -------
    None

    Raises
    ------
    remat.DeviceError
        When the device reports an error for queued work (never without a GPU).

    Examples
    --------
    >>> x = remat.ones(1024, device="cuda" if remat.cuda.is_available() else "cpu")
    >>> y = (x * 2).sum()
    >>> remat.cuda.synchronize()
    >>> y.item()
    2048.0
    """
    _remat.cuda_synchronize()


def empty_cache() -> None:
    """Give the device blocks remat's caching allocator keeps for reuse (and the pinned host
    blocks of offloading) back to the driver, like ``torch.cuda.empty_cache()``. Live tensors
    and ``memory_allocated`` are unaffected (no-op without a GPU).

    It also waits for the queued GPU work of every device.

    Returns
    -------
    None

    Raises
    ------
    remat.DeviceError
        When the device reports an error for queued work (never without a GPU).

    Examples
    --------
    >>> before = remat.memory_allocated("cuda")
    >>> remat.cuda.empty_cache()
    >>> remat.memory_allocated("cuda") == before
    True
    """
    _remat.cuda_empty_cache()


def manual_seed(seed: int) -> None:
    """Seed the random stream GPU draws come from, as ``torch.cuda.manual_seed``.

    remat has one counter-based random stream that serves every device, so this is
    ``remat.manual_seed(seed)``: it seeds CPU draws as well (PyTorch keeps a generator per
    GPU beside the CPU one, and seeds only the current GPU's). A script that seeds both, as
    most do, gets the same reproducible numbers either way. It works without a GPU (PyTorch
    ignores the call there). Inside a checkpoint recompute it seeds the replay stream, as
    ``remat.manual_seed`` does.

    Parameters
    ----------
    seed : int
        The seed (taken modulo 2**64, so negative seeds wrap).

    Returns
    -------
    None

    Raises
    ------
    TypeError
        When ``seed`` is not an int.
    OverflowError
        When ``seed`` is outside the signed 128-bit range.

    Examples
    --------
    >>> remat.cuda.manual_seed(7)
    >>> remat.initial_seed()
    7
    >>> a = remat.rand(2)
    >>> remat.manual_seed(7)
    >>> bool((remat.rand(2) == a).all())
    True
    """
    _remat.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the random stream of every GPU, as ``torch.cuda.manual_seed_all``.

    remat's one random stream serves every device, so this is ``remat.manual_seed(seed)``
    (it seeds CPU draws as well; see :func:`remat.cuda.manual_seed`). It works without a
    GPU.

    Parameters
    ----------
    seed : int
        The seed (taken modulo 2**64, so negative seeds wrap).

    Returns
    -------
    None

    Raises
    ------
    TypeError
        When ``seed`` is not an int.
    OverflowError
        When ``seed`` is outside the signed 128-bit range.

    Examples
    --------
    >>> remat.cuda.manual_seed_all(3)
    >>> remat.initial_seed()
    3
    """
    _remat.manual_seed(seed)
