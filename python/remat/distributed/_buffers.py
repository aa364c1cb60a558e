"""Tensors to the contiguous host arrays a backend sends, and results back into tensors.

A collective snapshots its input when it is called (a copy, so that the caller may go on and
the communication thread never reads a tensor being written), and its results are written
into the caller's tensors with ``copy_`` under ``no_grad`` on the waiting thread: an
in-place write, counted by the version counter, so that autograd notices a collective that
overwrote a tensor a backward needs. 16-bit floats travel as float32 (MPI has no bfloat16
reductions; the cast back is exact for data that was bfloat16) and bools as uint8.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import remat

from .._remat import Tensor

__all__ = ["check_tensor", "dtype_name", "to_array", "write_into"]

_WIDEN = {"bfloat16", "float16"}


def dtype_name(t: Tensor) -> str:
    """The tensor's dtype as a plain name (``"float32"``)."""
    return str(t.dtype).removeprefix("remat.")


def check_tensor(op: str, t: Any, what: str = "tensor") -> Tensor:
    """``t`` if it is a Tensor; a TypeError naming the op otherwise."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {what} must be a Tensor, got {type(t).__name__}")
    return t


def to_array(t: Tensor, owned: bool = False) -> np.ndarray:
    """A C-contiguous host copy of ``t``'s values, in the dtype the backend reduces in.

    ``owned``: ``t`` is the caller's private tensor, which nothing else writes, so its own
    storage may be sent. A device move or a widening makes a fresh copy anyway; only
    otherwise is the tensor copied."""
    d = t.detach()
    fresh = owned
    if d.device.type != "cpu":
        d, fresh = d.cpu(), True
    if dtype_name(d) in _WIDEN:
        d, fresh = d.float(), True
    arr = np.ascontiguousarray(d.numpy()) if fresh else np.array(d.numpy(), copy=True, order="C")
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    return arr


def write_into(t: Tensor, arr: Any) -> Tensor:
    """Write ``arr`` (a host array or a tensor, reshaped to ``t``'s shape) into ``t`` in
    place; returns ``t``."""
    if isinstance(arr, Tensor):
        src = arr.reshape(tuple(t.shape))
    else:
        if dtype_name(t) == "bool":
            arr = arr.astype(np.bool_)
        src = remat.from_numpy(np.ascontiguousarray(arr).reshape(tuple(t.shape)))
    with remat.no_grad():
        t.copy_(src)
    return t
