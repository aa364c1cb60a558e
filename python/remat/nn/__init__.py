"""Neural-network building blocks in the layout of ``torch.nn``: modules (``remat.nn.Linear``,
...), :mod:`remat.nn.functional` (the functions under PyTorch's names), :mod:`remat.nn.init`
and :mod:`remat.nn.utils`. Everything computes in the engine; this package only arranges
parameters and calls."""

from __future__ import annotations

from . import functional, init, utils
from .activation import LeakyReLU, LogSoftmax, SiLU, Softmax, Softplus
from .attention import MultiheadAttention
from .conv import Conv1d, Conv2d, Conv3d
from .containers import ModuleDict, ParameterDict, ParameterList
from .modules import (
    Dropout,
    Flatten,
    GELU,
    Identity,
    LayerNorm,
    Linear,
    Module,
    ModuleList,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, RMSNorm
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    ConstantPad1d,
    ConstantPad2d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from .sparse import Embedding

__all__ = [
    "Parameter", "Module", "Linear", "ReLU", "GELU", "Tanh", "Sigmoid", "Dropout", "LayerNorm",
    "Identity", "Flatten", "MSELoss", "CrossEntropyLoss", "Sequential", "ModuleList",
    "SiLU", "LeakyReLU", "Softmax", "LogSoftmax", "Softplus", "ModuleDict", "ParameterList",
    "ParameterDict", "Embedding", "functional", "init", "utils", "L1Loss", "NLLLoss",
    "BCEWithLogitsLoss", "Conv1d", "Conv2d", "Conv3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d",
    "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "RMSNorm", "GroupNorm", "MultiheadAttention", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
]
