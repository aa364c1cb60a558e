"""Numerical limits of the dtypes: ``remat.finfo`` and ``remat.iinfo``, as PyTorch's
``torch.finfo`` / ``torch.iinfo``, and ``remat.is_floating_point``."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _remat

__all__ = ["finfo", "iinfo", "is_floating_point"]

# bfloat16 is float32's exponent with 8 significant bits: float32's range and smallest normal,
# an epsilon of 2**-7 and a largest value of (2 - 2**-7) * 2**127.
_BF16 = {"bits": 16, "eps": 2.0**-7, "max": (2.0 - 2.0**-7) * 2.0**127,
         "tiny": 2.0**-126, "resolution": 0.01}


def _dtype_of(type: Any, who: str) -> Any:
    if type is None:
        return _remat.get_default_dtype()
    if isinstance(type, _remat.DType):
        return type
    try:
        return _remat.zeros(0, dtype=type).dtype
    except Exception as err:
        raise TypeError(f"{who}: expected a remat dtype, got {type!r}") from err


class finfo:
    """Machine limits of a floating-point dtype, as PyTorch's ``torch.finfo``.

    Parameters
    ----------
    type : DType, optional
        ``remat.float32``, ``float64``, ``bfloat16`` or ``float16``. Default: the default
        dtype (``remat.get_default_dtype()``).

    Attributes
    ----------
    bits : int
        Bits per element.
    eps : float
        The gap between 1.0 and the next larger value.
    max, min : float
        The largest and the most negative finite value.
    tiny, smallest_normal : float
        The smallest positive normal value.
    resolution : float
        ``10 ** -precision``: the decimal resolution.
    dtype : str
        The dtype's name (``"float32"``).

    Raises
    ------
    TypeError
        When the dtype is not a floating-point one (use :class:`iinfo`).

    Examples
    --------
    >>> remat.finfo(remat.bfloat16).eps, remat.finfo(remat.float16).max
    (0.0078125, 65504.0)
    >>> remat.finfo().dtype
    'float32'
    """

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    def __init__(self, type: Any = None) -> None:
        d = _dtype_of(type, "finfo")
        if not d.is_floating_point:
            raise TypeError(f"finfo() requires a floating point input type, got {d}")
        if d.name == "bfloat16":
            v = dict(_BF16)
        else:
            f = np.finfo(np.dtype(d.name))
            v = {"bits": int(f.bits), "eps": float(f.eps), "max": float(f.max),
                 "tiny": float(f.smallest_normal), "resolution": float(f.resolution)}
        self.bits = int(v["bits"])
        self.eps = float(v["eps"])
        self.max = float(v["max"])
        self.min = -self.max
        self.tiny = self.smallest_normal = float(v["tiny"])
        self.resolution = float(v["resolution"])
        self.dtype = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as PyTorch's ``torch.iinfo``.

    Parameters
    ----------
    type : DType
        ``remat.int64`` or ``remat.int32``.

    Attributes
    ----------
    bits : int
        Bits per element.
    max, min : int
        The largest and the smallest value.
    dtype : str
        The dtype's name (``"int64"``).

    Raises
    ------
    TypeError
        When the dtype is a floating-point or bool one.

    Examples
    --------
    >>> remat.iinfo(remat.int32).max, remat.iinfo(remat.int64).bits
    (2147483647, 64)
    """

    bits: int
    max: int
    min: int
    dtype: str

    def __init__(self, type: Any) -> None:
        d = _dtype_of(type, "iinfo")
        if d.is_floating_point or d.name == "bool":
            raise TypeError(f"iinfo() requires an integer input type, got {d}")
        i = np.iinfo(np.dtype(d.name))
        self.bits, self.max, self.min, self.dtype = int(i.bits), int(i.max), int(i.min), d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def is_floating_point(input: Any) -> bool:
    """Whether a tensor's dtype is a floating-point one, as ``torch.is_floating_point``.

    Parameters
    ----------
    input : Tensor
        The tensor.

    Returns
    -------
    bool
        True for float32, float64, bfloat16 and float16.

    Raises
    ------
    TypeError
        When `input` is not a Tensor.

    Examples
    --------
    >>> remat.is_floating_point(remat.ones(1, dtype=remat.float16))
    True
    """
    if not isinstance(input, _remat.Tensor):
        raise TypeError(f"is_floating_point(): expected a Tensor, got {type(input).__name__}")
    return bool(input.is_floating_point())
