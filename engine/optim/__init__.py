"""``engine.optim``: optimizers and learning-rate schedulers with torch.optim's API and numbers.

- ``optimizer.py``     the Optimizer base: param groups, state_dict, zero_grad, step hooks
- ``_functional.py``   the update rules on NumPy arrays (torch's order of operations)
- ``sgd.py`` ``adam.py`` ``adamw.py`` ``rmsprop.py``   the optimizers
- ``lr_scheduler.py``  StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, OneCycleLR,
  CyclicLR, ReduceLROnPlateau, SequentialLR, ...
"""

from . import lr_scheduler, optimizer
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler", "optimizer"]
