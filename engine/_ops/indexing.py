"""Indexing: ``x[key]``, ``x[key] = v``, gather and index_select.

``getitem`` applies a key the way torch does: ints, slices and ``None`` one at a time as views
(``shape.select``, ``shape.slice_dim``, ``shape.unsqueeze``: ``SelectBackward0``, ``SliceBackward0``,
``UnsqueezeBackward0``), then every integer-array or
boolean-mask index at once (``IndexBackward0``, a copy). ``index_put`` is the out-of-place half
of ``x[key] = v``; ``Tensor.__setitem__`` turns it into an in-place update (``CopySlices``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine._ops._core as _core

from ._core import result, unbroadcast, wrap_dim
from .pointwise import where as where_
from .shape import expand, reshape, select, slice_dim, unsqueeze, view_op

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["gather", "index_select", "masked_select", "nonzero", "take_along_dim", "where"]


def _normalise_key(key: Any) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, _core.Tensor):
            k = k._data
            if k.ndim == 0 and k.dtype.kind in "iu":
                k = int(k)
        elif isinstance(k, list):
            k = np.asarray(k)
        elif isinstance(k, np.integer):
            k = int(k)
        if isinstance(k, np.ndarray) and k.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        out.append(k)
    return tuple(out)


def _consumed(k) -> int:
    if k is None:
        return 0
    if isinstance(k, np.ndarray) and k.dtype == np.bool_:
        return max(k.ndim, 1) if k.ndim else 0
    return 1


def _expand_ellipsis(key: tuple, ndim: int) -> tuple:
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(k) for k in key if k is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if n_ell == 0:
        return key
    i = next(i for i, k in enumerate(key) if k is Ellipsis)
    return key[:i] + (slice(None),) * (ndim - used) + key[i + 1:]


def getitem(a, key: Any):
    if isinstance(key, slice):  # torch records a lone slice even when it covers everything
        return slice_dim(a, 0, key.start, key.stop, key.step)
    key = _expand_ellipsis(_normalise_key(key), a.ndim)
    out, dim, advanced = a, 0, []
    for k in key:
        if k is None:
            out = unsqueeze(out, dim)
            dim += 1
        elif isinstance(k, int) and not isinstance(k, bool):
            out = select(out, dim, k)
        elif isinstance(k, slice):
            if k != slice(None):
                out = slice_dim(out, dim, k.start, k.stop, k.step)
            dim += 1
        else:  # integer array, boolean mask, or a Python bool
            arr = np.asarray(k)
            advanced.append((dim, arr))
            dim += _consumed(arr) if arr.dtype == np.bool_ else 1
    if not advanced:
        return out if out is not a else _alias(a)
    return _index(out, advanced)


def _alias(a):
    """``x[:]`` and ``x[...]``: a view of the whole tensor."""
    return view_op(a, a._data.view(), "AliasBackward0", lambda g: (g,), lambda arr: arr)


def _index(a, advanced: list[tuple[int, np.ndarray]]):
    x = a._data
    full: list[Any] = []
    pos = 0
    for d, arr in advanced:
        full += [slice(None)] * (d - pos)
        if arr.dtype == np.bool_:
            _check_mask(arr, x.shape, d)
            full += list(np.nonzero(arr)) if arr.ndim else [arr]
            pos = d + max(arr.ndim, 0)
        else:
            full.append(arr)
            pos = d + 1
    key = tuple(full)
    try:
        out = x[key]
    except IndexError as e:
        raise IndexError(_torch_index_message(str(e))) from None
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        np.add.at(gx, key, g)
        return (gx,)

    return result(np.ascontiguousarray(out), "IndexBackward0", (a,), backward,
                  tensor_backward=_core.linear_backward("IndexBackward0", backward,
                                                        lambda arr: np.ascontiguousarray(arr[key])))


def _check_mask(mask: np.ndarray, shape: tuple, d: int) -> None:
    for i, n in enumerate(mask.shape):
        if d + i >= len(shape) or shape[d + i] != n:
            raise IndexError(
                f"The shape of the mask {list(mask.shape)} at index {i} does not match the shape "
                f"of the indexed tensor {list(shape)} at index {d + i}"
            )


def _torch_index_message(msg: str) -> str:
    return msg.replace("axis", "dimension")


def index_put(a, key: Any, value):
    """Out-of-place ``x[key] = value`` for advanced keys (``IndexPutBackward0``, as in torch)."""
    key = _expand_ellipsis(_normalise_key(key), a.ndim)
    key = tuple(np.nonzero(k) if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim
                else (k,) for k in key)
    key = tuple(part for group in key for part in group)
    tv = value if isinstance(value, _core.Tensor) else None
    v = tv._data if tv is not None else value
    x = a._data
    out = x.copy()
    try:
        out[key] = v
    except IndexError as e:
        raise IndexError(_torch_index_message(str(e))) from None
    except ValueError:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(np.shape(v))} cannot be broadcast to "
            f"indexing result of shape {list(x[key].shape)}"
        ) from None
    v_shape = np.shape(v)

    def backward(g):
        gx = g.copy()
        gx[key] = 0
        gv = None
        if tv is not None and tv._requires_grad:
            gk = g[key]
            gv = unbroadcast(np.broadcast_to(gk, np.broadcast_shapes(gk.shape, v_shape)), v_shape)
        return gx, gv

    return result(out, "IndexPutBackward0", (a, tv), backward)


def gather(a, dim: int, index):
    x, idx = a._data, index._data
    d = wrap_dim(dim, x.ndim)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("gather(): Expected dtype int64 for index")
    if idx.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i, (ni, nx) in enumerate(zip(idx.shape, x.shape)):
        if i != d and ni > nx:
            raise RuntimeError(
                f"Size does not match at dimension {i} expected index {list(idx.shape)} to be "
                f"smaller than self {list(x.shape)} apart from dimension {d}"
            )
    _check_bounds(idx, d, x.shape[d])
    grid = list(np.indices(idx.shape, sparse=True))
    grid[d] = idx
    key = tuple(grid)
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        np.add.at(gx, key, g)
        return (gx,)

    return result(x[key], "GatherBackward0", (a,), backward)


def _check_bounds(idx: np.ndarray, d: int, n: int) -> None:
    """torch's error for the first index outside ``[0, n)`` (negative indices are errors)."""
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        raise RuntimeError(
            f"index {int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])} is out of bounds for "
            f"dimension {d} with size {n}"
        )


def index_select(a, dim: int, index):
    x, idx = a._data, index._data if isinstance(index, _core.Tensor) else np.asarray(index)
    d = wrap_dim(dim, x.ndim)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = idx.reshape(-1)
    if idx.size and (idx.min() < -x.shape[d] or idx.max() >= x.shape[d]):
        raise IndexError("index out of range in self")
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        np.add.at(gx, (slice(None),) * d + (idx,), g)
        return (gx,)

    return result(np.take(x, idx, axis=d), "IndexSelectBackward0", (a,), backward)


def take_along_dim(a, indices, dim=None):
    """``gather`` after broadcasting ``a`` and ``indices`` against each other except along
    ``dim``; ``dim=None`` gathers from the flattened tensor."""
    idx = indices._data
    if idx.dtype.kind not in "iu" or idx.dtype != np.int64:
        raise RuntimeError(
            "torch.take_along_dim(): dtype of indices should be Long but got "
            f"{_core._dtype.scalar_type_name(idx.dtype)}"
        )
    if dim is None:
        return gather(reshape(a, -1), 0, reshape(indices, -1))
    if a.ndim != indices.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, "
            f"but got {a.ndim} dimensions for input, and {indices.ndim} dimensions for indices"
        )
    d = wrap_dim(dim, a.ndim)
    rest_a = a.shape[:d] + (1,) + a.shape[d + 1:]
    rest_i = idx.shape[:d] + (1,) + idx.shape[d + 1:]
    try:
        common = list(np.broadcast_shapes(rest_a, rest_i))
    except ValueError:
        raise _core.broadcast_error(rest_a, rest_i) from None
    a_shape = tuple(common[:d] + [a.shape[d]] + common[d + 1:])
    i_shape = tuple(common[:d] + [idx.shape[d]] + common[d + 1:])
    a = a if a.shape == a_shape else expand(a, a_shape)
    indices = indices if indices.shape == i_shape else expand(indices, i_shape)
    return gather(a, d, indices)


def nonzero(a, *, as_tuple: bool = False):
    """Indices (int64) of the non-zero elements: an (n, ndim) tensor, or one 1-D tensor per
    dim with ``as_tuple=True``."""
    x = a._data
    if as_tuple:
        return tuple(_core.Tensor._wrap(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(x)))
    return _core.Tensor._wrap(np.argwhere(x).astype(np.int64))


def masked_select(a, mask):
    """The elements of ``a`` where ``mask`` (bool, broadcast with ``a``) is True, as 1-D."""
    m = mask._data if isinstance(mask, _core.Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    x = a._data
    try:
        shape = np.broadcast_shapes(m.shape, x.shape)
    except ValueError:
        raise _core.broadcast_error(m.shape, x.shape) from None
    full_mask = np.broadcast_to(m, shape)
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(shape, g.dtype)
        gx[full_mask] = g
        return (unbroadcast(gx, in_shape),)

    return result(np.broadcast_to(x, shape)[full_mask], "MaskedSelectBackward0", (a,), backward)


def where(condition, input=None, other=None):  # noqa: A002 - torch's names
    """``input`` where ``condition`` else ``other`` (either may be a number); with only a
    condition, the indices of its non-zero elements (``nonzero(as_tuple=True)``)."""
    if input is None and other is None:
        return nonzero(_core.to_tensor(condition), as_tuple=True)
    if isinstance(input, _core.Tensor) or isinstance(other, _core.Tensor):
        return where_(condition, input, other)
    # two Python numbers: torch's scalar typing (bool, int64, or the default float)
    kinds = {type(v) for v in (input, other)}
    dt = (np.bool_ if kinds == {bool} else _core.default_float()
          if float in kinds or any(isinstance(v, float | np.floating) for v in (input, other))
          else np.int64)
    out = where_(condition, _core.Tensor._wrap(np.asarray(input, dt)), other)
    return out if out._data.dtype == dt else _core.Tensor._wrap(out._data.astype(dt))
