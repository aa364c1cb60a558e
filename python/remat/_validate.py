"""Up-front checks of constructor arguments (``nn`` layers, optimizers): a bad argument raises
``TypeError`` or ``ValueError`` naming the class and the argument, never a comparison or
unpacking error from deep inside."""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any


def _shown(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def integer(owner: str, arg: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as an int (anything with ``__index__`` but a bool), at least ``minimum``."""
    if isinstance(value, bool):
        raise TypeError(f"{owner}: {arg} must be an int, got {_shown(value)}")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{owner}: {arg} must be an int, got {_shown(value)}") from None
    if minimum is not None and n < minimum:
        raise ValueError(f"{owner}: {arg} must be >= {minimum}, got {n}")
    return n


def real(owner: str, arg: str, value: Any) -> float:
    """``value`` as a float: a real number (a bool is not one), or an object with
    ``__float__`` such as a one-element Tensor."""
    if isinstance(value, bool) or not (
        isinstance(value, numbers.Real) or hasattr(type(value), "__float__")
    ):
        raise TypeError(f"{owner}: {arg} must be a number, got {_shown(value)}")
    return float(value)


def in_range(
    owner: str, arg: str, value: Any, low: float, high: float, high_open: bool = False
) -> float:
    """``real(value)`` within ``[low, high]`` (``[low, high)`` when ``high_open``); NaN is
    out of range."""
    v = real(owner, arg, value)
    ok = low <= v < high if high_open else low <= v <= high
    if not ok or math.isnan(v):
        bracket = ")" if high_open else "]"
        raise ValueError(f"{owner}: {arg} must be in [{low}, {high}{bracket}, got {v}")
    return v


def nonnegative(owner: str, arg: str, value: Any) -> float:
    """``real(value)``, >= 0 (NaN is not)."""
    v = real(owner, arg, value)
    if not v >= 0.0:
        raise ValueError(f"{owner}: {arg} must be >= 0, got {v}")
    return v
