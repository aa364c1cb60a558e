"""``torch.utils.checkpoint``'s names over remat's checkpointing: the same objects as
``remat.checkpoint``, ``remat.checkpoint_sequential`` and ``remat.set_checkpoint_early_stop``
(PyTorch's keywords such as ``use_reentrant`` and ``preserve_rng_state`` are accepted there)."""

from __future__ import annotations

from ..checkpoint import checkpoint, checkpoint_sequential, set_checkpoint_early_stop

__all__ = ["checkpoint", "checkpoint_sequential", "set_checkpoint_early_stop"]
