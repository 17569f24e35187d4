"""The ``Distribution`` base class (torch.distributions.Distribution's contract): shapes,
``sample`` as ``rsample`` under ``no_grad``, parameter validation against ``arg_constraints`` and
value validation against ``support`` with torch's ValueError texts, and torch's ``repr``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction
import engine._ops.shape as shape
import engine.autograd.grad_mode as grad_mode
import engine.distributions.constraints as constraints

from .. import _creation
from .._tensor import Size, Tensor

_DEFAULT_VALIDATE = [True]  # torch: __debug__


class lazy_property:  # noqa: N801 - torch's name
    """Computed on first access and then stored in the instance (torch's ``lazy_property``), so a
    distribution built from ``probs`` has ``logits`` only once something asks for them."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        with grad_mode.enable_grad():
            value = self.fn(obj)
        obj.__dict__[self.fn.__name__] = value
        return value


def as_tensor(value: Any, like: Tensor | None = None) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return _creation.tensor(value, dtype=like.dtype if like is not None else None)


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors and numbers broadcast together; numbers take the first tensor's dtype (torch's rule)."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    tensors = [as_tensor(v, like) for v in values]
    full = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    return tuple(t if tuple(t.shape) == full else shape.broadcast_to(t, full) for t in tensors)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the rightmost ``dim`` dimensions (none when ``dim == 0``)."""
    if dim == 0:
        return value
    return reduction.sum(shape.reshape(value, tuple(value.shape[:-dim]) + (-1,)), -1)


class Distribution:
    """Shapes, sampling and validation shared by every distribution."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support: Any = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions validate parameters and values unless told otherwise (default True)."""
        if value not in (True, False):
            raise ValueError
        _DEFAULT_VALIDATE[0] = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (), validate_args: bool | None = None) -> None:
        self._batch_shape = Size(tuple(batch_shape))
        self._event_shape = Size(tuple(event_shape))
        self._validate_args = _DEFAULT_VALIDATE[0] if validate_args is None else validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        for param, constraint in self.arg_constraints.items():
            if constraint is constraints.dependent:
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                continue
            value = getattr(self, param)
            if not bool(reduction.all(constraint.check(value.detach()))):
                raise ValueError(f"Expected parameter {param} (Tensor of shape {tuple(value.shape)}) of distribution "
                                 f"{self!r} to satisfy the constraint {constraint!r}, but found invalid "
                                 f"values:\n{value}")

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def stddev(self) -> Tensor:
        return pointwise.sqrt(self.variance)

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without a gradient."""
        with grad_mode.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return pointwise.exp(self.entropy())

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement variance")

    _expand_keep: tuple[str, ...] = ()  # attributes expand leaves alone (a shared temperature)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A new distribution of the same family whose parameters are expanded (views, no copy)
        to ``batch_shape``, as torch's ``Distribution.expand``: every tensor attribute laid out
        as ``batch_shape + rest`` becomes ``new_batch_shape + rest``, every inner distribution
        is expanded the same way, and the new one is not validated again. Shapes that do not
        expand raise torch's RuntimeError from ``Tensor.expand``."""
        new_batch = tuple(batch_shape)
        old_batch = tuple(self._batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        for key, value in self.__dict__.items():
            if key not in self._expand_keep:
                value = _expand_value(value, old_batch, new_batch)
            new.__dict__[key] = value
        new._batch_shape = Size(new_batch)
        return new

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def _validate_sample(self, value: Any) -> None:
        """torch's checks of a value given to log_prob/cdf: a Tensor, shapes that broadcast with
        ``batch_shape + event_shape``, and every element inside ``support``."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape} vs "
                             f"{self._event_shape}.")
        actual, expected = tuple(value.shape), tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {Size(actual)} vs "
                                 f"{Size(expected)}.")
        support = self.support
        if support is None or support is constraints.dependent:
            return
        if not bool(reduction.all(support.check(value))):
            raise ValueError(f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within the "
                             f"support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        shown = []
        for n in names:
            v = self.__dict__[n]
            shown.append(f"{n}: {v if v.numel() == 1 else v.shape}")
        return f"{type(self).__name__}({', '.join(shown)})"


def _expand_value(value: Any, old_batch: tuple, new_batch: tuple) -> Any:
    n = len(old_batch)
    if isinstance(value, Tensor) and tuple(value.shape[:n]) == old_batch:
        return value.expand(new_batch + tuple(value.shape[n:]))
    if isinstance(value, Distribution) and tuple(value.batch_shape[:n]) == old_batch:
        return value.expand(new_batch + tuple(value.batch_shape[n:]))
    return value


def enumerate_values(values: Tensor, batch_shape: tuple, expand: bool, event: tuple = ()) -> Tensor:
    """torch's enumerate_support layout: the support along a new leading dim, then ones (or,
    with ``expand``, the batch shape), then the event dims."""
    values = values.reshape((-1,) + (1,) * len(batch_shape) + event)
    return values.expand((-1,) + tuple(batch_shape) + event) if expand else values


class ExponentialFamily(Distribution):
    """Marks the families whose cross KL torch refuses with its Bregman-divergence message."""


LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
