"""Statistics of a NumPy array, as every tensor summary reports them: mean, std, min, max and
absmax over the finite values, the fraction of exact zeros, NaN and Inf counts.

Framework-free: the engine's tensors hold NumPy arrays, and a torch CPU tensor is read as one
without a copy (``Tensor.numpy()``), so both backends share this code.

A summary must be cheap: a few vectorised passes over the array, no float64 copy of float32
data, no NumPy warnings for the traced program to see.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..events.records import STATS_KEYS, StatsValues
from ..events.schema import finite_or_none


def array_stats(arr: np.ndarray) -> dict[str, Any]:
    """mean/std/min/max/absmax over the finite values, fraction of exact zeros, NaN/Inf counts.

    The common case (every value finite) costs six vectorised passes and no mask: the sum is
    finite exactly when every value is (or it overflowed, which takes the careful path too). The
    sum is NumPy's pairwise one and the spread is taken about the mean, so float32 activations
    give float64-close figures without a float64 copy."""
    return dict(zip(STATS_KEYS, stats_values(arr), strict=True))


def stats_values(arr: np.ndarray) -> StatsValues:
    """``array_stats`` as a tuple in ``STATS_KEYS`` order."""
    if arr.size == 0:
        return _EMPTY_STATS + (0.0, 0, 0)
    with np.errstate(all="ignore"):  # overflow is handled below; the user's program sees no warning
        return _array_stats(arr)


def _array_stats(arr: np.ndarray) -> StatsValues:
    flat = arr.reshape(-1)
    if flat.dtype.kind != "f":
        flat = flat.astype(np.float64)  # bool/int: exact in float64
    elif flat.dtype.itemsize < 4:
        flat = flat.astype(np.float32)  # float16 accumulates badly
    total = _sum(flat)
    if math.isfinite(total):
        return _finite_stats(flat, total, arr.size, nan=0, inf=0)
    finite = np.isfinite(flat)
    nan = int(np.count_nonzero(np.isnan(flat)))
    inf = int(flat.size - nan - np.count_nonzero(finite))
    values = flat[finite].astype(np.float64) if nan or inf else flat.astype(np.float64)  # float64: no overflow
    if values.size == 0:
        return _EMPTY_STATS + (0.0, nan, inf)
    return _finite_stats(values, float(np.add.reduce(values)), arr.size, nan=nan, inf=inf)


def _sum(flat: np.ndarray) -> float:
    """The sum of a 1-d array, twice as fast as ``np.add.reduce`` and as accurate: summed down the
    columns of a (rows, width) view (SIMD across columns, at most ~1024 terms per column), then
    the column sums pairwise. NaN or Inf anywhere makes it non-finite, as the plain sum does."""
    n = flat.size
    if n < 8192 or not flat.flags.c_contiguous:
        return float(np.add.reduce(flat))
    width = max(1024, -(-n // 1024 // 16) * 16)
    body = n - n % width
    columns = np.add.reduce(flat[:body].reshape(-1, width), axis=0)
    return float(np.add.reduce(columns)) + float(np.add.reduce(flat[body:]))


_EMPTY_STATS = (None, None, None, None, None)  # mean, std, min, max, absmax of no values


def _finite_stats(values: np.ndarray, total: float, size: int, nan: int, inf: int) -> StatsValues:
    n = values.size
    mean = total / n
    lo, hi = float(np.minimum.reduce(values)), float(np.maximum.reduce(values))  # no Python wrapper
    # The spread from one BLAS pass (E[x^2] - mean^2) when the mean does not dominate it: the
    # float32 dot's rounding, relative to the variance, is then below 1e-5. Otherwise (and for
    # values so small that float32 squares underflow) it is taken about the mean, in float64.
    mean_sq = float(np.dot(values, values)) / n
    var = mean_sq - mean * mean
    if not (math.isfinite(mean_sq) and var >= 0.1 * mean_sq and max(-lo, hi) >= 1e-15):
        centred = values.astype(np.float64) - mean
        var = float(np.dot(centred, centred)) / n
    return (finite_or_none(mean), finite_or_none(var ** 0.5), finite_or_none(lo), finite_or_none(hi),
            finite_or_none(max(abs(lo), abs(hi))),
            float(np.count_nonzero(values == 0)) / size if lo <= 0.0 <= hi else 0.0, nan, inf)
