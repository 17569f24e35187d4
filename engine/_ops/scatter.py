"""Scatter-style writes: scatter, scatter_add, scatter_reduce and index_add (the in-place
``*_`` variants are ``Tensor`` methods that run these through ``Tensor._inplace``).

Every op here addresses ``out[..., index[i, j], ...]`` (``index`` replacing the coordinate of
``dim``) with an integer grid built once (``_positions``); duplicates accumulate with
``np.add.at`` & co. where torch accumulates, and the last write wins for plain ``scatter``
(torch leaves that order unspecified).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

import engine._ops._core as _core

from ._core import result, wrap_dim
from .indexing import _check_bounds

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["index_add", "scatter", "scatter_add", "scatter_reduce"]

_REDUCE_NAMES = ("sum", "prod", "mean", "amax", "amin")


def _index_array(index, name: str) -> np.ndarray:
    idx = index._data if isinstance(index, _core.Tensor) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    return idx


def _check(x: np.ndarray, d: int, idx: np.ndarray, src: np.ndarray | None) -> None:
    """torch's shape and bounds checks (``scatter_gather_shape_check``)."""
    if idx.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and src.ndim < idx.ndim:  # torch reads src.size(d) for each index dim
        wrap_dim(src.ndim, src.ndim)
    if src is not None and src.ndim != idx.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    too_big = any(n > x.shape[i] for i, n in enumerate(idx.shape) if i != d)
    if src is not None:
        too_big = too_big or any(n > s for n, s in zip(idx.shape, src.shape))
    if too_big:
        msg = (f"Expected index {list(idx.shape)} to be no larger than self {list(x.shape)} apart "
               f"from dimension {d}")
        if src is not None:
            msg += f" and to be no larger size than src {list(src.shape)}"
        raise RuntimeError(msg)
    _check_bounds(idx, d, x.shape[d] if x.ndim else 1)


def _positions(idx: np.ndarray, d: int) -> tuple:
    """The NumPy key of the elements ``index`` addresses (``index`` in place of dim ``d``)."""
    grid = list(np.indices(idx.shape, sparse=True))
    grid[d] = idx
    return tuple(grid)


def _crop(src: np.ndarray, shape: tuple) -> np.ndarray:
    """The leading ``shape`` corner of ``src``: torch reads only that much of ``src``."""
    return src[tuple(slice(0, n) for n in shape)]


def _pad_to(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Gradient for ``src`` from its cropped corner: zeros outside it."""
    if g.shape == shape:
        return g
    out = np.zeros(shape, g.dtype)
    out[tuple(slice(0, n) for n in g.shape)] = g
    return out


def _src(a, src, name: str) -> tuple:
    """(src tensor or None, src array or scalar) with torch's dtype check for tensors."""
    if isinstance(src, _core.Tensor):
        if src._data.dtype != a._data.dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
        return src, src._data
    return None, src


def scatter(a, dim: int, index, src=None, *, value=None, reduce: str | None = None):
    """A copy of ``a`` with ``src`` (a tensor or a number) written at ``index`` along ``dim``.
    ``reduce='add'``/``'multiply'`` accumulate instead (not differentiable, as in torch)."""
    if src is None:
        src = value
    x = a._data
    d = wrap_dim(dim, x.ndim)
    idx = _index_array(index, "scatter")
    ts, s = _src(a, src, "scatter")
    _check(x, d, idx, s if ts is not None else None)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and ts is not None:
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
                      "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                      "options.", UserWarning, stacklevel=2)
    key = _positions(idx, d)
    vals = _crop(s, idx.shape) if ts is not None else s
    out = x.copy()
    if reduce == "add":
        np.add.at(out, key, vals)
    elif reduce == "multiply":
        np.multiply.at(out, key, vals)
    else:
        out[key] = vals
    if reduce is not None:
        def not_implemented(*_):
            raise RuntimeError("derivative for aten::scatter is not implemented")
        return result(out, "NotImplemented", (a, ts), not_implemented)
    src_shape = s.shape if ts is not None else None

    def backward(g):
        gx = g.copy()
        gx[key] = 0
        return gx, (_pad_to(g[key], src_shape) if ts is not None else None)

    return result(out, "ScatterBackward0" if ts is not None else "ScatterBackward1", (a, ts), backward)


def scatter_add(a, dim: int, index, src):
    """A copy of ``a`` plus ``src`` summed into the positions ``index`` names along ``dim``."""
    if not isinstance(src, _core.Tensor):
        raise TypeError(f"scatter_add(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}")
    x = a._data
    d = wrap_dim(dim, x.ndim)
    idx = _index_array(index, "scatter")
    ts, s = _src(a, src, "scatter")
    _check(x, d, idx, s)
    key = _positions(idx, d)
    out = x.copy()
    np.add.at(out, key, _crop(s, idx.shape))
    src_shape = s.shape
    return result(out, "ScatterAddBackward0", (a, ts), lambda g: (g, _pad_to(g[key], src_shape)))


def scatter_reduce(a, dim: int, index, src, reduce: str, *, include_self: bool = True):
    """Reduce ``src`` into ``a`` at ``index`` along ``dim`` with ``sum``, ``prod``, ``mean``,
    ``amax`` or ``amin``; ``include_self=False`` leaves out ``a``'s own values where anything
    lands. Differentiable for every reduction (amax/amin share the gradient among ties)."""
    if reduce not in _REDUCE_NAMES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    x = a._data
    d = wrap_dim(dim, x.ndim)
    idx = _index_array(index, "scatter")
    ts, s = _src(a, src, "scatter")
    _check(x, d, idx, s)
    key = _positions(idx, d)
    vals = _crop(s, idx.shape)
    hit = np.zeros(x.shape, bool)
    hit[key] = True
    counts = np.zeros(x.shape, np.int64)
    np.add.at(counts, key, 1)
    base = x.copy()
    if not include_self:  # start from the reduction's identity where something lands
        identity = {"sum": 0, "mean": 0, "prod": 1, "amax": _lowest(x.dtype), "amin": _highest(x.dtype)}
        base[hit] = identity[reduce]
    out = base.copy()
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}
    ufunc[reduce].at(out, key, vals)
    if reduce == "mean":
        n = counts + (1 if include_self else 0)
        n = np.where(n == 0, 1, n)
        out = (out / n).astype(x.dtype) if x.dtype.kind == "f" else out // n
    backward = _reduce_backward(reduce, x, vals, out, key, hit, counts, include_self, s.shape)
    return result(out, "ScatterReduceBackward0", (a, ts), backward, saved=(a, ts), save_output=True)


def _lowest(dt: np.dtype):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt: np.dtype):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


def _reduce_backward(reduce, x, vals, out, key, hit, counts, include_self, src_shape) -> Callable:
    self_counts = ~hit | include_self  # does a's own value take part at each position?

    def backward(g):
        if reduce == "sum":
            gx, gs = np.where(self_counts, g, 0).astype(g.dtype), g[key]
        elif reduce == "mean":
            n = np.where(counts + self_counts == 0, 1, counts + self_counts).astype(g.dtype)
            gx, gs = np.where(self_counts, g / n, 0).astype(g.dtype), (g / n)[key]
        elif reduce == "prod":
            gx, gs = _prod_grads(g, x, vals, out, key, self_counts)
        else:  # amax / amin: the grad is shared by every contributor equal to the result
            self_tie = self_counts & (x == out)
            src_tie = vals == out[key]
            ties = self_tie.astype(np.int64)
            np.add.at(ties, key, src_tie)
            share = g / np.where(ties == 0, 1, ties).astype(g.dtype)
            gx, gs = np.where(self_tie, share, 0).astype(g.dtype), np.where(src_tie, share[key], 0)
        return gx, _pad_to(np.asarray(gs, g.dtype), src_shape)

    return backward


def _prod_grads(g, x, vals, out, key, self_counts):
    """Gradient of a product of a group: the product of the group's other members, computed
    without dividing by zeros (one zero: the others' product; two or more: zero)."""
    zeros = np.where(self_counts, x == 0, False).astype(np.int64)
    np.add.at(zeros, key, vals == 0)
    nonzero_prod = np.where(self_counts & (x != 0), x, 1).astype(g.dtype)
    np.multiply.at(nonzero_prod, key, np.where(vals == 0, 1, vals))

    def others(v, z, p, o):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v != 0, o / np.where(v == 0, 1, v), np.where(z == 1, p, 0))

    gx = np.where(self_counts, g * others(x, zeros, nonzero_prod, out), 0)
    gs = g[key] * others(vals, zeros[key], nonzero_prod[key], out[key])
    return gx.astype(g.dtype), gs


def index_add(a, dim: int, index, source, *, alpha=1):
    """A copy of ``a`` with ``alpha * source`` added to the slices ``index`` names along
    ``dim`` (repeated indices accumulate)."""
    x = a._data
    d = wrap_dim(dim, x.ndim)
    idx = index._data if isinstance(index, _core.Tensor) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{_core._dtype.scalar_type_name(idx.dtype)}")
    if idx.ndim > 1:
        raise IndexError(
            f"index_add_(): Index is supposed to be a vector, but got dim: {idx.ndim} with type: "
            f"{_core._dtype.scalar_type_name(idx.dtype)} and size: {list(idx.shape)}"
        )
    s = source._data
    if s.dtype != x.dtype:
        raise RuntimeError(
            f"index_add_(): self ({_core._dtype.scalar_type_name(x.dtype)}) and source "
            f"({_core._dtype.scalar_type_name(s.dtype)}) must have the same scalar type"
        )
    idx = idx.reshape(-1)
    n_src = s.shape[d] if s.ndim else 1
    if idx.size != n_src:
        raise RuntimeError(
            f"index_add_(): Number of indices ({idx.size}) should be equal to source.size(dim): "
            f"({n_src}), for dim: {dim}"
        )
    if s.ndim and (s.ndim != x.ndim or any(s.shape[i] != x.shape[i] for i in range(x.ndim) if i != d)):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. "
            f"Got self.shape = {list(x.shape)} source.shape = {list(s.shape)}"
        )
    _check_bounds(idx, d, x.shape[d] if x.ndim else 1)
    key = (slice(None),) * d + (idx,)
    out = x.copy()
    np.add.at(out, key, s * alpha if alpha != 1 else s)
    src_shape = s.shape

    def backward(g):
        gs = np.take(g, idx, axis=d) if g.ndim else g
        return g, (gs * alpha if alpha != 1 else gs).reshape(src_shape)

    return result(out, "IndexAddBackward0", (a, source), backward)
