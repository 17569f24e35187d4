"""Exponential, and the gamma-based families Gamma, Beta and Dirichlet, all with ``rsample``.

Exponential's ``-log(1 - u) / rate`` differentiates in ``rate``. Gamma, Beta and Dirichlet draw
from NumPy's standard-gamma sampler and carry torch's implicit reparameterisation gradients of
those draws: ``_standard_gamma_grad`` for Gamma, ``_dirichlet_grad`` for Dirichlet (and Beta, a
two-component Dirichlet), the same formulas as torch's (``engine/_ops/gamma.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine._ops.gamma as gamma_ops
import engine._ops.indexing as indexing
import engine._ops.shape as shape
import engine._ops.special as special
import engine.distributions.constraints as constraints
import engine.nn.functional as functional

from .. import _creation
from .._finfo import finfo
from .._tensor import Tensor
from .distribution import ExponentialFamily, broadcast_all


class Exponential(ExponentialFamily):
    """The exponential distribution with rate ``rate``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: _creation.zeros_like(self.rate))
    stddev = property(lambda self: self.rate.reciprocal())
    variance = property(lambda self: self.rate.pow(-2))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = _creation.rand(*tuple(self._extended_shape(sample_shape)), dtype=self.rate.dtype)
        return -(-u).log1p() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and ``rate`` (inverse scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``standard_gamma(concentration) / rate``: differentiable in both (implicitly in the
        concentration, as torch's); values below the dtype's tiny are raised to it without a trace
        in the graph, as torch's in-place clamp of the detached value does."""
        shape = tuple(self._extended_shape(sample_shape))
        value = gamma_ops.standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        np.maximum(value._data, finfo(value.dtype).tiny, out=value._data)
        return value

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return special.xlogy(c, r) + special.xlogy(c - 1, value) - r * value - gamma_ops.lgamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        """P(concentration, rate * value), the regularised lower incomplete gamma function."""
        if self._validate_args:
            self._validate_sample(value)
        return gamma_ops.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + gamma_ops.lgamma(c) + (1.0 - c) * gamma_ops.digamma(c)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex, with ``concentration`` along the last dim."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:]),
                         validate_args=validate_args)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A draw differentiable in the concentration (torch's ``_dirichlet_grad``)."""
        return gamma_ops.dirichlet_rsample(self.concentration.expand(tuple(self._extended_shape(sample_shape))))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """(a - 1) / sum(a - 1) with a - 1 clamped at 0; where every a < 1, the one-hot of the
        largest a, as torch's."""
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        corner = functional.one_hot(self.concentration.argmax(-1), cm1.shape[-1]).to(mode.dtype)
        every_below_one = (self.concentration < 1).all(-1, keepdim=True)
        return _where(every_below_one, corner, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (special.xlogy(c - 1.0, value).sum(-1) + gamma_ops.lgamma(c.sum(-1))
                - gamma_ops.lgamma(c).sum(-1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (gamma_ops.lgamma(c).sum(-1) - gamma_ops.lgamma(a0) - (k - a0) * gamma_ops.digamma(a0)
                - ((c - 1.0) * gamma_ops.digamma(c)).sum(-1))


def _where(cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return indexing.where(cond, a, b)


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1], a two-component Dirichlet as in torch (its parameter
    errors are that Dirichlet's)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(shape.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    concentration1 = property(lambda self: self._dirichlet.concentration[..., 0])
    concentration0 = property(lambda self: self._dirichlet.concentration[..., 1])

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(shape.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()
