"""Reads and writes at given indices, beyond ``x[key]`` (``indexing.py``): ``index_fill``,
``index_copy``, ``masked_scatter``, ``take``, ``put``, ``index_put`` with ``accumulate``, and
``argwhere``. (torch keeps these in ``TensorAdvancedIndexing``; ``scatter``/``gather`` are in
``scatter.py`` and ``indexing.py``.)
"""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core
import engine._ops.indexing as indexing

from ._core import result, unbroadcast, wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["argwhere", "index_copy", "index_fill", "index_put", "masked_scatter", "put", "take"]


def _type_name(dt) -> str:
    return _core._dtype.scalar_type_name(np.dtype(dt))


def _arr(x) -> np.ndarray:
    return x._data if isinstance(x, _core.Tensor) else np.asarray(x)


def _index_vector(index, name: str) -> np.ndarray:
    idx = _arr(index)
    if idx.dtype != np.int64:
        raise IndexError(f"{name}(): Expected dtype int64 for index.")
    return idx.reshape(-1)


def index_fill(input, dim: int, index, value):  # noqa: A002
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value`` (a number
    or a 0-dim tensor, which gets the gradient of the filled slots)."""
    x = input._data
    d = wrap_dim(dim, x.ndim)
    idx = _index_vector(index, "index_fill_")
    n = x.shape[d] if x.ndim else 1
    _bounds(idx, d, n)
    key = (slice(None),) * d + (idx,)
    tv = value if isinstance(value, _core.Tensor) else None
    if tv is not None and tv.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {tv.ndim} "
                           "dimension(s).")
    out = x.copy()
    out[key] = tv._data if tv is not None else value

    def backward(g):
        gx = g.copy()
        gx[key] = 0
        gv = None if tv is None else np.asarray(g[key].sum(), g.dtype)
        return gx, gv

    # torch's two overloads: a Scalar value (IndexFillBackward0) or a 0-dim Tensor (IndexFillBackward1)
    return result(out, "IndexFillBackward1" if tv is not None else "IndexFillBackward0", (input, tv), backward)


def _bounds(idx, d, n):
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"index {int(idx[np.argmax(bad)])} is out of bounds for dimension {d} with size {n}")


def index_copy(input, dim: int, index, source):  # noqa: A002
    """A copy of ``input`` whose slices ``index`` along ``dim`` are ``source``'s slices."""
    x, s = input._data, source._data
    d = wrap_dim(dim, x.ndim)
    idx = _index_vector(index, "index_copy_")
    n_src = s.shape[d] if s.ndim else 1
    if idx.size != n_src:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                         f"({n_src})")
    for i in range(x.ndim):
        if i != d and s.ndim == x.ndim and s.shape[i] != x.shape[i]:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                               f"Destination slice shape: {x.shape[i]} at dimension {d} and source slice "
                               f"shape: {s.shape[i]} at dimension {d}.")
    if s.dtype != x.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_type_name(x.dtype)} and (source) {_type_name(s.dtype)}")
    _bounds(idx, d, x.shape[d] if x.ndim else 1)
    key = (slice(None),) * d + (idx,)
    out = x.copy()
    out[key] = s
    src_shape = s.shape

    def backward(g):
        gx = g.copy()
        gx[key] = 0
        return gx, g[key].reshape(src_shape)

    return result(out, "IndexCopyBackward0", (input, source), backward)


def masked_scatter(input, mask, source):  # noqa: A002
    """A copy of ``input`` where the ``True`` slots of ``mask`` (broadcast to it) take
    ``source``'s elements in row-major order."""
    x, m, s = input._data, _arr(mask), source._data
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_type_name(m.dtype)}")
    if s.dtype != x.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_type_name(x.dtype)} and {_type_name(s.dtype)}")
    shape = np.broadcast_shapes(x.shape, m.shape)
    m = np.broadcast_to(m, shape)
    k = int(m.sum())
    if k > s.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = np.broadcast_to(x, shape).copy()
    out[m] = s.reshape(-1)[:k]
    in_shape, src_shape = x.shape, s.shape

    def backward(g):
        gs = np.zeros(int(np.prod(src_shape)), g.dtype)
        gs[:k] = g[m]
        return unbroadcast(np.where(m, 0, g), in_shape), gs.reshape(src_shape)

    return result(out, "MaskedScatterBackward0", (input, source), backward)


def _flat_index(idx: np.ndarray, n: int) -> np.ndarray:
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])} "
                         f"on a tensor of {n} elements.")
    return np.where(idx < 0, idx + n, idx)


def take(input, index):  # noqa: A002
    """Elements of the flattened ``input`` at ``index`` (negative counts from the end), shaped
    like ``index``."""
    x, i = input._data, _arr(index)
    if i.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_type_name(i.dtype)}")
    flat = _flat_index(i, x.size)
    shape = x.shape

    def backward(g):
        gx = np.zeros(x.size, g.dtype)
        np.add.at(gx, flat.reshape(-1), g.reshape(-1))
        return (gx.reshape(shape),)

    return result(x.reshape(-1)[flat], "TakeBackward0", (input,), backward,
                  tensor_backward=_core.linear_backward("TakeBackward0", backward,
                                                        lambda arr: arr.reshape(-1)[flat]))


def put(input, index, source, accumulate: bool = False):  # noqa: A002
    """A copy of ``input`` with ``source`` written (or added) at the flat positions ``index``."""
    x, i, s = input._data, _arr(index), source._data
    if i.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_type_name(i.dtype)}")
    if i.size != s.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {s.size}, index.numel() = {i.size}")
    if s.dtype != x.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_type_name(x.dtype)} and source.dtype = {_type_name(s.dtype)}")
    flat = _flat_index(i, x.size).reshape(-1)
    out = x.copy().reshape(-1)
    if accumulate:
        np.add.at(out, flat, s.reshape(-1))
    else:
        out[flat] = s.reshape(-1)
    shape, src_shape = x.shape, s.shape

    def backward(g):
        gf = g.reshape(-1)
        gs = gf[flat].reshape(src_shape)
        if accumulate:
            return g, gs
        gx = gf.copy()
        gx[flat] = 0
        return gx.reshape(shape), gs

    return result(out.reshape(shape), "PutBackward0", (input, source), backward)


def index_put(input, indices, values, accumulate: bool = False):  # noqa: A002
    """``input[indices] = values`` out of place (``+=`` with repeats summed when
    ``accumulate``); ``indices`` is a tuple of index tensors, one per leading dim."""
    if isinstance(indices, _core.Tensor):
        raise TypeError("index_put(): argument 'indices' (position 1) must be tuple of Tensors, not Tensor")
    key = tuple(indices)
    if isinstance(values, _core.Tensor) and values._data.dtype != input._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_type_name(input._data.dtype)} for the destination and "
                           f"{_type_name(values._data.dtype)} for the source.")
    if not accumulate:
        return indexing.index_put(input, key, values)
    x = input._data
    k = tuple(_arr(t) for t in key)
    k = tuple(part for t in k for part in (np.nonzero(t) if t.dtype == np.bool_ else (t,)))
    v = values._data
    out = x.copy()
    try:
        np.add.at(out, k, v)
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None
    v_shape = v.shape

    def backward(g):
        gk = g[k]
        return g, unbroadcast(np.broadcast_to(gk, np.broadcast_shapes(gk.shape, v_shape)), v_shape)

    return result(out, "IndexPutBackward0", (input, values), backward)


def argwhere(input):  # noqa: A002
    """The (N, ndim) indices of the non-zero elements: ``nonzero``."""
    return indexing.nonzero(input)
