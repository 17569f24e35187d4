"""Shape functions torch itself builds from other ops, built the same way here so their graphs
(and ``grad_fn`` names) are torch's: ``tile`` is ``repeat``, ``movedim`` is ``permute``,
``broadcast_tensors`` is ``expand``, ``hstack``/``vstack``/``column_stack`` are ``cat`` of
``atleast_*d`` views, ``repeat_interleave`` is ``expand`` + ``clone`` + ``view`` (an int) or
``index_select`` (a tensor of counts)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import engine._ops._core as _core
import engine._ops.shape as _shape

from .._tensor import Size
from ._core import broadcast_error, wrap_dim
from .indexing import index_select

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "column_stack",
           "hstack", "moveaxis", "movedim", "repeat_interleave", "row_stack", "tile", "vstack"]


def tile(a, *dims):
    """``a`` repeated ``dims`` times along each dimension; fewer dims than ``a.ndim`` are padded
    with leading 1s (unlike ``repeat``)."""
    dims = _shape._sizes(dims)
    return _shape.repeat(a, *((1,) * (a.ndim - len(dims)) + tuple(dims)))


def movedim(a, source, destination):
    """Dimensions ``source`` moved to ``destination`` (ints or sequences), the rest in order."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    src = tuple(_core.wrap_dim(d, a.ndim) for d in src)
    dst = tuple(_core.wrap_dim(d, a.ndim) for d in dst)
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(dims)})")
    order: list = [None] * a.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(a.ndim) if d not in src)
    return _shape.permute(a, *[next(rest) if o is None else o for o in order])


def broadcast_shapes(*shapes) -> tuple:
    """The shape all ``shapes`` broadcast to, with torch's error naming the first misfit."""
    result: list[int] = []
    for index, shape in enumerate(shapes):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        for k in range(1, len(shape) + 1):
            size = shape[-k]
            if size == result[-k] or size == 1:
                continue
            if result[-k] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {size} at {-k}! Mismatching "
                                   f"argument at index {index} had {shape}; but expected shape should be "
                                   f"broadcastable to {result}")
            result[-k] = size
    return Size(result)


def broadcast_tensors(*tensors):
    """Every tensor expanded to the common shape (a tensor already of that shape is returned
    as it is)."""
    if len(tensors) == 1 and isinstance(tensors[0], Sequence):
        tensors = tuple(tensors[0])
    shape = ()
    for t in tensors:
        try:
            shape = np.broadcast_shapes(shape, tuple(t.shape))
        except ValueError:
            raise broadcast_error(shape, tuple(t.shape)) from None
    return tuple(t if tuple(t.shape) == shape else _shape.expand(t, *shape) for t in tensors)


def atleast_1d(*tensors):
    return _each(tensors, lambda t: _shape.reshape(t, (1,)) if t.ndim == 0 else t)


def atleast_2d(*tensors):
    return _each(tensors, lambda t: _shape.reshape(t, (1, 1)) if t.ndim == 0
                 else _shape.unsqueeze(t, 0) if t.ndim == 1 else t)


def atleast_3d(*tensors):
    def one(t):
        if t.ndim == 0:
            return _shape.reshape(t, (1, 1, 1))
        if t.ndim == 1:
            return _shape.unsqueeze(_shape.unsqueeze(t, 0), -1)
        return _shape.unsqueeze(t, -1) if t.ndim == 2 else t
    return _each(tensors, one)


def _each(tensors, fn):
    if len(tensors) == 1 and not isinstance(tensors[0], Sequence):
        return fn(tensors[0])
    items = tensors[0] if len(tensors) == 1 else tensors
    return tuple(fn(t) for t in items)


def _tensor_list(name: str, tensors) -> list:
    items = list(tensors)
    for i, t in enumerate(items):
        if not isinstance(t, _core.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return items


def hstack(tensors):
    items = [atleast_1d(t) for t in _tensor_list("hstack", tensors)]
    return _shape.cat(items, 0 if items and items[0].ndim == 1 else 1)


def vstack(tensors):
    return _shape.cat([atleast_2d(t) for t in _tensor_list("vstack", tensors)], 0)


def column_stack(tensors):
    items = [_shape.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t
             for t in _tensor_list("column_stack", tensors)]
    return _shape.cat(items, 1)


# torch's other names for the ops above
moveaxis = movedim
row_stack = vstack


def repeat_interleave(a, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (or slice along ``dim``) ``repeats`` times. An int gives torch's
    unsqueeze/expand/clone/view chain; a tensor of counts an ``index_select``. With only a
    tensor of counts, ``repeat_interleave(counts)`` returns the repeated positions."""
    if repeats is None:  # torch.repeat_interleave(repeats): indices 0..n-1, each repeated
        counts = _check_repeats(a._data)
        return _core.Tensor._wrap(np.repeat(np.arange(counts.size, dtype=np.int64), counts))
    src = _shape.flatten(a) if dim is None else a
    d = 0 if dim is None else wrap_dim(dim, a.ndim)
    if isinstance(repeats, int | np.integer):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        shape = src.shape
        expanded = _shape.expand(_shape.unsqueeze(src, d + 1), shape[:d + 1] + (int(repeats),) + shape[d + 1:])
        copied = _core.result(np.ascontiguousarray(expanded._data), "CloneBackward0", (expanded,), lambda g: (g,),
                        tensor_backward=_shape._identity)
        return _shape.view(copied, shape[:d] + (shape[d] * int(repeats),) + shape[d + 1:])
    counts = repeats._data if isinstance(repeats, _core.Tensor) else np.asarray(repeats)
    if counts.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    counts = counts.reshape(-1)
    n = src.shape[d] if src.ndim else 1
    if counts.size == 1 and n != 1:
        counts = np.broadcast_to(counts, (n,))
    if counts.size != n:
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{counts.size} and input.size({d}) = {n}"
        )
    counts = _check_repeats(counts)
    if output_size is not None and int(counts.sum()) != output_size:
        raise RuntimeError("allocated size does not match required size")
    index = _core.Tensor._wrap(np.repeat(np.arange(n, dtype=np.int64), counts))
    return index_select(src, d, index)


def _check_repeats(counts: np.ndarray) -> np.ndarray:
    if counts.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if counts.dtype.kind not in "iu":
        raise RuntimeError("repeats has to be Long or Int tensor")
    if counts.size and counts.min() < 0:
        raise RuntimeError("repeats can not be negative")
    return counts.reshape(-1).astype(np.int64)
