"""``remat.cuda.amp``, the module path of PyTorch's deprecated ``torch.cuda.amp``, so that
scripts importing it (``from torch.cuda.amp import autocast, GradScaler``) find it.

remat computes in float32 and float64 only: there is no autocast or loss scaling yet, and
importing ``autocast`` or ``GradScaler`` from here raises an ``ImportError`` that says so
(not Python's bare "cannot import name"), rather than running a script in a precision it
did not ask for."""

from __future__ import annotations

__all__: list[str] = []

_MIXED_PRECISION = ("autocast", "GradScaler", "custom_fwd", "custom_bwd")


def __getattr__(name: str) -> object:
    if name in _MIXED_PRECISION:
        # An ImportError, not an AttributeError: `from remat.cuda.amp import autocast` would
        # turn the latter into a bare "cannot import name" and lose the reason.
        raise ImportError(
            f"remat.cuda.amp.{name}: remat has no mixed precision yet (it computes in float32 "
            "and float64); remove the autocast/GradScaler lines to run the script in float32"
        )
    raise AttributeError(f"module 'remat.cuda.amp' has no attribute {name!r}")
