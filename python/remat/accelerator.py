"""``remat.accelerator``, as ``torch.accelerator``: the device-agnostic queries for the one
accelerator remat has, CUDA.

``current_accelerator()`` answers at run time: it is ``remat.device("cuda")`` when
``remat.cuda.is_available()``, else None (remat cannot tell a build without CUDA from a
machine without a GPU, so ``check_available`` changes nothing; PyTorch returns its build's
accelerator unless asked to check).
"""

from __future__ import annotations

from . import cuda
from ._device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "synchronize"]


def is_available() -> bool:
    """Whether an accelerator can be used: ``remat.cuda.is_available()``.

    Returns
    -------
    bool
        True when a usable CUDA device exists.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.accelerator.is_available() == remat.cuda.is_available()
    True
    """
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """The accelerator's device type, as ``torch.accelerator.current_accelerator``:
    ``remat.device("cuda")`` (without an index) when a GPU can be used, else None.

    Parameters
    ----------
    check_available : bool, optional
        PyTorch's run-time check; remat always answers at run time, so it changes nothing.
        Default: ``False``.

    Returns
    -------
    remat.device or None
        ``device(type='cuda')``, or None without a usable GPU.

    Raises
    ------
    TypeError
        When given more than one argument.

    Examples
    --------
    >>> acc = remat.accelerator.current_accelerator()
    >>> device = acc if acc is not None else remat.device("cpu")
    >>> remat.ones(2, device=device).device.type == device.type
    True
    """
    return _device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """The number of accelerator devices: ``remat.cuda.device_count()`` (0 without a GPU).

    Returns
    -------
    int
        The number of usable CUDA devices.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> n = remat.accelerator.device_count()
    >>> n == remat.cuda.device_count()
    True
    """
    return cuda.device_count()


def current_device_index() -> int:
    """The index of the selected accelerator device: always 0 (remat has no device
    selection; an unindexed ``"cuda"`` is ``"cuda:0"``).

    Returns
    -------
    int
        0.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.accelerator.current_device_index()
    0
    """
    return 0


def synchronize(device: object = None) -> None:
    """Wait for the accelerator's queued work to finish: ``remat.cuda.synchronize()`` (a
    no-op without a GPU).

    Parameters
    ----------
    device : optional
        The device, accepted as PyTorch's argument; every device is waited for. Default:
        ``None``.

    Returns
    -------
    None

    Raises
    ------
    remat.DeviceError
        When the device reports an error for queued work (never without a GPU).

    Examples
    --------
    >>> remat.accelerator.synchronize()
    """
    cuda.synchronize()
