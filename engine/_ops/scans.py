"""Ops along one dim that look at neighbours: the running extremes ``cummax``/``cummin``,
``logcumsumexp`` and the finite difference ``diff`` (``cumsum``/``cumprod`` are in
``reduction.py``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

import engine._ops._core as _core
import engine._ops.pointwise as pointwise
import engine._ops.shape as _shape

from ._core import multi_result, result, wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["cummax", "cummin", "diff", "logcumsumexp"]


def _type_name(dt) -> str:
    return _core._dtype.scalar_type_name(np.dtype(dt))


cummax_result = namedtuple("cummax", ["values", "indices"])


cummin_result = namedtuple("cummin", ["values", "indices"])


def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):  # noqa: A002
    """The ``n``-th forward difference along ``dim`` (after joining ``prepend``/``append``):
    ``narrow`` and ``sub`` (``logical_xor`` for bool), as torch builds it."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    x = _shape.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = _shape.narrow(x, d, 1, length - 1), _shape.narrow(x, d, 0, length - 1)
        x = pointwise.logical_xor(hi, lo) if x._data.dtype == np.bool_ else pointwise.sub(hi, lo)
    return x


def _cum_extreme(a, dim, ufunc, name, result_type):
    x = a._data
    if x.ndim == 0:
        v, i = multi_result([x.copy(), np.zeros((), np.int64)], name, (a,),
                            lambda g, *_: (np.array(g, copy=True),), differentiable=(True, False))
        return result_type(v, i)
    d = wrap_dim(dim, x.ndim)
    values = ufunc.accumulate(x, axis=d) if x.dtype != np.bool_ else ufunc.accumulate(x, axis=d).astype(bool)
    pos = np.arange(x.shape[d]).reshape((-1,) + (1,) * (x.ndim - 1 - d))
    # the index moves to every element that is >= (<=) the running extreme, or NaN
    hit = x == values
    if x.dtype.kind == "f":
        hit |= np.isnan(x)
    idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=d).astype(np.int64)
    shape = x.shape

    def backward(g, *_):
        gx = np.zeros(shape, g.dtype)
        key = list(np.indices(shape, sparse=True))
        key[d] = idx
        np.add.at(gx, tuple(key), g)
        return (gx,)

    v, i = multi_result([values, idx], name, (a,), backward, differentiable=(True, False))
    return result_type(v, i)


def cummax(input, dim: int):  # noqa: A002
    """Running maximum along ``dim`` and where it was taken (the latest of equal values)."""
    return _cum_extreme(input, dim, np.maximum, "CummaxBackward0", cummax_result)


def cummin(input, dim: int):  # noqa: A002
    """Running minimum along ``dim`` and where it was taken (the latest of equal values)."""
    return _cum_extreme(input, dim, np.minimum, "CumminBackward0", cummin_result)


def logcumsumexp(input, dim: int):  # noqa: A002
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably (``logaddexp.accumulate``)."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_type_name(x.dtype)}'")
    if x.ndim == 0:
        return result(x.copy(), "LogcumsumexpBackward0", (input,), lambda g: (g,))
    d = wrap_dim(dim, x.ndim)
    out = np.logaddexp.accumulate(x, axis=d)

    def backward(g):
        # grad_j = sum_{i >= j} g_i exp(x_j - out_i), summed in log space for the positive and
        # the negative g_i apart (as torch does), so no exp over- or underflows
        with np.errstate(divide="ignore"):
            log_g = np.log(np.abs(g))

        def part(sign):
            terms = np.where(np.sign(g) == sign, log_g - out, -np.inf)
            acc = np.flip(np.logaddexp.accumulate(np.flip(terms, d), axis=d), d)
            return np.exp(x + acc)

        return ((part(1) - part(-1)).astype(x.dtype),)

    return result(out, "LogcumsumexpBackward0", (input,), backward, saved=(input,))
