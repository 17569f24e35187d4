"""``torch.distributions.transforms``, the elementwise ones: Exp, Affine, Sigmoid, Tanh (SAC's
squashed Gaussian), their inverses and compositions. Each maps x to y, inverts, and gives
``log|dy/dx|``; ``cache_size=1`` keeps the last (x, y) pair so ``inv(y)`` of a value just produced
returns the exact x (tanh's inverse is ill-conditioned near +-1), as torch's cache does."""

from __future__ import annotations

import math
import numbers
from typing import Any

import engine._ops.pointwise as pointwise
import engine.distributions.constraints as constraints
import engine.nn.functional as functional

from .. import _creation
from .._finfo import finfo
from .._tensor import Tensor

__all__ = ["AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform",
           "SigmoidTransform", "TanhTransform", "Transform"]


def _softplus(x: Tensor) -> Tensor:
    return functional.softplus(x)


class Transform:
    """An invertible map with a log-Jacobian; subclasses define ``_call``, ``_inverse`` and
    ``log_abs_det_jacobian``."""

    bijective = True
    sign: int = 1
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y: tuple = (None, None)

    @property
    def event_dim(self) -> int:
        return self.domain.event_dim

    @property
    def inv(self) -> Transform:
        return _InverseTransform(self)

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """``t.inv``: calls ``t``'s inverse, and its inverse is ``t`` again."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    sign = property(lambda self: self._inv.sign)
    inv = property(lambda self: self._inv)

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"


class ExpTransform(Transform):
    """y = exp(x)."""

    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class AbsTransform(Transform):
    """y = |x| (not bijective: its "inverse" is the identity, as torch's)."""

    bijective = False
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class SigmoidTransform(Transform):
    """y = sigmoid(x), clipped into [tiny, 1 - eps] as torch clips it."""

    codomain = constraints.unit_interval

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        f = finfo(x.dtype)
        return x.sigmoid().clamp(min=f.tiny, max=1.0 - f.eps)

    def _inverse(self, y: Tensor) -> Tensor:
        f = finfo(y.dtype)
        y = y.clamp(min=f.tiny, max=1.0 - f.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -_softplus(-x) - _softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); ``log|dy/dx|`` in torch's stable form ``2 (log 2 - x - softplus(-2x))``."""

    codomain = constraints.interval(-1.0, 1.0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale * x (elementwise; ``event_dim`` > 0 sums the log-Jacobian over event dims)."""

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def domain(self) -> constraints.Constraint:
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                     self._event_dim)

    codomain = domain

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(mine, numbers.Number) and isinstance(theirs, numbers.Number):
                if mine != theirs:
                    return False
            elif not bool((pointwise.eq(mine, theirs) if isinstance(mine, Tensor) else
                           pointwise.eq(theirs, mine)).all()):
                return False
        return True

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, numbers.Real):
            result = _creation.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
            if tuple(result.shape) != tuple(x.shape):
                result = result.expand(tuple(x.shape))
        if self._event_dim:
            result = result.reshape(tuple(result.shape[:-self._event_dim]) + (-1,)).sum(-1)
        return result


class ComposeTransform(Transform):
    """The transforms applied in order; the log-Jacobian is the sum of theirs."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    @property
    def domain(self) -> constraints.Constraint:
        return self.parts[0].domain if self.parts else constraints.real

    @property
    def codomain(self) -> constraints.Constraint:
        return self.parts[-1].codomain if self.parts else constraints.real

    @property
    def sign(self) -> Any:
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self) -> Transform:
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        for p in self.parts:
            x = p(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return _creation.zeros_like(x)
        total: Any = 0.0
        for p in self.parts:
            y_p = p(x)
            total = total + p.log_abs_det_jacobian(x, y_p)
            x = y_p
        return total

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"
