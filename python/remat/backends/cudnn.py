"""``remat.backends.cudnn``, as ``torch.backends.cudnn``: ``is_available()`` (False: remat does
not use cuDNN), ``version()`` (None), the flags ``enabled`` (True), ``benchmark`` (False),
``deterministic`` (False), ``allow_tf32`` (True) and ``benchmark_limit`` (None, as PyTorch has
it without cuDNN), and the ``flags(...)`` context manager.

The flags record the setting, with PyTorch's defaults, so that scripts which set them
(``remat.backends.cudnn.benchmark = True``) run unchanged; assigning anything but a bool
raises RuntimeError as in PyTorch. remat's kernels are not cuDNN's, so nothing reads them
today: convolutions are deterministic and float32 computes in full float32 regardless. Their
values live in ``remat.backends.cuda._SETTINGS`` with the other backend flags.

Examples
--------
>>> remat.backends.cudnn.benchmark
False
>>> remat.backends.cudnn.benchmark = True
>>> remat.backends.cuda._SETTINGS["cudnn.benchmark"]
True
>>> remat.backends.cudnn.benchmark = False
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from . import _flag_module
from .cuda import _SETTINGS, _check_bool

__all__ = ["is_available", "version", "flags"]

# PyTorch sets this only when cuDNN is available; a plain attribute, assignable.
benchmark_limit: int | None = None

_FLAGS = {
    "enabled": "cudnn.enabled",
    "benchmark": "cudnn.benchmark",
    "deterministic": "cudnn.deterministic",
    "allow_tf32": "cudnn.allow_tf32",
}


def is_available() -> bool:
    """Whether cuDNN is available: always False, remat does not use cuDNN (its GPU kernels
    are its own), as ``torch.backends.cudnn.is_available()`` is in a build without it.

    Returns
    -------
    bool
        False.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.backends.cudnn.is_available()
    False
    """
    return False


def version() -> int | None:
    """The cuDNN version: None, as ``torch.backends.cudnn.version()`` without cuDNN.

    Returns
    -------
    None
        remat does not use cuDNN.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.backends.cudnn.version() is None
    True
    """
    return None


@contextlib.contextmanager
def flags(
    enabled: bool = False,
    benchmark: bool = False,
    benchmark_limit: int = 10,
    deterministic: bool = False,
    allow_tf32: bool = True,
    fp32_precision: str = "none",
    depthwise_kernel: Any = "auto",
) -> Iterator[None]:
    """Set every cuDNN flag for the block and restore them after it, as
    ``torch.backends.cudnn.flags`` (which sets all of them, the defaults included).

    The flags record the setting; nothing in remat reads them today.

    Parameters
    ----------
    enabled : bool, optional
        Default: ``False``.
    benchmark : bool, optional
        Default: ``False``.
    benchmark_limit : int, optional
        Applied only where cuDNN is available, as in PyTorch (never here). Default: ``10``.
    deterministic : bool, optional
        Default: ``False``.
    allow_tf32 : bool, optional
        Default: ``True``.
    fp32_precision : str, optional
        PyTorch's newer precision switch, accepted and not recorded. Default: ``"none"``.
    depthwise_kernel : optional
        PyTorch's depthwise-convolution kernel choice, accepted and not recorded. Default:
        ``"auto"``.

    Returns
    -------
    contextmanager
        A context manager; the flags are restored on leaving it, also on an exception.

    Raises
    ------
    RuntimeError
        When a flag is not a bool (on entering).

    Examples
    --------
    >>> with remat.backends.cudnn.flags(enabled=True, deterministic=True):
    ...     remat.backends.cudnn.deterministic
    True
    >>> remat.backends.cudnn.deterministic, remat.backends.cudnn.enabled
    (False, True)
    """
    new = {"enabled": enabled, "benchmark": benchmark, "deterministic": deterministic,
           "allow_tf32": allow_tf32}
    checked = {k: _check_bool(f"backends.cudnn.{k}", v) for k, v in new.items()}
    saved = {k: _SETTINGS[_FLAGS[k]] for k in checked}
    for k, v in checked.items():
        _SETTINGS[_FLAGS[k]] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            _SETTINGS[_FLAGS[k]] = v


_flag_module.install(__name__, _FLAGS)
