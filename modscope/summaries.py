"""Tensor summaries for events: shape, dtype, a tensor id, and (with ``stats``) statistics.

A summary must be cheap: without stats it reads only metadata; with stats it makes a few
vectorised passes over the array (finite check, moments, extremes, zero fraction).
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import numpy as np

from engine import Tensor

from .events import finite_or_none

_tids = itertools.count(1)
_by_array: dict[int, tuple[weakref.ref, int]] = {}


def tensor_id(t: Tensor) -> int:
    """A small integer naming the data this tensor holds, for the session.

    Keyed by the NumPy array, not the Tensor object: a module's backward hooks hand the next
    module a new Tensor on the same array (torch's BackwardHook identity), and data flow must
    see through that. Entries die with their array, so a reused ``id`` never aliases."""
    arr = t._data
    key = id(arr)
    entry = _by_array.get(key)
    if entry is not None and entry[0]() is arr:
        return entry[1]
    tid = next(_tids)
    _by_array[key] = (weakref.ref(arr, lambda _ref, key=key: _forget(key, _ref)), tid)
    return tid


def _forget(key: int, ref: weakref.ref) -> None:
    entry = _by_array.get(key)
    if entry is not None and entry[0] is ref:
        del _by_array[key]


def summarize(x: Any, stats: bool = False) -> dict[str, Any] | None:
    """The event summary of ``x``; ``None`` when ``x`` is not a tensor."""
    if not isinstance(x, Tensor):
        return None
    arr = x._data
    out: dict[str, Any] = {"shape": list(arr.shape), "dtype": arr.dtype.name, "tid": tensor_id(x)}
    if stats:
        out.update(array_stats(arr))
    return out


def array_stats(arr: np.ndarray) -> dict[str, Any]:
    """mean/std/min/max/absmax over the finite values, fraction of exact zeros, NaN/Inf counts."""
    if arr.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "absmax": None, "zeros": 0.0,
                "nan": 0, "inf": 0}
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int8)
    nan = inf = 0
    values = arr
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr)
        if not finite.all():
            nan = int(np.isnan(arr).sum())
            inf = int(arr.size - nan - finite.sum())
            values = arr[finite]
    if values.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "absmax": None,
                "zeros": 0.0, "nan": nan, "inf": inf}
    lo, hi = float(values.min()), float(values.max())
    return {
        "mean": finite_or_none(float(values.mean(dtype=np.float64))),
        "std": finite_or_none(float(values.std(dtype=np.float64))),
        "min": finite_or_none(lo), "max": finite_or_none(hi),
        "absmax": finite_or_none(max(abs(lo), abs(hi))),
        "zeros": float(np.count_nonzero(values == 0)) / arr.size,
        "nan": nan, "inf": inf,
    }


def flatten_values(value: Any) -> list[Any]:
    """The leaves of a module's inputs or outputs (tuples, lists, dicts of tensors), in order."""
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in flatten_values(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in flatten_values(item)]
    return [value]


def summarize_all(value: Any, stats: bool) -> list[dict[str, Any] | None]:
    return [summarize(v, stats) for v in flatten_values(value)]
