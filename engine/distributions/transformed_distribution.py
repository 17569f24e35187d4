"""TransformedDistribution (a base distribution pushed through elementwise transforms: SAC's
tanh-squashed Gaussian) and LogNormal (a Normal through ExpTransform)."""

from __future__ import annotations

from typing import Any

import engine.autograd.grad_mode as grad_mode
import engine.distributions.constraints as constraints

from .._tensor import Tensor
from .distribution import Distribution, broadcast_all, sum_rightmost
from .normal import Normal
from .transforms import ComposeTransform, ExpTransform, Transform


class TransformedDistribution(Distribution):
    """``base_distribution`` with ``transforms`` (one or a list) applied to its values, in order.
    The engine's transforms are elementwise, so the shapes are the base's."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms: Any, validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        self.base_dist = base_distribution
        super().__init__(base_distribution.batch_shape, base_distribution.event_shape, validate_args=validate_args)

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    @property
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support, len(self._event_shape) - support.event_dim)
        return support

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with grad_mode.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        """The base's log-density at the pre-image, minus each transform's log-Jacobian."""
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob: Any = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        sign: Any = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for t in self.transforms[::-1]:
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value


class LogNormal(TransformedDistribution):
    """exp(Normal(loc, scale))."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base = Normal(*broadcast_all(loc, scale), validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.square()).exp())
    variance = property(lambda self: self.scale.pow(2).expm1() * (2 * self.loc + self.scale.pow(2)).exp())

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


__all__ = ["ComposeTransform", "LogNormal", "TransformedDistribution"]
