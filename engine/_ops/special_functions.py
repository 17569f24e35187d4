"""The rest of ``torch.special`` that is not already an engine op: erfcx, entr, the normal
distribution's ndtr/ndtri/log_ndtr, the modified Bessel functions i0/i0e/i1/i1e and xlog1py.

Vectorised NumPy in float64, returned in the input's float dtype. The erfc pieces are Cody's
rational approximations from ``nn/_functional/_erf.py`` (``_mid``/``_large`` are erfcx itself);
the Bessel functions are their power series for |x| <= 30 and the asymptotic series beyond.
"""

from __future__ import annotations

import math

import numpy as np

import engine._ops._core as _core
import engine._ops._erf as e
import engine._ops.pointwise as pointwise
import engine._ops.special as special

from .. import _dtype
from ._core import float_like, result, unbroadcast
from .special import _erfc_array

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["i0"]

_SQRT1_2 = 0.70710678118654752440
_SQRT_2PI = math.sqrt(2 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_TWO_OVER_SQRT_PI = 1.1283791670955125738961589031
_BESSEL_SWITCH = 30.0  # series below, asymptotic expansion above
_SERIES_TERMS = 90  # the power series' terms at |x| = 30 fall below 1e-50 of the sum by then
_ASYMPTOTIC_TERMS = 40


def _input(a) -> np.ndarray:
    _core.no_complex("this operation", a._data)
    return float_like(a._data)


def erfcx_array(x: np.ndarray) -> np.ndarray:
    """exp(x²) erfc(x) in float64: finite for every large positive x, inf once 2 exp(x²) overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        xd = x.astype(np.float64)
        y = np.abs(xd)
        small = np.exp(y * y) * (1.0 - e.erf(np.minimum(y, e._THRESH)))
        mid = e._mid(np.clip(y, e._THRESH, 4.0))
        large = e._large(np.maximum(y, 4.0))
        pos = np.where(y < e._THRESH, small, np.where(y <= 4.0, mid, large))
        out = np.where(xd < 0, 2.0 * np.exp(y * y) - pos, pos)
        return np.where(np.isnan(xd), np.nan, np.where(np.isposinf(xd), 0.0, out))


def log_ndtr_array(x: np.ndarray) -> np.ndarray:
    """log of the standard normal CDF, torch's split: log(erfcx(-x/√2)/2) - x²/2 below -1,
    log1p(-erfc(x/√2)/2) above, so neither tail underflows."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        xd = x.astype(np.float64)
        low = np.log(erfcx_array(-xd * _SQRT1_2) / 2) - xd * xd / 2
        high = np.log1p(-_erfc_array(xd * _SQRT1_2) / 2)
        return np.where(xd < -1, np.where(np.isneginf(xd), -np.inf, low), high)


def _ndtri_lower(p: np.ndarray) -> np.ndarray:
    """ndtri for 0 < p <= 0.5: Abramowitz-Stegun 26.2.23 (error < 4.5e-4), then four Newton
    steps on log_ndtr(x) = log p (log space keeps tiny p exact)."""
    t = np.sqrt(-2.0 * np.log(p))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
          / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
    logp = np.log(p)
    for _ in range(4):
        lnd = log_ndtr_array(x)
        x = x - (lnd - logp) * np.exp(lnd + x * x / 2 + _LOG_SQRT_2PI)
    return x


def ndtri_array(p: np.ndarray) -> np.ndarray:
    """The standard normal quantile: -inf at 0, +inf at 1, NaN outside [0, 1]. Above 0.5 it is
    -ndtri(1 - p), where 1 - p is exact (Sterbenz), so p near 1 keeps its digits."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        pd = p.astype(np.float64)
        inside = (pd > 0) & (pd < 1)
        lower = np.where(pd <= 0.5, pd, 1.0 - pd)
        core = _ndtri_lower(np.where(inside, lower, 0.25))
        out = np.where(pd <= 0.5, core, -core)
        out = np.where(pd == 0.5, 0.0, out)
        out = np.where(pd == 0, -np.inf, np.where(pd == 1, np.inf, out))
        return np.where(inside | (pd == 0) | (pd == 1), out, np.nan)


def _bessel_scaled(x: np.ndarray, nu: int) -> np.ndarray:
    """exp(-|x|) I_nu(|x|) for nu in (0, 1), float64."""
    y = np.abs(x.astype(np.float64))
    ys = np.minimum(y, _BESSEL_SWITCH)
    q = ys * ys / 4
    term = np.ones_like(ys) if nu == 0 else ys / 2
    total = term.copy()
    for k in range(1, _SERIES_TERMS):
        term = term * q / (k * (k + nu))
        total = total + term
    series = total * np.exp(-ys)
    yl = np.maximum(y, _BESSEL_SWITCH)
    term = np.ones_like(yl)
    total = term.copy()
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * -(4 * nu * nu - (2 * k - 1) ** 2) / (8 * k * yl)
        total = total + term
    with np.errstate(invalid="ignore"):
        asym = total / np.sqrt(2 * np.pi * yl)
    asym = np.where(np.isinf(yl), 0.0, asym)
    return np.where(y <= _BESSEL_SWITCH, series, asym)


def i0e_array(x: np.ndarray) -> np.ndarray:
    return _bessel_scaled(x, 0)


def i1e_array(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * _bessel_scaled(x, 1)


def _exp_abs(x: np.ndarray) -> np.ndarray:
    """exp(|x|) in x's own dtype, as torch's kernels take it: float32 overflows from |x| ~ 88.7."""
    with np.errstate(over="ignore"):
        return np.exp(np.abs(x)).astype(np.float64)


def i0_array(x: np.ndarray) -> np.ndarray:
    """exp(|x|) i0e(x): inf once exp(|x|) overflows, NaN at +-inf (inf * 0, as torch's)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _bessel_scaled(x, 0) * _exp_abs(x)


def i1_array(x: np.ndarray) -> np.ndarray:
    """sign(x) exp(|x|) i1e(|x|): NaN at +-inf, as torch's."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.sign(x) * _bessel_scaled(x, 1) * _exp_abs(x)


def _pointwise(name: str, forward, grad_of, a, save_output: bool = False):
    """A unary op: ``forward(x)`` in float64, ``grad_of(x, out64)`` its derivative (float64)."""
    x = _input(a)
    out64 = forward(x)
    with np.errstate(over="ignore"):
        out = out64.astype(x.dtype, copy=False)

    def backward(g):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return ((g * grad_of(x.astype(np.float64), out64)).astype(x.dtype, copy=False),)

    return result(out, name, (a,), backward, saved=(a,))


def erfcx(a):
    """The scaled complementary error function ``exp(x²) erfc(x)``; gradient ``2x erfcx(x) - 2/√π``."""
    return _pointwise("SpecialErfcxBackward0", erfcx_array,
                      lambda x, y: 2 * x * y - _TWO_OVER_SQRT_PI, a)


def _entr_array(x: np.ndarray) -> np.ndarray:
    xd = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(xd > 0, -xd * np.log(xd), np.where(xd == 0, 0.0, np.where(xd < 0, -np.inf, xd)))


def entr(a):
    """``-x ln x`` elementwise: 0 at 0, -inf for negative x; gradient ``-(1 + ln x)``."""
    return _pointwise("SpecialEntrBackward0", _entr_array, lambda x, y: -(1 + np.log(x)), a)


def ndtr(a):
    """The standard normal CDF written as torch writes it, ``(1 + erf(x/√2)) / 2`` (so the far
    left tail rounds to 0 where ``erfc`` would not: torch's values)."""
    return pointwise.mul(pointwise.add(special.erf(pointwise.mul(a, _SQRT1_2)), 1), 0.5)


def ndtri(a):
    """The standard normal quantile (inverse of ndtr); gradient ``√(2π) exp(ndtri(p)²/2)``."""
    return _pointwise("SpecialNdtriBackward0", ndtri_array, lambda p, y: _SQRT_2PI * np.exp(y * y / 2), a)


def log_ndtr(a):
    """log of the standard normal CDF, accurate in both tails; gradient ``φ(x) / Φ(x)``."""
    return _pointwise("SpecialLogNdtrBackward0", log_ndtr_array,
                      lambda x, y: np.exp(-(y + x * x / 2)) / _SQRT_2PI, a)


def i0(a):
    """The modified Bessel function of the first kind, order 0; gradient ``i1``."""
    return _pointwise("I0Backward0", i0_array, lambda x, y: i1_array(x), a)


def i0e(a):
    """``exp(-|x|) i0(x)``; gradient ``i1e(x) - sign(x) i0e(x)``."""
    return _pointwise("SpecialI0EBackward0", i0e_array, lambda x, y: i1e_array(x) - np.sign(x) * y, a)


def i1(a):
    """The modified Bessel function of the first kind, order 1; gradient ``i0(x) - i1(x)/x`` (1/2 at 0)."""
    return _pointwise("SpecialI1Backward0", i1_array,
                      lambda x, y: np.where(x == 0, 0.5, i0_array(x) - y / np.where(x == 0, 1.0, x)), a)


def i1e(a):
    """``exp(-|x|) i1(x)``; gradient ``i0e(x) - i1e(x) (sign(x) + 1/x)`` (1/2 at 0)."""
    return _pointwise("SpecialI1EBackward0", i1e_array,
                      lambda x, y: np.where(x == 0, 0.5, i0e_array(x)
                                            - y * (np.sign(x) + 1 / np.where(x == 0, 1.0, x))), a)


def xlog1py(a, b):
    """``a * log1p(b)``, 0 where ``a == 0`` unless ``b`` is NaN; either may be a number
    (``SpecialXlog1PyBackward2`` for a number ``b``, ``...Backward1`` for a number ``a``)."""
    ta = a if isinstance(a, _core.Tensor) else None
    tb = b if isinstance(b, _core.Tensor) else None
    if ta is None and tb is None:
        raise TypeError("special_xlog1py(): expected at least one of self and other to be a Tensor")
    like = ta if ta is not None else tb
    dt = _dtype.result_type_many(*(v._data for v in (ta, tb) if v is not None))
    dt = dt if dt.kind == "f" else float_like(like._data).dtype
    x = (ta._data if ta is not None else np.asarray(a)).astype(dt, copy=False)
    y = (tb._data if tb is not None else np.asarray(b)).astype(dt, copy=False)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise _core.broadcast_error(x.shape, y.shape) from None
    zero = (x == 0) & ~np.isnan(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(zero, 0, x * np.log1p(y)).astype(dt, copy=False)

    def backward(g):
        with np.errstate(divide="ignore", invalid="ignore"):
            gx = unbroadcast(np.where(zero, 0, g * np.log1p(y)), x.shape) if ta is not None else None
            gy = unbroadcast(g * x / (1 + y), y.shape) if tb is not None else None
        return tuple(v for v, t in ((gx, ta), (gy, tb)) if t is not None)

    if ta is not None and tb is not None:
        return result(out, "SpecialXlog1PyBackward0", (ta, tb), backward, saved=(ta, tb))
    if ta is not None:
        return result(out, "SpecialXlog1PyBackward2", (ta,), backward, saved=(ta,))
    return result(out, "SpecialXlog1PyBackward1", (tb,), backward, saved=(tb,))
