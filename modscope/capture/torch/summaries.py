"""Torch tensor summaries for events: shape, dtype, a tensor id and, with ``stats``, statistics.

Statistics of a CPU tensor are read through a zero-copy NumPy view by the code the engine uses
(``capture.arrays``): immediate numbers, no torch op per tensor. A tensor on another device (or
of a dtype NumPy lacks, bfloat16) is summarised by torch ops on its own device
(``stats.tensor_stats``) and left there: the record holds a ``Deferred`` in place of its numbers,
and ``resolve`` fetches every deferred summary of a step in one transfer (``stats.resolve``).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from ...events.records import STATS_KEYS, Captured, StatsValues
from ..arrays import stats_values
from ..ids import ObjectIds
from ..values import capture_leaves
from .stats import resolve as resolve_stats
from .stats import tensor_stats

_KEEP = 4096  # tensors remembered; past this the map starts over (ids stay unique, edges may break)
_tensor_ids = ObjectIds()
_stats_of: dict[int, tuple[weakref.ref, int, StatsValues]] = {}
_ref = weakref.ref
_Tensor = torch.Tensor
_NO_NUMPY = frozenset({torch.bfloat16, torch.complex32})
_deferred = [0]  # Deferred summaries made since the last ``resolve`` (none: it returns at once)


def numpy_readable(t: torch.Tensor) -> bool:
    """A dense CPU tensor of a dtype NumPy has, not a lazy conjugate: readable as a zero-copy
    NumPy view (its statistics then need no torch op)."""
    return t.device.type == "cpu" and t.dtype not in _NO_NUMPY and t.layout == torch.strided and not t.is_conj()


class Deferred:
    """Statistics still on the device: ``resolve`` replaces it by the numbers."""

    __slots__ = ("values",)

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values


_WIDTH = len(STATS_KEYS) - 1  # the slots after a Deferred, filled with None until resolved


def tensor_id(t: torch.Tensor) -> int:
    """A small integer naming the tensor's data for the session (``capture.ids``): a module's
    output that is the next module's input keeps its id, which is how data flow is followed. A
    module with the user's own full backward hooks hands its outputs on as views made by torch's
    ``BackwardHookFunction``: they are named by the tensor they view, so the flow goes through."""
    if t._base is not None and type(t.grad_fn).__name__ == "BackwardHookFunctionBackward":
        t = t._base
    return _tensor_ids(t)


def forget_arrays() -> None:
    """Drop the tensors remembered so far (the tracer calls this at each step's end)."""
    _tensor_ids.clear()
    _stats_of.clear()


def forget_gradients() -> None:
    """Nothing to forget: a gradient's statistics are cached with its version counter, which an
    in-place change by a user's hook moves on (torch counts versions of gradients too)."""


def _stats(t: torch.Tensor, cached: bool) -> tuple[Any, ...]:
    """The statistics of ``t``: numbers for a CPU tensor (cached per tensor object and version:
    a module's output is the next one's input, a gradient one call sends is the next one's
    ``grad_output``), a ``Deferred`` and ``None``s for one on another device."""
    if not numpy_readable(t):
        _deferred[0] += 1
        return (Deferred(tensor_stats(t)),) + (None,) * _WIDTH
    if cached:
        try:
            version = t._version
        except RuntimeError:  # an inference tensor (torch.inference_mode) has no version: not cached
            cached = False
        else:
            entry = _stats_of.get(id(t))
            if entry is not None and entry[0]() is t and entry[1] == version:
                return entry[2]
    values = stats_values(t.detach().numpy())
    if cached:
        if len(_stats_of) >= _KEEP:
            _stats_of.clear()
        _stats_of[id(t)] = (_ref(t), version, values)
    return values


def _capture(t: torch.Tensor, tid: bool, stats: bool) -> Captured:
    head = (tuple(t.shape), t.dtype, tensor_id(t) if tid else None)
    return head + _stats(t, cached=True) if stats else head


def capture_all(value: Any, tid: bool = True, stats: bool = False) -> tuple[Captured, ...]:
    """Shape, dtype, tensor id and (with ``stats``) statistics of each leaf of ``value`` (a
    tensor, or tuples, lists and dicts of them; ``None`` for a leaf that is not a tensor), in
    ``flatten`` order, as the engine backend's ``capture_all`` gives them."""
    if type(value) is tuple and len(value) == 1:
        one = value[0]  # a module's usual positional input, or a single gradient
    else:
        one = value
    if not isinstance(one, _Tensor):
        return capture_leaves(value, _Tensor, _capture, tid, stats)
    # The tracer's usual case, ``capture_leaves`` and ``_capture`` written out: four module hooks
    # per module call run it, and in a training step each Python call costs several times what
    # it costs warm (the step between two hooks has pushed the tracer out of the CPU caches).
    head = (tuple(one.shape), one.dtype, tensor_id(one) if tid else None)
    return (head + _stats(one, cached=True) if stats else head,)


def resolve(records: list[Any]) -> list[Any]:
    """``records`` (the tracer's module records and event dicts) with every ``Deferred``
    replaced by its numbers, fetched in one transfer. The list itself when none is deferred."""
    if not _deferred[0]:
        return records
    _deferred[0] = 0
    where = [(i, k) for i, r in enumerate(records) if type(r) is tuple
             for k, f in enumerate(r) if type(f) is Deferred]
    if not where:
        return records
    numbers = resolve_stats([records[i][k].values for i, k in where])
    out = list(records)
    for (i, k), values in zip(where, numbers, strict=True):
        row = out[i]
        out[i] = row[:k] + tuple(values) + row[k + 1 + _WIDTH:]
    return out
