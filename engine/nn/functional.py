"""engine.nn.functional: stateless neural-network ops (torch.nn.functional's names)."""

from __future__ import annotations

from .._ops.shape import pad
from .._ops.reduction import log_softmax, softmax
from .._ops.pointwise import relu

__all__ = ["log_softmax", "pad", "relu", "softmax"]
