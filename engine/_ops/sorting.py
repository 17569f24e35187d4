"""Ordering ops: sort, argsort, msort, topk, unique, searchsorted, bucketize, bincount.

Sorting is always stable here (torch's unstable sort may order ties differently; ``stable=True``
results match torch's exactly). NaN sorts as the largest value, as in torch. Indices are int64.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

import engine._ops._core as _core

from .._tensor import Tensor
from ._core import multi_result, wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["argsort", "bincount", "bucketize", "msort", "searchsorted", "sort", "topk", "unique"]

# torch.return_types equivalents: ``values, indices = x.sort()`` and ``.values`` both work.
sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])


def _order(x: np.ndarray, d: int, descending: bool) -> np.ndarray:
    """Stable argsort along ``d``; descending keeps equal elements in their original order."""
    if not descending:
        return np.argsort(x, axis=d, kind="stable")
    n = x.shape[d]
    rev = np.argsort(np.flip(x, d), axis=d, kind="stable")  # ties come out last-first ...
    return np.flip(n - 1 - rev, d)  # ... so reversing restores first-first among ties


def _pick_backward(shape: tuple, idx: np.ndarray, d: int | None):
    """Gradient of taking ``idx`` along ``d``: each grad goes back to the slot it came from."""
    def backward(g, *_ignored):
        if d is None:
            return (np.array(g, copy=True).reshape(shape),)
        gx = np.zeros(shape, g.dtype)
        np.put_along_axis(gx, idx, g, axis=d)
        return (gx,)

    return backward


def sort(a, dim: int = -1, descending: bool = False, *, stable: bool | None = None):
    """``(values, indices)`` along ``dim``; the node is ``SortBackward1`` when ``stable`` is
    given, ``SortBackward0`` otherwise (torch's two overloads)."""
    x = a._data
    d = wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        values, idx, d_ = x.copy(), np.zeros((), np.int64), None
    else:
        idx = _order(x, d, descending).astype(np.int64, copy=False)
        values, d_ = np.take_along_axis(x, idx, axis=d), d
    name = "SortBackward0" if stable is None else "SortBackward1"
    v, i = multi_result([values, idx], name, (a,), _pick_backward(x.shape, idx, d_),
                        differentiable=(True, False))
    return sort_result(v, i)


def msort(input):  # noqa: A002
    """Sorted along dim 0 (the values of ``sort(input, 0)``)."""
    return sort(input, 0).values


def argsort(a, dim: int = -1, descending: bool = False, *, stable: bool = False):
    x = a._data
    d = wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        return Tensor._wrap(np.zeros((), np.int64))
    return Tensor._wrap(_order(x, d, descending).astype(np.int64, copy=False))


def topk(a, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest) along ``dim`` as ``(values, indices)``, in order (the
    engine always returns them sorted; torch's ``sorted=False`` order is unspecified)."""
    x = a._data
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if x.ndim == 0:
        values, idx, d_ = x.copy(), np.zeros((), np.int64), None
    else:
        order = _order(x, d, largest)
        idx = np.take(order, np.arange(k), axis=d).astype(np.int64, copy=False)
        values, d_ = np.take_along_axis(x, idx, axis=d), d
    v, i = multi_result([values, idx], "TopkBackward0", (a,), _pick_backward(x.shape, idx, d_),
                        differentiable=(True, False))
    return topk_result(v, i)


def unique(a, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The distinct values (always sorted, which torch allows for ``sorted=False``), with the
    inverse map (input-shaped, int64) and the counts when asked. Not differentiable: as in
    torch, the values of an input that requires grad get a node whose backward raises."""
    x = a._data
    if dim is None:
        vals, inv, counts = np.unique(x.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(x.shape)
    else:
        d = wrap_dim(dim, x.ndim)
        vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    op = "_unique2" if dim is None else "unique_dim"

    def not_implemented(*_):
        raise RuntimeError(f"the derivative for '{op}' is not implemented.")

    name = "Unique2Backward0" if dim is None else "UniqueDimBackward0"
    outs = multi_result([np.ascontiguousarray(vals), inv.astype(np.int64), counts.astype(np.int64)],
                        name, (a,), not_implemented, differentiable=(True, False, False))
    picked = [outs[0]] + [o for o, want in zip(outs[1:], (return_inverse, return_counts)) if want]
    return picked[0] if len(picked) == 1 else tuple(picked)


def _side(right: bool, side: str | None) -> str:
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side "
                           "of left while right was True")
    return side


def searchsorted(sorted_sequence, values, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter=None):
    """Insertion points of ``values`` into the last dim of ``sorted_sequence`` (1-D, or with
    leading dims matching those of ``values``)."""
    how = _side(right, side)
    seq = sorted_sequence._data
    scalar = not isinstance(values, Tensor)
    v = np.asarray(values) if scalar else values._data
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data, axis=-1)
    if seq.ndim > 1 and seq.shape[:-1] != v.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(v.shape)}"
        )
    if seq.ndim <= 1:
        out = np.searchsorted(seq, v, side=how)
    else:  # one search per row: count the boundaries below each value (vectorised)
        below = seq[..., None, :] < v[..., :, None] if how == "left" else seq[..., None, :] <= v[..., :, None]
        out = below.sum(-1)
    return Tensor._wrap(np.asarray(out, np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):  # noqa: A002
    """For each value, the index of its bucket in the 1-D ``boundaries``; ``right=False``
    puts a value equal to a boundary in the bucket on that boundary's left."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def bincount(input, weights=None, minlength: int = 0):  # noqa: A002
    """Occurrences of each non-negative integer (int64), or the sums of their ``weights``
    (float64 unless the weights are float32, as in torch)."""
    x = input._data
    if x.dtype.kind not in "biu":
        raise NotImplementedError(
            f"\"bincount_cpu\" not implemented for '{_core._dtype.scalar_type_name(x.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return Tensor._wrap(np.bincount(x, minlength=minlength).astype(np.int64))
    w = weights._data
    if w.ndim != 1 or w.shape[0] != x.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dt = np.float32 if w.dtype == np.float32 else np.float64
    return Tensor._wrap(np.bincount(x, weights=w, minlength=minlength).astype(out_dt))
