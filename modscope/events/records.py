"""The module record: how a hook's capture travels from the tracer to an event dict.

A module event (``forward_pre``, ``forward``, ``backward_pre``, ``backward``) is recorded in the
hook as one flat tuple and turned into its dict later, in one batch at the step's end or when it
is read (building dicts in the hooks costs several times more: see ``capture.recorder``). This
module is the one codec for that tuple; the tracer, the in-memory log, the sinks and the
summaries all read and write it through these functions.

The record::

    (kind, seq, t, step, path, call, dur_ns | None, count, *fields)

``fields`` are ``count`` values' summaries, each ``width`` fields long (``None`` * width for a
value that is not a tensor): ``(shape, dtype, tid | None)`` and, with statistics, the numbers in
``STATS_KEYS`` order. ``dtype`` is a name (``"float32"``) or an object that names itself (a
NumPy dtype's ``.name``, a torch dtype's ``str`` without ``torch.``).

Example::

    >>> module_event("forward", 3, 0, 0, "fc", 0, 10, 1, (2, 4), "float32", 7)["outputs"]
    [{'shape': [2, 4], 'dtype': 'float32', 'tid': 7}]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import orjson

from . import schema
from .schema import dumps_bytes, envelope_prefix, make

# The statistics of a summary, in this order (a record keeps them as numbers, not a dict).
STATS_KEYS = ("mean", "std", "min", "max", "absmax", "zeros", "nan", "inf")
StatsValues = tuple[float | int | None, ...]
# (shape, dtype, tensor id or None, *statistics in STATS_KEYS order when taken); None: no tensor.
Captured = tuple[Any, ...] | None

VALUES_FIELD = {"forward_pre": "inputs", "forward": "outputs", "backward_pre": "grad_outputs",
                "backward": "grad_inputs"}

_DTYPE_NAMES: dict[Any, str] = {}


def dtype_name(dtype: Any) -> str:
    """``"float32"`` for a NumPy dtype, a torch dtype or a name (remembered per dtype object)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
        if not isinstance(name, str):
            name = str(dtype).removeprefix("torch.")
        _DTYPE_NAMES[dtype] = name
    return name


def flat_fields(captured: tuple[Captured, ...], stats: bool) -> tuple[Any, ...]:
    """Captured values as one flat tuple: the fields of every value in turn, as many for each (a
    value that is not a tensor: as many ``None``). A trace keeps one flat tuple per event:
    nothing nested for the garbage collector to count."""
    width = 3 + len(STATS_KEYS) if stats else 3
    blank = (None,) * width
    return tuple(itertools.chain.from_iterable(blank if c is None else c for c in captured))


def split_fields(fields: tuple[Any, ...], count: int) -> tuple[Captured, ...]:
    """``flat_fields`` undone: ``count`` values' tuples (``None`` for a value that is not a tensor)."""
    if not count:
        return ()
    width = len(fields) // count
    return tuple(None if fields[i] is None else fields[i:i + width] for i in range(0, len(fields), width))


def expand(captured: Iterable[Captured]) -> list[dict[str, Any] | None]:
    """The summaries (``{"shape", "dtype", "tid", *stats}``) of captured values."""
    out: list[dict[str, Any] | None] = []
    for c in captured:
        if c is None:
            out.append(None)
            continue
        summary = {"shape": list(c[0]), "dtype": dtype_name(c[1])}
        if c[2] is not None:
            summary["tid"] = c[2]
        if len(c) > 3:
            summary.update(zip(STATS_KEYS, c[3:]))
        out.append(summary)
    return out


def module_event(kind: str, seq: int, t: int, step: int, path: str, call: int, dur: int | None, count: int,
                 *fields: Any) -> dict[str, Any]:
    """The event dict of a module record."""
    event = make(kind, seq, t, step, path=path, call=call)
    event[VALUES_FIELD[kind]] = expand(split_fields(fields, count))
    if dur is not None:
        event["dur_ns"] = dur
    return event


def as_event(item: tuple | dict[str, Any]) -> dict[str, Any]:
    """An event dict from either form the tracer keeps (a record or a dict already)."""
    return item if type(item) is dict else module_event(*item)


def event_line(event: dict[str, Any]) -> bytes:
    """``dumps_bytes(event) + b"\\n"``, one JSON line (orjson appends the newline itself)."""
    try:
        return orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE)
    except (orjson.JSONEncodeError, TypeError):
        return dumps_bytes(event) + b"\n"  # what orjson refuses: the standard library, or the error


# What ``record_line`` writes around a record's numbers, per kind, and the JSON of the strings,
# shapes and dtypes it has met (they repeat every step; bounded: cleared when one grows large).
_HEADS = {kind: envelope_prefix(kind) for kind in VALUES_FIELD}
_VALUES = {kind: b',"%s":[{"shape":' % field.encode() for kind, field in VALUES_FIELD.items()}
_JSON: dict[Any, bytes] = {}
_JSON_LIMIT = 1 << 16


def _json(value: Any, make: Any) -> bytes:
    out = _JSON.get(value)
    if out is None:
        if len(_JSON) >= _JSON_LIMIT:
            _JSON.clear()
        out = _JSON[value] = orjson.dumps(make(value))
    return out


def record_line(record: tuple) -> bytes:
    """The JSON line of a module record: the bytes of ``event_line(module_event(*record))``,
    written from the record without building the event's dicts (a big trace's ``save`` spends
    its time there). The common record, one tensor value without statistics, is formatted
    here; any other goes through the dict."""
    if record[7] != 1 or len(record) != 11 or record[8] is None:
        return event_line(module_event(*record))
    kind, seq, t, step, path, call, dur, _, shape, dtype, tid = record
    head = (_HEADS[kind] + b'%d,"t":%d,"step":%d' % (seq, t, step) + schema.origin_json() + b',"path":'
            + _json(("p", path), _second))
    values = _VALUES[kind] + _json(("s", shape), _shape_list) + b',"dtype":' + _json(("d", dtype), _dtype_json)
    tail = b"}]" if tid is None else b',"tid":%d}]' % tid
    end = b"}\n" if dur is None else b',"dur_ns":%d}\n' % dur
    return head + b',"call":%d' % call + values + tail + end


def _second(key: tuple[str, Any]) -> Any:
    return key[1]


def _shape_list(key: tuple[str, Any]) -> list[int]:
    return list(key[1])


def _dtype_json(key: tuple[str, Any]) -> str:
    return dtype_name(key[1])
