"""Activation modules with ``torch.nn``'s names and constructor arguments: thin wrappers that
call the engine's function of the same name."""

from __future__ import annotations

import remat

from .. import _validate
from .._remat import Tensor
from .modules import Module

__all__ = ["SiLU", "LeakyReLU", "Softmax", "LogSoftmax", "Softplus"]


class SiLU(Module):
    """``x * sigmoid(x)`` elementwise."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return remat.silu(x)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = _validate.real("LeakyReLU", "negative_slope", negative_slope)
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return remat.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = float(beta)
        self.threshold = float(threshold)

    def forward(self, x: Tensor) -> Tensor:
        return remat.softplus(x, beta=self.beta, threshold=self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """Softmax along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return remat.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return remat.log_softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
