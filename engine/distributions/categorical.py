"""Categorical (indices) and OneHotCategorical (one-hot vectors) over the last dim of
``probs`` (normalised to sum to 1) or ``logits`` (normalised to log-probabilities)."""

from __future__ import annotations

import math
from typing import Any

import engine._ops.indexing as indexing
import engine._ops.reduction as reduction
import engine._ops.sampling as sampling
import engine._ops.shape as shape
import engine.autograd.grad_mode as grad_mode
import engine.distributions.constraints as constraints
import engine.nn.functional as functional

from .. import _creation
from .._finfo import finfo
from .._tensor import Size, Tensor
from .distribution import Distribution, enumerate_values, lazy_property


def clamp_probs(probs: Tensor) -> Tensor:
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


class Categorical(Distribution):
    """Over ``0 .. K-1`` along the last dimension of ``probs`` or ``logits``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - reduction.logsumexp(logits, -1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    @lazy_property
    def probs(self) -> Tensor:
        return reduction.softmax(self.logits, -1)

    @lazy_property
    def logits(self) -> Tensor:
        return clamp_probs(self.probs).log()

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return _creation.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return _creation.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Indices drawn with ``multinomial`` (with replacement), shape ``sample_shape + batch_shape``."""
        n = math.prod(tuple(sample_shape))
        with grad_mode.no_grad():
            probs_2d = shape.reshape(self.probs, (-1, self._num_events))
            samples_2d = shape.t(sampling.multinomial(probs_2d, n, True))
            return shape.reshape(samples_2d, tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        """log P(value): the log-probability of each index, broadcast against the batch."""
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        full = tuple(Size(_broadcast(tuple(value.shape), tuple(self.logits.shape))))
        log_pmf = self.logits if tuple(self.logits.shape) == full else shape.broadcast_to(self.logits, full)
        value = shape.broadcast_to(value, full[:-1] + (1,))
        return indexing.gather(log_pmf, -1, value).squeeze(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(K, *batch_shape) int64 indices 0..K-1 (ones for the batch dims unless ``expand``)."""
        return enumerate_values(_creation.arange(self._num_events), tuple(self._batch_shape), expand)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)


def _broadcast(a: tuple, b: tuple) -> tuple:
    import numpy as np
    return tuple(np.broadcast_shapes(a, b))


class OneHotCategorical(Distribution):
    """Categorical whose values are one-hot vectors (event shape ``(K,)``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self._categorical.probs)
    variance = property(lambda self: self._categorical.probs * (1 - self._categorical.probs))

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return functional.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(K, *batch_shape, K) one-hot vectors (ones for the batch dims unless ``expand``)."""
        n = self._categorical._num_events
        eye = _creation.eye(n, dtype=self._categorical._param.dtype)
        return enumerate_values(eye, tuple(self._batch_shape), expand, (n,))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self) -> Tensor:
        return self._categorical.entropy()
