"""The gamma family: lgamma, digamma, polygamma, mvlgamma and the Hurwitz zeta function.

NumPy has none of them (and scipy is not a dependency), so they are written here, vectorised:
loops run over a fixed number of series terms or recurrence shifts, never over elements.
digamma, trigamma, polygamma(n >= 2) and zeta follow the formulas torch's CPU kernels use
(``aten/src/ATen/native/Math.h``: digamma's shift to x >= 10 and asymptotic series, trigamma's
six shifts, Cephes' Euler-Maclaurin zeta), so values at poles and infinities are torch's too.
lgamma (torch calls the C library's) is Stirling's series for x >= 10 and a Lanczos sum below,
with the reflection formula for x < 0.5. Also here: the standard gamma and Dirichlet draws with
torch's implicit reparameterisation gradients (``_standard_gamma_grad``, ``_dirichlet_grad``),
which Gamma/Beta/Dirichlet ``rsample`` use.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import engine._ops._core as _core

from .. import _random
from ._core import float_like, result, unbroadcast

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["digamma", "lgamma", "mvlgamma", "polygamma"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
# Stirling's series for lgamma: B_2k / (2k (2k - 1) x^(2k - 1)), k = 1..5
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)
_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
              -4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3,
              8.33333333333333333333e-2)


def _bernoulli_even(count: int) -> list[Fraction]:
    """B_2, B_4, ..., B_2count (Akiyama-Tanigawa), exact."""
    n_max = 2 * count
    a = [Fraction(0)] * (n_max + 1)
    out = []
    for m in range(n_max + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        if m >= 2 and m % 2 == 0:
            out.append(a[0])
    return out


# Cephes' zeta: (2k)! / B_2k for k = 1..12, the Euler-Maclaurin correction's denominators
_ZETA_A = tuple(float(math.factorial(2 * k) / b) for k, b in enumerate(_bernoulli_even(12), start=1))
_MACHEP = 1.11022302462515654042e-16


def _sinpi(x: np.ndarray) -> np.ndarray:
    """sin(pi x) with the argument reduced first (pi * 1e10 loses every digit of the fraction)."""
    return np.sin(np.pi * (x - np.round(x)))


def _lgamma_pos(x: np.ndarray) -> np.ndarray:
    """lgamma for x >= 0.5 (float64)."""
    big = x >= 10.0
    xs = np.where(big, 1.0, x)  # Lanczos lanes; the big ones are overwritten below
    z = xs - 1.0
    s = np.full_like(xs, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        s = s + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    lanczos = _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(s)
    xb = np.where(big, x, 10.0)
    inv, inv2 = 1.0 / xb, 1.0 / (xb * xb)
    series = np.zeros_like(xb)
    for c in reversed(_STIRLING):
        series = series * inv2 + c
    stirling = (xb - 0.5) * np.log(xb) - xb + _HALF_LOG_2PI + series * inv
    return np.where(big, stirling, lanczos)


def lgamma_array(x: np.ndarray) -> np.ndarray:
    """log|Gamma(x)| in float64: +inf at 0, the negative integers and +-inf; exact 0 at 1 and 2."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        xd = x.astype(np.float64)
        refl = xd < 0.5
        pos = _lgamma_pos(np.where(refl, 1.0 - xd, xd))
        s = np.abs(_sinpi(np.where(refl & np.isfinite(xd), xd, 0.5)))
        out = np.where(refl, np.log(np.pi / s) - pos, pos)
        pole = (xd <= 0) & (xd == np.floor(xd))  # 0, -0, negative integers and -inf
        out = np.where(pole | np.isposinf(xd), np.inf, out)
        return np.where((xd == 1.0) | (xd == 2.0), 0.0, out)


def digamma_array(x: np.ndarray) -> np.ndarray:
    """torch's calc_digamma in float64: -inf at +0, +inf at -0, NaN at negative integers."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        xd = x.astype(np.float64)
        neg = xd < 0
        negint = neg & (xd == np.trunc(xd))
        # reflection: psi(x) = psi(1 - x) - pi / tan(pi * frac(x))
        refl = np.where(neg & ~negint, -np.pi / np.tan(np.pi * (xd - np.trunc(xd))), 0.0)
        y = np.where(neg, 1.0 - xd, xd)
        acc = np.zeros_like(y)
        for _ in range(10):  # push y up to >= 10 (y >= 1 here unless 0 <= x < 1)
            low = y < 10
            acc = acc - np.where(low, 1.0 / np.where(low, y, 1.0), 0.0)
            y = np.where(low, y + 1, y)
        z = 1.0 / (y * y)
        poly = np.zeros_like(z)
        for c in _DIGAMMA_A:
            poly = poly * z + c
        tail = np.where(y < 1e17, z * poly, 0.0)
        out = np.where(y == 10, acc + _PSI_10, acc + np.log(y) - 0.5 / y - tail) + refl
        out = np.where(negint, np.nan, out)
        return np.where(xd == 0, np.copysign(np.inf, -xd), out)


def trigamma_array(x: np.ndarray) -> np.ndarray:
    """torch's calc_trigamma, in ``x``'s own precision as torch computes it (so a negative
    integer gives pi^2 / sin(pi x)^2 of the rounded sine: 1.29e15 at -1 in float32)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dt = x.dtype
        pi = dt.type(np.pi)
        refl = x < 0.5
        s = np.sin(pi * x)
        acc = np.where(refl, -(pi * pi) / (s * s), dt.type(0)).astype(dt)
        y = np.where(refl, 1 - x, x).astype(dt)
        for _ in range(6):
            acc = acc + 1 / (y * y)
            y = y + 1
        ixx = 1 / (y * y)
        acc = acc + (1 + 1 / (2 * y) + ixx * (dt.type(1 / 6) - ixx * (dt.type(1 / 30) - ixx * dt.type(1 / 42)))) / y
        return np.where(refl, -acc, acc).astype(dt, copy=False)


def zeta_array(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hurwitz zeta(s, q) = sum_k (q + k)^-s in float64: inf at s == 1, NaN for s < 1, inf at q a
    non-positive integer, NaN for other q <= 0 unless s is an integer (Cephes' rules, as torch's).
    q < -20 (integer s) is folded onto positive arguments (``_zeta_negative``) instead of summing
    the -q terms before q + k > 9 one vectorised step at a time."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s, q = np.broadcast_arrays(s.astype(np.float64), q.astype(np.float64))
        far = (q < -20) & (s > 1) & (s == np.floor(s)) & (q != np.floor(q))
        if far.any():
            return np.where(far, _zeta_negative(np.where(far, s, 2.0), np.where(far, q, -20.5)),
                            _zeta_cephes(s, np.where(far, 1.0, q)))
        return _zeta_cephes(s, q)


def _zeta_negative(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) for integer s > 1 and non-integer q < 0. With f = q - floor(q) and m = -floor(q),
    the m terms before q + k turns positive are (f - j)^-s = (-1)^s (j - f)^-s for j = 1..m, so
    zeta(s, q) = zeta(s, f) + (-1)^s (zeta(s, 1 - f) - zeta(s, m + 1 - f))."""
    f = q - np.floor(q)
    m = -np.floor(q)
    sign = np.where(s % 2 == 0, 1.0, -1.0)
    return _zeta_cephes(s, f) + sign * (_zeta_cephes(s, 1 - f) - _zeta_cephes(s, m + 1 - f))


def _zeta_cephes(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Cephes' zeta as torch runs it: direct terms until q + k > 9 (and at least 9), then the
    Euler-Maclaurin tail with 12 Bernoulli corrections; each lane stops where Cephes returns."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s, q = np.broadcast_arrays(s, q)
        done = np.zeros(s.shape, bool)
        out = np.zeros(s.shape)
        special = np.select([s == 1, s < 1, (q <= 0) & (q == np.floor(q)), (q <= 0) & (s != np.floor(s))],
                            [np.inf, np.nan, np.inf, np.nan], default=0.0)
        done |= (s <= 1) | (q <= 0) & ((q == np.floor(q)) | (s != np.floor(s)))
        out = np.where(done, special, out)
        acc = np.power(q, -s)
        a, b, i = q.copy(), np.zeros_like(q), 0
        while True:
            live = ~done & ((i < 9) | (a <= 9.0))
            if not live.any():
                break
            i += 1
            a = np.where(live, a + 1.0, a)
            b = np.where(live, np.power(a, -s), b)
            acc = np.where(live, acc + b, acc)
            conv = live & (-_MACHEP * acc < b) & (b < _MACHEP * acc)
            out, done = np.where(conv, acc, out), done | conv
        w = a
        acc = np.where(done, acc, acc + b * w / (s - 1.0) - 0.5 * b)
        fa, k = np.ones_like(acc), 0.0
        for c in _ZETA_A:
            live = ~done
            fa = fa * (s + k)
            b = b / w
            t = fa * b / c
            acc = np.where(live, acc + t, acc)
            conv = live & (np.abs(t / acc) < _MACHEP)
            out, done = np.where(conv, acc, out), done | conv
            k += 1.0
            fa = fa * (s + k)
            b = b / w
            k += 1.0
        return np.where(done, out, acc)


def polygamma_array(n: int, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma, in ``x``'s dtype."""
    if n == 0:
        return digamma_array(x).astype(x.dtype, copy=False)
    if n == 1:
        return trigamma_array(x)
    sign = 1.0 if n % 2 else -1.0
    with np.errstate(over="ignore", invalid="ignore"):
        z = zeta_array(np.asarray(float(n + 1)), x).astype(x.dtype)
        return (x.dtype.type(sign * math.exp(math.lgamma(n + 1.0))) * z).astype(x.dtype, copy=False)


def _float_input(a) -> np.ndarray:
    _core.no_complex("this operation", a._data)
    return float_like(a._data)


def lgamma(a):
    """log|Gamma(a)|; +inf at the poles; its gradient is digamma."""
    x = _float_input(a)
    return result(lgamma_array(x).astype(x.dtype, copy=False), "LgammaBackward0", (a,),
                  lambda g: (g * digamma_array(x).astype(x.dtype, copy=False),), saved=(a,),
                  tensor_backward=lambda g: (g * digamma(a),))


def digamma(a):
    """d/dx lgamma; torch's values at the poles (see ``digamma_array``); gradient trigamma."""
    x = _float_input(a)
    return result(digamma_array(x).astype(x.dtype, copy=False), "DigammaBackward0", (a,),
                  lambda g: (g * trigamma_array(x),), saved=(a,),
                  tensor_backward=lambda g: (g * polygamma(1, a),))


def polygamma(n: int, a):
    """The ``n``-th derivative of digamma (``n >= 0``); gradient ``polygamma(n + 1, a)``."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _float_input(a)
    return result(polygamma_array(n, x), "PolygammaBackward0", (a,),
                  lambda g: (g * polygamma_array(n + 1, x),), saved=(a,),
                  tensor_backward=lambda g: (g * polygamma(n + 1, a),))


def mvlgamma(a, p: int):
    """The multivariate log-gamma of dimension ``p >= 1``: ``sum_i lgamma(a - i/2) + p(p-1)/4 log(pi)``
    (torch 2.13 no longer checks ``a > (p - 1) / 2``: elements at the poles give inf)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float_input(a)
    # the shifted arguments in x's own dtype, as torch forms them: in float32, 1e-16 - 1 is the pole -1
    shifts = -(np.arange(p, dtype=x.dtype) / x.dtype.type(2))[::-1]
    xs = x[..., None] + shifts
    out = (lgamma_array(xs).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)).astype(x.dtype)

    def backward(g):
        return (g * digamma_array(xs).sum(-1).astype(x.dtype),)

    return result(out, "MvlgammaBackward0", (a,), backward, saved=(a,))


def zeta(s, q):
    """Hurwitz zeta ``sum_k (q + k)^-s``; either argument may be a number. torch has a gradient
    only for ``q`` (``-s * zeta(s + 1, q)``); asking for one for ``s`` raises as there."""
    ts = s if isinstance(s, _core.Tensor) else None
    tq = q if isinstance(q, _core.Tensor) else None
    like = ts if ts is not None else tq
    xs = float_like(ts._data) if ts is not None else np.asarray(s, dtype=float_like(like._data).dtype)
    xq = float_like(tq._data) if tq is not None else np.asarray(q, dtype=float_like(like._data).dtype)
    dt = np.result_type(xs, xq) if ts is not None and tq is not None else (xs if ts is not None else xq).dtype
    try:
        np.broadcast_shapes(xs.shape, xq.shape)
    except ValueError:
        raise _core.broadcast_error(xs.shape, xq.shape) from None
    out = zeta_array(xs, xq).astype(dt, copy=False)

    def grad_q(g):
        return unbroadcast(g * (-xs * zeta_array(xs + 1, xq)).astype(dt, copy=False), xq.shape)

    def no_grad_s(g):
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")

    if ts is not None and tq is not None:
        return result(out, "SpecialZetaBackward0", (ts, tq),
                      lambda g: (no_grad_s(g) if ts._requires_grad else None, grad_q(g)), saved=(ts, tq))
    if tq is not None:
        return result(out, "SpecialZetaBackward1", (tq,), lambda g: (grad_q(g),), saved=(tq,))
    return result(out, "SpecialZetaBackward2", (ts,), lambda g: (no_grad_s(g),), saved=(ts,))


# --- the standard gamma sample and its implicit reparameterisation gradient -----------------------

# torch's bivariate rational approximation of d x / d alpha (aten/src/ATen/native/Distributions.h)
_GAMMA_GRAD_UV = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07]])


def standard_gamma_grad_array(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """d x / d alpha for a Gamma(alpha, 1) sample ``x`` at fixed CDF value (the implicit
    reparameterisation gradient), in float64 with torch's three regimes: a Taylor series in x for
    x < 0.8, Rice's saddle-point expansion for alpha > 8, and torch's fitted rational function
    of (log(x/alpha), log(alpha)) between. Same formulas, so the same numbers as torch's."""
    with np.errstate(all="ignore"):
        x, alpha = np.broadcast_arrays(x.astype(np.float64), alpha.astype(np.float64))
        # Taylor series (x < 0.8)
        numer, denom = np.ones_like(x), alpha.copy()
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-x / i)
            denom = denom + 1
            series1 = series1 + numer / denom
            series2 = series2 + numer / (denom * denom)
        pow_x_alpha = np.power(x, alpha)
        pdf = np.power(x, alpha - 1) * np.exp(-x)
        cdf = pow_x_alpha * series1
        cdf_alpha = (np.log(x) - digamma_array(alpha)) * cdf - pow_x_alpha * series2
        small = -cdf_alpha / pdf
        small = np.where(np.isnan(small), 0.0, small)
        # Rice saddle point (alpha > 8)
        near = (0.9 * alpha <= x) & (x <= 1.1 * alpha)
        numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
        numer_2 = (1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
                   + alpha * (107 + 3600 * x))
        saddle_near = numer_1 * numer_2 / (1244160 * (alpha * alpha) * (alpha * alpha))
        den = np.sqrt(8 * alpha)
        term2 = den / (alpha - x)
        term3 = np.power(x - alpha - alpha * np.log(x / alpha), -1.5)
        term23 = np.where(x < alpha, term2 - term3, term2 + term3)
        term1 = np.log(x / alpha) * term23 - np.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        saddle = np.where(near, saddle_near, -stirling * (x * term1) / den)
        # rational approximation
        u, v = np.log(x / alpha), np.log(alpha)
        c = [_GAMMA_GRAD_UV[0, i] + u * (_GAMMA_GRAD_UV[1, i] + u * _GAMMA_GRAD_UV[2, i]) for i in range(8)]
        p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
        q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
        rational = np.exp(p / q)
        return np.where(x < 0.8, small, np.where(alpha > 8.0, saddle, rational))


def standard_gamma(concentration):
    """Gamma(concentration, 1) draws from the engine's generator, differentiable in
    ``concentration`` through the implicit reparameterisation gradient (``StandardGammaBackward0``)."""
    c = concentration._data
    dt = c.dtype if c.dtype.kind == "f" else np.dtype(np.float32)
    out = _random._rng(None).standard_gamma(c.astype(np.float64)).astype(dt)

    def backward(g):
        return (g * standard_gamma_grad_array(out, c).astype(dt, copy=False),)

    return result(out, "StandardGammaBackward0", (concentration,), backward, saved=(concentration,),
                  save_output=True)


# torch's rational correction for the Dirichlet/Beta reparameterised gradient (dirichlet_grad_one)
_DIRICHLET_C = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]]])


def _beta_grad_alpha_small(x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """d x / d alpha of a Beta(alpha, beta) draw near 0 (Taylor series in x)."""
    factor = digamma_array(alpha) - digamma_array(alpha + beta) - np.log(x)
    numer = np.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    out = x * np.power(1 - x, -beta) * series
    return np.where(np.isnan(out), 0.0, out)


def _beta_grad_beta_small(x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """d x / d beta of a Beta(alpha, beta) draw near 0 (Taylor series in x)."""
    factor = digamma_array(alpha + beta) - digamma_array(beta)
    numer, betas, dbetas = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    out = -np.power(1 - x, 1 - beta) * series
    return np.where(np.isnan(out), 0.0, out)


def _beta_grad_alpha_mid(x: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """d x / d alpha of a Beta draw when alpha and beta are both large (Rice saddle point)."""
    total = alpha + beta
    mean = alpha / total
    std = np.sqrt(alpha * beta / (total + 1)) / total
    poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / np.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (np.sqrt(2 * alpha / beta) * np.power(total, 1.5) * axbx * axbx)
    term2 = 0.5 * np.log(alpha / (total * x))
    term3 = np.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = np.power(beta * np.log(beta / (total * (1 - x))) + alpha * np.log(alpha / (total * x)), -1.5)
    term1234 = term1 + term2 * (term3 + np.where(x < mean, term4, -term4))
    far = stirling * prefactor * term1234
    return np.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


def dirichlet_grad_array(x: np.ndarray, alpha: np.ndarray, total: np.ndarray) -> np.ndarray:
    """torch's ``_dirichlet_grad``: the reparameterised gradient of a Beta(alpha, total - alpha)
    draw ``x`` w.r.t. alpha, scaled as torch's Dirichlet backward uses it; its four regimes
    (x near 0, x near 1, both parameters large, a rational correction between), in float64."""
    with np.errstate(all="ignore"):
        x, alpha, total = np.broadcast_arrays(*(v.astype(np.float64) for v in (x, alpha, total)))
        beta = total - alpha
        boundary = total * x * (1 - x)
        u = np.log(x)
        a = np.log(alpha) - u
        b = np.log(total) - a
        pow_u, pow_a = (np.ones_like(u), u, u * u), (np.ones_like(a), a, a * a)
        p, q = np.zeros_like(x), np.zeros_like(x)
        c = _DIRICHLET_C
        for i in range(3):
            for j in range(3):
                ua = pow_u[i] * pow_a[j]
                p = p + ua * (c[0, i, j, 0] + b * (c[0, i, j, 1] + b * (c[0, i, j, 2] + b * c[0, i, j, 3])))
                q = q + ua * (c[1, i, j, 0] + b * (c[1, i, j, 1] + b * (c[1, i, j, 2] + b * c[1, i, j, 3])))
        approx = x * (digamma_array(total) - digamma_array(alpha)) / beta
        out = p / q * approx
        out = np.where((alpha > 6) & (beta > 6), _beta_grad_alpha_mid(x, alpha, beta), out)
        out = np.where((x >= 0.5) & (boundary < 0.75), -_beta_grad_beta_small(1 - x, beta, alpha), out)
        return np.where((x <= 0.5) & (boundary < 2.5), _beta_grad_alpha_small(x, alpha, beta), out)


def dirichlet_rsample(concentration):
    """Dirichlet(concentration) draws (normalised standard-gamma draws, clamped into
    [tiny, 1 - eps] as torch's ``_sample_dirichlet``), differentiable in ``concentration``
    through torch's ``_dirichlet_grad`` (node ``_DirichletBackward``, torch's custom Function)."""
    c = concentration._data
    dt = c.dtype
    info = np.finfo(dt)
    g = np.maximum(_random._rng(None).standard_gamma(c.astype(np.float64)), info.tiny)
    x = np.clip(g / g.sum(-1, keepdims=True), info.tiny, 1 - info.eps).astype(dt)

    def backward(grad):
        total = np.broadcast_to(c.sum(-1, keepdims=True), c.shape)
        dx = dirichlet_grad_array(x, c, total).astype(dt, copy=False)
        return (dx * (grad - (x * grad).sum(-1, keepdims=True)),)

    return result(x, "_DirichletBackward", (concentration,), backward, saved=(concentration,), save_output=True)


# --- regularised incomplete gamma functions -------------------------------------------------------

_IGAMMA_MAX_TERMS = 20000  # the series and the continued fraction need O(sqrt(a)) terms near x ~ a
_IGAMMA_EPS = 1e-16


def _igamma_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1)...(a+n)), for x <= a + 1."""
    term = np.ones_like(x)
    total = np.ones_like(x)
    ap = a.copy()
    live = np.ones(x.shape, bool)
    for _ in range(_IGAMMA_MAX_TERMS):
        ap = ap + 1
        term = np.where(live, term * x / ap, term)
        total = np.where(live, total + term, total)
        live &= np.abs(term) > np.abs(total) * _IGAMMA_EPS
        if not live.any():
            break
    return np.exp(a * np.log(x) - x - lgamma_array(a + 1)) * total


def _igammac_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) by Lentz's continued fraction (Numerical Recipes' gcf), for x > a + 1."""
    tiny = 1e-300
    b = x + 1 - a
    c = np.full_like(x, 1 / tiny)
    d = 1 / b
    h = d.copy()
    live = np.ones(x.shape, bool)
    for i in range(1, _IGAMMA_MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        h = np.where(live, h * delta, h)
        live &= np.abs(delta - 1) > _IGAMMA_EPS
        if not live.any():
            break
    return np.exp(a * np.log(x) - x - lgamma_array(a)) * h


def igamma_array(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """P(a, x) (``upper=False``) or Q(a, x) = 1 - P in float64, with Cephes' edge values (as
    torch): NaN for a < 0, x < 0 or a == x == 0; P = 1 for a == 0 < x or x == inf; P = 0 for
    x == 0 or a == inf."""
    with np.errstate(all="ignore"):
        a, x = np.broadcast_arrays(a.astype(np.float64), x.astype(np.float64))
        ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        sa, sx = np.where(ok, a, 1.0), np.where(ok, x, 1.0)
        use_series = sx <= sa + 1
        p_series = _igamma_series(np.where(use_series, sa, 1.0), np.where(use_series, sx, 0.5))
        q_frac = _igammac_fraction(np.where(use_series, 1.0, sa), np.where(use_series, 3.0, sx))
        p = np.where(use_series, p_series, 1 - q_frac)
        q = np.where(use_series, 1 - p_series, q_frac)
        out = q if upper else p
        p_edge = np.select([(a < 0) | (x < 0) | np.isnan(a) | np.isnan(x) | ((a == 0) & (x == 0))
                            | (np.isinf(a) & np.isinf(x)),
                            (a == 0) | np.isposinf(x), (x == 0) | np.isposinf(a)], [np.nan, 1.0, 0.0], default=0.0)
        edge_value = np.where(np.isnan(p_edge), np.nan, 1 - p_edge) if upper else p_edge
        return np.where(ok, out, edge_value)


def _igamma_op(a, x, upper: bool):
    name = "special_gammaincc" if upper else "special_gammainc"
    for pos, (arg, t) in enumerate((("input", a), ("other", x)), start=1):
        if not isinstance(t, _core.Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(t).__name__}")
    xa, xx = float_like(a._data), float_like(x._data)
    dt = np.result_type(xa, xx)
    try:
        np.broadcast_shapes(xa.shape, xx.shape)
    except ValueError:
        raise _core.broadcast_error(xa.shape, xx.shape) from None
    out = igamma_array(xa, xx, upper).astype(dt)
    which = "igammac" if upper else "igamma"

    def backward(g):
        if a._requires_grad:
            raise NotImplementedError(f"the derivative for '{which}: input' is not implemented.")
        with np.errstate(all="ignore"):
            dens = np.exp((xa - 1) * np.log(xx) - xx - lgamma_array(xa)).astype(dt)
        return None, unbroadcast(g * (-dens if upper else dens), xx.shape)

    node = "IgammacBackward0" if upper else "IgammaBackward0"
    return result(out, node, (a, x), backward, saved=(a, x))


def gammainc(input, other):  # noqa: A002 - torch's names
    """The regularised lower incomplete gamma function P(input, other); differentiable in
    ``other`` only (torch has no derivative for ``input`` and raises, as this does)."""
    return _igamma_op(input, other, upper=False)


def gammaincc(input, other):  # noqa: A002
    """The regularised upper incomplete gamma function Q(input, other) = 1 - P."""
    return _igamma_op(input, other, upper=True)
