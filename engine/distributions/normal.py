"""Normal and Laplace: location-scale families on the real line, both with ``rsample``."""

from __future__ import annotations

import math
from typing import Any

import engine._ops.special as special
import engine.distributions.constraints as constraints

from .. import _creation
from .._finfo import finfo
from .._tensor import Tensor
from .distribution import LOG_SQRT_2PI, Distribution, ExponentialFamily, broadcast_all


class Normal(ExponentialFamily):
    """The Gaussian with mean ``loc`` and standard deviation ``scale`` (numbers or tensors,
    broadcast together)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.scale.pow(2))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + eps * scale`` with standard normal ``eps``: differentiable in loc and scale."""
        eps = _creation.randn(*tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + special.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * special.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Laplace(Distribution):
    """The double exponential with location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    variance = property(lambda self: 2 * self.scale.pow(2))
    stddev = property(lambda self: math.sqrt(2) * self.scale)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """torch's inverse-CDF draw from ``u ~ U(eps - 1, 1)``: differentiable in loc and scale."""
        shape = tuple(self._extended_shape(sample_shape))
        u = _creation.rand(*shape, dtype=self.loc.dtype) * (2 - finfo(self.loc.dtype).eps) + (
            finfo(self.loc.dtype).eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * (-(value - self.loc).abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()
