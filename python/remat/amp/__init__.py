"""``remat.amp``: automatic mixed precision, as ``torch.amp``: :class:`autocast` (also
``remat.autocast``), :class:`GradScaler`, and ``custom_fwd``/``custom_bwd`` for custom
autograd functions."""

from .autocast_mode import autocast, custom_bwd, custom_fwd
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
