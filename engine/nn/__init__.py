"""engine.nn: modules, layers, losses, initialisation (torch.nn's names and behaviour).

- ``modules/module.py``  nn.Module: registration, hooks, state_dict, repr
- ``modules/*.py``       layers, containers, losses
- ``functional.py``      the stateless ops the layers call
- ``parameter.py``       Parameter and Buffer
- ``attention/``         sdpa_kernel and SDPBackend: which scaled_dot_product_attention kernels may run
"""

import engine.nn.attention as attention
import engine.nn.functional as functional
import engine.nn.init as init
import engine.nn.parallel as parallel
import engine.nn.utils as utils

from .modules import *  # noqa: F403 - every layer: nn.modules' __all__ is the one export list
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
