"""All nn layers; each file adds its own import lines here."""

from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .module import Module
