"""``engine.special`` (``torch.special``): the gamma family, error functions, the normal
distribution's CDF and quantile, modified Bessel functions and torch's aliases for ops the
engine already has (expit is sigmoid, gammaln is lgamma, psi is digamma, ...).

A real submodule, so ``import engine.special`` and ``from engine.special import gammaln`` work as
they do for torch. The ops live in ``engine._ops.gamma`` (lgamma, digamma, polygamma, mvlgamma,
zeta, gammainc/gammaincc), ``engine._ops.special_functions`` (erfcx, entr, ndtr, ndtri, log_ndtr, i0/i0e/i1/i1e,
xlog1py) and the existing ``pointwise``/``special``/``reduction`` modules.
"""

from __future__ import annotations

import engine._ops.pointwise as _pointwise
import engine._ops.reduction as _reduction

from ._ops.gamma import digamma, gammainc, gammaincc, polygamma, zeta
from ._ops.gamma import lgamma as gammaln
from ._ops.gamma import mvlgamma as _mvlgamma
from ._ops.special import erf, erfc, erfinv, exp2, logit, sinc, xlogy
from ._ops.special_functions import entr, erfcx, i0, i0e, i1, i1e, log_ndtr, ndtr, ndtri, xlog1py
from ._tensor import Tensor

psi = digamma
expit = _pointwise.sigmoid
expm1 = _pointwise.expm1
log1p = _pointwise.log1p


def multigammaln(input: Tensor, p: int) -> Tensor:  # noqa: A002 - torch's names
    """The multivariate log-gamma of dimension ``p`` (``torch.mvlgamma``)."""
    return _mvlgamma(input, p)


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:  # noqa: A002
    """``log(sum(exp(input)))`` over ``dim`` without overflow (``torch.logsumexp``)."""
    return _reduction.logsumexp(input, dim, keepdim)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """``torch.softmax`` (``dtype`` casts the input first)."""
    return _reduction.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """``torch.log_softmax`` (``dtype`` casts the input first)."""
    return _reduction.log_softmax(input, dim, dtype=dtype)


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 A002
    """``torch.round``; the engine rounds to an integer only, so ``decimals`` other than 0 raises."""
    if decimals != 0:
        raise NotImplementedError("engine.special.round: decimals other than 0 are not supported by engine")
    return _pointwise.round(input)


__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]
