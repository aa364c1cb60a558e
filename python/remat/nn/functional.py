"""``remat.nn.functional``: the engine's functions under ``torch.nn.functional``'s names and
signatures, so ``import remat.nn.functional as F`` ports ``F.relu(x)``, ``F.cross_entropy(...)``
and the rest unchanged. Each name is the same object as the top-level ``remat.X``."""

from __future__ import annotations

from .._remat import (
    cross_entropy,
    dropout,
    embedding,
    gelu,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    mse_loss,
    one_hot,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)

__all__ = [
    "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "leaky_relu", "linear",
    "log_softmax", "mse_loss", "one_hot", "relu", "sigmoid", "silu", "softmax", "softplus",
    "tanh",
]
