"""Pointwise ops on a number's sign, exponent and NaNs, beside ``pointwise.py``'s arithmetic:
``sgn``, ``positive``, ``heaviside``, ``copysign``, ``ldexp``, ``frexp``, ``nextafter``,
``float_power``, ``isposinf``/``isneginf``/``isreal``, the NaN-ignoring ``fmax``/``fmin`` and
``logaddexp2``.

Each differentiable op hands ``result`` its own backward, as in ``pointwise``.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

import engine._ops._core as _core
import engine._ops.pointwise as pointwise

from ._core import result, unbroadcast

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["copysign", "float_power", "fmax", "fmin", "frexp", "heaviside", "isneginf", "isposinf", "isreal", "ldexp",
           "logaddexp2", "nextafter", "positive", "sgn"]


def isposinf(input):  # noqa: A002
    return _core.Tensor._wrap(np.isposinf(input._data))


def isneginf(input):  # noqa: A002
    return _core.Tensor._wrap(np.isneginf(input._data))


def _nan_extremum(name: str, pick, better):
    def op(input, other):  # noqa: A002
        x, y, dt = input._data, other._data, None
        dt = _core._dtype.result_type(x, y)
        out = pick(x.astype(dt, copy=False), y.astype(dt, copy=False))

        def backward(g):
            # torch: the gradient goes to ``input`` where it wins (ties included) or other is NaN
            take_x = better(x, y) | np.isnan(y)
            return (unbroadcast(np.where(take_x, g, 0), x.shape), unbroadcast(np.where(take_x, 0, g), y.shape))

        return result(out, name, (input, other), backward, saved=(input, other))

    op.__name__ = name.removesuffix("Backward0").lower()
    return op


fmax = _nan_extremum("FmaxBackward0", np.fmax, np.greater_equal)


fmin = _nan_extremum("FminBackward0", np.fmin, np.less_equal)


def logaddexp2(input, other):  # noqa: A002
    """``log2(2**input + 2**other)`` computed stably."""
    x, y = input._data, other._data
    out = np.logaddexp2(x, y)

    def backward(g):
        return (unbroadcast(g / (1 + np.exp2(y - x)), x.shape), unbroadcast(g / (1 + np.exp2(x - y)), y.shape))

    return result(out, "Logaddexp2Backward0", (input, other), backward, saved=(input, other))


def float_power(input, exponent):  # noqa: A002
    """``pow`` in double precision (the result is float64, whatever the inputs)."""
    f64 = _core._dtype._by_name("float64")
    base = input.to(f64) if isinstance(input, _core.Tensor) else input
    exp = exponent.to(f64) if isinstance(exponent, _core.Tensor) else float(exponent)
    if not isinstance(base, _core.Tensor):
        return pointwise.rpow(exp, float(base))
    return pointwise.pow(base, exp)


frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


sgn = pointwise._zero_grad_unary("SgnBackward0", np.sign, None)


def positive(a):
    """``+a``: ``a`` itself (torch returns the same tensor); bool tensors raise as torch's do."""
    if a._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return a


def heaviside(input, values):  # noqa: A002 - torch's names
    """0 where ``input < 0``, ``values`` where it is 0, 1 where it is positive. Both must be
    tensors of one dtype; like torch, the result's node raises when a gradient reaches it."""
    if not isinstance(values, _core.Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    x, v = input._data, values._data
    if x.dtype != v.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if x.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    try:
        out = np.where(x == 0, v, (x > 0)).astype(x.dtype, copy=False)
    except ValueError:
        raise _core.broadcast_error(x.shape, v.shape) from None

    def backward(g):
        raise RuntimeError("derivative for aten::heaviside is not implemented")

    return result(np.asarray(out), "NotImplemented", (input, values), backward)


def _float_binary(a, b) -> tuple[np.ndarray, Any, Any, np.dtype]:
    """Operands of a float-valued binary op: integers promote to the default float."""
    x, y, tb, dt = pointwise._binary_operands(a, b)
    if dt.kind != "f":
        dt = _core.default_float()
        x = x.astype(dt)
        y = y.astype(dt) if isinstance(y, np.ndarray) else y
    return x, y, tb, dt


def copysign(input, other):  # noqa: A002
    """``|input|`` with the sign of ``other`` (a tensor or number); integers give floats.
    Gradient: ``result / input`` where ``input != 0`` (else 0) for ``input``, zero for ``other``."""
    x, y, tb, dt = _float_binary(input, other)
    out = pointwise._compute(np.copysign, x, y, dt)
    x_shape = x.shape

    def backward(g):
        ratio = np.divide(out, x, out=np.zeros_like(out), where=x != 0)
        gx = unbroadcast(g * ratio, x_shape)
        return (gx, None if tb is None else np.zeros(tb._data.shape, g.dtype))

    return result(out, "CopysignBackward0" if tb is not None else "CopysignBackward1",
                  (input, tb) if tb is not None else (input,), backward, saved=(input,), save_output=True)


def ldexp(input, other):  # noqa: A002
    """``input * 2 ** other``; integer inputs give the default float."""
    pointwise._tensor_only("ldexp", input, other)
    x, y, tb, dt = _float_binary(input, other)
    scale = np.exp2(y).astype(dt, copy=False)
    out = pointwise._compute(np.multiply, x, scale, dt)
    ra, rb = input._requires_grad, other._requires_grad

    def backward(g):
        return (unbroadcast(g * scale, input._data.shape) if ra else None,
                unbroadcast(g * out * np.log(2).astype(dt), other._data.shape) if rb else None)

    return result(out, "LdexpBackward0", (input, other), backward, saved=(input, other))


def frexp(input):  # noqa: A002
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent``, ``|mantissa|`` in
    [0.5, 1); exponent is int32, as torch's. Floating tensors only; no gradient."""
    x = input._data
    if x.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(x)
    return frexp_result(_core.Tensor._wrap(np.asarray(m)), _core.Tensor._wrap(np.asarray(e, np.int32)))


def nextafter(input, other):  # noqa: A002
    """The next representable float after ``input`` towards ``other`` (same float dtype).
    Gradient passes through to ``input`` unchanged; ``other`` gets zeros (torch's)."""
    pointwise._tensor_only("nextafter", input, other)
    x, y, tb, dt = pointwise._binary_operands(input, other)
    if dt.kind != "f":
        raise pointwise._not_implemented("nextafter_cpu", dt)
    out = pointwise._compute(np.nextafter, x, y, dt)
    xs, ys = x.shape, np.shape(y)

    def backward(g):
        return unbroadcast(g, xs), np.zeros(ys, g.dtype)

    return result(out, "NextafterBackward0", (input, tb), backward)


def isreal(input):  # noqa: A002
    """True where the value has no imaginary part (everywhere for real dtypes)."""
    x = input._data
    return _core.Tensor._wrap(x.imag == 0 if x.dtype.kind == "c" else np.ones(x.shape, bool))
