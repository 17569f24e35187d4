"""Shape ops: views (view, reshape, squeeze, permute, expand, select, slice, narrow, ...) and joins
(cat, stack, split).

A view shares memory and the version counter with its base, as in torch, and remembers how to
re-derive itself from the base (``_view_fn``): an in-place op on a view then rewrites the base's
graph (``CopySlices``), see ``engine._tensor``. ``reshape`` is a view when NumPy can make one,
else ``clone`` + ``_unsafe_view``: the same nodes torch records.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np

import engine._ops._core as _core
import engine.autograd.grad_mode as _grad_mode

from .. import _memory_format as _mf
from .._size import sizes as _sizes
from .._tensor import mark_creation, mark_view_history
from ._core import multi_result, result, wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["broadcast_to", "cat", "chunk", "clone", "concat", "concatenate", "diag", "diagonal", "flatten", "flip",
           "meshgrid", "narrow", "permute", "repeat", "reshape", "roll", "select", "split", "squeeze", "stack",
           "swapaxes", "t", "tensor_split", "transpose", "tril", "triu", "unbind", "unflatten", "unsqueeze"]


def mark_view(out, base, view_fn: Callable[[np.ndarray], np.ndarray]):
    """Make ``out`` a view of ``base``: shared version counter, replayable from the root base,
    and torch's creation meta when made under no_grad or from a marked view (``mark_creation``)."""
    out._version_counter = base._version_counter
    if out._requires_grad:  # its node is re-derived after in-place changes of the memory (torch's rule)
        mark_view_history(out)
    if base._base is None:
        out._base, out._view_fn = base, view_fn
    else:
        parent = base._view_fn
        out._base, out._view_fn = base._base, (lambda arr: view_fn(parent(arr)))
    if base._creation_meta is not None or not _grad_mode._state.enabled:  # torch's CreationMeta
        mark_creation(out, base)  # (a view of an unbind/split output is refused updates as it is)
    return out


def view_op(a, data: np.ndarray, name: str, backward, view_fn):
    """A view op: ``backward`` is linear in the gradient and ``view_fn`` is the op on arrays,
    which together make its tensor backward (double backward)."""
    return mark_view(result(data, name, (a,), backward,
                            tensor_backward=_core.linear_backward(name, backward, view_fn)), a, view_fn)


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """torch's ``infer_size``: sizes checked left to right (a second -1, then a negative size,
    each raised where met), then the element count, then an ambiguous -1 among zeros."""
    if -1 not in shape and math.prod(shape) == numel and min(shape, default=0) >= 0:
        return shape  # the common case, checked without the loop below (runs for every view)
    known, infer = 1, None
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s >= 0:
            known *= s
        else:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if numel == known or (infer is not None and known > 0 and numel % known == 0):
        if infer is None:
            return shape
        if known == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        return shape[:infer] + (numel // known,) + shape[infer + 1:]
    raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")


def _try_view(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    try:
        if x.flags.c_contiguous:  # always a view; the method skips np.reshape's dispatch (per-op cost)
            return x.reshape(shape)
        return np.reshape(x, shape, copy=False)
    except ValueError:
        return None


def view(a, *shape):
    x = a._data
    shape = _infer_shape(_sizes(shape), x.size)
    out = _try_view(x, shape)
    if out is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    in_shape = x.shape
    return view_op(a, out, "ViewBackward0", lambda g: (g.reshape(in_shape),),
                   lambda arr: arr.reshape(shape))


def _unsafe_view(a, shape: tuple[int, ...]):
    in_shape = a.shape
    def backward(g):
        return (g.reshape(in_shape),)

    return result(a._data.reshape(shape), "UnsafeViewBackward0", (a,), backward,
                  tensor_backward=_core.linear_backward("UnsafeViewBackward0", backward,
                                                        lambda arr: arr.reshape(shape)))


def reshape(a, *shape):
    x = a._data
    shape = _infer_shape(_sizes(shape), x.size)
    if _try_view(x, shape) is not None:
        return view(a, shape)
    return _unsafe_view(contiguous(a), shape)


def flatten(a, start_dim: int = 0, end_dim: int = -1):
    if a.ndim == 0:
        return reshape(a, 1)
    s, e = wrap_dim(start_dim, a.ndim), wrap_dim(end_dim, a.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return a
    shape = a.shape
    return reshape(a, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(a, dim: int, sizes: Sequence[int]):
    d = wrap_dim(dim, a.ndim)
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        sizes = _infer_shape(sizes, a.shape[d])
    except RuntimeError as e:  # reworded as torch's handle_unflatten_exception does
        if "is invalid for input of size" in str(e):
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                               f"{d} ({a.shape[d]}) in the input tensor") from None
        raise RuntimeError(f"unflatten got an unexpected error:\n{e}") from None
    return view(a, a.shape[:d] + sizes + a.shape[d + 1:])


def squeeze(a, dim=None, *, node_name: str | None = None):
    x = a._data
    in_shape = x.shape
    if dim is None:
        dims = tuple(i for i, n in enumerate(in_shape) if n == 1)
        name = "SqueezeBackward0"
    else:
        raw = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(d for d in (wrap_dim(d, x.ndim) for d in raw) if x.ndim and in_shape[d] == 1)
        name = "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"
    out = x.squeeze(dims) if dims else x.view()
    out_shape = out.shape
    return view_op(a, out, node_name or name, lambda g: (g.reshape(in_shape),),
                   lambda arr: arr.reshape(out_shape))


def unsqueeze(a, dim: int):
    x = a._data
    d = wrap_dim(dim, x.ndim + 1)
    # what np.expand_dims does (a reshape, always a view, same strides), without its per-call checks
    out = x.reshape(x.shape[:d] + (1,) + x.shape[d:])
    return view_op(a, out, "UnsqueezeBackward0", lambda g: (g.squeeze(d),),
                   lambda arr: np.expand_dims(arr, d))


def expand(a, *sizes):
    x = a._data
    sizes = _sizes(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(
            f"expand(engine.{_core._dtype.from_numpy_dtype(x.dtype).name}{{{list(x.shape)}}}, "
            f"size={list(sizes)}): the number of sizes provided ({len(sizes)}) must be greater "
            f"or equal to the number of dimensions in the tensor ({x.ndim})"
        )
    lead = len(sizes) - x.ndim
    target = []
    for i in range(len(sizes) - 1, -1, -1):  # torch checks from the last dim
        s = sizes[i]
        cur = x.shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i}"
                )
            s = cur
        elif cur is not None and cur != s and cur != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(x.shape)}"
            )
        target.append(s)
    target = tuple(target[::-1])
    out = np.broadcast_to(x, target)
    in_shape = x.shape
    return view_op(a, out, "ExpandBackward0", lambda g: (_core.unbroadcast(g, in_shape),),
                   lambda arr: np.broadcast_to(arr, target))


def expand_as(a, other):
    return expand(a, other.shape)


def permute(a, *dims):
    x = a._data
    dims = _sizes(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {x.ndim} is not "
            f"equal to len(dims) = {len(dims)}"
        )
    dims = tuple(wrap_dim(d, x.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))  # argsort, without making arrays
    return view_op(a, x.transpose(dims), "PermuteBackward0",
                   lambda g: (g.transpose(inverse),), lambda arr: arr.transpose(dims))


def transpose(a, dim0: int, dim1: int):
    x = a._data
    d0, d1 = wrap_dim(dim0, x.ndim), wrap_dim(dim1, x.ndim)
    return view_op(a, x.swapaxes(d0, d1), "TransposeBackward0",
                   lambda g: (g.swapaxes(d0, d1),), lambda arr: arr.swapaxes(d0, d1))


def t(a):
    x = a._data
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return view_op(a, x.T, "TBackward0", lambda g: (g.T,), lambda arr: arr.T)


def T(a):  # noqa: N802 - the property ``Tensor.T``
    return permute(a, tuple(range(a.ndim - 1, -1, -1)))


def mT(a):  # noqa: N802
    if a.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(a, -2, -1)


def clone(a, *, memory_format=_mf.preserve_format):
    """A copy laid out as ``memory_format`` (by default the order of ``a``'s strides, as torch)."""
    if memory_format is _mf.preserve_format:  # the common call: no format checks
        data = a._data.copy(order="K")
    else:
        _mf.check(memory_format, "clone")
        data = _mf.copy_as(a._data, memory_format)
    return result(data, "CloneBackward0", (a,), lambda g: (g,), tensor_backward=_identity)


def contiguous(a, memory_format=_mf.contiguous_format):
    """``a`` itself when it is already laid out as ``memory_format``, else a copy that is."""
    x = a._data
    if memory_format is _mf.contiguous_format:
        if x.flags.c_contiguous:
            return a
        data = np.ascontiguousarray(x)
    else:
        _mf.check(memory_format, "contiguous")
        if _mf.is_laid_out_as(x, memory_format):
            return a
        if memory_format is _mf.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        data = _mf.copy_as(x, memory_format)
    return result(data, "CloneBackward0", (a,), lambda g: (g,), tensor_backward=_identity)


def _identity(g):
    return (g,)


def _check_cat(tensors, dim: int, fname: str) -> int:
    if not tensors:
        raise RuntimeError(f"{fname}(): expected a non-empty list of Tensors")
    ref = tensors[0]._data.shape  # the arrays' plain tuples: no engine.Size per tensor and index
    d = wrap_dim(dim, len(ref) + (1 if fname == "stack" else 0))
    for i, t in enumerate(tensors[1:], 1):
        s = t._data.shape
        if fname == "stack":
            if s != ref:
                raise RuntimeError(
                    f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 "
                    f"and {list(s)} at entry {i}"
                )
            continue
        if len(s) != len(ref):
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {len(ref)} and {len(s)}"
            )
        for k in range(len(ref)):
            if k != d and s[k] != ref[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref[k]} but got size {s[k]} for tensor number {i} in the list."
                )
    return d


def cat(tensors: Sequence, dim: int = 0):
    tensors = [_core.to_tensor(t) for t in tensors]
    d = _check_cat(tensors, dim, "cat")
    datas = [t._data for t in tensors]
    dt = datas[0].dtype
    for x in datas[1:]:
        dt = np.promote_types(dt, x.dtype)
    out = np.concatenate(datas, axis=d, dtype=dt)
    bounds = np.cumsum([x.shape[d] for x in datas])[:-1]

    def backward(g):
        return tuple(np.split(g, bounds, axis=d))

    sizes = [x.shape[d] for x in datas]

    def tensor_backward(g):
        starts = np.concatenate([[0], bounds]).astype(int)
        return tuple(narrow(g, d, int(s), n) for s, n in zip(starts, sizes))

    return result(out, "CatBackward0", tensors, backward, tensor_backward=tensor_backward)


def stack(tensors: Sequence, dim: int = 0):
    tensors = [_core.to_tensor(t) for t in tensors]
    d = _check_cat(tensors, dim, "stack")
    out = np.stack([t._data for t in tensors], axis=d)

    def backward(g):
        return tuple(np.moveaxis(g, d, 0))

    def tensor_backward(g):
        return tuple(select(g, d, i) for i in range(len(tensors)))

    return result(out, "StackBackward0", tensors, backward, tensor_backward=tensor_backward)


def _mark_multi_views(outs) -> None:
    """Outputs of one node that are all views (unbind, split): made in grad mode, torch refuses
    in-place updates of them (and of their views) when they or the operand require grad; made
    under no_grad or inference_mode they can be updated."""
    if _grad_mode._state.enabled and not _grad_mode._state.inference:
        for out in outs:
            mark_creation(out, None, "multi")


def _split_views(a, pieces, name: str, dim: int, views: bool = True):
    d = dim
    bounds = np.cumsum([p.shape[d] for p in pieces])[:-1]
    starts = [0, *bounds.tolist()]

    def backward(*gs):
        return (np.concatenate(gs, axis=d),)

    outs = multi_result(pieces, name, (a,), backward)
    if views:
        for out, start, piece in zip(outs, starts, pieces):
            key = (slice(None),) * d + (slice(start, start + piece.shape[d]),)
            mark_view(out, a, lambda arr, key=key: arr[key])
        _mark_multi_views(outs)
    return tuple(outs)


def _split(a, split_size_or_sections, dim: int, unsafe: bool):
    x = a._data
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        bounds = list(range(size, n, size))
        name = "SplitBackward0"
    else:
        sections = list(split_size_or_sections)
        if sum(sections) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {d}), but got split_sizes={sections}"
            )
        bounds = np.cumsum(sections)[:-1].tolist()
        name = "SplitWithSizesBackward0"
    # the pieces np.split makes (views of ``x``), sliced directly: np.split's Python is a per-op cost
    edges, lead = [0, *bounds, n], (slice(None),) * d
    pieces = [x[lead + (slice(lo, hi),)] for lo, hi in zip(edges, edges[1:])] if n else [x]
    return _split_views(a, pieces, "Unsafe" + name if unsafe else name, d, views=not unsafe)


def split(a, split_size_or_sections, dim: int = 0):
    return _split(a, split_size_or_sections, dim, unsafe=False)


def unsafe_split(a, split_size_or_sections, dim: int = 0):
    """torch's ``unsafe_split``: ``split``'s pieces, not marked as views of ``a`` (torch uses it
    where it knows no piece is changed in place, e.g. its GRU and LSTM cells), node
    ``UnsafeSplitBackward0``."""
    return _split(a, split_size_or_sections, dim, unsafe=True)


def _chunk_size(a, chunks: int, dim: int) -> tuple[int, int]:
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, a.ndim)
    return max(1, math.ceil(a.shape[d] / chunks)), d


def chunk(a, chunks: int, dim: int = 0):
    return split(a, *_chunk_size(a, chunks, dim))


def unsafe_chunk(a, chunks: int, dim: int = 0):
    """torch's ``unsafe_chunk``: ``chunk`` through ``unsafe_split``."""
    return unsafe_split(a, *_chunk_size(a, chunks, dim))


def unbind(a, dim: int = 0):
    x = a._data
    d = wrap_dim(dim, x.ndim)
    keys = [(slice(None),) * d + (i,) for i in range(x.shape[d])]
    pieces = [x[key] for key in keys]  # views of ``a``, as torch's (no copy per piece)

    def backward(*gs):
        return (np.stack(gs, axis=d),)

    outs = multi_result(pieces, "UnbindBackward0", (a,), backward,
                        tensor_backward=lambda *gs: (stack(list(gs), d),))
    for key, out in zip(keys, outs):
        mark_view(out, a, lambda arr, key=key: arr[key])
    _mark_multi_views(outs)
    return tuple(outs)


# --- select and slice: the views behind x[i] and x[a:b] (indexing.getitem composes them) -----

def select(a, dim: int, index: int):
    x = a._data
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {n}")
    key = (slice(None),) * d + (index,)
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        gx[key] = g
        return (gx,)

    return view_op(a, x[key], "SelectBackward0", backward, lambda arr: arr[key])


def slice_dim(a, dim: int, start, stop, step):
    if step is not None and step <= 0:
        raise ValueError("step must be greater than zero")
    x = a._data
    key = (slice(None),) * dim + (slice(start, stop, step),)
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        gx[key] = g
        return (gx,)

    return view_op(a, x[key], "SliceBackward0", backward, lambda arr: arr[key])


def narrow(a, dim: int, start, length: int):
    """The slice ``start:start + length`` of dim ``dim`` as a view; ``start`` may be negative
    or a 0-dim integer tensor."""
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d]
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    start = start + n if start < 0 else start
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return slice_dim(a, d, start, start + length, 1)


def repeat(a, *sizes):
    x = a._data
    sizes = _sizes(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    xs = x.reshape((1,) * (len(sizes) - x.ndim) + x.shape)
    out = np.tile(xs, sizes)
    in_shape = x.shape

    def backward(g):
        split_shape = []
        for r, n in zip(sizes, xs.shape):
            split_shape += [r, n]
        summed = g.reshape(split_shape).sum(axis=tuple(range(0, 2 * len(sizes), 2)))
        return (summed.reshape(in_shape),)

    return result(out, "RepeatBackward0", (a,), backward, tensor_backward=_core.linear_backward(
        "RepeatBackward0", backward, lambda arr: np.tile(arr.reshape(xs.shape), sizes)))


def flip(a, *args, dims=None):
    """Reverse the order along ``dims`` (``flip(0, 1)``, ``flip((0, 1))``, ``flip(dims=[0])``)."""
    dims = tuple(wrap_dim(d, a.ndim) for d in _sizes(args if dims is None else (dims,)))
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return result(np.flip(a._data, dims).copy(), "FlipBackward0", (a,),
                  lambda g: (np.flip(g, dims),))


def pad(a, pad: Sequence[int], mode: str = "constant", value: float | None = None):
    """``F.pad``: ``pad`` lists (left, right) pairs from the last dim backwards; negative
    amounts crop. Only ``mode='constant'`` is implemented."""
    if mode != "constant":
        raise NotImplementedError(f"pad: mode '{mode}' is not implemented in engine (only 'constant')")
    if len(pad) % 2 or len(pad) // 2 > a.ndim:
        raise RuntimeError(
            f"Padding length must be divisible by 2 and at most twice the number of dimensions "
            f"of the input, got {len(pad)} for a {a.ndim}-D input"
        )
    x = a._data
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    out = np.pad(x, grow, constant_values=0 if value is None else value)
    crop = tuple(slice(-min(lo, 0), out.shape[i] - (-min(hi, 0))) for i, (lo, hi) in enumerate(widths))
    out = out[crop].copy() if any(lo < 0 or hi < 0 for lo, hi in widths) else out
    inner = tuple(slice(max(lo, 0), max(lo, 0) + n + min(lo, 0) + min(hi, 0))
                  for (lo, hi), n in zip(widths, x.shape))
    src = tuple(slice(-min(lo, 0), n - (-min(hi, 0))) for (lo, hi), n in zip(widths, x.shape))
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        gx[src] = g[inner]
        return (gx,)

    out_shape = out.shape

    def padded(arr):  # the op on a gradient: zeros around (the pad value is a constant)
        y = np.zeros(out_shape, arr.dtype)
        y[inner] = arr[src]
        return y

    return result(out, "ConstantPadNdBackward0", (a,), backward,
                  tensor_backward=_core.linear_backward("ConstantPadNdBackward0", backward, padded))


# --- triangles, roll, diagonals ------------------------------------------------------------------


def _triangle(a, diagonal: int, name: str, lower: bool):
    x = a._data
    if x.ndim < 2:
        raise RuntimeError(f"{name.lower()}: input tensor must have at least 2 dimensions")
    n, m = x.shape[-2:]
    keep = np.tri(n, m, diagonal, dtype=bool) if lower else ~np.tri(n, m, diagonal - 1, dtype=bool)
    return result(np.where(keep, x, x.dtype.type(0)), f"{name}Backward0", (a,),
                  lambda g: (np.where(keep, g, g.dtype.type(0)),))


def tril(a, diagonal: int = 0):
    """The lower triangle of the last two dims (``diagonal`` > 0 keeps that many more above)."""
    return _triangle(a, diagonal, "Tril", lower=True)


def triu(a, diagonal: int = 0):
    return _triangle(a, diagonal, "Triu", lower=False)


def roll(a, shifts, dims=None):
    """Rotate along ``dims`` by ``shifts``; ``dims=None`` rolls the flattened tensor and keeps
    the shape (one ``RollBackward0`` node either way, as in torch)."""
    x = a._data
    shifts = (shifts,) if isinstance(shifts, int | np.integer) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        shape = x.shape
        out = np.roll(x.reshape(-1), shifts[0]).reshape(shape)
        return result(out, "RollBackward0", (a,),
                      lambda g: (np.roll(g.reshape(-1), -shifts[0]).reshape(shape),))
    dims = (dims,) if isinstance(dims, int | np.integer) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    axes = tuple(wrap_dim(d, x.ndim) for d in dims)
    back = tuple(-s for s in shifts)
    return result(np.roll(x, shifts, axes), "RollBackward0", (a,), lambda g: (np.roll(g, back, axes),))


def _diagonal_view(arr: np.ndarray, offset: int, d1: int, d2: int) -> np.ndarray:
    """A writable strided view of a diagonal, moved to the last dim (``np.diagonal``'s is
    read-only, and in-place ops on the view must write through it)."""
    key = [slice(None)] * arr.ndim
    key[d2 if offset >= 0 else d1] = slice(abs(offset), None)
    sub = arr[tuple(key)]
    rest = [i for i in range(arr.ndim) if i not in (d1, d2)]
    shape = tuple(sub.shape[i] for i in rest) + (min(sub.shape[d1], sub.shape[d2]),)
    strides = tuple(sub.strides[i] for i in rest) + (sub.strides[d1] + sub.strides[d2],)
    return np.lib.stride_tricks.as_strided(sub, shape, strides, writeable=arr.flags.writeable)


def diagonal(a, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The view of the diagonal of dims ``dim1``/``dim2``, appended as the last dim."""
    x = a._data
    d1, d2 = wrap_dim(dim1, x.ndim), wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        _diagonal_view(gx, offset, d1, d2)[...] = g
        return (gx,)

    return view_op(a, _diagonal_view(x, offset, d1, d2), "DiagonalBackward0", backward,
                   lambda arr: _diagonal_view(arr, offset, d1, d2))


def diag(a, diagonal: int = 0):
    """1-D: a matrix with ``a`` on a diagonal; 2-D: a copy of that diagonal (torch's names:
    ``DiagEmbedBackward0`` and ``DiagonalBackward0_copy``)."""
    x = a._data
    if x.ndim == 1:
        n = x.shape[0] + abs(diagonal)
        out = np.zeros((n, n), x.dtype)
        _diagonal_view(out, diagonal, 0, 1)[...] = x
        return result(out, "DiagEmbedBackward0", (a,),
                      lambda g: (_diagonal_view(g, diagonal, 0, 1).copy(),))
    if x.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")
    in_shape = x.shape

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        _diagonal_view(gx, diagonal, 0, 1)[...] = g
        return (gx,)

    return result(_diagonal_view(x, diagonal, 0, 1).copy(), "DiagonalBackward0_copy", (a,), backward)


# --- meshgrid, broadcast_to, tensor_split --------- ------------------------------------


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids from 1-D tensors: each input viewed along its own dim and expanded.
    ``indexing='ij'`` (the default) or ``'xy'`` (the first two dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t_ in tensors:
        if t_.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t_}")
    n = len(tensors)
    sizes = [t_.numel() for t_ in tensors]
    order = list(range(n))
    if indexing == "xy" and n >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[i] for i in order)
    outs = []
    for i, t_ in enumerate(tensors):
        pos = order.index(i)
        outs.append(expand(view(t_, tuple(-1 if k == pos else 1 for k in range(n))), shape))
    return tuple(outs)


def broadcast_to(a, *size):
    return expand(a, *size)


def tensor_split(a, indices_or_sections, dim: int = 0):
    """Split into ``n`` near-equal pieces (the first ``size % n`` one longer) or at the given
    indices; every piece is a slice view (``SliceBackward0``)."""
    d = wrap_dim(dim, a.ndim)
    n = a.shape[d]
    ios = indices_or_sections
    if isinstance(ios, _core.Tensor):
        if ios._data.dtype.kind not in "iu":
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{_core._dtype.scalar_type_name(ios._data.dtype)}"
            )
        if ios.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {ios.ndim} dims"
            )
        ios = int(ios._data) if ios.ndim == 0 else ios._data.tolist()
    if isinstance(ios, int | np.integer):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        q, r = divmod(n, int(ios))
        sizes = [q + 1] * r + [q] * (int(ios) - r)
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [int(i) for i in ios] + [n]
    return tuple(slice_dim(a, d, lo, hi, 1) for lo, hi in zip(bounds[:-1], bounds[1:]))


# torch's other names for the ops above
concat = cat
concatenate = cat
swapaxes = transpose
