"""Element-wise ops that training code reaches for beyond the basic maths: erf/erfc/erfinv (BERT's
GELU, truncated-normal init), lerp (EMA of weights), addcmul/addcdiv (hand-written optimizers),
nan_to_num and logit. Same pattern as ``pointwise.py``: arrays in, a backward closure to ``result``.
"""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core
import engine._ops._erf as _erf

from .. import _dtype
from ._core import broadcast_error, float_like, result, unbroadcast
from .pointwise import _unary

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["acos", "acosh", "addcdiv", "addcmul", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh",
           "asin", "asinh", "atan", "atanh", "cosh", "deg2rad", "erf", "erfc", "erfinv", "exp2", "hypot", "lerp",
           "log10", "logaddexp", "logit", "nan_to_num", "rad2deg", "signbit", "sinc", "sinh", "xlogy"]

_TWO_OVER_SQRT_PI = 1.1283791670955125738961589031
_SQRT_PI_OVER_TWO = 0.8862269254527580136490837417


def _erf_array(x: np.ndarray) -> np.ndarray:
    return _erf.erf(x)


def _erfc_array(x: np.ndarray) -> np.ndarray:
    """erfc without the cancellation of 1 - erf(x) for large x (erfc(5) is 1.5e-12, not 0)."""
    xd = x.astype(np.float64).reshape(-1)
    y = np.abs(xd)
    out = 1.0 - _erf.erf(xd)
    mid = (y > _erf._THRESH) & (y <= 4.0)
    out[mid & (xd > 0)] = (np.exp(-(y * y)) * _erf._mid(np.clip(y, _erf._THRESH, 4.0)))[mid & (xd > 0)]
    big = (y > 4.0) & (xd > 0)
    if big.any():
        yb = np.minimum(y[big], 26.6)
        out[big] = np.exp(-(yb * yb)) * _erf._large(yb)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def _erfinv_array(x: np.ndarray) -> np.ndarray:
    """Giles' single-precision approximation ("Approximating the erfinv function", 2010) refined
    by two Newton steps on erf in float64: double precision in (-1, 1); +-inf at +-1, NaN beyond."""
    xd = x.astype(np.float64)
    w = -np.log(np.maximum((1.0 - xd) * (1.0 + xd), 1e-300))
    small = w < 5.0
    ws, wl = w - 2.5, np.sqrt(np.maximum(w, 5.0)) - 3.0
    ps = np.full_like(xd, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        ps = c + ps * ws
    pl = np.full_like(xd, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        pl = c + pl * wl
    y = np.where(small, ps, pl) * xd
    inside = np.abs(xd) < 1.0
    y = np.where(inside, y, 0.0)
    for _ in range(2):
        y = y - (_erf_array(y) - np.where(inside, xd, 0.0)) / (_TWO_OVER_SQRT_PI * np.exp(-(y * y)))
    y = np.where(np.abs(xd) == 1.0, np.copysign(np.inf, xd), np.where(inside, y, np.nan))
    return y.astype(x.dtype, copy=False)


def erf(a):
    """The error function; integer inputs give the default float dtype, as torch's do."""
    x = float_like(a._data)
    return result(_erf_array(x), "ErfBackward0", (a,),
                  lambda g: (g * (_TWO_OVER_SQRT_PI * np.exp(-(x * x))).astype(x.dtype, copy=False),),
                  saved=(a,))


def erfc(a):
    x = float_like(a._data)
    return result(_erfc_array(x), "ErfcBackward0", (a,),
                  lambda g: (g * (-_TWO_OVER_SQRT_PI * np.exp(-(x * x))).astype(x.dtype, copy=False),),
                  saved=(a,))


def erfinv(a):
    """Inverse of erf on (-1, 1): +-inf at +-1 and NaN outside, as torch gives."""
    x = float_like(a._data)
    out = _erfinv_array(x)
    return result(out, "ErfinvBackward0", (a,),
                  lambda g: (g * (_SQRT_PI_OVER_TWO * np.exp(out * out)).astype(x.dtype, copy=False),),
                  save_output=True)


def _float_operands(op: str, kernel: str, *tensors) -> np.dtype:
    """The common floating dtype of ``tensors`` (torch does not promote these ops' operands)."""
    dt = tensors[0]._data.dtype
    for name, t in zip(("end", "weight") if op == "lerp" else ("tensor1", "tensor2"), tensors[1:]):
        if t is not None and t._data.dtype != dt:
            raise RuntimeError(f"expected dtype {_dtype.scalar_type_name(dt).lower()} for `{name}` but "
                               f"got dtype {_dtype.scalar_type_name(t._data.dtype).lower()}")
    if dt.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype.scalar_type_name(dt)}\'')
    return dt


def lerp(input, end, weight):  # noqa: A002 - torch's names
    """``input + weight * (end - input)``; a number weight gives ``LerpBackward0``, a tensor one
    ``LerpBackward1`` (which also sends ``end - input`` to the weight)."""
    tw = weight if isinstance(weight, _core.Tensor) else None
    _float_operands("lerp", "lerp_kernel_tensor" if tw is not None else "lerp_kernel_scalar",
                    input, end, *([tw] if tw is not None else []))
    x, y = input._data, end._data
    w = tw._data if tw is not None else weight
    try:
        out = (x + w * (y - x)).astype(x.dtype, copy=False)
    except ValueError:
        raise broadcast_error(x.shape, np.broadcast_shapes(np.shape(y), np.shape(w))
                              if np.shape(w) else np.shape(y)) from None

    def backward(g):
        grads = (unbroadcast(g * (1 - w), x.shape), unbroadcast(g * w, y.shape))
        return grads + ((unbroadcast(g * (y - x), w.shape),) if tw is not None else ())

    if tw is not None:
        return result(out, "LerpBackward1", (input, end, tw), backward, saved=(input, end, tw))
    return result(out, "LerpBackward0", (input, end), backward)


def _addc(name: str, input, tensor1, tensor2, value):  # noqa: A002
    if name == "AddcdivBackward0" and all(t._data.dtype.kind in "iub" for t in (tensor1, tensor2)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
            "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
            "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
            "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior "
            "is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    x, t1, t2 = input._data, tensor1._data, tensor2._data
    shape = x.shape
    for other in (t1.shape, t2.shape):
        if other == shape:  # the optimizers' case; np.broadcast_shapes costs microseconds
            continue
        try:
            shape = np.broadcast_shapes(shape, other)
        except ValueError:
            raise broadcast_error(shape, other) from None
    dt = _dtype.result_type_many(x, t1, t2)
    if name == "AddcmulBackward0":
        out = x + value * (t1 * t2)
    else:
        out = x + value * (t1 / t2)
    if out.shape != shape:
        out = np.broadcast_to(out, shape)
    out = out.astype(dt, copy=False)

    def backward(g):
        if name == "AddcmulBackward0":
            g1, g2 = g * value * t2, g * value * t1
        else:
            g1, g2 = g * value / t2, -g * value * t1 / (t2 * t2)
        return unbroadcast(g, x.shape), unbroadcast(g1, t1.shape), unbroadcast(g2, t2.shape)

    return result(out, name, (input, tensor1, tensor2), backward, saved=(tensor1, tensor2))


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """``input + value * tensor1 * tensor2`` with broadcasting."""
    _core.no_complex("addcmul", input._data, tensor1._data, tensor2._data)
    return _addc("AddcmulBackward0", input, tensor1, tensor2, value)


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """``input + value * tensor1 / tensor2``; integer division is refused with torch's message."""
    _core.no_complex("addcdiv", input._data, tensor1._data, tensor2._data)
    return _addc("AddcdivBackward0", input, tensor1, tensor2, value)


def nan_to_num(a, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced (by 0 and the dtype's largest/smallest finite values by
    default); integer tensors come back unchanged in value. The gradient is 0 where replaced."""
    x = a._data
    if x.dtype.kind != "f":
        return result(x.copy(), "NanToNumBackward0", (a,), lambda g: (g,))
    out = np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
    keep = np.isfinite(x)
    return result(out, "NanToNumBackward0", (a,), lambda g: (g * keep,), saved=(a,))


def logit(a, eps=None):
    """``log(p / (1 - p))``, ``p`` clamped into ``[eps, 1 - eps]`` when ``eps`` is given. The
    gradient is 0 outside that range with ``eps``, NaN outside ``[0, 1]`` without, as torch's."""
    x = float_like(a._data)
    p = x if eps is None else np.clip(x, eps, 1 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(p / (1 - p)).astype(x.dtype, copy=False)

    def backward(g):
        with np.errstate(divide="ignore", invalid="ignore"):
            d = g / (x * (1 - x))
        if eps is None:
            return (np.where((x < 0) | (x > 1), np.nan, d).astype(d.dtype, copy=False),)
        return (np.where((x < eps) | (x > 1 - eps), 0, d).astype(d.dtype, copy=False),)

    return result(out, "LogitBackward0", (a,), backward, saved=(a,))


# --- more unary maths (metrics, geometry, log-space code) ---------------------------------------

def _sinc(x: np.ndarray) -> np.ndarray:
    return np.sinc(x).astype(x.dtype, copy=False)  # NumPy's sinc is the normalised sin(pi x) / (pi x)


def _sinc_grad(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    px = np.pi * x
    with np.errstate(divide="ignore", invalid="ignore"):
        d = (np.cos(px) * px - np.sin(px)) / (px * x)
    return np.where(x == 0, 0, d).astype(x.dtype, copy=False)


def _build_unary():
    ln2, ln10 = float(np.log(2.0)), float(np.log(10.0))
    return {
        "exp2": _unary("Exp2Backward0", np.exp2, lambda x, y: y * ln2, "output"),
        "log10": _unary("Log10Backward0", np.log10, lambda x, y: 1 / (x * ln10), "input"),
        "sinh": _unary("SinhBackward0", np.sinh, lambda x, y: np.cosh(x), "input"),
        "cosh": _unary("CoshBackward0", np.cosh, lambda x, y: np.sinh(x), "input"),
        "asin": _unary("AsinBackward0", np.arcsin, lambda x, y: 1 / np.sqrt(1 - x * x), "input"),
        "acos": _unary("AcosBackward0", np.arccos, lambda x, y: -1 / np.sqrt(1 - x * x), "input"),
        "atan": _unary("AtanBackward0", np.arctan, lambda x, y: 1 / (1 + x * x), "input"),
        "asinh": _unary("AsinhBackward0", np.arcsinh, lambda x, y: 1 / np.sqrt(x * x + 1), "input"),
        "acosh": _unary("AcoshBackward0", np.arccosh, lambda x, y: 1 / np.sqrt(x * x - 1), "input"),
        "atanh": _unary("AtanhBackward0", np.arctanh, lambda x, y: 1 / (1 - x * x), "input"),
        "deg2rad": _unary("Deg2RadBackward0", lambda x: x * (np.pi / 180), lambda x, y: np.pi / 180, "input"),
        "rad2deg": _unary("Rad2DegBackward0", lambda x: x * (180 / np.pi), lambda x, y: 180 / np.pi, "input"),
        "sinc": _unary("SincBackward0", _sinc, _sinc_grad, "input"),
    }


_UNARY = _build_unary()
exp2, log10, sinh, cosh = _UNARY["exp2"], _UNARY["log10"], _UNARY["sinh"], _UNARY["cosh"]
asin, acos, atan = _UNARY["asin"], _UNARY["acos"], _UNARY["atan"]
asinh, acosh, atanh = _UNARY["asinh"], _UNARY["acosh"], _UNARY["atanh"]
deg2rad, rad2deg, sinc = _UNARY["deg2rad"], _UNARY["rad2deg"], _UNARY["sinc"]


def _float_pair(kernel: str, a, b) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    x, y = a._data, b._data
    dt = _dtype.result_type_many(x, y)
    if dt.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype.scalar_type_name(dt)}\'')
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise broadcast_error(x.shape, y.shape) from None
    return x.astype(dt, copy=False), y.astype(dt, copy=False), dt


def hypot(input, other):
    """``sqrt(input**2 + other**2)`` without overflow in the squares (NumPy's hypot)."""
    x, y, _ = _float_pair("hypot_cpu", input, other)
    out = np.hypot(x, y)

    def backward(g):
        with np.errstate(divide="ignore", invalid="ignore"):
            return unbroadcast(g * x / out, x.shape), unbroadcast(g * y / out, y.shape)

    return result(out, "HypotBackward0", (input, other), backward, saved=(input, other), save_output=True)


def logaddexp(input, other):
    """``log(exp(input) + exp(other))`` computed without overflow."""
    x, y, _ = _float_pair("logaddexp_cpu", input, other)
    out = np.logaddexp(x, y)
    return result(out, "LogaddexpBackward0", (input, other),
                  lambda g: (unbroadcast(g * np.exp(x - out), x.shape), unbroadcast(g * np.exp(y - out), y.shape)),
                  saved=(input, other), save_output=True)


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN); either may be a
    number (``XlogyBackward2`` for a number ``other``, ``XlogyBackward1`` for a number ``input``)."""
    ta = input if isinstance(input, _core.Tensor) else None
    tb = other if isinstance(other, _core.Tensor) else None
    like = ta if ta is not None else tb
    x = ta._data if ta is not None else np.asarray(input, dtype=float_like(like._data).dtype)
    y = tb._data if tb is not None else np.asarray(other, dtype=float_like(like._data).dtype)
    dt = _dtype.result_type_many(*(v._data for v in (ta, tb) if v is not None))
    dt = dt if dt.kind == "f" else float_like(np.zeros(0, dt)).dtype
    x, y = x.astype(dt, copy=False), y.astype(dt, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((x == 0) & ~np.isnan(y), 0, x * np.log(y)).astype(dt, copy=False)

    def backward(g):
        with np.errstate(divide="ignore", invalid="ignore"):
            gx = np.where((x == 0) & ~np.isnan(y), 0, g * np.log(y)) if ta is not None else None
            gy = g * x / y if tb is not None else None
        return (unbroadcast(gx, x.shape) if gx is not None else None,
                unbroadcast(gy, y.shape) if gy is not None else None)

    name = "XlogyBackward0" if ta is not None and tb is not None else \
        "XlogyBackward2" if ta is not None else "XlogyBackward1"
    if ta is not None and tb is not None:
        return result(out, name, (ta, tb), backward, saved=(ta, tb))
    if ta is not None:
        return result(out, name, (ta,), lambda g: backward(g)[:1], saved=(ta,))
    return result(out, name, (tb,), lambda g: backward(g)[1:], saved=(tb,))


def signbit(a):
    """Whether the sign bit is set (so ``-0.0`` is True), as a bool tensor without a gradient."""
    return _core.Tensor._wrap(np.signbit(a._data))


# torch's other names for the ops above
arcsin = asin
arccos = acos
arctan = atan
arcsinh = asinh
arccosh = acosh
arctanh = atanh
