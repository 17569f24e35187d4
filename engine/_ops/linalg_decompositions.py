"""Matrix decompositions and solvers of ``torch.linalg`` (and their top-level aliases): det,
slogdet, logdet, inv, solve, cholesky, qr, eigh/eigvalsh, svd, pinv, lstsq, matrix_rank,
matrix_power, multi_dot. All work on batches (the last two dims are the matrices).

Backwards are the standard ones torch uses (real inputs only: the engine has no complex dtype):
``det``/``slogdet``/``inv``/``solve`` through the inverse, ``cholesky`` and ``qr`` through
triangular solves, ``eigh`` and ``svd`` through the eigen/singular-vector formulas, which need
distinct eigenvalues/singular values (as torch warns, they are undefined otherwise).
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

import engine._ops._core as _core
import engine._ops.indexing as indexing
import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction
import engine._ops.shape as _shape

from ._core import multi_result, result
from .linalg import matmul, mm
from .linalg_api import svdvals

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["cholesky_inverse", "cholesky_solve", "det", "inverse", "logdet", "matrix_exp", "matrix_power", "pinverse",
           "slogdet"]


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix the operation cannot handle (singular, not positive
    definite); a RuntimeError, as torch's is."""


slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
eigh_result = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
svd_result = namedtuple("svd", ["U", "S", "Vh"])
torch_svd_result = namedtuple("svd", ["U", "S", "V"])
qr_result = namedtuple("qr", ["Q", "R"])
lstsq_result = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])


def _mT(x: np.ndarray) -> np.ndarray:  # noqa: N802
    return np.swapaxes(x, -1, -2)


def _check(name: str, a, square: bool = True, prefix: str = "linalg.") -> np.ndarray:
    x = a._data
    if x.ndim < 2:
        raise RuntimeError(f"{prefix}{name}: The input tensor A must have at least 2 dimensions.")
    if x.dtype.kind != "f":
        raise RuntimeError(f"{prefix}{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_core._dtype.scalar_type_name(x.dtype)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"{prefix}{name}: A must be batches of square matrices, but they are "
                           f"{x.shape[-2]} by {x.shape[-1]} matrices")
    return x


def _batch_prefix(x: np.ndarray, bad: np.ndarray) -> str:
    """torch names the first failing batch element (when there is a batch)."""
    if x.ndim == 2:
        return ""
    return f"(Batch element {int(np.argmax(bad.reshape(-1)))}): "


def _zero_pivots(x: np.ndarray) -> np.ndarray:
    """For each matrix, the 1-based index of the first zero pivot of LU with partial pivoting
    (what LAPACK's getrf reports), 0 if none. Only run on the error path; loops over columns."""
    m = x.reshape((-1,) + x.shape[-2:]).astype(np.float64, copy=True)
    n = m.shape[-1]
    first = np.zeros(m.shape[0], np.int64)
    rows = np.arange(m.shape[0])
    for k in range(n):
        p = k + np.argmax(np.abs(m[:, k:, k]), axis=1)
        m[rows, k], m[rows, p] = m[rows, p].copy(), m[rows, k].copy()
        piv = m[:, k, k]
        zero = piv == 0
        first = np.where((first == 0) & zero, k + 1, first)
        safe = np.where(zero, 1.0, piv)
        f = m[:, k + 1:, k] / safe[:, None]
        m[:, k + 1:, :] -= f[:, :, None] * m[:, k:k + 1, :]
    return first


def _inv_array(x: np.ndarray, name: str = "linalg.inv") -> np.ndarray:
    try:
        return np.linalg.inv(x)
    except np.linalg.LinAlgError:
        piv = _zero_pivots(x)
        bad = piv > 0
        raise LinAlgError(f"{name}: {_batch_prefix(x, bad)}The diagonal element {int(piv[bad][0])} is zero, the "
                          "inversion could not be completed because the input matrix is singular.") from None


# --- determinants ------------------------------------------------------------------------------

def _others_product(s: np.ndarray) -> np.ndarray:
    """``prod_{j != i} s_j`` for each i along the last axis, without dividing (s may hold 0s)."""
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    right = np.flip(np.cumprod(np.concatenate([ones, np.flip(s[..., 1:], -1)], -1), -1), -1)
    return left * right


def det(a):
    """The determinant; its gradient is the cofactor matrix ``adj(A)^T`` (``det * A^{-T}``),
    computed from an SVD so that nearly singular matrices get it accurately. Where the
    determinant is exactly 0 the gradient is 0, as torch 2.13 returns (not the cofactors)."""
    x = _check("det", a)
    d = np.linalg.det(x).astype(x.dtype)

    def backward(g):
        # A = U S Vh: adj(A)^T = det(U) det(Vh) U diag(prod_{j != i} s_j) Vh
        u, s, vh = np.linalg.svd(x)
        sign = np.linalg.det(u) * np.linalg.det(vh)
        cof = (u * _others_product(s)[..., None, :]) @ vh
        return (np.where((d == 0)[..., None, None], 0.0, (g * sign)[..., None, None] * cof).astype(x.dtype),)

    return result(d, "LinalgDetBackward0", (a,), backward, saved=(a,))


def slogdet(a):
    """``(sign, log|det|)``; only ``logabsdet`` is differentiable (gradient ``g * A^{-T}``)."""
    x = _check("slogdet", a)
    sign, logabs = np.linalg.slogdet(x)

    def backward(g_sign, g_log):
        if g_log is None:
            return (None,)
        return (g_log[..., None, None] * _mT(np.linalg.inv(x)),)

    s, la = multi_result([sign.astype(x.dtype), logabs.astype(x.dtype)], "LinalgSlogdetBackward0", (a,),
                         backward, saved=(a,), differentiable=(False, True))
    return slogdet_result(s, la)


def logdet(a):
    """``log det A``: NaN for a negative determinant (``where`` over ``slogdet``, as torch)."""
    _check("logdet", a, prefix="")
    sign, logabs = slogdet(a)
    return indexing.where(pointwise.eq(sign, -1), float("nan"), logabs)


# --- inverse and solve -------------------------------------------------------------------------

def inv(a):
    """The inverse; gradient ``-A^{-T} g A^{-T}``. A singular matrix raises torch's
    ``LinAlgError`` naming the zero pivot."""
    x = _check("inv", a)
    out = _inv_array(x)

    def backward(g):
        return (-(_mT(out) @ g @ _mT(out)),)

    return result(out, "LinalgInvExBackward0", (a,), backward, save_output=True)


def inverse(a):
    return inv(a)


def solve(A, B, *, left: bool = True):  # noqa: N803 - torch's names
    """``X`` with ``A X = B`` (``X A = B`` when ``left=False``); ``B`` may be a (batch of)
    vector(s) when its shape is ``A.shape[:-1]``."""
    x, b = _check("solve", A), B._data
    vector = b.ndim == 1 or (b.ndim == x.ndim - 1 and b.shape == x.shape[:-1])
    bm = b[..., None] if vector else b
    if left and bm.shape[-2] != x.shape[-1] or not left and bm.shape[-1] != x.shape[-2]:
        rows, cols = bm.shape[-2:]
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({x.shape[-2]}x{x.shape[-1]} and {rows}x{cols})")
    a_eff, b_eff = (x, bm) if left else (_mT(x), _mT(bm))
    try:
        xs = np.linalg.solve(a_eff, b_eff)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.") from None
    out = xs if left else _mT(xs)
    out = out[..., 0] if vector else out

    def backward(g):
        gm = g[..., None] if vector else g
        gm = gm if left else _mT(gm)
        gb = np.linalg.solve(_mT(a_eff), gm)  # A^{-T} g
        ga = -gb @ _mT(xs)
        ga = ga if left else _mT(ga)
        gb = gb if left else _mT(gb)
        gb = gb[..., 0] if vector else gb
        return _core.unbroadcast(ga, x.shape), _core.unbroadcast(gb, b.shape)

    return result(out.astype(x.dtype, copy=False), "LinalgSolveExBackward0", (A, B), backward, saved=(A, B))


# --- cholesky, qr ------------------------------------------------------------------------------

def _cholesky_array(x: np.ndarray, name: str) -> np.ndarray:
    try:
        return np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        pass
    xs = x.reshape((-1,) + x.shape[-2:])
    order = np.zeros(xs.shape[0], np.int64)
    for k in range(1, x.shape[-1] + 1):  # the first leading minor that is not positive definite
        lam = np.linalg.eigvalsh(xs[:, :k, :k])
        order = np.where((order == 0) & (lam.min(axis=-1) <= 0), k, order)
    bad = order > 0
    raise LinAlgError(f"{name}: {_batch_prefix(x, bad)}The factorization could not be completed because the input "
                      f"is not positive-definite (the leading minor of order {int(order[bad][0])} is not "
                      "positive-definite).") from None


def _cholesky_backward(low: np.ndarray, upper: bool):
    def backward(g):
        gl = _mT(g) if upper else g
        phi = np.tril(_mT(low) @ gl)
        phi = 0.5 * (phi + _mT(np.tril(phi, -1)))
        li = np.linalg.inv(low)
        return (_mT(li) @ phi @ li,)

    return backward


def cholesky(A, *, upper: bool = False):  # noqa: N803
    """The lower (``upper=True``: upper) Cholesky factor of a symmetric positive-definite
    matrix (only its lower triangle is read)."""
    x = _check("cholesky", A)
    low = _cholesky_array(x, "linalg.cholesky")
    out = _mT(low).copy() if upper else low
    return result(out, "LinalgCholeskyExBackward0", (A,), _cholesky_backward(low, upper), save_output=True)


def cholesky_deprecated(A, upper: bool = False):  # noqa: N803
    """``torch.cholesky``: deprecated by torch in favour of ``torch.linalg.cholesky``."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                  "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                  "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.",
                  UserWarning, stacklevel=2)
    x = _check("cholesky", A)
    low = _cholesky_array(x, "linalg.cholesky")
    out = _mT(low).copy() if upper else low
    return result(out, "CholeskyBackward0", (A,), _cholesky_backward(low, upper), save_output=True)


def qr(A, mode: str = "reduced"):  # noqa: N803
    """``(Q, R)`` with ``A = Q R``: ``mode`` 'reduced', 'complete' or 'r' (Q empty).
    Differentiable for 'reduced' (and 'complete' when rows <= cols) with rows >= cols."""
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           "'r', or 'complete'")
    x = _check("qr", A, square=False)
    m, n = x.shape[-2:]
    q, r = np.linalg.qr(x, mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        q = np.zeros((0,), x.dtype)

    def backward(gq, gr):
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                               "through linalg.qr.")
        if m < n:
            raise NotImplementedError("linalg.qr backward for matrices with more columns than rows is not "
                                      "implemented in engine")
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > "
                               "ncols.")
        gq = np.zeros_like(q) if gq is None else gq
        gr = np.zeros_like(r) if gr is None else gr
        # gA = (gQ + Q copyltu(M)) R^{-T} with M = R gR^T - gQ^T Q
        mm = r @ _mT(gr) - _mT(gq) @ q
        sym = np.tril(mm) + _mT(np.tril(mm, -1))
        rhs = gq + q @ sym
        return (_mT(np.linalg.solve(r, _mT(rhs))),)

    outs = multi_result([q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)], "LinalgQrBackward0",
                        (A,), backward, saved=(A,))
    return qr_result(*outs)


# --- eigh, svd ---------------------------------------------------------------------------------

def _uplo(uplo: str) -> str:
    if uplo not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")
    return uplo


def eigh(A, UPLO: str = "L"):  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix (only the ``UPLO``
    triangle is read). The eigenvectors' signs are LAPACK's, as torch's; their gradient
    assumes distinct eigenvalues."""
    x = _check("eigh", A)
    lam, v = np.linalg.eigh(x, UPLO=_uplo(UPLO))

    def backward(gl, gv):
        inner = np.zeros(x.shape, x.dtype)
        if gv is not None and gv.any():  # unused outputs arrive as zeros; skip the 1/(l_j - l_i)
            diff = lam[..., None, :] - lam[..., :, None]  # lam_j - lam_i
            np.einsum("...ii->...i", diff)[...] = 1.0
            inner = (_mT(v) @ gv) / diff
            np.einsum("...ii->...i", inner)[...] = 0.0
        if gl is not None:
            inner = inner.copy()
            np.einsum("...ii->...i", inner)[...] += gl
        return (v @ inner @ _mT(v),)

    outs = multi_result([lam.astype(x.dtype), v.astype(x.dtype)], "LinalgEighBackward0", (A,), backward,
                        saved=(A,))
    return eigh_result(*outs)


def eigvalsh(A, UPLO: str = "L"):  # noqa: N803
    """The eigenvalues (ascending) of a symmetric matrix; gradient ``V diag(g) V^T``."""
    x = _check("eigvalsh", A)
    lam, v = np.linalg.eigh(x, UPLO=_uplo(UPLO))

    def backward(g):
        return ((v * g[..., None, :]) @ _mT(v),)

    return result(lam.astype(x.dtype), "LinalgEighBackward0", (A,), backward, saved=(A,))


def _svd_backward(u, s, vh, full: bool):
    k = s.shape[-1]
    u_k, vh_k = (u[..., :, :k], vh[..., :k, :]) if full else (u, vh)

    def backward(gu, gs, gvh):
        gu = None if gu is None or not gu.any() else gu  # unused outputs arrive as zeros
        gvh = None if gvh is None or not gvh.any() else gvh
        if gu is None and gvh is None:
            gs = np.zeros_like(s) if gs is None else gs
            return ((u_k * gs[..., None, :]) @ vh_k,)
        if gu is not None and full:
            gu = gu[..., :, :k]
        if gvh is not None and full:
            gvh = gvh[..., :k, :]
        v = _mT(vh_k)
        s2 = s * s
        e = s2[..., None, :] - s2[..., :, None]  # E_jk = s_k^2 - s_j^2
        np.einsum("...ii->...i", e)[...] = 1.0
        inner = np.zeros(s.shape + (k,), s.dtype)
        if gu is not None:
            uhgu = _mT(u_k) @ gu
            inner = inner + ((uhgu - _mT(uhgu)) / e) * s[..., None, :]
        if gvh is not None:
            vhgv = _mT(v) @ _mT(gvh)
            inner = inner + s[..., :, None] * ((vhgv - _mT(vhgv)) / e)
        if gs is not None:
            inner = inner.copy()
            np.einsum("...ii->...i", inner)[...] += gs
        ga = u_k @ inner @ vh_k
        m, n = u_k.shape[-2], v.shape[-2]
        if gu is not None and m > k:  # (I - U U^T) gU S^{-1} V^T
            ga = ga + ((gu - u_k @ (_mT(u_k) @ gu)) / s[..., None, :]) @ vh_k
        if gvh is not None and n > k:  # U S^{-1} gV^T (I - V V^T)
            ga = ga + u_k @ ((gvh - (gvh @ v) @ vh_k) / s[..., :, None])
        return (ga,)

    return backward


def svd(A, full_matrices: bool = True, *, driver=None):  # noqa: N803
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, S descending. The gradient through U or Vh
    needs distinct (and, for non-square A, non-zero) singular values; torch's caveat."""
    x = _check("svd", A, square=False)
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    outs = multi_result([u.astype(x.dtype), s.astype(x.dtype), vh.astype(x.dtype)], "LinalgSvdBackward0", (A,),
                        _svd_backward(u, s, vh, full_matrices), saved=(A,))
    return svd_result(*outs)


def svd_torch(input, some: bool = True, compute_uv: bool = True):  # noqa: A002
    """``torch.svd``: ``(U, S, V)`` (V, not Vh); ``some=False`` gives full U and V;
    ``compute_uv=False`` gives zero-filled U and V."""
    if not compute_uv:
        s = svdvals(input)
        m, n = input.shape[-2:]
        zeros = _core.Tensor._wrap
        lead = tuple(input.shape[:-2])
        return torch_svd_result(zeros(np.zeros(lead + (m, m), input._data.dtype)), s,
                                zeros(np.zeros(lead + (n, n), input._data.dtype)))
    u, s, vh = svd(input, full_matrices=not some)
    return torch_svd_result(u, s, _shape.mT(vh))


# --- pinv, lstsq, rank -------------------------------------------------------------------------

def _tolerance(s: np.ndarray, shape: tuple, atol, rtol) -> np.ndarray:
    """torch's cut-off: ``max(atol, rtol * s_max)``; rtol defaults to eps * max(m, n) unless
    atol is given (then 0)."""
    atol_v = 0.0 if atol is None else _arr(atol)
    if rtol is None:
        rtol_v = np.finfo(s.dtype).eps * max(shape[-2:]) if atol is None or np.all(atol_v == 0) else 0.0
    else:
        rtol_v = _arr(rtol)
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    return np.maximum(np.asarray(atol_v)[..., None] if np.ndim(atol_v) else atol_v,
                      (np.asarray(rtol_v)[..., None] if np.ndim(rtol_v) else rtol_v) * smax)


def _arr(v):
    return v._data if isinstance(v, _core.Tensor) else v


def _pinv_array(x: np.ndarray, atol, rtol) -> np.ndarray:
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    keep = s > _tolerance(s, x.shape, atol, rtol)
    s_inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    return (_mT(vh) * s_inv[..., None, :]) @ _mT(u)


def _pinv_grad(x: np.ndarray, p: np.ndarray, gp: np.ndarray) -> np.ndarray:
    """Adjoint of dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P (constant rank)."""
    pt = _mT(p)
    i_ap = np.eye(x.shape[-2], dtype=x.dtype) - x @ p
    i_pa = np.eye(x.shape[-1], dtype=x.dtype) - p @ x
    return -pt @ gp @ pt + i_ap @ _mT(gp) @ (p @ pt) + (pt @ p) @ _mT(gp) @ i_pa


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False):  # noqa: N803
    """The Moore-Penrose pseudo-inverse (singular values below ``max(atol, rtol * s_max)``
    dropped); differentiable where the rank does not change."""
    x = A._data
    if x.ndim < 2 or x.dtype.kind != "f":
        raise RuntimeError(f"linalg.pinv({_core._dtype.scalar_type_name(x.dtype)}{{{list(x.shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble types")
    p = _pinv_array(x, atol, rtol).astype(x.dtype, copy=False)
    return result(p, "LinalgPinvBackward0", (A,), lambda g: (_pinv_grad(x, p, g),), saved=(A,))


def pinverse(input, rcond: float = 1e-15):  # noqa: A002
    return pinv(input, rtol=rcond)


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False):  # noqa: N803
    """The number of singular values above ``max(atol, rtol * s_max)`` (int64)."""
    x = A._data
    if x.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    s = np.linalg.svd(x, compute_uv=False)
    return _core.Tensor._wrap((s > _tolerance(s, x.shape, atol, rtol)).sum(-1).astype(np.int64))


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares solution of ``A X = B`` (``pinv(A) @ B``), with torch's default CPU
    driver's extras: ``rank`` filled, ``residuals`` and ``singular_values`` empty."""
    x, b = _check("lstsq", A, square=False, prefix="torch.linalg."), B._data
    vector = b.ndim == x.ndim - 1
    bm = b[..., None] if vector else b
    if bm.shape[-2] != x.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    rtol = rcond if rcond is not None else None
    p = _pinv_array(x, None, rtol).astype(x.dtype, copy=False)
    sol = p @ bm

    def backward(g, *_):
        gm = g[..., None] if vector else g
        gb = _mT(p) @ gm
        gp = gm @ _mT(bm)
        ga = _pinv_grad(x, p, _core.unbroadcast(gp, p.shape) if gp.shape != p.shape else gp)
        gb = gb[..., 0] if vector else gb
        return _core.unbroadcast(ga, x.shape), _core.unbroadcast(gb, b.shape)

    out = sol[..., 0] if vector else sol
    sol_t = result(out, "LinalgLstsqBackward0", (A, B), backward, saved=(A, B))
    wrap = _core.Tensor._wrap
    return lstsq_result(sol_t, wrap(np.zeros((0,), x.dtype)), matrix_rank(A),
                        wrap(np.zeros((0,), x.dtype)))


# --- matrix_power, multi_dot -------------------------------------------------------------------

def matrix_power(A, n: int):  # noqa: N803
    """``A`` to the integer power ``n`` by repeated squaring with ``matmul`` (``n < 0``: of
    the inverse; ``n == 0``: the identity, a zero-gradient copy)."""
    x = A._data
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{x.shape[-2]} by {x.shape[-1]} matrices")
    if n == 0:
        eye = np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape).copy()
        return result(eye, "torch::autograd::CopyBackwards", (A,), lambda g: (np.zeros_like(g),))
    z = inv(A) if n < 0 else A
    n = abs(n)
    if n == 1:
        return _shape.clone(z)
    out = None
    while n:
        if n & 1:
            out = z if out is None else matmul(out, z)
        n >>= 1
        if n:
            z = matmul(z, z)
    return out


def multi_dot(tensors):
    """The product of a chain of matrices (the first may be a row vector and the last a column
    vector, 1-D both), multiplied in the cheapest order."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    mats = list(ts)
    if first_vec:
        mats[0] = _shape.unsqueeze(mats[0], 0)
    if last_vec:
        mats[-1] = _shape.unsqueeze(mats[-1], 1)
    for i, t in enumerate(mats):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {ts[i].ndim}D")
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(ts[i].shape)} and "
                               f"{list(ts[i + 1].shape)} cannot be multiplied")
    dims = [mats[0].shape[0]] + [t.shape[1] for t in mats]
    n = len(mats)
    cost = np.zeros((n, n))
    split = np.zeros((n, n), np.int64)
    for length in range(1, n):  # the classic matrix-chain order (n is the number of matrices)
        for i in range(n - length):
            j = i + length
            options = [cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1] for k in range(i, j)]
            best = int(np.argmin(options))
            cost[i, j], split[i, j] = options[best], i + best


    def chain(i, j):
        if i == j:
            return mats[i]
        k = split[i, j]
        return mm(chain(i, k), chain(k + 1, j))

    out = chain(0, n - 1)
    if first_vec and last_vec:
        return _shape.view(out, ())
    if first_vec:
        return _shape.view(out, (out.shape[1],))
    if last_vec:
        return _shape.view(out, (out.shape[0],))
    return out


def vecdot(x, y, *, dim: int = -1):
    """The dot product of vectors along ``dim`` (broadcasting the rest)."""
    return reduction.sum(pointwise.mul(x, y), dim)


# --- triangular solve, matrix_exp, the _ex variants, vander -------------------------------------

def _triangle(x: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    t = np.triu(x) if upper else np.tril(x)
    if unit:
        t = t.copy()
        np.einsum("...ii->...i", t)[...] = 1.0
    return t


def _tri_solve(t: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``t^{-1} b``; a zero on the diagonal gives inf/NaN (IEEE division), as LAPACK's trtrs."""
    try:
        return np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        return np.full(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], np.nan, b.dtype)


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):  # noqa: N803
    """``X`` with ``T X = B`` (``X T = B`` when ``left=False``) for the upper or lower triangle
    ``T`` of ``A`` (with a unit diagonal when ``unitriangular``); the other triangle is not
    read and gets no gradient."""
    x, b = _check("solve_triangular", A), B._data
    if (b.shape[-2] if left else b.shape[-1]) != x.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({x.shape[-2]}x{x.shape[-1]} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    t = _triangle(x, upper, unitriangular)
    t_eff, b_eff = (t, b) if left else (_mT(t), _mT(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = _tri_solve(t_eff, b_eff)
    out = xs if left else _mT(xs)

    def backward(g):
        gm = g if left else _mT(g)
        gb = np.linalg.solve(_mT(t_eff), gm)
        ga = -gb @ _mT(xs)
        ga = ga if left else _mT(ga)
        ga = np.triu(ga, 1 if unitriangular else 0) if upper else np.tril(ga, -1 if unitriangular else 0)
        return _core.unbroadcast(ga, x.shape), _core.unbroadcast(gb if left else _mT(gb), b.shape)

    return result(out.astype(x.dtype, copy=False), "LinalgSolveTriangularBackward0", (A, B), backward,
                  saved=(A, B))


def _expm(x: np.ndarray) -> np.ndarray:
    """``exp`` of each matrix: scaling and squaring around an 18-term Taylor series (in float64,
    where it is accurate to a few ulps for any norm)."""
    a = x.astype(np.float64)
    norm = np.abs(a).sum(-2).max(-1) if a.size else np.zeros(a.shape[:-2])
    s = int(max(0, np.ceil(np.log2(max(float(np.max(norm, initial=0.0)), 1e-300))) + 1))
    a = a / 2.0 ** s
    eye = np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    out, term = eye.copy(), eye
    for k in range(1, 19):  # series terms, not elements
        term = term @ a / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out.astype(x.dtype)


def matrix_exp(A):  # noqa: N803
    """The matrix exponential; its gradient is the upper-right block of
    ``exp([[A^T, G], [0, A^T]])`` (the Fréchet derivative's adjoint, as torch computes it)."""
    x = _check("matrix_exp", A)
    n = x.shape[-1]

    def backward(g):
        big = np.zeros(x.shape[:-2] + (2 * n, 2 * n), x.dtype)
        big[..., :n, :n] = big[..., n:, n:] = _mT(x)
        big[..., :n, n:] = g
        return (_expm(big)[..., :n, n:],)

    return result(_expm(x), "LinalgMatrixExpBackward0", (A,), backward, saved=(A,))


inv_ex_result = namedtuple("inv_ex", ["inverse", "info"])
cholesky_ex_result = namedtuple("cholesky_ex", ["L", "info"])


def inv_ex(A, *, check_errors: bool = False):  # noqa: N803
    """``(inverse, info)``: ``info`` (int32) is 0, or the 1-based zero pivot of a singular
    matrix, whose inverse is then NaN here (torch leaves LAPACK's partial result there)."""
    x = _check("inv_ex", A)
    if check_errors:
        _inv_array(x, "linalg.inv_ex")
    piv = _zero_pivots(x).reshape(x.shape[:-2]).astype(np.int32)
    good = piv == 0
    safe = np.where(good[..., None, None], x, np.eye(x.shape[-1], dtype=x.dtype))
    out = np.where(good[..., None, None], np.linalg.inv(safe), np.nan).astype(x.dtype)

    def backward(g):
        return (-(_mT(out) @ g @ _mT(out)),)

    return inv_ex_result(result(out, "LinalgInvExBackward0", (A,), backward, save_output=True),
                         _core.Tensor._wrap(piv))


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):  # noqa: N803
    """``(L, info)``: ``info`` (int32) is 0, or the order of the first leading minor that is not
    positive definite, whose factor is then NaN here (torch leaves a partial factor there)."""
    x = _check("cholesky_ex", A)
    if check_errors:
        _cholesky_array(x, "linalg.cholesky_ex")
    try:
        np.linalg.cholesky(x)
        return cholesky_ex_result(cholesky(A, upper=upper), _core.Tensor._wrap(np.zeros(x.shape[:-2], np.int32)))
    except np.linalg.LinAlgError:
        pass
    xs = x.reshape((-1,) + x.shape[-2:])
    order = np.zeros(xs.shape[0], np.int32)
    for k in range(1, x.shape[-1] + 1):  # leading minors, as in _cholesky_array
        lam = np.linalg.eigvalsh(xs[:, :k, :k])
        order = np.where((order == 0) & (lam.min(axis=-1) <= 0), k, order)
    order = order.reshape(x.shape[:-2])
    good = (order == 0)[..., None, None]
    low = np.where(good, np.linalg.cholesky(np.where(good, x, np.eye(x.shape[-1], dtype=x.dtype))), np.nan)
    low = low.astype(x.dtype)
    out = _mT(low).copy() if upper else low
    return cholesky_ex_result(result(out, "LinalgCholeskyExBackward0", (A,), _cholesky_backward(low, upper),
                                     save_output=True), _core.Tensor._wrap(order))


def vander(x, *, N=None):  # noqa: N803
    """``linalg.vander``: increasing powers ``x^0 .. x^(N-1)`` of the last dim as a new last dim
    (a ``cat`` of ones and a ``cumprod``, as torch builds it)."""
    n = (x.shape[-1] if x.ndim else 0) if N is None else N
    if n <= 1 or x.ndim < 1:
        raise RuntimeError("N must be greater than 1.")
    src = x if x._data.dtype.kind == "f" else x.to(_core._dtype._by_name("int64"))
    ones = _core.Tensor._wrap(np.ones(tuple(x.shape) + (1,), src._data.dtype))
    rest = _shape.expand(_shape.unsqueeze(src, -1), *tuple(x.shape), n - 1)
    return _shape.cat([ones, reduction.cumprod(rest, -1)], -1)


def qr_torch(input, some: bool = True):  # noqa: A002
    """``torch.qr`` (deprecated by torch, with its warning): ``linalg.qr`` with
    ``mode='reduced'`` (``some``) or ``'complete'``."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                  "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                  "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning, stacklevel=2)
    return qr(input, "reduced" if some else "complete")


def cholesky_solve(B, L, upper: bool = False):  # noqa: N803
    """``X`` with ``A X = B`` for ``A = L L^T`` (``U^T U`` when ``upper``): two triangular solves."""
    if upper:
        y = solve_triangular(_shape.mT(L), B, upper=False)
        return solve_triangular(L, y, upper=True)
    y = solve_triangular(L, B, upper=False)
    return solve_triangular(_shape.mT(L), y, upper=True)


def cholesky_inverse(L, upper: bool = False):  # noqa: N803
    """The inverse of ``A = L L^T`` (``U^T U`` when ``upper``) from its Cholesky factor."""
    eye = _core.Tensor._wrap(np.broadcast_to(np.eye(L.shape[-1], dtype=L._data.dtype), tuple(L.shape)).copy())
    return cholesky_solve(eye, L, upper)
