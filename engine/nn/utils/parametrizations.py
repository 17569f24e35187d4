"""``torch.nn.utils.parametrizations``: ``weight_norm`` (``parametrizations.weight.original0`` = g,
``original1`` = v), ``orthogonal`` and the new-style ``spectral_norm``, each torch's module with
torch's buffers and state-dict keys."""

from __future__ import annotations

from typing import Any

import numpy as np

import engine._ops.linalg_decompositions as linalg_decompositions
import engine._ops.shape as shape
import engine.autograd.grad_mode as grad_mode
import engine.nn.functional as F
import engine.nn.utils.parametrize as parametrize

from ... import _creation
from ..._tensor import Tensor
from ..modules.module import Module
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """``module.<name>`` recomputed as ``g · v / ‖v‖`` on every access."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# --- orthogonal -----------------------------------------------------------------------------------

_MAPS = ("matrix_exp", "cayley", "householder")


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """torch.linalg.householder_product on engine ops (so it differentiates): the first ``k``
    columns of ``H_1 ⋯ H_k``, ``H_i = I - tau_i v_i v_iᵀ``, ``v_i`` column ``i`` of ``a``
    below the diagonal with a 1 on it. One matrix update per reflector."""
    n, k = a.shape[-2], a.shape[-1]
    v = a.tril(-1) + engine_eye(n, k, a.dtype)
    q = engine_eye(n, n, a.dtype).expand(*a.shape[:-2], n, n)
    for i in range(k):
        vi = v[..., :, i:i + 1]
        q = q - (q @ vi) * tau[..., i:i + 1, None] @ vi.mT
    return q[..., :, :k]


def engine_eye(n: int, m: int, dtype: Any) -> Tensor:

    return _creation.eye(n, m, dtype=dtype)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a = QR`` with diag(R) >= 0 (unique for full rank), as torch's geqrf +
    householder_product + sign fix gives it."""
    q, r = np.linalg.qr(a.detach().numpy())
    sign = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return Tensor._wrap(np.ascontiguousarray(q * sign[..., None, :]))  # LAPACK keeps float32 as float32


def _geqrf_signs(q: Tensor) -> Tensor:
    """torch's geqrf ``A`` of ``q`` with its diagonal replaced by the signs, flipped where tau
    is zero: what ``right_inverse`` stores for householder without trivialization."""
    h, tau = np.linalg.qr(q.detach().numpy(), mode="raw")
    a = np.ascontiguousarray(np.swapaxes(h, -1, -2))
    d = np.sign(np.diagonal(a, axis1=-2, axis2=-1)).copy()
    d[tau == 0.0] *= -1
    idx = np.arange(d.shape[-1])
    a[..., idx, idx] = d
    return Tensor._wrap(a)


class _Orthogonal(Module):
    """torch's ``_Orthogonal``: maps an unconstrained (..., n, k) tensor to one with orthonormal
    columns (rows when n < k); with ``use_trivialization`` the result is ``base @ Q`` for a
    buffer ``base`` that ``right_inverse`` sets."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - torch's name
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n  # noqa: N806
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            q = self._skew_map(X, n, k)
        else:
            a = X.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = _householder_product(a, tau)
            q = q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            q = self.base @ q
        return q.mT if transposed else q

    def _skew_map(self, X: Tensor, n: int, k: int) -> Tensor:  # noqa: N803


        X = X.tril()  # noqa: N806
        if n != k:
            X = shape.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)  # noqa: N806
        a = X - X.mT
        if self.orthogonal_map == "matrix_exp":
            q = linalg_decompositions.matrix_exp(a)
        else:
            eye = _creation.eye(n, dtype=a.dtype)
            q = linalg_decompositions.solve(eye - 0.5 * a, eye + 0.5 * a)
        return q[..., :k] if n != k else q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803
        with grad_mode.no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803


        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        if n < k:
            Q, n, k = Q.mT, k, n  # noqa: N806
        if not hasattr(self, "base"):
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            a = _geqrf_signs(Q)
            return a.mT if q_init.shape[-2] < q_init.shape[-1] else a
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)  # noqa: N806
        else:
            noise = _creation.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)
            Q = _make_orthogonal(shape.cat([Q, noise], dim=-1))  # noqa: N806
        self.base = Q
        neg_id = _creation.zeros_like(q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    arr = q.detach().numpy()
    eps = 10.0 * n * np.finfo(arr.dtype).eps
    gram = np.swapaxes(arr, -1, -2) @ arr
    return bool(np.allclose(gram, np.eye(k), atol=eps, rtol=1e-5))


def orthogonal(module: Any, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Any:
    """Make ``module.<name>`` (a matrix or batch of matrices) orthogonal: orthonormal columns
    when it is tall, rows when wide, via ``matrix_exp`` or ``cayley`` of a skew-symmetric
    matrix or a product of Householder reflectors (default: ``matrix_exp`` for square
    matrices, ``householder`` otherwise), as torch's ``parametrizations.orthogonal``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# --- spectral norm ----------------------------------------------------------------------------------

class _SpectralNorm(Module):
    """torch's ``_SpectralNorm``: ``weight / σ`` with σ estimated by power iteration on the
    buffers ``_u``/``_v`` (updated in place, in training mode only, on every forward)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:

            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = _creation.empty(h, dtype=weight.dtype).normal_(0, 1)
            v = _creation.empty(w, dtype=weight.dtype).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # u and v change in place, as torch's ``out=`` writes do: a forward that saved them
        # for backward and is followed by another power step fails the same way
        with grad_mode.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.mT.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat.detach(), self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Any, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Any:
    """``module.<name>`` divided by its largest singular value, estimated by
    ``n_power_iterations`` of power iteration per training-mode access (torch's new-style
    ``parametrizations.spectral_norm``; buffers ``parametrizations.<name>.0._u``/``_v``).
    ``dim`` defaults to 1 for transposed convolutions, 0 otherwise."""
    from ..modules.conv import (  # engine.nn's __init__ imports this module; these import engine.nn
        ConvTranspose1d,
        ConvTranspose2d,
        ConvTranspose3d,
    )

    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
