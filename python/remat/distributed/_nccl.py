"""The ``nccl`` backend: collectives on CUDA tensors through NCCL.

remat loads ``libnccl`` at run time through cudarc, as it loads cuBLAS, so the same wheel
works with or without it.
"""

from __future__ import annotations

from typing import Any

from .. import _remat

__all__ = ["available", "init"]

_INSTALL = ("the nccl backend needs a CUDA GPU and libnccl: pip install nvidia-nccl-cu13 "
            "(or the system's NCCL); for CPU tensors use backend='mpi'")


def available() -> bool:
    """Whether remat was built with CUDA, a GPU is visible and libnccl loads."""
    probe = getattr(_remat, "_nccl_available", None)
    return bool(probe()) if probe is not None else False


def init(init_method: Any, rank: int, world_size: int, timeout: float, device_id: Any) -> Any:
    """The NCCL communicator of this rank."""
    if not available():
        raise RuntimeError(f"init_process_group: {_INSTALL}")
    raise RuntimeError(f"init_process_group: {_INSTALL}")
