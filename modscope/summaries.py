"""Tensor summaries for events: shape, dtype, a tensor id, and (with ``stats``) statistics.

A summary must be cheap: without stats it reads only metadata; with stats it makes a few
vectorised passes over the array (finite check, moments, extremes, zero fraction).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from engine import Tensor

from .events import finite_or_none

_tids = itertools.count(1)
_by_array: dict[int, tuple[np.ndarray, int]] = {}
_KEEP = 4096  # arrays remembered; past this the map starts over (ids stay unique, edges may break)


def tensor_id(t: Tensor) -> int:
    """A small integer naming the data this tensor holds, for the session.

    Keyed by the NumPy array, not the Tensor object: a module's backward hooks hand the next
    module a new Tensor on the same array (torch's BackwardHook identity), and data flow must
    see through that. The map holds the arrays it names (so an ``id`` is never reused while its
    entry lives) and starts over when it grows past ``_KEEP`` entries: cheaper than a weak
    reference per array, and bounded."""
    arr = t._data
    entry = _by_array.get(id(arr))
    if entry is not None and entry[0] is arr:
        return entry[1]
    if len(_by_array) >= _KEEP:
        _by_array.clear()
    tid = next(_tids)
    _by_array[id(arr)] = (arr, tid)
    return tid


def forget_arrays() -> None:
    """Drop the arrays remembered so far (the tracer calls this at each step's end)."""
    _by_array.clear()


_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


def summarize(x: Any, stats: bool = False, tid: bool = True) -> dict[str, Any] | None:
    """The event summary of ``x``; ``None`` when ``x`` is not a tensor. ``tid=False`` for
    gradients: data flow follows the forward tensors only."""
    if not isinstance(x, Tensor):
        return None
    arr = x._data
    out: dict[str, Any] = {"shape": list(arr.shape), "dtype": _dtype_name(arr.dtype)}
    if tid:
        out["tid"] = tensor_id(x)
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


def summarize_all(value: Any, stats: bool, tid: bool = True) -> list[dict[str, Any] | None]:
    return [summarize(v, stats, tid) for v in flatten_values(value)]
