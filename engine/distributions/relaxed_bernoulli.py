"""``engine.distributions.relaxed_bernoulli``: torch's module path for LogitRelaxedBernoulli."""

from .relaxed import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
