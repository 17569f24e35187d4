"""``engine.optim``: optimizers and learning-rate schedulers with torch.optim's API and numbers.

- ``optimizer.py``     the Optimizer base: param groups, state_dict, zero_grad, step hooks
- ``_functional.py``   the update rules on NumPy arrays (torch's order of operations)
- ``sgd.py`` ``adam.py`` ``adamw.py`` ``rmsprop.py`` ``adadelta.py`` ``adagrad.py`` ``adamax.py``
  ``nadam.py`` ``radam.py`` ``rprop.py`` ``asgd.py`` ``lbfgs.py`` ``adafactor.py`` ``muon.py``   the optimizers
- ``lr_scheduler.py``  StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, OneCycleLR,
  CyclicLR, ReduceLROnPlateau, SequentialLR, ...
"""

import engine.optim.lr_scheduler as lr_scheduler
import engine.optim.optimizer as optimizer
import engine.optim.swa_utils as swa_utils

from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = [
    "ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "Muon",
    "NAdam", "Optimizer", "RAdam", "RMSprop",
    "Rprop", "lr_scheduler", "optimizer", "swa_utils",
]
