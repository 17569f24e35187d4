"""StudentT, Cauchy, HalfNormal, HalfCauchy and Gumbel (torch's formulas and constructions:
the half distributions are |X| TransformedDistributions, Gumbel is a Uniform pushed through
torch's four transforms), all with ``rsample``."""

from __future__ import annotations

import math
from typing import Any

import engine._ops.gamma as gamma_ops
import engine._ops.indexing as indexing
import engine.distributions.constraints as constraints

from .. import _creation
from .._finfo import finfo
from .._tensor import Tensor
from .distribution import Distribution, broadcast_all
from .gamma import Gamma
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform, AffineTransform, ExpTransform
from .uniform import Uniform

_EULER = 0.57721566490153286060


def _where(cond: Tensor, a: Any, b: Any) -> Tensor:
    return indexing.where(cond, a, b)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    df = property(lambda self: self.concentration * 2)


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)  # validated first, as in torch (its errors name Chi2)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        """``loc``, NaN where ``df <= 1``."""
        return self.loc.masked_fill(self.df <= 1, math.nan)

    mode = property(lambda self: self.loc)

    @property
    def variance(self) -> Tensor:
        """``scale² df / (df - 2)`` for df > 2, inf for 1 < df <= 2, NaN for df <= 1."""
        df = self.df
        var = _where(df > 2, self.scale.pow(2) * df / (df - 2), df)
        return var.masked_fill((df <= 2) & (df > 1), math.inf).masked_fill(df <= 1, math.nan)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + scale · X / sqrt(Z / df)``, X standard normal, Z ~ Chi2(df) (implicitly
        reparameterised, so df gets a gradient too)."""
        shape = tuple(self._extended_shape(sample_shape))
        x = _creation.randn(*shape, dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + gamma_ops.lgamma(0.5 * self.df)
             - gamma_ops.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y ** 2.0 / self.df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = gamma_ops.lgamma(0.5 * df) + math.lgamma(0.5) - gamma_ops.lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (gamma_ops.digamma(0.5 * (df + 1)) - gamma_ops.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half-width ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: _creation.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype))
    mode = property(lambda self: self.loc)
    variance = property(lambda self: _creation.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + scale · tan(π (u - 1/2))``, u uniform (a standard Cauchy draw)."""
        u = _creation.rand(*tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype)
        return self.loc + (math.pi * (u - 0.5)).tan() * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class _Half(TransformedDistribution):
    """|X| for a distribution symmetric about 0: density doubled on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    scale = property(lambda self: self.base_dist.scale)
    mode = property(lambda self: _creation.zeros_like(self.scale))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return _where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """|Normal(0, scale)|."""

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi))


class HalfCauchy(_Half):
    """|Cauchy(0, scale)|."""

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: _creation.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype))
    variance = property(lambda self: self.base_dist.variance)


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution with location ``loc`` and scale ``scale``:
    ``loc - scale · log(-log(U))`` for U uniform on [tiny, 1 - eps], as torch builds it."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = finfo(self.loc.dtype)
        base = Uniform(_creation.full_like(self.loc, fi.tiny), _creation.full_like(self.loc, 1 - fi.eps),
                       validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-_creation.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    mean = property(lambda self: self.loc + self.scale * _EULER)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: (math.pi / math.sqrt(6)) * self.scale)
    variance = property(lambda self: self.stddev.pow(2))

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER)
