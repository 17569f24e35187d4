"""Bernoulli over {0, 1}, from ``probs`` or ``logits``."""

from __future__ import annotations

import math
from typing import Any

import engine.autograd.grad_mode as grad_mode
import engine.distributions.constraints as constraints
import engine.nn.functional as functional

from .. import _creation
from .._tensor import Tensor
from .categorical import clamp_probs
from .distribution import ExponentialFamily, broadcast_all, enumerate_values, lazy_property


class Bernoulli(ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0; values are floats."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @lazy_property
    def probs(self) -> Tensor:
        return self.logits.sigmoid()

    @lazy_property
    def logits(self) -> Tensor:
        p = clamp_probs(self.probs)
        return p.log() - (-p).log1p()

    param_shape = property(lambda self: self._param.shape)
    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self) -> Tensor:
        """1 where probs > 1/2, 0 below, NaN at exactly 1/2 (torch's)."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, math.nan)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with grad_mode.no_grad():
            return _creation.bernoulli(self.probs.expand(tuple(self._extended_shape(sample_shape))))

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(2, *batch_shape) values 0., 1. (ones for the batch dims unless ``expand``)."""
        return enumerate_values(_creation.arange(2, dtype=self._param.dtype), tuple(self._batch_shape), expand)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -functional.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
