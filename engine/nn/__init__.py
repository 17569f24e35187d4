"""engine.nn: modules, layers, losses, initialisation (torch.nn's names and behaviour).

- ``modules/module.py``  nn.Module: registration, hooks, state_dict, repr
- ``modules/*.py``       layers, containers, losses
- ``functional.py``      the stateless ops the layers call
- ``parameter.py``       Parameter and Buffer
"""

from . import functional, init, utils
from .modules import (
    Flatten,
    Identity,
    Linear,
    Module,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
    Unflatten,
)
from .modules.activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .modules.attention import MultiheadAttention, NonDynamicallyQuantizableLinear
from .modules.batchnorm import BatchNorm1d, BatchNorm2d
from .modules.conv import Conv1d, Conv2d
from .modules.dropout import Dropout, Dropout2d
from .modules.loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .modules.normalization import LayerNorm
from .modules.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .modules.sparse import Embedding
from .modules.transformer import TransformerEncoder, TransformerEncoderLayer
from .parameter import Buffer, Parameter
