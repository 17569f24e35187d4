"""Engine tensor summaries for events: shape, dtype, a tensor id, and (with ``stats``) statistics.

A summary must be cheap: without stats it reads only metadata; with stats it makes a few
vectorised passes over the array (finite check, moments, extremes, zero fraction).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from engine import Tensor

from ...events.records import Captured, StatsValues, expand
from ..arrays import stats_values
from ..ids import ObjectIds
from ..values import capture_leaves

_KEEP = 4096  # statistics remembered; past this the map starts over
_ref = weakref.ref
_array_ids = ObjectIds()


def tensor_id(t: Tensor) -> int:
    """A small integer naming the data this tensor holds, for the session (``capture.ids``).

    Keyed by the NumPy array, not the Tensor object: a module's backward hooks hand the next
    module a new Tensor on the same array (torch's BackwardHook identity), and data flow must
    see through that."""
    return _array_ids(t._data)


def forget_arrays() -> None:
    """Drop the arrays remembered so far (the tracer calls this at each step's end)."""
    _array_ids.clear()
    _stats_of.clear()
    _grad_stats_of.clear()


def summarize(x: Any, stats: bool = False, tid: bool = True) -> dict[str, Any] | None:
    """The event summary of ``x``; ``None`` when ``x`` is not a tensor. ``tid=False`` for
    gradients: data flow follows the forward tensors only."""
    return expand([_capture(x, tid, stats)])[0] if isinstance(x, Tensor) else None


_grad_stats_of: dict[int, tuple[weakref.ref, StatsValues]] = {}


def _gradient_stats(arr: np.ndarray) -> StatsValues:
    """``array_stats`` of a gradient, once for an array that two events show (a module's
    grad_input is often the next module's grad_output). Gradients have no version counter, so
    the tracer calls ``forget_gradients`` whenever a user's hook ran: a hook may change one in
    place. (A hook added straight onto an autograd node, unseen by the tracer, could too.)"""
    entry = _grad_stats_of.get(id(arr))
    if entry is not None and entry[0]() is arr:
        return entry[1]
    stats = stats_values(arr)
    if len(_grad_stats_of) >= _KEEP:
        _grad_stats_of.clear()
    _grad_stats_of[id(arr)] = (_ref(arr), stats)
    return stats


def forget_gradients() -> None:
    """Drop the remembered gradient statistics (a user's hook ran and may have changed one)."""
    _grad_stats_of.clear()


_stats_of: dict[int, tuple[weakref.ref, list[int], int, StatsValues]] = {}


def _forward_stats(x: Tensor) -> StatsValues:
    """``array_stats`` of a forward value, computed once per step for data that several events
    show (a module's output is the next module's input). Reused only while the data's version
    counter is unchanged, so an in-place update in between is seen."""
    arr, version = x._data, x._version_counter
    entry = _stats_of.get(id(arr))
    if entry is not None and entry[0]() is arr and entry[1] is version and entry[2] == version[0]:
        return entry[3]
    stats = stats_values(arr)
    if len(_stats_of) >= _KEEP:
        _stats_of.clear()
    _stats_of[id(arr)] = (_ref(arr), version, version[0], stats)
    return stats


def flatten_values(value: Any) -> list[Any]:
    """The leaves of a module's inputs or outputs (tuples, lists, dicts of tensors), in order."""
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in flatten_values(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in flatten_values(item)]
    return [value]


def summarize_all(value: Any, stats: bool, tid: bool = True) -> list[dict[str, Any] | None]:
    """The summaries of every leaf of ``value`` (``flatten_values`` order)."""
    return expand(capture_all(value, tid, stats))


# --- captured summaries ------------------------------------------------------------------------
# What a summary needs is taken when the hook fires (metadata, which never changes, and the
# statistics, which would): a tuple. The tracer makes the dicts in one batch at the end of the
# step, out of the training loop's way (see ``Trace._record``).


def capture_all(value: Any, tid: bool = True, stats: bool = False) -> tuple[Captured, ...]:
    """What ``summarize_all(value, stats, tid)`` will need: shape, dtype, tensor id and (with
    ``stats``) the statistics, taken now, of each leaf of ``value`` (``flatten_values`` order).

    Tuples, not lists: a trace keeps thousands of these, and tuples holding only numbers,
    strings and dtypes are dropped from the garbage collector's lists at its next pass, where
    lists would stay and be walked by every full collection (~1% of the seed Net's step)."""
    if isinstance(value, Tensor):
        one = value
    elif type(value) is tuple and len(value) == 1 and isinstance(value[0], Tensor):
        one = value[0]  # a module's usual positional input, or a single gradient
    else:
        return _capture_many(value, tid, stats)
    if stats:
        return (_capture(one, tid, stats),)
    # The tracer's usual case, ``_capture`` written out (four module hooks per module call run
    # it, and in a training step each Python call costs several times what it costs warm).
    arr = one._data
    shape = arr.shape  # a new tuple at each access: the first equal one is kept instead
    shape = _shapes.get(shape) or _intern_shape(shape)  # (a 0-d shape, falsy, is stored again)
    return ((shape, arr.dtype, tensor_id(one) if tid else None),)


def _capture_many(value: Any, tid: bool, stats: bool) -> tuple[Captured, ...]:
    """``capture_all`` of anything but a single tensor."""
    return capture_leaves(value, Tensor, _capture, tid, stats)


def _capture(t: Tensor, tid: bool, stats: bool) -> Captured:
    arr = t._data
    shape = arr.shape
    shape = _shapes.get(shape) or _intern_shape(shape)
    if not stats:
        return (shape, arr.dtype, tensor_id(t) if tid else None)
    return (shape, arr.dtype, tensor_id(t) if tid else None) + (_forward_stats(t) if tid else _gradient_stats(arr))


_shapes: dict[tuple[int, ...], tuple[int, ...]] = {}  # every shape summarised, as first seen


def _intern_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Remember ``shape`` as the one tuple every later equal shape is replaced by (a trace
    keeps thousands of summaries); the map starts over past ``_KEEP`` shapes."""
    if len(_shapes) >= _KEEP:
        _shapes.clear()
    _shapes[shape] = shape
    return shape
