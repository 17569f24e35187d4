"""Ops that build new tensors from sizes or from other tensors: ``triu_indices``/
``tril_indices``, ``cartesian_prod``, ``combinations``, ``block_diag``, ``vander``,
``diag_embed`` and ``diagflat``.
"""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core
import engine._ops.indexing as indexing
import engine._ops.reduction as reduction
import engine._ops.shape as _shape

from ._core import result, wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["block_diag", "cartesian_prod", "combinations", "diag_embed", "diagflat", "tril_indices", "triu_indices",
           "vander"]


def _indices(fn, row, col, offset, dtype):
    npdt = np.int64 if dtype is None else _core._dtype.to_numpy_dtype(dtype)
    r, c = fn(row, offset, col)
    return _core.Tensor._wrap(np.stack([r, c]).astype(npdt).reshape(2, -1))


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The (2, N) row/column indices of the upper triangle of a ``row x col`` matrix."""
    return _indices(np.triu_indices, row, col, offset, dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The (2, N) row/column indices of the lower triangle of a ``row x col`` matrix."""
    return _indices(np.tril_indices, row, col, offset, dtype)


def _vector_check(t):
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (``meshgrid`` then
    ``stack``, as torch does); a single tensor comes back as it is."""
    for t in tensors:
        _vector_check(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = _shape.meshgrid(*tensors, indexing="ij")
    return _shape.stack([_shape.flatten(g) for g in grids], 1)


def combinations(input, r: int = 2, with_replacement: bool = False):  # noqa: A002
    """All length-``r`` combinations of the elements of a 1-D tensor, as rows."""
    _vector_check(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _core.Tensor._wrap(np.zeros((0,), input._data.dtype))
    n = input.shape[0]
    grid = np.indices((n,) * r).reshape(r, -1)
    steps = np.diff(grid, axis=0)
    keep = ((steps >= 0) if with_replacement else (steps > 0)).all(axis=0)
    picks = grid[:, keep]
    return _shape.stack([indexing.index_select(input, 0, _core.Tensor._wrap(p.astype(np.int64)))
                         for p in picks], 1)


def block_diag(*tensors):
    """A block-diagonal matrix of the inputs (0-d as 1x1, 1-d as one row)."""
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        mats.append(t._data.reshape((1, 1) if t.ndim == 0 else (1, -1) if t.ndim == 1 else t.shape))
    dt = _core._dtype.result_type_many(*[t._data for t in tensors]) if len(tensors) > 1 else (
        tensors[0]._data.dtype if tensors else _core.default_float())
    rows, cols = sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)
    out = np.zeros((rows, cols), dt)
    spans, r, c = [], 0, 0
    for m in mats:  # one block per input tensor
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        spans.append((r, c, m.shape))
        r, c = r + m.shape[0], c + m.shape[1]
    shapes = [t._data.shape for t in tensors]
    dtypes = [t._data.dtype for t in tensors]

    def backward(g):
        return tuple(g[r:r + s[0], c:c + s[1]].reshape(shape).astype(dt_in, copy=False)
                     if dt_in.kind == "f" else None
                     for (r, c, s), shape, dt_in in zip(spans, shapes, dtypes))

    return result(out, "BlockDiagBackward0", tensors, backward)


def vander(x, N=None, increasing: bool = False):  # noqa: N803 - torch's name
    """The Vandermonde matrix: columns are powers of ``x`` (decreasing unless ``increasing``);
    a ``cumprod`` of ``[1, x, x, ...]`` then a ``flip``, as torch builds it."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    src = x if x._data.dtype.kind in "fc" else x.to(_core._dtype._by_name("int64"))
    ones = _core.Tensor._wrap(np.ones((x.shape[0], 1), src._data.dtype))
    if n == 0:
        out = _core.Tensor._wrap(np.zeros((x.shape[0], 0), src._data.dtype))
    elif n == 1:
        out = ones
    else:
        rest = _shape.expand(_shape.unsqueeze(src, 1), x.shape[0], n - 1)
        out = reduction.cumprod(_shape.cat([ones, rest], 1), 1)
    return out if increasing else _shape.flip(out, 1)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: A002
    """Matrices whose diagonal (``offset``) in dims ``dim1``/``dim2`` of the result is the last
    dim of ``input``."""
    x = input._data
    nd = x.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] + abs(offset)
    square = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    _shape._diagonal_view(square, offset, nd - 2, nd - 1)[...] = x
    out = np.moveaxis(square, (-2, -1), (d1, d2))

    def backward(g):
        return (np.diagonal(g, offset, d1, d2).copy(),)

    return result(out.copy(), "DiagEmbedBackward0", (input,), backward)


def diagflat(input, offset: int = 0):  # noqa: A002
    """A matrix with the flattened ``input`` on diagonal ``offset``."""
    return _shape.diag(_shape.reshape(input, (-1,)), offset)
