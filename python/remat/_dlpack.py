"""``remat.from_dlpack``: import a tensor from any DLPack producer (NumPy, PyTorch, CuPy, JAX
arrays, or a capsule) without copying, on the CPU and on CUDA. The capsule is read by the
engine (``remat_core::dlpack``); this module only negotiates the protocol."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _remat
from ._remat import DeviceError, DTypeError, ShapeError, Tensor

_CPU = 1
_CUDA = 2


def _capsule_of(producer: Any, stream: int | None) -> Any:
    """The producer's capsule, versioned where it speaks DLPack 1.x."""
    try:
        return producer.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0 takes no max_version
        return producer.__dlpack__(stream=stream)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A Tensor sharing the memory of ``ext_tensor`` (an object with ``__dlpack__`` and
    ``__dlpack_device__``, or a DLPack capsule), on the CPU or on CUDA.

    The tensor views the producer's memory, strided views included (no copy); the producer's
    memory is released when the last remat view of it is gone. A CUDA producer is asked to
    make remat's stream wait for its pending work (``__dlpack__(stream=...)``). A read-only
    producer (a NumPy array that is not writeable) is copied, since remat tensors are
    writable. On the CPU, a dtype remat does not hold (float16, uint8, ...) or negative strides
    are converted through NumPy as ``remat.from_numpy`` does (float16 to float32, other
    integers to int64; a copy). A remat Tensor is returned as it is.

    Parameters
    ----------
    ext_tensor : object
        A DLPack producer (NumPy array, PyTorch / JAX / CuPy tensor ... with
        ``__dlpack__`` and ``__dlpack_device__``) or a ``"dltensor"`` /
        ``"dltensor_versioned"`` capsule.

    Returns
    -------
    Tensor
        A tensor on the producer's device viewing its memory (or a converted copy, see
        above).

    Raises
    ------
    remat.DeviceError
        When the producer's memory is neither host memory nor a CUDA device, or CUDA memory
        arrives where remat has no usable GPU.
    remat.DTypeError
        When a CUDA producer's (or a capsule's) dtype is not one remat holds.
    TypeError
        When ``ext_tensor`` is neither a DLPack producer nor a capsule.

    Examples
    --------
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> t = remat.from_dlpack(a)
    >>> t
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    >>> a[0, 0] = 100.0  # the memory is shared
    >>> t[0, 0].item()
    100.0
    >>> remat.from_dlpack(a[:, ::2]).shape  # a strided view, still shared
    (2, 2)
    >>> remat.from_dlpack(np.arange(3.0).__dlpack__())  # a capsule
    tensor([0., 1., 2.], dtype=remat.float64)
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack_device__") and hasattr(ext_tensor, "__dlpack__"):
        kind, index = (int(v) for v in ext_tensor.__dlpack_device__())
        if kind == _CUDA:
            return _remat._from_dlpack_capsule(
                _capsule_of(ext_tensor, _remat._dlpack_stream(index)))
        if kind != _CPU:
            raise DeviceError(
                f"from_dlpack: the producer lives on DLPack device ({kind}, {index}); only "
                f"host memory (1) and CUDA devices (2) can be imported"
            )
        try:
            return _remat._from_dlpack_capsule(_capsule_of(ext_tensor, None))
        except (DTypeError, ShapeError):
            # A dtype or layout remat cannot view: NumPy converts it (a copy).
            return _remat.from_numpy(np.from_dlpack(ext_tensor))
    if type(ext_tensor).__name__ == "PyCapsule":
        return _remat._from_dlpack_capsule(ext_tensor)
    raise TypeError(
        f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
        f"{type(ext_tensor).__name__}"
    )
