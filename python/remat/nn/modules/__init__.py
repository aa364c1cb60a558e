"""The modules of ``remat.nn``, one file per family as in ``torch.nn.modules``
(``remat.nn.modules.linear.Linear``, ``remat.nn.modules.activation.ReLU``, ...), so that
scripts naming those paths (pickle allow-lists, type checks) port unchanged. ``remat.nn``
re-exports every class."""

from .activation import (
    GELU,
    LeakyReLU,
    LogSoftmax,
    MultiheadAttention,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import GroupNorm, LayerNorm, RMSNorm
from .padding import (
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "Module", "Linear", "Identity", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU",
    "Softmax", "LogSoftmax", "Softplus", "MultiheadAttention", "Dropout", "LayerNorm", "RMSNorm",
    "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Flatten", "Sequential",
    "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Embedding", "Conv1d",
    "Conv2d", "Conv3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "ZeroPad1d",
    "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss",
    "BCELoss", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Upsample",
    "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "BCEWithLogitsLoss", "Transformer", "TransformerEncoder", "TransformerDecoder",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "RNNBase", "RNN", "LSTM", "GRU",
    "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
]
