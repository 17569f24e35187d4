"""torch's memory formats (``torch.preserve_format``, ``torch.contiguous_format``,
``torch.channels_last``, ``torch.channels_last_3d``): the layout a ``*_like`` factory, ``clone``,
``contiguous`` or ``to`` gives its result, and what ``is_contiguous(memory_format=)`` checks.
Values never depend on it; ``stride()`` does, as in torch."""

from __future__ import annotations

import numpy as np

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "memory_format", "preserve_format"]


class memory_format:  # noqa: N801 - torch's name
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"engine.{self._name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

# channels-last layouts: the array is laid out in this axis order and viewed back
_LAST = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def filled_like(fill, shape: tuple, dtype: np.dtype, like: np.ndarray, fmt) -> np.ndarray:
    """``fill(shape, dtype)`` laid out as ``fmt`` asks: the source's layout for preserve_format
    (when it is a permutation of a dense array), C order for contiguous_format, NHWC/NDHWC for
    the channels-last formats (rank 4/5 only, with torch's error otherwise)."""
    if fmt is None or fmt is contiguous_format:
        return fill(shape, dtype)
    if fmt is preserve_format:
        if like.flags.c_contiguous or like.ndim < 2 or not _dense(like):
            return fill(shape, dtype)
        return _laid_out(fill, shape, dtype, _physical_order(like))
    if fmt in _LAST:
        return _laid_out(fill, shape, dtype, _last_order(fmt, len(shape)))
    raise TypeError(f"memory_format must be an engine.memory_format, not {type(fmt).__name__}")


def _last_order(fmt: memory_format, ndim: int) -> tuple:
    rank, order = _LAST[fmt]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return order


def check(fmt: object, fname: str) -> None:
    """torch's argument-parser error when ``fmt`` is not a memory format."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fname}(): argument 'memory_format' must be engine.memory_format, "
                        f"not {type(fmt).__name__}")


def is_laid_out_as(a: np.ndarray, fmt: memory_format) -> bool:
    """torch's ``is_contiguous(memory_format=fmt)``: for the channels-last formats, the strides
    of the non-size-1 axes, innermost (channels) first, are those of a dense NHWC/NDHWC array
    (False at any other rank); for the others, plain C contiguity."""
    if fmt not in _LAST:
        return bool(a.flags.c_contiguous)
    rank, order = _LAST[fmt]
    if a.ndim != rank:
        return False
    expected = a.itemsize
    for d in reversed(order):
        if a.shape[d] != 1:
            if a.strides[d] != expected:
                return False
            expected *= a.shape[d]
    return True


def suggested(a: np.ndarray) -> memory_format:
    """torch's ``suggest_memory_format``: channels_last(_3d) when the strides look channels-last
    (ordered like NHWC, ambiguous size-1 cases counted as NCHW), else contiguous_format. ``to``
    copies for ``memory_format=`` only when this differs from the format asked for."""
    for fmt, (rank, order) in _LAST.items():
        if a.ndim == rank and _strides_like(a, order):
            return fmt
    return contiguous_format


def _strides_like(a: np.ndarray, order: tuple) -> bool:
    # c10's is_channels_last_strides_2d_s4 / 3d_s5, on element strides
    strides = [s // a.itemsize for s in a.strides]
    if strides[1] == 0:
        return False
    low = 0
    for d in reversed(order):
        if a.shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * (a.shape[d] if a.shape[d] > 1 else 1)
    return True


def copy_as(a: np.ndarray, fmt: memory_format, dtype: np.dtype | None = None) -> np.ndarray:
    """A copy of ``a`` (cast to ``dtype``) laid out as ``fmt``: preserve_format keeps the order
    of ``a``'s strides (dense strides in that order, as torch's clone), contiguous_format is C
    order, the channels-last formats NHWC/NDHWC (with torch's error at another rank)."""
    dtype = a.dtype if dtype is None else dtype
    if fmt is preserve_format:
        return a.astype(dtype, order="K", copy=True)
    if fmt is contiguous_format:
        return np.array(a, dtype=dtype, order="C", copy=True)
    out = _laid_out(np.empty, a.shape, dtype, _last_order(fmt, a.ndim))
    out[...] = a
    return out


def _physical_order(a: np.ndarray) -> tuple:
    """The axes from the largest stride to the smallest: the order they are laid out in."""
    return tuple(np.argsort([-abs(s) for s in a.strides], kind="stable").tolist())


def _dense(a: np.ndarray) -> bool:
    """No gaps and no overlap: some permutation of the array is C-contiguous."""
    return bool(np.transpose(a, _physical_order(a)).flags.c_contiguous)


def _laid_out(fill, shape: tuple, dtype: np.dtype, order: tuple) -> np.ndarray:
    physical = fill(tuple(shape[i] for i in order), dtype)
    return np.transpose(physical, np.argsort(order))
