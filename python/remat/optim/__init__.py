"""Optimizers in the style of ``torch.optim`` (``remat.optim.SGD``, ``Adam``, ``AdamW``,
``RMSprop``, ``Adagrad``, ``Adadelta``, ``Adamax``, ``NAdam``, ``RAdam``) and learning-rate
schedules (:mod:`remat.optim.lr_scheduler`)."""

from __future__ import annotations

from . import lr_scheduler
from .adaptive import Adadelta, Adamax, NAdam, RAdam
from .optimizers import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
    "RAdam", "lr_scheduler",
]
