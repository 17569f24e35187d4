"""engine.distributions: the distributions training code samples from and scores with --
``Categorical`` (policy gradients, as in pytorch/examples' REINFORCE and actor-critic) and
``Normal`` (VAEs, Gaussian policies; ``rsample`` keeps the reparameterised gradient) -- plus
``kl_divergence`` between two of a kind.

Like torch's, they are written with ordinary tensor ops, so log_prob/entropy/rsample differentiate
through the usual autograd graph. Parameters are validated as torch validates them by default
(ValueError with torch's message); of the values given to ``log_prob`` only the type is checked
(torch also checks that they lie in the support).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _creation
from .._finfo import finfo
from .._ops import indexing, pointwise, reduction, sampling, shape
from .._tensor import Size, Tensor
from ..autograd import grad_mode

__all__ = ["Categorical", "Distribution", "Normal", "kl_divergence"]


def _as_tensor(value: Any, like: Tensor | None = None) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return _creation.tensor(value, dtype=like.dtype if like is not None else None)


class Distribution:
    """Shapes and the sample/rsample split shared by every distribution."""

    has_rsample = False

    def __init__(self, batch_shape: tuple = (), event_shape: tuple = ()) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        raise NotImplementedError

    def _params_repr(self, names: tuple[str, ...]) -> str:
        shown = [f"{n}: {getattr(self, '_' + n).shape!r}" for n in names if getattr(self, "_" + n, None) is not None]
        return f"{type(self).__name__}({', '.join(shown)})"

    def _invalid(self, name: str, value: Tensor, constraint: str) -> ValueError:
        return ValueError(f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of distribution "
                          f"{self!r} to satisfy the constraint {constraint}, but found invalid values:\n{value!r}")


class Categorical(Distribution):
    """Over ``0 .. K-1`` along the last dimension of ``probs`` (normalised to sum to 1) or
    ``logits`` (normalised to log-probabilities: ``logits - logsumexp``)."""

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._probs = self._logits = None
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self._probs = pointwise.div(probs, reduction.sum(probs, -1, keepdim=True))
            param = self._probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self._logits = pointwise.sub(logits, reduction.logsumexp(logits, -1, keepdim=True))
            param = self._logits
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]))
        self._validate = validate_args is not False
        if self._validate and self._probs is not None:
            p = self._probs.detach()
            ok = reduction.all(pointwise.ge(p, 0), -1) & pointwise.lt(pointwise.abs(reduction.sum(p, -1) - 1), 1e-6)
            if not bool(reduction.all(ok)):
                raise self._invalid("probs", p, "Simplex()")

    @property
    def probs(self) -> Tensor:
        if self._probs is None:
            self._probs = reduction.softmax(self._logits, -1)
        return self._probs

    @property
    def logits(self) -> Tensor:
        if self._logits is None:
            eps = finfo(self._probs.dtype).eps
            self._logits = pointwise.log(pointwise.clamp(self._probs, min=eps, max=1 - eps))
        return self._logits

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def __repr__(self) -> str:
        return self._params_repr(("probs", "logits"))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Indices drawn with ``multinomial`` (with replacement), shape ``sample_shape + batch_shape``."""
        n = math.prod(tuple(sample_shape))
        with grad_mode.no_grad():
            probs_2d = shape.reshape(self.probs, (-1, self._num_events))
            samples_2d = shape.t(sampling.multinomial(probs_2d, n, True))
            return shape.reshape(samples_2d, tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        """log P(value): the log-probability of each index, broadcast against the batch."""
        if self._validate and not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        value = shape.unsqueeze(value.long(), -1)
        full = _broadcast(tuple(value.shape), tuple(self.logits.shape))
        log_pmf = self.logits if tuple(self.logits.shape) == full else shape.broadcast_to(self.logits, full)
        value = shape.broadcast_to(value, full[:-1] + (1,))
        return shape.squeeze(indexing.gather(log_pmf, -1, value), -1)

    def entropy(self) -> Tensor:
        min_real = finfo(self.logits.dtype).min
        logits = pointwise.clamp(self.logits, min=min_real)
        return pointwise.neg(reduction.sum(pointwise.mul(logits, self.probs), -1))


def _broadcast(a: tuple, b: tuple) -> tuple:
    return tuple(np.broadcast_shapes(a, b))


class Normal(Distribution):
    """The Gaussian with mean ``loc`` and standard deviation ``scale`` (numbers or tensors,
    broadcast together)."""

    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        loc_t = loc if isinstance(loc, Tensor) else None
        scale_t = scale if isinstance(scale, Tensor) else None
        like = loc_t if loc_t is not None else scale_t
        loc, scale = _as_tensor(loc, like), _as_tensor(scale, like)
        full = _broadcast(tuple(loc.shape), tuple(scale.shape))
        self._loc = loc if tuple(loc.shape) == full else shape.broadcast_to(loc, full)
        self._scale = scale if tuple(scale.shape) == full else shape.broadcast_to(scale, full)
        super().__init__(full)
        self._validate = validate_args is not False
        if self._validate and not bool(reduction.all(pointwise.gt(self._scale.detach(), 0))):
            raise self._invalid("scale", self._scale.detach(), "GreaterThan(lower_bound=0.0)")

    loc = property(lambda self: self._loc)
    scale = property(lambda self: self._scale)
    mean = property(lambda self: self._loc)
    mode = property(lambda self: self._loc)
    stddev = property(lambda self: self._scale)
    variance = property(lambda self: pointwise.pow(self._scale, 2))

    def __repr__(self) -> str:
        return self._params_repr(("loc", "scale"))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with grad_mode.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + eps * scale`` with standard normal ``eps``: differentiable in loc and scale."""
        eps = _creation.randn(*tuple(self._extended_shape(sample_shape)), dtype=self._loc.dtype)
        return pointwise.add(self._loc, pointwise.mul(eps, self._scale))

    def log_prob(self, value: Any) -> Tensor:
        if self._validate and not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        value = _as_tensor(value, self._loc)
        var = pointwise.pow(self._scale, 2)
        log_scale = pointwise.log(self._scale)
        sq = pointwise.pow(pointwise.sub(value, self._loc), 2)
        return pointwise.sub(pointwise.sub(pointwise.div(pointwise.neg(sq), pointwise.mul(var, 2)), log_scale),
                             math.log(math.sqrt(2 * math.pi)))

    def entropy(self) -> Tensor:
        return pointwise.add(pointwise.log(self._scale), 0.5 + 0.5 * math.log(2 * math.pi))


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) for two Normals or two Categoricals (torch raises NotImplementedError for
    pairs it has no formula for, and so does this)."""
    if isinstance(p, Normal) and isinstance(q, Normal):
        var_ratio = pointwise.pow(pointwise.div(p.scale, q.scale), 2)
        t1 = pointwise.pow(pointwise.div(pointwise.sub(p.loc, q.loc), q.scale), 2)
        return pointwise.mul(pointwise.sub(pointwise.sub(pointwise.add(var_ratio, t1), 1),
                                           pointwise.log(var_ratio)), 0.5)
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        t = pointwise.mul(p.probs, pointwise.sub(p.logits, q.logits))
        t = pointwise.masked_fill(t, pointwise.eq(q.probs, 0).expand_as(t), float("inf"))
        t = pointwise.masked_fill(t, pointwise.eq(p.probs, 0).expand_as(t), 0)
        return reduction.sum(t, -1)
    raise NotImplementedError
