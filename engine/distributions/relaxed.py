"""The Concrete / Gumbel-softmax relaxations (torch's constructions): LogitRelaxedBernoulli and
RelaxedBernoulli (its sigmoid), ExpRelaxedCategorical and RelaxedOneHotCategorical (its exp),
all reparameterised so ``rsample`` differentiates in the probabilities."""

from __future__ import annotations

from typing import Any

import engine._ops.reduction as reduction
import engine.distributions.constraints as constraints

from .. import _creation
from .._tensor import Tensor
from .categorical import Categorical, clamp_probs
from .discrete import _ProbsOrLogits
from .distribution import Distribution, broadcast_all
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform


class LogitRelaxedBernoulli(_ProbsOrLogits):
    """The logit of a RelaxedBernoulli draw: ``(logit(u) + logits) / temperature``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _expand_keep = ("temperature",)

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.temperature = temperature
        self._set_param(None, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(_creation.rand(*shape, dtype=probs.dtype))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A continuous relaxation of Bernoulli on (0, 1), sharper as ``temperature`` falls."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw (Gumbel-softmax in log space)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True
    _expand_keep = ("temperature",)

    def __init__(self, temperature: Tensor, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    param_shape = property(lambda self: self._categorical.param_shape)
    logits = property(lambda self: self._categorical.logits)
    probs = property(lambda self: self._categorical.probs)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``log_softmax((logits + g) / temperature)`` for Gumbel noise ``g``."""
        shape = tuple(self._extended_shape(sample_shape))
        u = clamp_probs(_creation.rand(*shape, dtype=self.logits.dtype))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - reduction.logsumexp(scores, -1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = (_creation.full_like(self.temperature, float(k)).lgamma()
                     - self.temperature.log().mul(-(k - 1)))
        score = logits - value.mul(self.temperature)
        score = (score - reduction.logsumexp(score, -1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """Gumbel-softmax: a continuous relaxation of OneHotCategorical on the simplex."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)


