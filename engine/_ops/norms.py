"""Norms of tensors as whole ops: ``dist`` (the p-norm of a difference) and ``renorm``
(sub-tensors rescaled to a maximum norm). ``linalg.vector_norm`` and friends live in ``linalg.py``.
"""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core

from ._core import result, unbroadcast, wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["dist", "renorm"]


def renorm(input, p, dim: int, maxnorm):  # noqa: A002
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` is scaled down to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``)."""
    x = input._data
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = wrap_dim(dim, x.ndim)
    axes = tuple(i for i in range(x.ndim) if i != d)
    ax = np.abs(x)
    if p == float("inf"):
        norm = ax.max(axis=axes, keepdims=True) if axes else ax
    else:
        norm = (ax ** p).sum(axis=axes, keepdims=True) ** (1.0 / p) if axes else ax
    over = norm > maxnorm
    factor = np.where(over, maxnorm / (norm + 1e-7), 1.0).astype(x.dtype)

    def backward(g):
        # factor depends on the norm where it bites: d factor / d norm = -maxnorm / (norm+eps)^2
        gx = g * factor
        dot = (g * x).sum(axis=axes, keepdims=True) if axes else g * x
        dfac = np.where(over, -maxnorm / (norm + 1e-7) ** 2, 0.0)
        safe = np.where(norm > 0, norm, 1.0)
        if p == float("inf"):
            at = (ax == norm)
            dnorm = np.sign(x) * at / np.maximum(at.sum(axis=axes, keepdims=True) if axes else at, 1)
        else:
            dnorm = np.sign(x) * ax ** (p - 1) / safe ** (p - 1)
        return ((gx + dot * dfac * dnorm).astype(x.dtype),)

    return result(x * factor, "RenormBackward0", (input,), backward, saved=(input,))


def dist(input, other, p=2):  # noqa: A002
    """The ``p``-norm of ``input - other`` (broadcast)."""
    x, y = input._data, other._data
    dt = _core._dtype.result_type(x, y)
    d = (x - y).astype(dt, copy=False)
    a = np.abs(d)
    p = float(p)
    if p == 0:
        out = np.asarray((a != 0).sum(), dt)
    elif np.isinf(p):
        out = np.asarray(a.max() if p > 0 else a.min(), dt) if a.size else np.zeros((), dt)
    else:
        out = np.asarray((a ** p).sum() ** (1.0 / p), dt)

    def backward(g):
        if p == 0 or out == 0:
            gd = np.zeros_like(d)
        elif np.isinf(p):
            hit = a == out
            gd = np.sign(d) * hit / hit.sum()
        else:
            gd = np.sign(d) * a ** (p - 1) / out ** (p - 1)
        gd = (g * gd).astype(dt, copy=False)
        return unbroadcast(gd, x.shape), unbroadcast(-gd, y.shape)

    return result(out, "DistBackward0", (input, other), backward, saved=(input, other))
