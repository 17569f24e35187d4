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


def tensor_id(t: Tensor) -> int:
    """A small integer naming this tensor object for the session. Kept in the tensor's own
    ``__dict__`` together with ``id(t)``, so a deep copy (which copies ``__dict__``) gets a new one."""
    entry = t.__dict__.get("_modscope_tid")
    if entry is not None and entry[1] == id(t):
        return entry[0]
    tid = next(_tids)
    t.__dict__["_modscope_tid"] = (tid, id(t))
    return tid


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
