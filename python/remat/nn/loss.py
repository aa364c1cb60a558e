"""Loss modules with ``torch.nn``'s constructor arguments, each calling the engine's
function of the same name (``remat.nn.functional``)."""

from __future__ import annotations

from typing import Any

import remat

from .._remat import Tensor
from .modules import Module

__all__ = ["MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(owner: str, size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        avg = True if size_average is None else bool(size_average)
        red = True if reduce is None else bool(reduce)
        return "none" if not red else ("mean" if avg else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"{owner}: reduction must be one of {_REDUCTIONS}, got {reduction!r}"
        )
    return reduction


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction(type(self).__name__, size_average, reduce, reduction)

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """Squared error ``(input - target)²``, reduced."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return remat.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Absolute error ``|input - target|``, reduced."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return remat.l1_loss(input, target, reduction=self.reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if weight is not None and not isinstance(weight, Tensor):
            raise TypeError(
                f"{type(self).__name__}: weight must be a Tensor or None, got "
                f"{type(weight).__name__}"
            )
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits against class indices or probabilities, with ``weight``,
    ``ignore_index``, ``reduction`` and ``label_smoothing`` as PyTorch."""

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(
                f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}"
            )
        self.ignore_index = int(ignore_index)
        self.label_smoothing = float(label_smoothing)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return remat.cross_entropy(input, target, weight=self.weight,
                                   ignore_index=self.ignore_index, reduction=self.reduction,
                                   label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities at the target classes."""

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = int(ignore_index)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return remat.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                              reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy of logits (numerically stable), with ``weight`` and
    ``pos_weight``."""

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if pos_weight is not None and not isinstance(pos_weight, Tensor):
            raise TypeError(
                f"BCEWithLogitsLoss: pos_weight must be a Tensor or None, got "
                f"{type(pos_weight).__name__}"
            )
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return remat.binary_cross_entropy_with_logits(
            input, target, weight=self.weight, reduction=self.reduction,
            pos_weight=self.pos_weight,
        )
