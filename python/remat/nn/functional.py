"""``remat.nn.functional``: the engine's functions under ``torch.nn.functional``'s names and
signatures, so ``import remat.nn.functional as F`` ports ``F.relu(x)``, ``F.cross_entropy(...)``
and the rest unchanged. Each name is the same object as the top-level ``remat.X``."""

from __future__ import annotations

from .._remat import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    dropout,
    embedding,
    gelu,
    l1_loss,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    mse_loss,
    nll_loss,
    one_hot,
    relu,
    scaled_dot_product_attention,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)

__all__ = [
    "binary_cross_entropy_with_logits", "l1_loss", "nll_loss", "scaled_dot_product_attention",
    "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "leaky_relu", "linear",
    "log_softmax", "mse_loss", "one_hot", "relu", "sigmoid", "silu", "softmax", "softplus",
    "tanh",
]
