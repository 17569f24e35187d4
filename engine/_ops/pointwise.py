"""Element-wise ops with broadcasting: arithmetic, unary maths, clamp/maximum/where/masked_fill.

Each op computes on arrays and hands ``result`` a backward closure. Broadcasting is undone in
backward by ``unbroadcast``. Names and edges follow torch: ``a + 2`` is ``AddBackward0`` with a
``(None, 0)`` edge for the scalar; ``2 - a`` is ``RsubBackward1`` with one edge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine._ops._core as _core

from .. import _dtype
from ._core import (
    broadcast_error,
    float_like,
    result,
    scalar_or_array,
    sum_to,
    unbroadcast,
)

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["abs", "absolute", "add", "arctan2", "atan2", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
           "ceil", "clamp", "clamp_max", "clamp_min", "clip", "cos", "div", "divide", "eq", "exp", "expm1", "fix",
           "floor", "floor_divide", "fmod", "frac", "ge", "greater", "greater_equal", "gt", "le", "less",
           "less_equal", "log", "log1p", "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "lt",
           "masked_fill", "maximum", "minimum", "mul", "multiply", "ne", "neg", "negative", "not_equal", "pow",
           "reciprocal", "relu", "remainder", "round", "rsqrt", "sigmoid", "sign", "sin", "sqrt", "square", "sub",
           "subtract", "tan", "tanh", "true_divide", "trunc"]

_SUB_BOOL_BOTH = ("Subtraction, the `-` operator, with two bool tensors is not supported. "
                  "Use the `^` or `logical_xor()` operator instead.")
_SUB_BOOL_ONE = ("Subtraction, the `-` operator, with a bool tensor is not supported. "
                 "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. "
             "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _not_implemented(kernel: str, dt) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{_dtype.scalar_type_name(dt)}\'')


def _binary_operands(a, b, check=None) -> tuple[np.ndarray, Any, Any, np.dtype]:
    """``(x, y, tensor_b_or_None, result_dtype)`` with ``x`` and ``y`` already in the result
    dtype (torch computes in it: ``uint8 % int32_0d`` is a uint8 op). Floating tensors with a
    same-dtype tensor or a Python int/float return at once: the hot path of every step."""
    x = a._data
    da = x.dtype
    if isinstance(b, _core.Tensor):
        y = b._data
        if y.dtype == da and da.kind == "f":
            return x, y, b, da
        tb = b
    else:
        cls = b.__class__
        if (cls is float or cls is int) and da.kind == "f":
            return x, b, None, da
        y, tb = scalar_or_array(b, x)
    if check is not None:
        check(x, y)
    dt = _dtype.result_type(x, y)
    return x if x.dtype == dt else x.astype(dt), _cast(y, dt), tb, dt


def _cast(y, dt: np.dtype):
    """An operand in dtype ``dt``; Python integers wrap into integer dtypes as torch's do."""
    if isinstance(y, np.ndarray):
        return y if y.dtype == dt else y.astype(dt)
    if dt.kind in "iu":
        return np.array(y).astype(dt)
    return y


def _is_bool(v) -> bool:
    return v.dtype.kind == "b" if isinstance(v, np.ndarray) else isinstance(v, bool)


def _check_sub(x, y) -> None:
    bx, by = _is_bool(x), _is_bool(y)
    if bx and by:
        raise RuntimeError(_SUB_BOOL_BOTH)
    if bx or by:
        raise RuntimeError(_SUB_BOOL_ONE)


def _check_alpha(alpha, dt: np.dtype):
    """``alpha`` checked and converted to ``dt`` as torch does."""
    if alpha.__class__ is bool and dt.kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if dt.kind != "f" and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return _dtype.checked_scalar(alpha, dt)


def _compute(fn, x, y, dtype):
    try:
        out = fn(x, y)
    except ValueError:
        raise broadcast_error(np.shape(x), np.shape(y)) from None
    if out.dtype != dtype:
        out = out.astype(dtype)
    return out


def _check_int_divisor(y, dt: np.dtype) -> None:
    """Integer division, remainder and fmod by zero raise in torch."""
    if dt.kind in "iu" and not np.all(y):
        raise RuntimeError("ZeroDivisionError")


def _tensor_only(name: str, a, b) -> None:
    """torch's argument parser error for ops without a Python-number overload."""
    for pos, arg, v in ((1, "input", a), (2, "other", b)):
        if not isinstance(v, _core.Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, "
                            f"not {type(v).__name__}")


# --- arithmetic -------------------------------------------------------------------------------

# Complex results (engine.fft): a product's gradient uses the conjugate of the other factor
# (torch's conjugate-Wirtinger convention) and a real operand gets the real part of its gradient
# (torch's ``handle_r_to_c``). Real results, the hot path, pay one ``is not None`` test for it.

_C64, _C128 = np.dtype(np.complex64), np.dtype(np.complex128)  # NumPy's results carry these very objects


def _real_inputs(a, tb) -> tuple[bool, bool]:
    """Which operands of a complex result were real."""
    return a._data.dtype.kind != "c", tb is not None and tb._data.dtype.kind != "c"


def _to_inputs(ga, gb, real: tuple[bool, bool]) -> tuple:
    """The gradients of a complex result's operands, real parts for the real ones."""
    return (ga.real if real[0] and ga is not None else ga, gb.real if real[1] and gb is not None else gb)


def add(input, other, alpha: float = 1):
    """``input + alpha * other``."""
    x, y, tb, dt = _binary_operands(input, other)
    if alpha != 1 or alpha is True:
        y = y * _check_alpha(alpha, dt)
    out = _compute(np.add, x, y, dt)
    sa, sb = x.shape, (y.shape if y.__class__ is np.ndarray else np.shape(y))  # plain tuples: cheap
    ra, rb = input._requires_grad, tb is not None and tb._requires_grad
    cx = _real_inputs(input, tb) if dt is _C64 or dt is _C128 else None

    def backward(g):
        grads = (unbroadcast(g, sa) if ra else None,
                 (unbroadcast(g * alpha if alpha != 1 else g, sb)) if rb else None)
        return grads if cx is None else _to_inputs(*grads, cx)

    def tensor_backward(g):
        return (sum_to(g, sa) if ra else None, sum_to(mul(g, alpha) if alpha != 1 else g, sb) if rb else None)

    return result(out, "AddBackward0", (input, tb), backward, tensor_backward=tensor_backward)


def sub(input, other, alpha: float = 1):
    """``input - alpha * other``."""
    x, y, tb, dt = _binary_operands(input, other, _check_sub)
    if alpha != 1 or alpha is True:
        y = y * _check_alpha(alpha, dt)
    out = _compute(np.subtract, x, y, dt)
    sa, sb = x.shape, (y.shape if y.__class__ is np.ndarray else np.shape(y))  # plain tuples: cheap
    ra, rb = input._requires_grad, tb is not None and tb._requires_grad
    cx = _real_inputs(input, tb) if dt is _C64 or dt is _C128 else None

    def backward(g):
        grads = (unbroadcast(g, sa) if ra else None, unbroadcast(-alpha * g, sb) if rb else None)
        return grads if cx is None else _to_inputs(*grads, cx)

    def tensor_backward(g):
        return (sum_to(g, sa) if ra else None, sum_to(mul(g, -alpha), sb) if rb else None)

    return result(out, "SubBackward0", (input, tb), backward, tensor_backward=tensor_backward)


def rsub(a, b, alpha: float = 1):
    """``b - alpha * a`` for a Python number ``b`` (``2 - a``)."""
    if isinstance(b, _core.Tensor):
        return sub(b, a, alpha)
    x, y, _, dt = _binary_operands(a, b, _check_sub)
    if alpha != 1 or alpha is True:
        x = x * _check_alpha(alpha, dt)
    out = _compute(np.subtract, y, x, dt)
    return result(out, "RsubBackward1", (a,), lambda g: (-alpha * g,), tensor_backward=lambda g: (mul(g, -alpha),))


def mul(input, other):
    x, y, tb, dt = _binary_operands(input, other)
    out = _compute(np.multiply, x, y, dt)
    ra, rb = input._requires_grad, tb is not None and tb._requires_grad
    cx = _real_inputs(input, tb) if dt is _C64 or dt is _C128 else None

    def backward(g):
        if cx is not None:
            return _to_inputs(unbroadcast(g * np.conj(y), x.shape) if ra else None,
                              unbroadcast(g * np.conj(x), np.shape(y)) if rb else None, cx)
        return (unbroadcast(g * y, x.shape) if ra else None,
                unbroadcast(g * x, np.shape(y)) if rb else None)

    def tensor_backward(g):
        return (sum_to(mul(g, tb if tb is not None else y), x.shape) if ra else None,
                sum_to(mul(g, input), np.shape(y)) if rb else None)

    saved = [t for t, needed in ((tb, ra), (input, rb)) if needed and t is not None]
    return result(out, "MulBackward0", (input, tb), backward, saved=saved, tensor_backward=tensor_backward)


def div(input, other, rounding_mode: str | None = None):
    x, y, tb, dt = _binary_operands(input, other)
    if rounding_mode is not None:
        return _rounded_div(input, tb, x, y, dt, rounding_mode)
    if dt.kind not in "fc":
        x, y, dt = _float_operands(input, other)
    out = _compute(np.true_divide, x, y, dt)
    ra, rb = input._requires_grad, tb is not None and tb._requires_grad
    cx = _real_inputs(input, tb) if dt is _C64 or dt is _C128 else None

    def backward(g):
        if cx is not None:
            return _to_inputs(unbroadcast(g / np.conj(y), x.shape) if ra else None,
                              unbroadcast(-g * np.conj(x / (y * y)), np.shape(y)) if rb else None, cx)
        return (unbroadcast(g / y, x.shape) if ra else None,
                unbroadcast(-g * x / (y * y), np.shape(y)) if rb else None)

    def tensor_backward(g):
        return (sum_to(div(g, tb if tb is not None else y), x.shape) if ra else None,
                sum_to(div(mul(neg(g), input), mul(tb, tb)), np.shape(y)) if rb else None)

    saved = [t for t, needed in ((tb, True), (input, rb)) if needed and t is not None]
    return result(out, "DivBackward0", (input, tb), backward, saved=saved, tensor_backward=tensor_backward)


def _float_operands(a, b):
    """Integer operands of ops that compute in the default float (true division, atan2): each is
    cast straight to it, not through the integer result dtype (``int8 / uint8_0d`` doesn't wrap)."""
    dt = _core.default_float()
    y = scalar_or_array(b, None)[0]
    return a._data.astype(dt), (y.astype(dt) if isinstance(y, np.ndarray) else y), dt


def _trunc_divide(x, y):
    if x.dtype.kind == "f":
        return np.trunc(np.true_divide(x, y))
    q = np.floor_divide(x, y)
    # floor and trunc differ where the division is inexact and the signs differ
    return q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0))).astype(q.dtype)


def _rounded_div(a, tb, x, y, dt, mode: str):
    fn = {"floor": np.floor_divide, "trunc": _trunc_divide}
    if mode not in fn:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    if dt.kind == "b":
        raise _not_implemented(f"div_{mode}_cpu", dt)
    _check_int_divisor(y, dt)
    out = _compute(fn[mode], x, y, dt)
    if tb is None:
        return result(out, "DivBackward2", (a, None), lambda g: (np.zeros_like(g), None))
    sb = tb.shape
    return result(out, "DivBackward2", (a, tb), lambda g: (np.zeros_like(g), np.zeros(sb, g.dtype)))


def rdiv(a, b):
    """``b / a`` for a Python number ``b``: torch records ``reciprocal(a) * b``."""
    if isinstance(b, _core.Tensor):
        return div(b, a)
    return mul(reciprocal(a), b)


def _reversed(a, b):
    """Operands of ``b (op) a`` for a Python number ``b``: ``(y, x, dt)`` in the result dtype."""
    x, y, _, dt = _binary_operands(a, b)
    return y, x, dt


def floor_divide(input, other):
    """Floor division (not differentiable); integers by zero raise as in torch."""
    if not isinstance(input, _core.Tensor):
        x, y, dt = _reversed(other, input)
    else:
        x, y, _, dt = _binary_operands(input, other)
    if dt.kind == "b":
        raise _not_implemented("div_floor_cpu", dt)
    _check_int_divisor(y, dt)
    return _core.Tensor._wrap(_compute(np.floor_divide, x, y, dt))


def _modulo(kernel: str, fn, quotient, names: tuple[str, str]):
    """``remainder`` (sign of the divisor) and ``fmod`` (sign of the dividend)."""

    def op(input, other):
        if not isinstance(input, _core.Tensor):
            if kernel == "fmod_cpu":
                raise TypeError("fmod() received an invalid combination of arguments - got "
                                f"({type(input).__name__}, {type(other).__name__})")
            x, y, dt = _reversed(other, input)
            if dt.kind == "b":
                raise _not_implemented(kernel, dt)
            _check_int_divisor(y, dt)
            return _core.Tensor._wrap(_compute(fn, x, y, dt))
        x, y, tb, dt = _binary_operands(input, other)
        if dt.kind == "b":
            raise _not_implemented(kernel, dt)
        _check_int_divisor(y, dt)
        out = _compute(fn, x, y, dt)
        if tb is None:
            return result(out, names[0], (input,), lambda g: (g,))
        ra, rb = input._requires_grad, tb._requires_grad

        def backward(g):
            return (unbroadcast(g, x.shape) if ra else None,
                    unbroadcast(-g * quotient(x, y), np.shape(y)) if rb else None)

        return result(out, names[1], (input, tb), backward, saved=(input, tb) if rb else ())

    return op


remainder = _modulo("remainder_cpu", np.remainder, np.floor_divide,
                    ("RemainderBackward0", "RemainderBackward1"))
fmod = _modulo("fmod_cpu", np.fmod, _trunc_divide, ("FmodBackward0", "FmodBackward1"))
remainder.__name__, fmod.__name__ = "remainder", "fmod"


def _int_power(x: np.ndarray, y) -> np.ndarray:
    """Integer ``x ** y`` with torch's answer for negative exponents (1, -1 or 0)."""
    neg = np.less(y, 0)
    if not neg.any():
        return np.power(x, y)
    out = np.power(x, np.where(neg, 0, y).astype(np.result_type(y)))
    special = np.where(x == 1, 1, np.where(x == -1, np.where(np.bitwise_and(y, 1), -1, 1), 0))
    return np.where(neg, special, out).astype(out.dtype)


def pow(input, exponent):  # noqa: A001 - torch's name
    """``input ** exponent``: ``PowBackward0`` for a number exponent, ``PowBackward1`` for a tensor."""
    if not isinstance(input, _core.Tensor):
        return rpow(exponent, input)
    x = input._data
    if not isinstance(exponent, _core.Tensor):
        e = exponent.item() if isinstance(exponent, np.generic) else exponent
        dt = _dtype.result_type(x, e)
        if dt.kind == "b":  # bool ** True / False
            out = x.copy() if e else np.ones_like(x)
        elif dt.kind in "iu":
            if e < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            _dtype.checked_scalar(e, dt)
            out = np.power(x.astype(dt, copy=False), np.int64(e)).astype(dt, copy=False)
        else:
            out = _compute(np.power, x if x.dtype == dt else x.astype(dt), e, dt)

        def backward(g):
            if e == 0:
                return (np.zeros_like(g),)
            if x.dtype.kind == "c":
                return (g * np.conj(e * np.power(x, e - 1)),)
            return (g * e * np.power(x, e - 1),)

        def tensor_backward(g):
            return (mul(g, 0) if e == 0 else mul(mul(g, e), pow(input, e - 1)),)

        return result(out, "PowBackward0", (input,), backward, saved=(input,), tensor_backward=tensor_backward)
    x, y, _, dt = _binary_operands(input, exponent)
    _core.no_complex("pow with a tensor exponent", x)
    if dt.kind == "b":
        raise _not_implemented("pow", dt)
    if dt.kind in "iu":
        try:
            out = _int_power(*np.broadcast_arrays(x, y))
        except ValueError:
            raise broadcast_error(x.shape, y.shape) from None
    else:
        out = _compute(np.power, x, y, dt)
    ra, rb = input._requires_grad, exponent._requires_grad

    def backward_t(g):
        ga = unbroadcast(g * y * np.power(x, y - 1), x.shape) if ra else None
        gb = None
        if rb:
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = g * out * np.where(x == 0, 0, np.log(np.where(x == 0, 1, x)))
            gb = unbroadcast(gb.astype(y.dtype, copy=False), y.shape)
        return ga, gb

    def tensor_backward(g):
        ga = sum_to(mul(mul(g, exponent), pow(input, sub(exponent, 1))), x.shape) if ra else None
        gb = None
        if rb:
            zero = _core.Tensor._wrap(x == 0)
            gb = sum_to(mul(mul(g, pow(input, exponent)), where(zero, 0, log(where(zero, 1, input)))), y.shape)
        return ga, gb

    return result(out, "PowBackward1", (input, exponent), backward_t, saved=(input, exponent), save_output=rb,
                  tensor_backward=tensor_backward)


def rpow(a, b):
    """``b ** a`` for a Python number ``b``: ``PowBackward2``."""
    if isinstance(b, np.generic):
        b = b.item()
    x, base, _, dt = _binary_operands(a, b)
    if dt.kind == "b":
        raise _not_implemented("pow", dt)
    if dt.kind in "iu":
        out = _int_power(np.broadcast_to(base, x.shape), x)
    else:
        out = _compute(np.power, base, x, dt)
    logb = np.log(b) if b > 0 else np.nan

    def backward(g):
        return (g * out * np.asarray(logb, out.dtype),)

    return result(out, "PowBackward2", (a,), backward, save_output=True,
                  tensor_backward=lambda g: (mul(mul(g, _core.saved_output(out)), float(logb)),))


def neg(a):
    x = a._data
    if x.dtype.kind == "b":
        raise RuntimeError(_NEG_BOOL)
    return result(np.negative(x), "NegBackward0", (a,), lambda g: (-g,), tensor_backward=lambda g: (neg(g),))


def atan2(input, other):
    """``atan2(input, other)``, the angle of (other, input); integers give the default float."""
    _tensor_only("atan2", input, other)
    x, y, _, dt = _binary_operands(input, other)
    if dt.kind != "f":
        x, y, dt = _float_operands(input, other)
    out = _compute(np.arctan2, x, y, dt)
    ra, rb = input._requires_grad, other._requires_grad

    def backward(g):
        d = g / (x * x + y * y)
        return (unbroadcast(d * y, x.shape) if ra else None,
                unbroadcast(-d * x, y.shape) if rb else None)

    return result(out, "Atan2Backward0", (input, other), backward, saved=(input, other))


# --- unary maths ------------------------------------------------------------------------------

def _unary(name: str, fn, grad_of, save: str, tgrad_of=None):
    """Build a unary op. ``grad_of(x, out)`` is d out / d x; ``save`` says which value the
    backward reads ('input' or 'output'), as torch saves it. ``tgrad_of(t)`` is the same
    derivative from engine ops on that value as a Tensor: the input, or the output with the
    op's own node as ``grad_fn`` (double backward)."""

    def op(a):
        x = float_like(a._data)
        out = fn(x)

        def backward(g):
            return (g * grad_of(x, out),)

        tbw = None
        if tgrad_of is not None:
            def tbw(g):
                return (mul(g, tgrad_of(_core.saved_output(out) if save == "output" else a)),)

        if save == "output":
            return result(out, name, (a,), backward, save_output=True, tensor_backward=tbw)
        return result(out, name, (a,), backward, saved=(a,), tensor_backward=tbw)

    op.__name__ = name.removesuffix("Backward0").lower()
    return op


def _sigmoid(x):
    # 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: exp of a negative number only, so no
    # overflow warning for large |x| even outside the engine's silenced entries (the LSTM cell).
    # Six NumPy calls: on the small arrays of a training step their fixed cost is what counts.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


exp = _unary("ExpBackward0", np.exp, lambda x, y: y, "output", lambda y: y)
log = _unary("LogBackward0", np.log, lambda x, y: 1 / x, "input", lambda a: reciprocal(a))
log2 = _unary("Log2Backward0", np.log2, lambda x, y: 1 / (x * np.log(2).astype(x.dtype)), "input",
              lambda a: reciprocal(mul(a, float(np.log(2)))))
log1p = _unary("Log1PBackward0", np.log1p, lambda x, y: 1 / (1 + x), "input", lambda a: reciprocal(add(a, 1)))
expm1 = _unary("Expm1Backward0", np.expm1, lambda x, y: y + 1, "output", lambda y: add(y, 1))
sqrt = _unary("SqrtBackward0", np.sqrt, lambda x, y: 0.5 / y, "output", lambda y: mul(reciprocal(y), 0.5))
rsqrt = _unary("RsqrtBackward0", lambda x: 1 / np.sqrt(x), lambda x, y: -0.5 * y * y * y, "output",
               lambda y: mul(pow(y, 3), -0.5))
sin = _unary("SinBackward0", np.sin, lambda x, y: np.cos(x), "input", lambda a: cos(a))
cos = _unary("CosBackward0", np.cos, lambda x, y: -np.sin(x), "input", lambda a: neg(sin(a)))
tan = _unary("TanBackward0", np.tan, lambda x, y: 1 + y * y, "output", lambda y: add(pow(y, 2), 1))
tanh = _unary("TanhBackward0", np.tanh, lambda x, y: 1 - y * y, "output", lambda y: rsub(pow(y, 2), 1))
sigmoid = _unary("SigmoidBackward0", _sigmoid, lambda x, y: y * (1 - y), "output", lambda y: mul(y, rsub(y, 1)))
reciprocal = _unary("ReciprocalBackward0", lambda x: 1 / x, lambda x, y: -y * y, "output",
                    lambda y: neg(pow(y, 2)))


def relu(a):
    x = a._data
    out = np.maximum(x, 0)
    if out.dtype != x.dtype:  # only bool changes dtype here
        raise RuntimeError("Boolean inputs not supported for relu")
    if out.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    return result(out, "ReluBackward0", (a,), lambda g: (g * (out > 0),), save_output=True,
                  tensor_backward=lambda g: (_core.masked(g, out > 0, _core.saved_output(out),
                                                          "ThresholdBackwardBackward0"),))


def abs(a):  # noqa: A001
    x = a._data
    if x.dtype.kind == "b":
        raise _not_implemented("abs_cpu", x.dtype)
    return result(np.abs(x), "AbsBackward0", (a,), lambda g: (g * np.sign(x),), saved=(a,),
                  tensor_backward=lambda g: (_core.masked(g, np.sign(x), a, "MulBackward0"),))


def square(a):
    return pow(a, 2)


def _zero_grad_unary(name: str, fn, kernel: str | None):
    """Sign and rounding: zero gradient; integers come back unchanged (a copy) and bool
    raises torch's NotImplementedError naming ``kernel`` (``None``: bool is copied too)."""

    def op(a):
        x = a._data
        k = x.dtype.kind
        if k == "f":
            out = fn(x)
        elif k == "b" and kernel is not None:
            raise _not_implemented(kernel, x.dtype)
        elif k == "c":  # rounding and sign of complex numbers: torch refuses them too
            raise NotImplementedError(f"{name.removesuffix('Backward0').lower()} is not supported for complex "
                                      "tensors")
        else:
            out = fn(x) if kernel is None and k != "b" else x.copy()
        return result(out, name, (a,), lambda g: (np.zeros_like(g),))

    op.__name__ = name.removesuffix("Backward0").lower()
    return op


sign = _zero_grad_unary("SignBackward0", np.sign, None)
floor = _zero_grad_unary("FloorBackward0", np.floor, "floor_vml_cpu")
ceil = _zero_grad_unary("CeilBackward0", np.ceil, "ceil_vml_cpu")
round = _zero_grad_unary("RoundBackward0", np.round, "round_vml_cpu")  # noqa: A001
trunc = _zero_grad_unary("TruncBackward0", np.trunc, "trunc_vml_cpu")


def frac(a):
    """``a - trunc(a)`` (floating tensors only); gradient passes through."""
    x = a._data
    if x.dtype.kind != "f":
        raise _not_implemented("frac_cpu", x.dtype)
    return result(x - np.trunc(x), "FracBackward0", (a,), lambda g: (g,))


# --- clamp, maximum, where, masked_fill --------------------------------------------------------

def clamp(a, min=None, max=None):  # noqa: A002 - torch's names
    """Clamp into [min, max]; numbers give ``ClampBackward1``, tensors ``ClampBackward0``.
    The result dtype promotes over the input and both bounds, as torch's does."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    x = a._data
    tmin = min if isinstance(min, _core.Tensor) else None
    tmax = max if isinstance(max, _core.Tensor) else None
    lo = tmin._data if tmin is not None else min.item() if isinstance(min, np.generic) else min
    hi = tmax._data if tmax is not None else max.item() if isinstance(max, np.generic) else max
    tensor_bounds = tmin is not None or tmax is not None
    xo = x
    if not (x.dtype.kind == "f" and not tensor_bounds):
        if x.dtype.kind == "c":
            raise NotImplementedError("clamp is not supported for complex types")
        dt = _dtype.result_type_many(x, lo, hi)
        if dt.kind == "b" and not (tensor_bounds and (lo is None or hi is None)):
            # bool clamps only against a single tensor bound
            kernel = ("clamp_cpu" if tensor_bounds else "clamp_min_scalar_cpu" if hi is None
                      else "clamp_max_scalar_cpu" if lo is None else "clamp_scalar_cpu")
            raise _not_implemented(kernel, dt)
        x = x if x.dtype == dt else x.astype(dt)
        lo = None if lo is None else _cast(lo, dt) if tmin is not None else _dtype.checked_scalar(lo, dt)
        hi = None if hi is None else _cast(hi, dt) if tmax is not None else _dtype.checked_scalar(hi, dt)
    else:
        dt = x.dtype
        if lo is not None:
            _dtype.checked_scalar(lo, dt)
        if hi is not None:
            _dtype.checked_scalar(hi, dt)
    out = x
    try:
        if lo is not None:
            out = np.maximum(out, lo)
        if hi is not None:
            out = np.minimum(out, hi)
    except ValueError:
        raise broadcast_error(x.shape, np.shape(lo if hi is None else hi)) from None
    out = out.astype(dt, copy=False)
    x = xo if xo.dtype == dt else x

    def backward(g):
        keep = np.ones(x.shape, dtype=bool)
        if lo is not None:
            keep &= x >= lo
        if hi is not None:
            keep &= x <= hi
        if not tensor_bounds:
            return (g * keep,)
        # A tensor bound receives the gradient where it was the value taken. Where min > max the
        # result is max whatever x is (max applied last), so max gets it there and min never does.
        took_lo = x < lo if lo is not None else None
        took_hi = x > hi if hi is not None else None
        if lo is not None and hi is not None:
            took_lo = took_lo & (lo < hi)
            took_hi = took_hi | (hi < lo)
        g_lo = unbroadcast(g * took_lo, np.shape(lo)) if tmin is not None else None
        g_hi = unbroadcast(g * took_hi, np.shape(hi)) if tmax is not None else None
        return (g * keep, g_lo, g_hi)

    if tensor_bounds:
        return result(out, "ClampBackward0", (a, tmin, tmax), backward, saved=(a,))
    return result(out, "ClampBackward1", (a,), backward, saved=(a,))


def clamp_min(a, min):  # noqa: A002
    return clamp(a, min=min)


def clamp_max(a, max):  # noqa: A002
    return clamp(a, max=max)


def _extremum(name: str, pick):
    opname = name.removesuffix("Backward0").lower()

    def op(input, other):
        _tensor_only(opname, input, other)
        x, y, _, dt = _binary_operands(input, other)
        out = _compute(pick, x, y, dt)

        def backward(g):
            # Ties split the gradient evenly, as torch does.
            a_wins = (pick(x, y) == x).astype(g.dtype) - 0.5 * (x == y)
            return unbroadcast(g * a_wins, x.shape), unbroadcast(g * (1 - a_wins), y.shape)

        return result(out, name, (input, other), backward, saved=(input, other))

    op.__name__ = opname
    return op


maximum = _extremum("MaximumBackward0", np.maximum)
minimum = _extremum("MinimumBackward0", np.minimum)


def where(condition, a, b):
    """``a`` where ``condition`` else ``b``; either may be a number."""
    cond = condition._data if isinstance(condition, _core.Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtype.scalar_type_name(cond.dtype)}")
    ta = a if isinstance(a, _core.Tensor) else None
    tb = b if isinstance(b, _core.Tensor) else None
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

    def tensor_backward(g):
        return (sum_to(where(cond, g, 0), np.shape(x)) if ta is not None else None,
                sum_to(where(cond, 0, g), np.shape(y)) if tb is not None else None)

    return result(out, "WhereBackward0", (ta, tb), backward, tensor_backward=tensor_backward)


def masked_fill(a, mask, value):
    """Copy of ``a`` with ``value`` where ``mask`` is True (``value`` a number or 0-dim tensor)."""
    m = mask._data if isinstance(mask, _core.Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype.scalar_type_name(m.dtype).lower()}")
    x = a._data
    tv = value if isinstance(value, _core.Tensor) else None
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

    def tensor_backward(g):
        ga = masked_fill(g, m, 0)
        return (ga,) if tv is None else (ga, where(m, g, 0).sum())

    if tv is not None:
        return result(out, "MaskedFillBackward1", (a, tv), backward, tensor_backward=tensor_backward)
    return result(out, "MaskedFillBackward0", (a,), backward, tensor_backward=tensor_backward)


# --- comparisons (no grad) ---------------------------------------------------------------------

def _compare(fn):
    def op(input, other):
        x, y, _, _ = _binary_operands(input, other)  # torch compares in the promoted dtype
        return _core.Tensor._wrap(_compute(fn, x, y, np.dtype(np.bool_)))

    return op


eq, ne, lt, le, gt, ge = (_compare(f) for f in (np.equal, np.not_equal, np.less, np.less_equal,
                                               np.greater, np.greater_equal))
for _op, _name in zip((eq, ne, lt, le, gt, ge), ("eq", "ne", "lt", "le", "gt", "ge")):
    _op.__name__ = _name


def _logical(name: str, fn):
    def op(input, other):
        _tensor_only(name, input, other)
        return _core.Tensor._wrap(_compute(fn, input._data, other._data, np.dtype(np.bool_)))

    op.__name__ = name
    return op


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


def logical_not(a):
    return _core.Tensor._wrap(np.logical_not(a._data))


def _bitwise(name: str, fn):
    kernel = f"{name}_cpu"

    def op(input, other):
        if not isinstance(input, _core.Tensor):  # 1 & t
            y, x, dt = _reversed(other, input)
        else:
            x, y, _, dt = _binary_operands(input, other)
        if dt.kind == "f":
            raise _not_implemented(kernel, dt)
        return _core.Tensor._wrap(_compute(fn, x, y, dt))

    op.__name__ = name
    return op


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)


def bitwise_not(a):
    x = a._data
    if x.dtype.kind == "f":
        raise _not_implemented("bitwise_not_cpu", x.dtype)
    return _core.Tensor._wrap(np.invert(x))


def invert(a):
    """``~a``: like ``bitwise_not`` but a TypeError for floating tensors, as torch's operator."""
    if a._data.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(a)


# torch's other names for the ops above
clip = clamp
multiply = mul
subtract = sub
divide = div
true_divide = div
negative = neg
fix = trunc
absolute = abs
arctan2 = atan2
greater = gt
greater_equal = ge
less = lt
less_equal = le
not_equal = ne
