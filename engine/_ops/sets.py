"""Set-like ops: ``isin`` (membership) and ``unique_consecutive`` (``unique`` is in
``sorting.py``, as it sorts).
"""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core

from ._core import wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["isin", "unique_consecutive"]


def _arr(x) -> np.ndarray:
    return x._data if isinstance(x, _core.Tensor) else np.asarray(x)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """A bool tensor shaped like ``elements``: whether each is in ``test_elements`` (either may
    be a Python scalar)."""
    x, t = _arr(elements), _arr(test_elements)
    return _core.Tensor._wrap(np.isin(x, t, assume_unique=assume_unique, invert=invert))


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
                       dim: int | None = None):
    """Drop all but the first of each run of equal elements (or of equal slices along ``dim``),
    keeping order; the inverse map and run lengths are int64, as torch's."""
    x = input._data
    if dim is None:
        flat = x.reshape(-1)
        change = flat[1:] != flat[:-1]
        vals_of = flat
    else:
        d = wrap_dim(dim, x.ndim)
        moved = np.moveaxis(x, d, 0).reshape(x.shape[d], -1)
        change = (moved[1:] != moved[:-1]).any(axis=1)
        vals_of = None
    starts = np.flatnonzero(np.concatenate([[True], change])) if (x.size or dim is not None and x.shape[d]) \
        else np.zeros(0, np.int64)
    n = flat.size if dim is None else x.shape[d]
    counts = np.diff(np.append(starts, n)).astype(np.int64)
    inverse = (np.cumsum(np.concatenate([[True], change])) - 1).astype(np.int64) if n else np.zeros(0, np.int64)
    if dim is None:
        vals, inverse = vals_of[starts], inverse.reshape(x.shape)
    else:
        vals = np.take(x, starts, axis=d)
    outs = [_core.Tensor._wrap(np.ascontiguousarray(vals))]
    outs += [_core.Tensor._wrap(arr) for arr, want in ((inverse, return_inverse), (counts, return_counts)) if want]
    return outs[0] if len(outs) == 1 else tuple(outs)
