"""Element-wise ops with broadcasting: arithmetic, unary maths, clamp/maximum/where/masked_fill.

Each op computes on arrays and hands ``result`` a backward closure. Broadcasting is undone in
backward by ``unbroadcast``. Names and edges follow torch: ``a + 2`` is ``AddBackward0`` with a
``(None, 0)`` edge for the scalar; ``2 - a`` is ``RsubBackward1`` with one edge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype
from . import _core
from ._core import (
    broadcast_error,
    float_like,
    result,
    scalar_or_array,
    unbroadcast,
)


def _binary_operands(a, b) -> tuple[np.ndarray, Any, Any, np.dtype]:
    x = a._data
    y, tb = scalar_or_array(b, x)
    return x, y, tb, _dtype.result_type(x, y)


def _compute(fn, x, y, dtype):
    try:
        out = fn(x, y)
    except ValueError:
        raise broadcast_error(np.shape(x), np.shape(y)) from None
    if out.dtype != dtype:
        out = out.astype(dtype)
    return out


# --- arithmetic -------------------------------------------------------------------------------

def add(a, b, alpha: float = 1):
    """``a + alpha * b``."""
    x, y, tb, dt = _binary_operands(a, b)
    if alpha != 1:
        y = y * alpha
    out = _compute(np.add, x, y, dt)
    sa, sb = a.shape, np.shape(y)
    ra, rb = a._requires_grad, tb is not None and tb._requires_grad

    def backward(g):
        return (unbroadcast(g, sa) if ra else None,
                (unbroadcast(g * alpha if alpha != 1 else g, sb)) if rb else None)

    return result(out, "AddBackward0", (a, tb), backward)


def sub(a, b, alpha: float = 1):
    """``a - alpha * b``."""
    x, y, tb, dt = _binary_operands(a, b)
    if alpha != 1:
        y = y * alpha
    out = _compute(np.subtract, x, y, dt)
    sa, sb = a.shape, np.shape(y)
    ra, rb = a._requires_grad, tb is not None and tb._requires_grad

    def backward(g):
        return (unbroadcast(g, sa) if ra else None, unbroadcast(-alpha * g, sb) if rb else None)

    return result(out, "SubBackward0", (a, tb), backward)


def rsub(a, b, alpha: float = 1):
    """``b - alpha * a`` for a Python number ``b`` (``2 - a``)."""
    if isinstance(b, _core._Tensor):
        return sub(b, a, alpha)
    x = a._data
    dt = _dtype.result_type(x, b)
    out = _compute(np.subtract, b, x * alpha if alpha != 1 else x, dt)
    return result(out, "RsubBackward1", (a,), lambda g: (-alpha * g,))


def mul(a, b):
    x, y, tb, dt = _binary_operands(a, b)
    out = _compute(np.multiply, x, y, dt)
    ra, rb = a._requires_grad, tb is not None and tb._requires_grad

    def backward(g):
        return (unbroadcast(g * y, x.shape) if ra else None,
                unbroadcast(g * x, np.shape(y)) if rb else None)

    saved = [t for t, needed in ((tb, ra), (a, rb)) if needed and t is not None]
    return result(out, "MulBackward0", (a, tb), backward, saved=saved)


def div(a, b, rounding_mode: str | None = None):
    x, y, tb, dt = _binary_operands(a, b)
    if rounding_mode is not None:
        return _rounded_div(a, x, y, dt, rounding_mode)
    if dt.kind != "f":
        dt = _core.default_float()
    out = _compute(np.true_divide, x, y, dt)
    ra, rb = a._requires_grad, tb is not None and tb._requires_grad

    def backward(g):
        return (unbroadcast(g / y, x.shape) if ra else None,
                unbroadcast(-g * x / (y * y), np.shape(y)) if rb else None)

    saved = [t for t, needed in ((tb, True), (a, rb)) if needed and t is not None]
    return result(out, "DivBackward0", (a, tb), backward, saved=saved)


def _rounded_div(a, x, y, dt, mode: str):
    fn = {"floor": np.floor_divide, "trunc": lambda p, q: np.trunc(np.true_divide(p, q))}
    if mode not in fn:
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    out = _compute(fn[mode], x, y, dt)
    return result(out, "DivBackward1", (a,), lambda g: (np.zeros_like(g),))


def rdiv(a, b):
    """``b / a`` for a Python number ``b``: torch records ``reciprocal(a) * b``."""
    if isinstance(b, _core._Tensor):
        return div(b, a)
    return mul(reciprocal(a), b)


def floor_divide(a, b):
    x, y, tb, dt = _binary_operands(a, b)
    return _core._Tensor._wrap(_compute(np.floor_divide, x, y, dt))


def remainder(a, b):
    x, y, tb, dt = _binary_operands(a, b)
    out = _compute(np.remainder, x, y, dt)
    ra, rb = a._requires_grad, tb is not None and tb._requires_grad

    def backward(g):
        return (unbroadcast(g, x.shape) if ra else None,
                unbroadcast(-g * np.floor_divide(x, y), np.shape(y)) if rb else None)

    return result(out, "RemainderBackward0", (a, tb), backward)


def pow(a, b):  # noqa: A001 - torch's name
    """``a ** b``: ``PowBackward0`` for a number exponent, ``PowBackward1`` for a tensor."""
    x = a._data
    if not isinstance(b, _core._Tensor):
        e = b.item() if isinstance(b, np.generic) else b
        dt = _dtype.result_type(x, e)
        out = _compute(np.power, x, e, dt)

        def backward(g):
            if e == 0:
                return (np.zeros_like(g),)
            return (g * e * np.power(x, e - 1),)

        return result(out, "PowBackward0", (a,), backward, saved=(a,))
    y = b._data
    dt = _dtype.result_type(x, y)
    out = _compute(np.power, x, y, dt)
    ra, rb = a._requires_grad, b._requires_grad

    def backward_t(g):
        ga = unbroadcast(g * y * np.power(x, y - 1), x.shape) if ra else None
        gb = None
        if rb:
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = g * out * np.where(x == 0, 0, np.log(np.where(x == 0, 1, x)))
            gb = unbroadcast(gb.astype(y.dtype, copy=False), y.shape)
        return ga, gb

    return result(out, "PowBackward1", (a, b), backward_t, saved=(a, b), save_output=rb)


def rpow(a, b):
    """``b ** a`` for a Python number ``b``: ``PowBackward2``."""
    x = a._data
    dt = _dtype.result_type(x, b)
    if dt.kind != "f" and isinstance(b, float):
        dt = _core.default_float()
    out = _compute(np.power, b, x, dt)
    logb = np.log(b) if b > 0 else np.nan

    def backward(g):
        return (g * out * np.asarray(logb, out.dtype),)

    return result(out, "PowBackward2", (a,), backward, save_output=True)


def neg(a):
    return result(np.negative(a._data), "NegBackward0", (a,), lambda g: (-g,))


# --- unary maths ------------------------------------------------------------------------------

def _unary(name: str, fn, grad_of, save: str):
    """Build a unary op. ``grad_of(x, out)`` is d out / d x; ``save`` says which value the
    backward reads ('input' or 'output'), as torch saves it."""

    def op(a):
        x = float_like(a._data)
        out = fn(x)

        def backward(g):
            return (g * grad_of(x, out),)

        if save == "output":
            return result(out, name, (a,), backward, save_output=True)
        return result(out, name, (a,), backward, saved=(a,))

    op.__name__ = name.removesuffix("Backward0").lower()
    return op


def _sigmoid(x):
    # exp of a negative number only: no overflow warnings for large |x|.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


exp = _unary("ExpBackward0", np.exp, lambda x, y: y, "output")
log = _unary("LogBackward0", np.log, lambda x, y: 1 / x, "input")
log2 = _unary("Log2Backward0", np.log2, lambda x, y: 1 / (x * np.log(2).astype(x.dtype)), "input")
log1p = _unary("Log1PBackward0", np.log1p, lambda x, y: 1 / (1 + x), "input")
expm1 = _unary("Expm1Backward0", np.expm1, lambda x, y: y + 1, "output")
sqrt = _unary("SqrtBackward0", np.sqrt, lambda x, y: 0.5 / y, "output")
rsqrt = _unary("RsqrtBackward0", lambda x: 1 / np.sqrt(x), lambda x, y: -0.5 * y * y * y, "output")
sin = _unary("SinBackward0", np.sin, lambda x, y: np.cos(x), "input")
cos = _unary("CosBackward0", np.cos, lambda x, y: -np.sin(x), "input")
tan = _unary("TanBackward0", np.tan, lambda x, y: 1 + y * y, "output")
tanh = _unary("TanhBackward0", np.tanh, lambda x, y: 1 - y * y, "output")
sigmoid = _unary("SigmoidBackward0", _sigmoid, lambda x, y: y * (1 - y), "output")
reciprocal = _unary("ReciprocalBackward0", lambda x: 1 / x, lambda x, y: -y * y, "output")


def relu(a):
    x = a._data
    out = np.maximum(x, 0).astype(x.dtype, copy=False)
    return result(out, "ReluBackward0", (a,), lambda g: (g * (out > 0),), save_output=True)


def abs(a):  # noqa: A001
    x = a._data
    return result(np.abs(x), "AbsBackward0", (a,), lambda g: (g * np.sign(x),), saved=(a,))


def square(a):
    return pow(a, 2)


def _zero_grad_unary(name: str, fn):
    def op(a):
        x = a._data
        return result(fn(x), name, (a,), lambda g: (np.zeros_like(g),))

    op.__name__ = name.removesuffix("Backward0").lower()
    return op


sign = _zero_grad_unary("SignBackward0", np.sign)
floor = _zero_grad_unary("FloorBackward0", np.floor)
ceil = _zero_grad_unary("CeilBackward0", np.ceil)
round = _zero_grad_unary("RoundBackward0", np.round)  # noqa: A001
trunc = _zero_grad_unary("TruncBackward0", np.trunc)


# --- clamp, maximum, where, masked_fill --------------------------------------------------------

def clamp(a, min=None, max=None):  # noqa: A002 - torch's names
    """Clamp into [min, max]; numbers give ``ClampBackward1``, tensors ``ClampBackward0``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    x = a._data
    lo = min._data if isinstance(min, _core._Tensor) else min
    hi = max._data if isinstance(max, _core._Tensor) else max
    out = x
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    out = out.astype(x.dtype, copy=False)

    def backward(g):
        keep = np.ones(x.shape, dtype=bool)
        if lo is not None:
            keep &= x >= lo
        if hi is not None:
            keep &= x <= hi
        if not tensor_bounds:
            return (g * keep,)
        # A tensor bound receives the gradient where it was the value taken.
        g_lo = unbroadcast(g * (x < lo), np.shape(lo)) if tmin is not None else None
        g_hi = unbroadcast(g * (x > hi) * (~(x < lo) if lo is not None else 1), np.shape(hi)) \
            if tmax is not None else None
        return (g * keep, g_lo, g_hi)

    tmin = min if isinstance(min, _core._Tensor) else None
    tmax = max if isinstance(max, _core._Tensor) else None
    tensor_bounds = tmin is not None or tmax is not None
    if tensor_bounds:
        return result(out, "ClampBackward0", (a, tmin, tmax), backward, saved=(a,))
    return result(out, "ClampBackward1", (a,), backward, saved=(a,))


def clamp_min(a, min):  # noqa: A002
    return clamp(a, min=min)


def clamp_max(a, max):  # noqa: A002
    return clamp(a, max=max)


def _extremum(name: str, pick):
    def op(a, b):
        b = _core.to_tensor(b)
        x, y = a._data, b._data
        try:
            out = pick(x, y)
        except ValueError:
            raise broadcast_error(x.shape, y.shape) from None
        out = out.astype(_dtype.result_type(x, y), copy=False)

        def backward(g):
            # Ties split the gradient evenly, as torch does.
            a_wins = (pick(x, y) == x).astype(g.dtype) - 0.5 * (x == y)
            return unbroadcast(g * a_wins, x.shape), unbroadcast(g * (1 - a_wins), y.shape)

        return result(out, name, (a, b), backward, saved=(a, b))

    return op


maximum = _extremum("MaximumBackward0", np.maximum)
minimum = _extremum("MinimumBackward0", np.minimum)


def where(condition, a, b):
    """``a`` where ``condition`` else ``b``; either may be a number."""
    cond = condition._data if isinstance(condition, _core._Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtype.scalar_type_name(cond.dtype)}")
    ta = a if isinstance(a, _core._Tensor) else None
    tb = b if isinstance(b, _core._Tensor) else None
    x = a._data if ta is not None else a
    y = b._data if tb is not None else b
    if ta is not None and tb is not None:
        dt = _dtype.result_type(x, y)
    elif ta is not None:
        dt = _dtype.result_type(x, y)
    elif tb is not None:
        dt = _dtype.result_type(y, x)
    else:
        dt = np.result_type(x, y)
    try:
        out = np.where(cond, x, y).astype(dt, copy=False)
    except ValueError:
        raise broadcast_error(cond.shape, np.broadcast_shapes(np.shape(x), np.shape(y))) from None

    def backward(g):
        return (unbroadcast(np.where(cond, g, 0), np.shape(x)) if ta is not None else None,
                unbroadcast(np.where(cond, 0, g), np.shape(y)) if tb is not None else None)

    return result(out, "WhereBackward0", (ta, tb), backward)


def masked_fill(a, mask, value):
    """Copy of ``a`` with ``value`` where ``mask`` is True (``value`` a number or 0-dim tensor)."""
    m = mask._data if isinstance(mask, _core._Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype.scalar_type_name(m.dtype).lower()}")
    x = a._data
    tv = value if isinstance(value, _core._Tensor) else None
    if tv is not None and tv.ndim != 0:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{tv.ndim} dimension(s)."
        )
    v = tv._data if tv is not None else value
    try:
        out = np.where(m, np.asarray(v, dtype=x.dtype), x)
    except ValueError:
        raise broadcast_error(x.shape, m.shape) from None
    if out.shape != x.shape:
        raise RuntimeError(
            f"The expanded size of the mask {list(m.shape)} does not match the tensor {list(x.shape)}"
        )

    def backward(g):
        ga = np.where(m, 0, g).astype(g.dtype, copy=False)
        if tv is None:
            return (ga,)
        return (ga, np.asarray(np.where(m, g, 0).sum(), dtype=g.dtype))

    if tv is not None:
        return result(out, "MaskedFillBackward1", (a, tv), backward)
    return result(out, "MaskedFillBackward0", (a,), backward)


# --- comparisons (no grad) ---------------------------------------------------------------------

def _compare(fn):
    def op(a, b):
        x = a._data
        y = b._data if isinstance(b, _core._Tensor) else b
        return _core._Tensor._wrap(_compute(fn, x, y, np.dtype(np.bool_)))

    return op


eq, ne, lt, le, gt, ge = (_compare(f) for f in (np.equal, np.not_equal, np.less, np.less_equal,
                                               np.greater, np.greater_equal))
logical_and, logical_or, logical_xor = (_compare(f) for f in (np.logical_and, np.logical_or,
                                                             np.logical_xor))
