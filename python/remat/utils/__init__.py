"""Utilities in the layout of ``torch.utils``: :mod:`remat.utils.checkpoint` mirrors
``torch.utils.checkpoint``, so ``from remat.utils.checkpoint import checkpoint`` ports a
PyTorch script unchanged."""

from __future__ import annotations

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
