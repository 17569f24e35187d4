"""Counting distributions: Binomial, Poisson, Geometric, NegativeBinomial (torch's formulas,
parameter and support checks). Draws come from NumPy's samplers on the engine's generator;
they have no gradient, as torch's have none."""

from __future__ import annotations

from typing import Any

import numpy as np

import engine._ops.gamma as gamma_ops
import engine._ops.special as special
import engine.autograd.grad_mode as grad_mode
import engine.distributions.constraints as constraints
import engine.nn.functional as functional

from .. import _creation, _random
from .._finfo import finfo
from .._tensor import Tensor
from .categorical import clamp_probs
from .distribution import Distribution, ExponentialFamily, broadcast_all, enumerate_values, lazy_property
from .gamma import Gamma


def _probs_to_logits(p: Tensor) -> Tensor:
    p = clamp_probs(p)
    return p.log() - (-p).log1p()


def _clamp_by_zero(x: Tensor) -> Tensor:
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _draw(fn: Any, *arrays: np.ndarray, dtype: np.dtype) -> Tensor:
    """A NumPy sampler applied to parameter arrays, as a no-grad tensor of ``dtype``."""
    with grad_mode.no_grad():
        return Tensor._wrap(np.asarray(fn(_random.default_generator.rng, *arrays)).astype(dtype))


class _ProbsOrLogits(Distribution):
    """The probs/logits pair of the binary-count families (torch's ``is_binary`` conversions)."""

    def _set_param(self, total_count: Any, probs: Any, logits: Any) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        if total_count is None:
            (param,) = broadcast_all(given)
        else:
            total, param = broadcast_all(total_count, given)
            self.total_count = total.to(param.dtype)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        self._param = param

    @lazy_property
    def logits(self) -> Tensor:
        return _probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return self.logits.sigmoid()

    param_shape = property(lambda self: self._param.shape)


class Binomial(_ProbsOrLogits):
    """The number of successes in ``total_count`` trials of probability ``probs`` (or
    ``sigmoid(logits)``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._set_param(total_count, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    mode = property(lambda self: ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count))
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        n = np.broadcast_to(self.total_count.detach().numpy(), shape).astype(np.int64)
        p = np.broadcast_to(self.probs.detach().numpy(), shape).astype(np.float64)
        return _draw(lambda rng, n_, p_: rng.binomial(n_, p_), n, p, dtype=self._param.detach().numpy().dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = gamma_ops.lgamma(n + 1)
        log_factorial_k = gamma_ops.lgamma(value + 1)
        log_factorial_nmk = gamma_ops.lgamma(n - value + 1)
        normalize = (n * _clamp_by_zero(self.logits) + n * (-self.logits.abs()).exp().log1p() - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize

    def _homogeneous_count(self, what: str) -> int:
        total = int(self.total_count.max())
        if not self.total_count.min() == total:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(total_count + 1, *batch_shape) values 0..total_count; all counts must be equal."""
        total = self._homogeneous_count("enumerate_support")
        return enumerate_values(_creation.arange(1 + total, dtype=self._param.dtype), tuple(self._batch_shape),
                                expand)


class Poisson(ExponentialFamily):
    """Counts with mean ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        lam = np.broadcast_to(self.rate.detach().numpy(), shape).astype(np.float64)
        return _draw(lambda rng, r: rng.poisson(r), lam, dtype=self.rate.detach().numpy().dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return special.xlogy(value, rate) - rate - gamma_ops.lgamma(value + 1)


class Geometric(_ProbsOrLogits):
    """The number of failures before the first success, success probability ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._set_param(None, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            valid = self.probs > 0
            if not bool(valid.all()):
                raise ValueError(f"Expected parameter probs (Tensor of shape {tuple(self.probs.shape)}) of "
                                 f"distribution {self!r} to be positive but found invalid values:\n"
                                 f"{self.probs.detach()[~valid]}")

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: _creation.zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """``floor(log(u) / log1p(-p))`` for ``u`` uniform on [tiny, 1), as torch draws."""
        shape = tuple(self._extended_shape(sample_shape))
        with grad_mode.no_grad():
            u = _creation.rand(*shape, dtype=self.probs.dtype).clamp(min=finfo(self.probs.dtype).tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.masked_fill((probs == 1) & (value == 0), 0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class NegativeBinomial(_ProbsOrLogits):
    """The number of successes before ``total_count`` failures, success probability ``probs``."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._set_param(total_count, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    mean = property(lambda self: self.total_count * self.logits.exp())
    mode = property(lambda self: ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0))
    variance = property(lambda self: self.mean / (-self.logits).sigmoid())

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Poisson draws whose rates are Gamma(total_count, exp(-logits)) draws (torch's mixture)."""
        with grad_mode.no_grad():
            rate = Gamma(self.total_count, (-self.logits).exp(), validate_args=False).sample(sample_shape)
            return _draw(lambda rng, r: rng.poisson(r), rate.numpy().astype(np.float64), dtype=rate.numpy().dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * functional.logsigmoid(-self.logits) + value * functional.logsigmoid(self.logits)
        log_normalization = -gamma_ops.lgamma(n + value) + gamma_ops.lgamma(1.0 + value) + gamma_ops.lgamma(n)
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
