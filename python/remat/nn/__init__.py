"""Neural-network building blocks in the layout of ``torch.nn``: modules (``remat.nn.Linear``,
...), :mod:`remat.nn.functional` (the functions under PyTorch's names), :mod:`remat.nn.init`
and :mod:`remat.nn.utils`. Everything computes in the engine; this package only arranges
parameters and calls."""

from __future__ import annotations

from . import functional, init, utils
from .modules import (
    GELU,
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    BCELoss,
    BCEWithLogitsLoss,
    ConstantPad1d,
    ConstantPad2d,
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    GroupNorm,
    GRU,
    GRUCell,
    Identity,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    LSTM,
    LSTMCell,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    MultiheadAttention,
    NLLLoss,
    ParameterDict,
    ParameterList,
    ReflectionPad1d,
    ReflectionPad2d,
    ReLU,
    ReplicationPad1d,
    ReplicationPad2d,
    RMSNorm,
    RNN,
    RNNBase,
    RNNCell,
    RNNCellBase,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    ZeroPad1d,
    ZeroPad2d,
)
from .parameter import Parameter

from . import parallel
from .parallel import DataParallel

__all__ = [
    "DataParallel", "parallel",
    "Parameter", "Module", "Linear", "ReLU", "GELU", "Tanh", "Sigmoid", "Dropout", "LayerNorm",
    "Identity", "Flatten", "MSELoss", "CrossEntropyLoss", "Sequential", "ModuleList",
    "SiLU", "LeakyReLU", "Softmax", "LogSoftmax", "Softplus", "ModuleDict", "ParameterList",
    "ParameterDict", "Embedding", "functional", "init", "utils", "L1Loss", "NLLLoss",
    "BCELoss", "BCEWithLogitsLoss", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Upsample", "UpsamplingNearest2d",
    "UpsamplingBilinear2d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d",
    "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
    "RMSNorm", "GroupNorm", "MultiheadAttention", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]

# einops' layers need einops; without it remat.nn imports all the same and says what is
# missing when one is asked for.
_EINOPS_LAYERS = ("Rearrange", "Reduce", "EinMix")
try:
    from .modules.einops_layers import EinMix, Rearrange, Reduce  # noqa: E402, F401
except ImportError as _err:
    if not (_err.name or "").startswith("einops"):
        raise
else:
    __all__ += ["Rearrange", "Reduce", "EinMix"]


def __getattr__(name: str) -> object:
    if name in _EINOPS_LAYERS:
        raise AttributeError(
            f"remat.nn.{name} needs einops, which is not installed (pip install einops)"
        )
    raise AttributeError(f"module 'remat.nn' has no attribute {name!r}")
