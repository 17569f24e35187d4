"""``engine.linalg``: norm, vector_norm, matrix_norm, svdvals and cross with torch.linalg's
signatures. Matrix norms are composed from the engine's ops the way torch composes them, so
their ``grad_fn`` reads the same (e.g. ``ord=2`` is ``amax`` over ``svdvals``)."""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core
import engine._ops.reduction as reduction

from ._core import result, wrap_dim
from .linalg import cross as _cross
from .pointwise import abs as abs_
from .shape import permute, unsqueeze

_INT = (int, np.integer)


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The ``ord``-norm of ``x`` over ``dim`` (all dims by default) as a vector."""
    return reduction.norm(x, ord, dim, keepdim, dtype)


def svdvals(a):
    """Singular values (descending) of the last two dims; differentiable (``U diag(g) Vh``)."""
    x = a._data
    if x.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    u, s, vh = np.linalg.svd(x, full_matrices=False)

    def backward(g):
        return ((u * g[..., None, :]) @ vh,)

    return result(s.astype(x.dtype, copy=False), "LinalgSvdBackward0", (a,), backward, saved=(a,))


def matrix_norm(a, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):  # noqa: A002
    """Matrix norms over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf."""
    x = a._data
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if x.dtype.kind != "f":
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_core._dtype.scalar_type_name(x.dtype)}")
    dims = (dim,) if isinstance(dim, _INT) else tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    d0, d1 = wrap_dim(dims[0], x.ndim), wrap_dim(dims[1], x.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    if dtype is not None:
        a = a.to(dtype)
    if ord == "fro":
        return reduction.norm(a, 2, (d0, d1), keepdim)
    if ord == "nuc":
        return reduction.norm(a, "nuc", (d0, d1), keepdim)
    if ord in (1, -1, float("inf"), -float("inf")):
        summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = reduction.sum(abs_(a), summed, keepdim)
        other = other - 1 if (not keepdim and summed < other) else other
        return (reduction.amax if ord > 0 else reduction.amin)(s, other, keepdim)
    if ord in (2, -2):
        rest = [i for i in range(x.ndim) if i not in (d0, d1)]
        moved = a if (d0, d1) == (x.ndim - 2, x.ndim - 1) else permute(a, rest + [d0, d1])
        out = (reduction.amax if ord > 0 else reduction.amin)(svdvals(moved), -1, keepdim)
        if keepdim:  # torch: back to the input's dim order with a permute, even when trivial
            order = rest + [d0, d1]
            out = permute(unsqueeze(out, -1), tuple(int(i) for i in np.argsort(order)))
        return out
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(a, ord=None, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """torch.linalg.norm: a vector norm for an int ``dim`` (or ``dim=None`` and ``ord=None``,
    over everything), a matrix norm for a 2-tuple ``dim`` or a 2-D input with ``ord`` given."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, _INT) else tuple(dim)
        if len(dims) == 1:
            if isinstance(ord, str):
                raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " + str(dims[0]))
            return vector_norm(a, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(a, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(a, 2, None, keepdim, dtype=dtype)
    if a.ndim not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {a.ndim}D.")
    if a.ndim == 1:
        return vector_norm(a, ord, None, keepdim, dtype=dtype)
    return matrix_norm(a, ord, (-2, -1), keepdim, dtype=dtype)


def cross(a, b, *, dim: int = -1):
    return _cross(a, b, dim)
