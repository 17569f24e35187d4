"""Independent: reinterprets batch dims of a base distribution as event dims (so log_prob sums
over them), as a VAE's diagonal Gaussian ``Independent(Normal(mu, sigma), 1)`` does."""

from __future__ import annotations

from typing import Any

import engine.distributions.constraints as constraints

from .._tensor import Tensor
from .distribution import Distribution, sum_rightmost


class Independent(Distribution):
    """``base_distribution`` with its rightmost ``reinterpreted_batch_ndims`` batch dims made event dims."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        n, batch = reinterpreted_batch_ndims, tuple(base_distribution.batch_shape)
        if n > len(batch):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {n} vs {len(batch)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        split = len(batch) - n
        super().__init__(batch[:split], batch[split:] + tuple(base_distribution.event_shape),
                         validate_args=validate_args)

    has_rsample = property(lambda self: self.base_dist.has_rsample)
    has_enumerate_support = property(lambda self: False)
    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)

    @property
    def support(self) -> constraints.Constraint:
        base = self.base_dist.support
        if self.reinterpreted_batch_ndims == 0:
            return base
        return constraints.independent(base, self.reinterpreted_batch_ndims)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
