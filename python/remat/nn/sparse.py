"""``nn.Embedding``: a lookup table of ``num_embeddings`` rows of ``embedding_dim`` values,
indexed by integer tensors. The lookup is the engine's ``embedding`` (a row gather whose
backward is a scatter-add of rows, never a dense one-hot)."""

from __future__ import annotations

from typing import Any

import remat

from .. import _validate
from .._remat import Tensor
from .modules import Module, Parameter

__all__ = ["Embedding"]


def _padding_index(num_embeddings: int, padding_idx: int | None) -> int | None:
    if padding_idx is None:
        return None
    p = _validate.integer("Embedding", "padding_idx", padding_idx)
    if not -num_embeddings <= p < num_embeddings:
        raise ValueError(
            f"Embedding: padding_idx={p} must be within num_embeddings={num_embeddings}"
        )
    return p % num_embeddings


class Embedding(Module):
    """``Embedding(num_embeddings, embedding_dim, padding_idx=None, ...)``, as PyTorch: the
    weight is drawn from N(0, 1), the ``padding_idx`` row starts at zero and never receives a
    gradient, and ``_weight`` supplies the table instead. ``max_norm`` renormalises, in place
    and before the lookup, each looked-up row whose ``norm_type``-norm exceeds it."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings = _validate.integer("Embedding", "num_embeddings", num_embeddings, 0)
        self.embedding_dim = _validate.integer("Embedding", "embedding_dim", embedding_dim, 0)
        self.padding_idx = _padding_index(self.num_embeddings, padding_idx)
        self.max_norm = None if max_norm is None else float(max_norm)
        self.norm_type = float(norm_type)
        if scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "Embedding: scale_grad_by_freq and sparse gradients are not supported"
            )
        self.scale_grad_by_freq = False
        self.sparse = False
        shape = (self.num_embeddings, self.embedding_dim)
        if _weight is None:
            w = remat.randn(*shape, dtype=dtype)
            if self.padding_idx is not None:
                w[self.padding_idx] = 0.0
            if device is not None and str(device) != "cpu":
                w = w.to(device)
            self.weight = Parameter(w, requires_grad=not _freeze)
        else:
            if tuple(_weight.shape) != shape:
                raise remat.ShapeError(
                    f"Embedding: _weight has shape {tuple(_weight.shape)}, expected {shape}"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose table is ``embeddings`` (2-D); ``freeze`` keeps it fixed."""
        if embeddings.ndim != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input: Any) -> Tensor:
        return remat.embedding(input, self.weight, padding_idx=self.padding_idx,
                               max_norm=self.max_norm, norm_type=self.norm_type)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2.0:
            s += f", norm_type={self.norm_type}"
        return s
