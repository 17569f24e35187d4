"""``torch.distributions.constraints``, as far as validation needs them: each constraint checks a
tensor elementwise (``check(value) -> bool Tensor`` over the batch) and prints as torch's does,
since its ``repr`` is part of torch's ValueError messages."""

from __future__ import annotations

from typing import Any

import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction
import engine._ops.shape as shape

from .._tensor import Tensor


class Constraint:
    """A region of a distribution's parameter or value space."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return pointwise.eq(value, value)  # False only for NaN


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return pointwise.logical_or(pointwise.eq(value, 0), pointwise.eq(value, 1))


class _Bound(Constraint):
    """A one-sided or two-sided bound; bounds may be numbers or tensors (shown as torch shows them)."""

    def __init__(self, lower: Any = None, upper: Any = None) -> None:
        self.lower_bound, self.upper_bound = lower, upper


class _GreaterThan(_Bound):
    def __init__(self, lower_bound: Any) -> None:
        super().__init__(lower=lower_bound)

    def check(self, value: Tensor) -> Tensor:
        return pointwise.gt(value, self.lower_bound)

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return pointwise.ge(value, self.lower_bound)

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(_Bound):
    def __init__(self, upper_bound: Any) -> None:
        super().__init__(upper=upper_bound)

    def check(self, value: Tensor) -> Tensor:
        return pointwise.lt(value, self.upper_bound)

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(_Bound):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        super().__init__(lower_bound, upper_bound)

    def check(self, value: Tensor) -> Tensor:
        return pointwise.logical_and(pointwise.ge(value, self.lower_bound), pointwise.le(value, self.upper_bound))

    def __repr__(self) -> str:
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value: Tensor) -> Tensor:
        return pointwise.logical_and(pointwise.ge(value, self.lower_bound), pointwise.lt(value, self.upper_bound))

    def __repr__(self) -> str:
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerInterval(_Bound):
    is_discrete = True

    def __init__(self, lower_bound: int, upper_bound: int) -> None:
        super().__init__(lower_bound, upper_bound)

    def check(self, value: Tensor) -> Tensor:
        whole = pointwise.eq(pointwise.remainder(value, 1), 0)
        inside = pointwise.logical_and(pointwise.ge(value, self.lower_bound), pointwise.le(value, self.upper_bound))
        return pointwise.logical_and(whole, inside)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(_Bound):
    is_discrete = True

    def __init__(self, lower_bound: int) -> None:
        super().__init__(lower=lower_bound)

    def check(self, value: Tensor) -> Tensor:
        whole = pointwise.eq(pointwise.remainder(value, 1), 0)
        return pointwise.logical_and(whole, pointwise.ge(value, self.lower_bound))

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _IndependentConstraint(Constraint):
    """``base`` on each element, all of the rightmost ``reinterpreted_batch_ndims`` dims at once."""

    def __init__(self, base: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
        self.event_dim = base.event_dim + reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        ok = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            ok = reduction.all(ok, -1)
        return ok

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        nonneg = reduction.all(pointwise.ge(value, 0), -1)
        return pointwise.logical_and(nonneg, pointwise.lt(pointwise.abs(pointwise.sub(reduction.sum(value, -1), 1)),
                                                          1e-6))


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        is_bool = reduction.all(pointwise.logical_or(pointwise.eq(value, 0), pointwise.eq(value, 1)), -1)
        return pointwise.logical_and(is_bool, pointwise.eq(reduction.sum(value, -1), 1))


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = reduction.all(reduction.all(pointwise.eq(shape.tril(value), value), -1), -1)
        diag = reduction.all(pointwise.gt(shape.diagonal(value, 0, -2, -1), 0), -1)
        return pointwise.logical_and(lower, diag)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        import numpy as np
        x = value._data
        sym = np.all(np.isclose(x, np.swapaxes(x, -1, -2), atol=1e-6), axis=(-2, -1))
        eig_ok = np.zeros(x.shape[:-2], bool)
        eig_ok[sym] = np.all(np.linalg.eigvalsh(x[sym]) > 0, axis=-1) if sym.any() else eig_ok[sym]
        return Tensor._wrap(sym & eig_ok)


real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
one_hot = _OneHot()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
real_vector = _IndependentConstraint(real, 1)
independent = _IndependentConstraint
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)


class _Dependent(Constraint):
    """A placeholder whose region depends on other parameters (Uniform's support): not checked."""

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


dependent = _Dependent()

__all__ = ["Constraint", "boolean", "dependent", "greater_than", "greater_than_eq", "half_open_interval",
           "independent", "integer_interval", "interval", "less_than", "lower_cholesky", "nonnegative",
           "nonnegative_integer", "one_hot",
           "positive", "positive_definite", "positive_integer", "real", "real_vector", "simplex", "unit_interval"]
