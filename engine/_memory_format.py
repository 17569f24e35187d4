"""torch's memory formats (``torch.preserve_format``, ``torch.contiguous_format``,
``torch.channels_last``, ``torch.channels_last_3d``): the layout a ``*_like`` factory gives its
result. Values never depend on it; ``stride()`` does, as in torch."""

from __future__ import annotations

import numpy as np


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
        rank, order = _LAST[fmt]
        if len(shape) != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
        return _laid_out(fill, shape, dtype, order)
    raise TypeError(f"memory_format must be an engine.memory_format, not {type(fmt).__name__}")


def _physical_order(a: np.ndarray) -> tuple:
    """The axes from the largest stride to the smallest: the order they are laid out in."""
    return tuple(np.argsort([-abs(s) for s in a.strides], kind="stable").tolist())


def _dense(a: np.ndarray) -> bool:
    """No gaps and no overlap: some permutation of the array is C-contiguous."""
    return bool(np.transpose(a, _physical_order(a)).flags.c_contiguous)


def _laid_out(fill, shape: tuple, dtype: np.dtype, order: tuple) -> np.ndarray:
    physical = fill(tuple(shape[i] for i in order), dtype)
    return np.transpose(physical, np.argsort(order))
