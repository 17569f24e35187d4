"""Numerical integration along a dim: ``trapezoid`` (alias ``trapz``) and
``cumulative_trapezoid``, composed of ``narrow``/``add``/``sum`` as torch composes them.
"""

from __future__ import annotations

import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction
import engine._ops.shape as _shape

from ._core import wrap_dim
from .scans import diff

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["cumulative_trapezoid", "trapezoid", "trapz"]


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoidal rule along ``dim``: spacing ``dx`` (default 1) or sample points ``x``."""
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    if n == 0:
        return reduction.sum(y, d)
    pair = pointwise.add(_shape.narrow(y, d, 1, n - 1), _shape.narrow(y, d, 0, n - 1))
    if x is None:
        return pointwise.mul(reduction.sum(pair, d), (1.0 if dx is None else dx) / 2.0)
    steps = diff(x, dim=-1 if x.ndim == 1 else d)
    if x.ndim == 1:
        steps = _shape.reshape(steps, (-1,) + (1,) * (y.ndim - 1 - d))
    return pointwise.div(reduction.sum(pointwise.mul(steps, pair), d), 2.0)


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running trapezoidal integral along ``dim`` (one element shorter than ``y``)."""
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    pair = pointwise.add(_shape.narrow(y, d, 1, n - 1), _shape.narrow(y, d, 0, n - 1))
    if x is None:
        return reduction.cumsum(pointwise.mul(pair, (1.0 if dx is None else dx) / 2.0), d)
    steps = diff(x, dim=-1 if x.ndim == 1 else d)
    if x.ndim == 1:
        steps = _shape.reshape(steps, (-1,) + (1,) * (y.ndim - 1 - d))
    return reduction.cumsum(pointwise.div(pointwise.mul(steps, pair), 2.0), d)
