"""Tolerance comparisons: isclose and allclose, with torch's defaults and checks."""

from __future__ import annotations

import builtins

import numpy as np

import engine._ops._core as _core

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["allclose", "isclose"]


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (bool); equal infinities are close, NaNs
    only with ``equal_nan=True``. Both tensors must have the same dtype, as in torch."""
    other = _core.to_tensor(other)
    x, y = input._data, other._data
    if x.dtype != y.dtype:
        raise RuntimeError(f"{_core._dtype.scalar_type_name(x.dtype)} did not match "
                           f"{_core._dtype.scalar_type_name(y.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise _core.broadcast_error(x.shape, y.shape) from None
    if x.dtype.kind in "biu":
        x, y = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = (x == y) | (np.isfinite(x) & np.isfinite(y) & (np.abs(x - y) <= atol + rtol * np.abs(y)))
    if equal_nan:
        close = close | (np.isnan(x) & np.isnan(y))
    return _core.Tensor._wrap(np.broadcast_to(close, shape).copy())


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return builtins.bool(isclose(a, b, rtol, atol, equal_nan)._data.all())
