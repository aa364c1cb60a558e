"""``remat.cuda.amp``, the module path of PyTorch's deprecated ``torch.cuda.amp``:
``autocast`` is ``remat.autocast("cuda", ...)`` and ``GradScaler`` is
``remat.amp.GradScaler("cuda", ...)``, so scripts importing them from here run unchanged."""

from __future__ import annotations

from typing import Any

from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast):
    """``remat.autocast("cuda", ...)`` under PyTorch's deprecated name.

    Parameters
    ----------
    enabled : bool, optional
        Default: ``True``.
    dtype : dtype, optional
        Default: ``remat.float16``.
    cache_enabled : bool, optional
        Default: ``True``.

    Raises
    ------
    DTypeError
        When ``dtype`` is not bfloat16 or float16.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # no GPU here: it disables itself
    ...     with remat.cuda.amp.autocast():
    ...         remat.is_autocast_enabled("cuda") == remat.cuda.is_available()
    True
    """

    def __init__(self, enabled: bool = True, dtype: Any = None,
                 cache_enabled: bool = True) -> None:
        from .. import float16

        super().__init__("cuda", dtype=float16 if dtype is None else dtype, enabled=enabled,
                         cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``remat.amp.GradScaler("cuda", ...)`` under PyTorch's deprecated name.

    Parameters
    ----------
    init_scale : float, optional
        Default: ``65536.0``.
    growth_factor : float, optional
        Default: ``2.0``.
    backoff_factor : float, optional
        Default: ``0.5``.
    growth_interval : int, optional
        Default: ``2000``.
    enabled : bool, optional
        Default: ``True``.

    Raises
    ------
    ValueError
        As ``remat.amp.GradScaler``.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     s = remat.cuda.amp.GradScaler()
    >>> s.is_enabled() == remat.cuda.is_available()
    True
    """

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """``remat.amp.custom_fwd(device_type="cuda", ...)`` under PyTorch's deprecated name.

    Parameters
    ----------
    fwd : callable, optional
        The ``forward`` to decorate.
    cast_inputs : dtype, optional
        As ``remat.amp.custom_fwd``. Default: ``None``.

    Returns
    -------
    callable
        The decorated ``forward`` (or a decorator).

    Raises
    ------
    ValueError
        Never for this spelling (the device type is fixed).

    Examples
    --------
    >>> callable(remat.cuda.amp.custom_fwd(cast_inputs=remat.float32))
    True
    """
    from ..amp import custom_fwd as fwd_for

    return fwd_for(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any = None) -> Any:
    """``remat.amp.custom_bwd(device_type="cuda")`` under PyTorch's deprecated name.

    Parameters
    ----------
    bwd : callable, optional
        The ``backward`` to decorate.

    Returns
    -------
    callable
        The decorated ``backward`` (or a decorator).

    Raises
    ------
    ValueError
        Never for this spelling (the device type is fixed).

    Examples
    --------
    >>> callable(remat.cuda.amp.custom_bwd())
    True
    """
    from ..amp import custom_bwd as bwd_for

    return bwd_for(bwd, device_type="cuda")
