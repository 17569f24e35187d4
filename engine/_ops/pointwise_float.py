"""Ops real code reaches for that torch has beside the core ones: sign-like and bit-level
pointwise maths (sgn, copysign, heaviside, gcd/lcm, ldexp, frexp, nextafter), vdot,
unique_consecutive, nanmedian, the h/v/dsplit family, split_with_sizes, sum_to_size,
fill_diagonal_ and the random in-place fills (random_, exponential_, ...).

Each differentiable op hands ``result`` its own backward, as in ``pointwise``.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import engine._ops._core as _core
import engine._ops.linalg as linalg
import engine._ops.pointwise as pointwise
import engine._ops.shape as shape

from .. import _dtype
from ._core import multi_result, result, unbroadcast, wrap_dim
from .fft import conj
from .reduction import _empty_dim_error, _evenly, _select_backward, median
from .reduction import sum as _sum

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])
nanmedian_result = namedtuple("nanmedian", ["values", "indices"])


def _type_name(dt: np.dtype) -> str:
    return _dtype.scalar_type_name(dt)


# --- pointwise ------------------------------------------------------------------------------------

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


def _integer_binary(name: str, fn: Callable) -> Callable:
    def op(input, other):  # noqa: A002
        pointwise._tensor_only(name, input, other)
        x, y, _, dt = pointwise._binary_operands(input, other)
        if dt.kind not in "iu":
            raise pointwise._not_implemented(f"{name}_cpu", dt)
        return _core.Tensor._wrap(pointwise._compute(fn, x, y, dt))

    op.__name__ = name
    op.__doc__ = f"Element-wise {name} of two integer tensors (torch's {name}; no gradient)."
    return op


gcd = _integer_binary("gcd", np.gcd)
lcm = _integer_binary("lcm", np.lcm)


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


def vdot(input, other):  # noqa: A002
    """The dot product of two 1-D tensors of one dtype (conjugating ``input``, a no-op for
    the real tensors the engine's matmul supports)."""
    pointwise._tensor_only("vdot", input, other)
    if input.ndim == 1 and other.ndim == 1 and input._data.dtype != other._data.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_type_name(input._data.dtype)} and {_type_name(other._data.dtype)}")
    if input.ndim != 1 or other.ndim != 1 or input.shape != other.shape:
        linalg.dot(input, other)  # raises torch's message for the shapes
    x, y = input._data, other._data
    return result(np.asarray(x @ y), "VdotBackward0", (input, other), lambda g: (g * y, g * x),
                  saved=(input, other), tensor_backward=lambda g: (pointwise.mul(g, other), pointwise.mul(g, input)))


# --- reductions and sets --------------------------------------------------------------------------

def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
                       dim: int | None = None):
    """Drop all but the first of each run of equal elements (or of equal slices along ``dim``),
    keeping order; the inverse map and run lengths are int64, as torch's."""
    x = input._data
    if dim is None:
        flat = x.reshape(-1)
        change = flat[1:] != flat[:-1]
        vals_of = flat
    else:
        d = wrap_dim(dim, x.ndim)
        moved = np.moveaxis(x, d, 0).reshape(x.shape[d], -1)
        change = (moved[1:] != moved[:-1]).any(axis=1)
        vals_of = None
    starts = np.flatnonzero(np.concatenate([[True], change])) if (x.size or dim is not None and x.shape[d]) \
        else np.zeros(0, np.int64)
    n = flat.size if dim is None else x.shape[d]
    counts = np.diff(np.append(starts, n)).astype(np.int64)
    inverse = (np.cumsum(np.concatenate([[True], change])) - 1).astype(np.int64) if n else np.zeros(0, np.int64)
    if dim is None:
        vals, inverse = vals_of[starts], inverse.reshape(x.shape)
    else:
        vals = np.take(x, starts, axis=d)
    outs = [_core.Tensor._wrap(np.ascontiguousarray(vals))]
    outs += [_core.Tensor._wrap(arr) for arr, want in ((inverse, return_inverse), (counts, return_counts)) if want]
    return outs[0] if len(outs) == 1 else tuple(outs)


def nanmedian(input, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """The lower median of the non-NaN values (NaN only where all are NaN), or
    ``(values, indices)`` along ``dim``. An all-NaN row's index is its first NaN (torch's
    index there is unspecified)."""
    x = input._data
    if x.dtype.kind == "b":
        raise NotImplementedError("\"median_cpu\" not implemented for 'Bool'")
    if x.dtype.kind != "f":
        return median(input, dim, keepdim) if dim is not None else median(input)
    if dim is None:
        flat = x.reshape(-1)
        ok = flat[~np.isnan(flat)]
        out = np.asarray(np.nan, x.dtype) if ok.size == 0 else np.asarray(np.partition(ok, (ok.size - 1) // 2)[
            (ok.size - 1) // 2])
        return result(out, "NanmedianBackward0", (input,), _evenly(x, out), saved=(input,), save_output=True)
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] == 0:
        raise _empty_dim_error("median", d)
    order = np.argsort(x, axis=d, kind="stable")  # NaNs sort last, in their original order
    valid = (~np.isnan(x)).sum(axis=d, keepdims=True)
    pos = np.where(valid > 0, (valid - 1) // 2, valid)  # all NaN: the first NaN
    idx = np.take_along_axis(order, pos, axis=d).astype(np.int64, copy=False)
    values = np.take_along_axis(x, idx, axis=d)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    v, i = multi_result([values, idx], "NanmedianBackward1", (input,),
                        _select_backward(x.shape, idx, d, keepdim), differentiable=(True, False))
    return nanmedian_result(v, i)


# --- splitting and shapes -------------------------------------------------------------------------

def _split_family(name: str, dim: int, min_dims: int) -> Callable:
    def op(input, indices_or_sections):  # noqa: A002
        if input.ndim < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a "
                               f"tensor with {input.ndim} dimensions!")
        d = 0 if name == "hsplit" and input.ndim == 1 else dim
        ios = indices_or_sections
        if isinstance(ios, int | np.integer) and not isinstance(ios, bool):
            n = input.shape[d]
            if ios == 0 or n % ios:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {n} is not divisible by the split_size {ios}!")
        return shape.tensor_split(input, ios, d)

    op.__name__ = name
    op.__doc__ = (f"torch.{name}: ``tensor_split`` along dim {dim} (dim 0 for a 1-D ``hsplit``); an int must "
                  "divide that dim evenly.")
    return op


hsplit = _split_family("hsplit", 1, 1)
vsplit = _split_family("vsplit", 0, 2)
dsplit = _split_family("dsplit", 2, 3)


def split_with_sizes(input, split_sizes: Sequence[int], dim: int = 0):  # noqa: A002
    """Split into pieces of the given sizes, which must sum to the size of ``dim``."""
    return shape.split(input, list(split_sizes), dim)


def sum_to_size(input, *size):  # noqa: A002
    """Sum ``input`` down to ``size``, which must broadcast (expand) to ``input``'s shape."""
    target = tuple(shape._sizes(size))
    have = tuple(input.shape)
    expandable = len(target) <= len(have) and all(
        t == h or t == 1 for t, h in zip(target[::-1], have[::-1]))
    if not expandable:
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(have)}}}.")
    if target == have:
        return input
    lead = len(have) - len(target)
    dims = tuple(range(lead)) + tuple(i + lead for i, t in enumerate(target) if t == 1 and have[i + lead] != 1)
    out = _sum(input, dims, keepdim=True) if dims else input
    return shape.view(out, target) if lead else out


def hermitian_t(input):  # noqa: A002
    """``Tensor.H``: the conjugate transpose of a matrix (a 2-D tensor; 0-D passes through)."""
    if input.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {input.ndim}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if input.ndim > 2 else ""))
    return _conj_if_complex(shape.transpose(input, 0, 1) if input.ndim == 2 else input)


def hermitian_mt(input):  # noqa: A002
    """``Tensor.mH``: the conjugate transpose of the last two dims."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return _conj_if_complex(shape.transpose(input, -2, -1))


def _conj_if_complex(t):
    if t._data.dtype.kind != "c":
        return t
    return conj(t)


# --- in-place fills -------------------------------------------------------------------------------

def fill_diagonal_values(x: np.ndarray, value: Any, wrap: bool) -> np.ndarray:
    """A copy of ``x`` with its main diagonal set to ``value`` (torch's ``fill_diagonal_``)."""
    if x.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    out = x.copy()
    if x.ndim == 2 and wrap and x.shape[0] > x.shape[1] + 1:
        # the diagonal restarts below a full square: every (cols + 1)-th element of the flat array
        out.reshape(-1)[::x.shape[1] + 1] = value
        return out
    i = np.arange(min(x.shape))
    out[(i,) * x.ndim] = value
    return out


_RANDOM_TOP = {"float16": 2**11, "float32": 2**24, "float64": 2**53, "int8": 2**7, "int16": 2**15,
               "int32": 2**31, "uint8": 2**8, "bool": 2}


def random_bounds(dt: np.dtype, start: Any, end: Any) -> tuple[int, int]:
    """``random_(from, to)``'s half-open range: ``random_()`` spans [0, 2**mantissa] for floats
    and the non-negative range for integers; ``random_(to)`` is [0, to)."""
    if end is None and start is not None and start != 0:
        start, end = 0, start
    lo = 0 if start is None else int(start)
    if end is None:
        hi = _RANDOM_TOP.get(dt.name, 2**63 - 1) + (1 if dt.kind == "f" else 0)
    else:
        hi = int(end)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    return lo, hi


def check_float_fill(name: str, dt: np.dtype, dist: str) -> None:
    if dt.kind != "f":
        raise RuntimeError(f"{dist} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_type_name(dt)}")


# --- bit shifts ----------------------------------------------------------------------------------

def _shift(name: str, kernel: str, left: bool) -> Callable:
    def op(input, other):  # noqa: A002
        if not isinstance(input, _core.Tensor):  # torch.bitwise_left_shift(2, t)
            x, y, dt = pointwise._reversed(other, input)
        else:
            x, y, _, dt = pointwise._binary_operands(input, other)
        if dt.kind not in "iu":
            raise pointwise._not_implemented(kernel, dt)
        bits = dt.itemsize * 8
        y_arr = np.asarray(y, dtype=np.int64)
        if left:  # shifting every bit out gives 0, as torch's kernel does
            out = np.where(y_arr >= bits, 0, np.left_shift(x, np.minimum(y_arr, bits - 1).astype(dt)))
        else:  # arithmetic shift: past the width, 0 or -1 by sign
            out = np.right_shift(x, np.minimum(y_arr, bits - 1).astype(dt))
        return _core.Tensor._wrap(np.asarray(out, dtype=dt))

    op.__name__ = name
    op.__doc__ = f"torch.{name}: integer tensors only; shifts of the whole width or more saturate as torch's."
    return op


bitwise_left_shift = _shift("bitwise_left_shift", "lshift_cpu", True)
bitwise_right_shift = _shift("bitwise_right_shift", "rshift_cpu", False)


def isreal(input):  # noqa: A002
    """True where the value has no imaginary part (everywhere for real dtypes)."""
    x = input._data
    return _core.Tensor._wrap(x.imag == 0 if x.dtype.kind == "c" else np.ones(x.shape, bool))


def adjoint(input):  # noqa: A002
    """The conjugate transpose of the last two dims (``mH`` with torch's ``adjoint`` message)."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return hermitian_mt(input)


def dim_order(input) -> tuple[int, ...]:  # noqa: A002
    """Dims from the outermost in memory (largest stride) to the innermost, as torch's."""
    strides = input.stride()
    return tuple(sorted(range(input.ndim), key=lambda d: -strides[d]))


def narrow_copy(input, dim: int, start: int, length: int):  # noqa: A002
    """``narrow`` as a new contiguous tensor."""
    return shape.contiguous(shape.clone(shape.narrow(input, dim, start, length)))
