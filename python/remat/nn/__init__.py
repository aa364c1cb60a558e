"""Neural-network building blocks in the layout of ``torch.nn``: modules (``remat.nn.Linear``,
...), :mod:`remat.nn.functional` (the functions under PyTorch's names), :mod:`remat.nn.init`
and :mod:`remat.nn.utils`. Everything computes in the engine; this package only arranges
parameters and calls."""

from __future__ import annotations

from . import functional
from .modules import *  # noqa: F403
from .modules import __all__ as _module_names

__all__ = [*_module_names, "functional"]
