"""MultivariateNormal from ``loc`` and one of ``covariance_matrix``, ``precision_matrix`` or
``scale_tril``; everything runs through the lower Cholesky factor, as in torch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import engine.distributions.constraints as constraints

from .. import _creation, linalg
from .._tensor import Tensor
from .distribution import Distribution, lazy_property


def _precision_to_scale_tril(p: Tensor) -> Tensor:
    """The lower Cholesky factor of inv(P), without forming inv(P) (torch's flip trick)."""
    lf = linalg.cholesky(p.flip((-2, -1)))
    l_inv = lf.flip((-2, -1)).transpose(-2, -1)
    eye = _creation.eye(p.shape[-1], dtype=p.dtype)
    return linalg.solve_triangular(l_inv, eye, upper=False)


def _batch_mahalanobis(l: Tensor, x: Tensor) -> Tensor:  # noqa: E741 - torch's name
    """``x^T (L L^T)^-1 x`` over the batch: the squared norm of ``L^-1 x``."""
    batch = tuple(np.broadcast_shapes(tuple(l.shape[:-2]), tuple(x.shape[:-1])))
    n = x.shape[-1]
    lb = l.expand(batch + (n, n))
    z = linalg.solve_triangular(lb, x.expand(batch + (n,)).unsqueeze(-1), upper=False).squeeze(-1)
    return z.pow(2).sum(-1)


class MultivariateNormal(Distribution):
    """The Gaussian on R^n with mean ``loc`` (event shape ``(n,)``)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if sum(m is not None for m in (covariance_matrix, precision_matrix, scale_tril)) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        name, matrix = next((k, v) for k, v in given.items() if v is not None)
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch = tuple(np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(batch + (-1, -1)))
        self.loc = loc.expand(batch + (-1,))
        super().__init__(batch, tuple(self.loc.shape[-1:]), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def _full(self, m: Tensor) -> Tensor:
        return m.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        l = self._unbroadcasted_scale_tril  # noqa: E741
        return self._full(l @ l.transpose(-2, -1))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return self._full(linalg.inv(self._unbroadcasted_scale_tril @ self._unbroadcasted_scale_tril.transpose(-2,
                                                                                                                 -1)))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape)
                                                                      + tuple(self._event_shape))

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = _creation.randn(*tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if not tuple(self._batch_shape) else h.expand(tuple(self._batch_shape))
