"""engine.nn.functional: stateless neural-network ops (torch.nn.functional's names)."""

from __future__ import annotations

from .._ops import linalg as _linalg
from .._ops import shape as _shape
from .._ops.pointwise import relu
from .._ops.reduction import log_softmax, softmax
from .._ops.shape import pad

__all__ = ["linear", "log_softmax", "pad", "relu", "softmax"]


def linear(input, weight, bias=None):  # noqa: A002
    """``input @ weight.T + bias`` recorded as torch records it: ``AddmmBackward0`` for 2-D input
    with a bias, ``ViewBackward0(AddmmBackward0)`` for other ranks (the rows folded into one
    matrix); without a bias ``mm`` (2-D) or ``matmul``."""
    w_t = _shape.t(weight)
    if bias is None:
        return _linalg.mm(input, w_t) if input.ndim == 2 else _linalg.matmul(input, w_t)
    if input.ndim == 2:
        return _linalg.addmm(bias, input, w_t)
    rows = _shape.reshape(input, -1, input.shape[-1]) if input.ndim else input
    out = _linalg.addmm(bias, rows, w_t)
    return _shape.view(out, *input.shape[:-1], weight.shape[0])
