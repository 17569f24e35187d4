"""engine.nn: modules, layers, losses, initialisation (torch.nn's names and behaviour).

- ``modules/module.py``  nn.Module: registration, hooks, state_dict, repr
- ``modules/*.py``       layers, containers, losses
- ``functional.py``      the stateless ops the layers call
- ``parameter.py``       Parameter and Buffer
"""

from . import functional, utils
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
from .parameter import Buffer, Parameter
