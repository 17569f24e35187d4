"""MixtureSameFamily: a Categorical choosing among the last batch dim of one component family
(a Gaussian mixture is ``MixtureSameFamily(Categorical(w), Normal(mu, sigma))``)."""

from __future__ import annotations

from typing import Any

import engine._ops.indexing as indexing
import engine._ops.reduction as reduction
import engine.autograd.grad_mode as grad_mode
import engine.distributions.constraints as constraints

from .._tensor import Size, Tensor
from .categorical import Categorical
from .distribution import Distribution


class _MixtureSupport(constraints.Constraint):
    """The component support, checked on values padded with the component dim (torch's
    ``MixtureSameFamilyConstraint``)."""

    def __init__(self, base: constraints.Constraint) -> None:
        self.base_constraint = base
        self.is_discrete, self.event_dim = base.is_discrete, base.event_dim

    def check(self, value: Tensor) -> Tensor:
        ok = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        return ok.all(-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class MixtureSameFamily(Distribution):
    """``log p(x) = logsumexp_k(log w_k + log p_k(x))`` over the ``K`` components in the last
    batch dim of ``component_distribution``, weights from ``mixture_distribution``."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of torch.distributions.Distribution")
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(tuple(mdbs)), reversed(tuple(cdbs))):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({Size(cdbs)})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MixtureSameFamily:
        batch = tuple(batch_shape)
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._component_distribution = self._component_distribution.expand(batch + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch)
        new._batch_shape = Size(batch)
        return new

    @property
    def support(self) -> constraints.Constraint:
        return _MixtureSupport(self._component_distribution.support)

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        """E[Var[X | k]] + Var[E[X | k]] (the law of total variance)."""
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        mean_cond_var = (probs * self.component_distribution.variance).sum(-1 - self._event_ndims)
        var_cond_mean = (probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(
            -1 - self._event_ndims)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix_prob = reduction.log_softmax(self.mixture_distribution.logits, -1)
        return reduction.logsumexp(log_prob_x + log_mix_prob, -1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Component draws gathered at the mixture's choices (no gradient, as torch's)."""
        with grad_mode.no_grad():
            sample_shape = tuple(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.repeat(*((1,) * len(mix_shape) + (1,) + es))
            return indexing.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
