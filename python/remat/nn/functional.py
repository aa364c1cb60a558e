"""``remat.nn.functional``: the engine's functions under ``torch.nn.functional``'s names and
signatures, so ``import remat.nn.functional as F`` ports ``F.relu(x)``, ``F.cross_entropy(...)``
and the rest unchanged. Each name is the same object as the top-level ``remat.X``."""

from __future__ import annotations

from .._remat import (
    _col2im,
    _im2col,
    conv1d,
    conv2d,
    conv3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    pad,
    rms_norm,
    group_norm,
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

# PyTorch's `F.unfold` / `F.fold` (im2col / col2im of 4-D inputs); not top-level names, as
# `torch.unfold` does not exist and `Tensor.unfold` is another op.
unfold = _im2col
fold = _col2im

__all__ = [
    "conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "pad", "unfold", "fold", "rms_norm", "group_norm",
    "binary_cross_entropy_with_logits", "l1_loss", "nll_loss", "scaled_dot_product_attention",
    "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "leaky_relu", "linear",
    "log_softmax", "mse_loss", "one_hot", "relu", "sigmoid", "silu", "softmax", "softplus",
    "tanh",
]
