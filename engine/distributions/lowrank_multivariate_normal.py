"""LowRankMultivariateNormal: covariance ``W Wᵀ + diag(D)`` for an (n, m) ``cov_factor`` W,
with log_prob and entropy through the (m, m) capacitance matrix ``I + Wᵀ D⁻¹ W`` (Woodbury and
the matrix determinant lemma), as torch computes them: no n×n factorisation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import engine.distributions.constraints as constraints

from .. import _creation, linalg
from .._tensor import Tensor
from .distribution import Distribution, lazy_property
from .multivariate_normal import _batch_mahalanobis


def _batch_capacitance_tril(w: Tensor, d: Tensor) -> Tensor:
    """The Cholesky factor of ``I + Wᵀ D⁻¹ W``."""
    m = w.shape[-1]
    wt_dinv = w.mT / d.unsqueeze(-2)
    return linalg.cholesky(wt_dinv @ w + _creation.eye(m, dtype=w.dtype))


def _batch_lowrank_logdet(d: Tensor, capacitance_tril: Tensor) -> Tensor:
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + d.log().sum(-1)


def _batch_lowrank_mahalanobis(w: Tensor, d: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    wt_dinv = w.mT / d.unsqueeze(-2)
    wt_dinv_x = (wt_dinv @ x.unsqueeze(-1)).squeeze(-1)
    return (x.pow(2) / d).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The Gaussian on R^n with mean ``loc`` and covariance ``cov_factor @ cov_factor.T +
    diag(cov_diag)``."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {loc.shape[-1:]}")
        try:
            full = np.broadcast_shapes(tuple(loc.shape) + (1,), tuple(cov_factor.shape), tuple(cov_diag.shape) + (1,))
        except ValueError as err:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from err
        self.cov_factor = cov_factor.expand(full)
        self.loc = loc.expand(full[:-1])
        self.cov_diag = cov_diag.expand(full[:-1])
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(full[:-2], event_shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    def _full(self, matrix: Tensor) -> Tensor:
        return matrix.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def variance(self) -> Tensor:
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / d_sqrt
        k = dinvsqrt_w @ dinvsqrt_w.mT + _creation.eye(n, dtype=d_sqrt.dtype)
        return self._full(d_sqrt * linalg.cholesky(k))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        w = self._unbroadcasted_cov_factor
        return self._full(w @ w.mT + self._unbroadcasted_cov_diag.diag_embed())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        return self._full(self._unbroadcasted_cov_diag.reciprocal().diag_embed() - a.mT @ a)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + W ε_W + sqrt(D) ε_D`` with standard normal ε_W (m) and ε_D (n)."""
        shape = tuple(self._extended_shape(sample_shape))
        eps_w = _creation.randn(*(shape[:-1] + tuple(self.cov_factor.shape[-1:])), dtype=self.loc.dtype)
        eps_d = _creation.randn(*shape, dtype=self.loc.dtype)
        return (self.loc + (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        mahalanobis = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, diff,
                                                 self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + mahalanobis)

    def entropy(self) -> Tensor:
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return h if not tuple(self._batch_shape) else h.expand(tuple(self._batch_shape))
