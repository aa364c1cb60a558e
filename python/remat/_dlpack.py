"""``remat.from_dlpack``: import a tensor from any DLPack producer (NumPy, PyTorch, CuPy, JAX
arrays, or a legacy capsule) without copying, on the CPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _remat
from ._remat import DeviceError, Tensor

_CPU = 1


class _Capsule:
    """A legacy ``dltensor`` capsule dressed as a DLPack producer, for ``np.from_dlpack``."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_CPU, 0)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A Tensor sharing the memory of ``ext_tensor`` (an object with ``__dlpack__`` and
    ``__dlpack_device__``, or a DLPack capsule). CPU memory only: a CUDA producer raises
    ``DeviceError``.

    The import goes through NumPy's ``np.from_dlpack`` and ``remat.from_numpy``: memory is
    shared (no copy) when the data is C-contiguous and of a dtype remat holds (float32,
    float64, int64, int32, bool); other layouts and dtypes are copied and converted (float16
    to float32, other integers to int64), as ``from_numpy`` does. A remat Tensor is returned
    as it is.

    Parameters
    ----------
    ext_tensor : object
        A DLPack producer (NumPy array, PyTorch / JAX / CuPy tensor ... with
        ``__dlpack__`` and ``__dlpack_device__``) or a legacy ``"dltensor"`` capsule.

    Returns
    -------
    Tensor
        A CPU tensor viewing the producer's memory (or a converted copy, see above).

    Raises
    ------
    remat.DeviceError
        When the producer's memory is not on the CPU.
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
    >>> remat.from_dlpack(np.arange(3.0).__dlpack__())  # a capsule
    tensor([0., 1., 2.], dtype=remat.float64)
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack_device__"):
        kind, index = ext_tensor.__dlpack_device__()
        if int(kind) != _CPU:
            raise DeviceError(
                f"from_dlpack: only CPU memory can be imported so far; the producer lives on "
                f"DLPack device ({int(kind)}, {int(index)})"
            )
        producer = ext_tensor
    elif type(ext_tensor).__name__ == "PyCapsule":
        producer = _Capsule(ext_tensor)
    else:
        raise TypeError(
            f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
            f"{type(ext_tensor).__name__}"
        )
    return _remat.from_numpy(np.from_dlpack(producer))
