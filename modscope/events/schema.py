"""The event protocol: the one contract between the process that trains and everything that shows
or stores what happened (trace files, the TUI, diagrams).

An event is a plain ``dict`` of JSON types. Every event has the envelope

    ``v``     schema version (``SCHEMA_VERSION``)
    ``kind``  one of ``KINDS``
    ``seq``   sequence number, 0, 1, 2, ... per session (gaps mean dropped events)
    ``t``     monotonic timestamp in nanoseconds (``time.monotonic_ns``)
    ``step``  the training step it belongs to (0 before the first ``trace.step()``)

and the fields of its kind listed in ``FIELDS``. An event made by a process that is one rank of
several (torchrun, DDP: torch's ``RANK`` environment variable is set) also carries, right after
``step``, the ``ORIGIN_FIELDS``

    ``rank``        the process's global rank (``RANK``)
    ``local_rank``  its rank on its machine (``LOCAL_RANK``)
    ``world_size``  how many ranks the job has (``WORLD_SIZE``)
    ``restart``     how many times the elastic launcher restarted the job (``TORCHELASTIC_RESTART_COUNT``)

(absent: a single process, rank 0 of 1; ``rank_of`` reads either). ``make`` is the one place an
event is built (``records.module_event`` and ``records.record_line`` write module events through
``make`` and ``envelope_prefix``/``origin_json``), so every producer stamps the same envelope.

Tensor values are described by *summaries*:
``{"shape": [..], "dtype": "float32", "tid": 17}``, where ``tid`` identifies the tensor object within
the session (the same tensor leaving one module and entering another has the same ``tid``: that is
how data flow is followed; gradient summaries carry no ``tid``). With ``stats=True`` a summary also
has ``mean std min max absmax`` (floats, ``None`` when not finite), ``zeros`` (fraction of exact
zeros), ``nan`` and ``inf`` (counts).
A summary is ``None`` where the value is not a tensor.

Graph nodes (``graph`` events) carry ``module``: the path of the innermost module whose forward
created them (``None`` outside every module).

``validate`` checks an event received from outside (a socket, a file) and raises ``EventError``
naming what is wrong; consumers call it on every message, so nothing malformed gets further.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

SCHEMA_VERSION = 1

_NUM = (int, float)
_OPT_STR = (str, type(None))
_OPT_NUM = (int, float, type(None))

# kind -> {field: accepted types}. Lists and dicts are checked one level deep by _ITEM_FIELDS.
FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    # The process: once, first.
    "session": {"schema": (int,), "engine_version": (str,), "modscope_version": (str,),
                "pid": (int,), "started": (str,), "argv": (list,)},
    # A model's structure: module tree, parameters, buffers (sent on attach and when it changes).
    "model": {"model": (str,), "modules": (list,), "params": (list,), "buffers": (list,)},
    # Module calls. ``call`` is the n-th call of that module in this step (modules are reused).
    "forward_pre": {"path": (str,), "call": (int,), "inputs": (list,)},
    "forward": {"path": (str,), "call": (int,), "outputs": (list,), "dur_ns": (int,)},
    "backward_pre": {"path": (str,), "call": (int,), "grad_outputs": (list,)},
    "backward": {"path": (str,), "call": (int,), "grad_inputs": (list,), "dur_ns": (int,)},
    # A hook the user registered fired (module, global or tensor hook).
    "hook": {"qualname": (str,), "target": (str,), "hook_kind": (str,), "replaced": (bool,),
             "dur_ns": (int,)},
    # Per-step parameter statistics, taken after the optimizer step.
    "params": {"items": (list,)},
    # An optimizer step (found through the optimizer step hooks).
    "step": {"optimizer": (str,), "index": (int,), "lrs": (list,)},
    # User metrics: ``trace.log(loss=...)``.
    "metric": {"values": (dict,)},
    # One autograd graph.
    "graph": {"nodes": (list,), "edges": (list,), "leaves": (list,)},
    # An exception in a hook or in user code, or the first NaN/Inf seen.
    "error": {"etype": (str,), "message": (str,), "where": (str,), "module": _OPT_STR,
              "traceback": (str,)},
    # The traced process paused or resumed (the TUI's control channel, breakpoints).
    "status": {"state": (str,), "reason": (str,)},
    # The session ended: how, and how many events were dropped on the way.
    "end": {"status": (str,), "dropped": (int,)},
}
KINDS = tuple(FIELDS)
# Fields a kind may carry, checked when present: added within schema version 1, so a trace
# written before them still loads (and an older reader ignores them). ``step``: how the step
# was watched (``capture.sampling``): ``detail`` ``"full"`` (module events, ``params``) or
# ``"light"`` (per-module hooks detached: only this event), ``why`` a full step was full, ``loss``
# (the scalar ``backward`` was called on), ``grad_norm`` (global, over the optimizer's
# parameters), ``nonfinite`` (a NaN/Inf in a gradient), ``dur_ns`` (since the previous step's end)
# and ``state_bytes`` (what the optimizer's state tensors hold: the summary's memory block).
OPTIONAL_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "step": {"detail": (str,), "why": (str,), "loss": _OPT_NUM, "grad_norm": _OPT_NUM, "nonfinite": (bool,),
             "dur_ns": (int,), "state_bytes": (int,)},
}
DETAILS = ("full", "light")
MODULE_EVENTS = ("forward_pre", "forward", "backward_pre", "backward")

# Fields of the items inside list-valued fields.
_SUMMARY = {"shape": (list,), "dtype": (str,)}
_ITEM_FIELDS: dict[tuple[str, str], dict[str, tuple[type, ...]]] = {
    ("model", "modules"): {"path": (str,), "cls": (str,), "extra_repr": (str,), "training": (bool,),
                           "children": (list,), "aliases": (list,)},
    ("model", "params"): {"path": (str,), "shape": (list,), "dtype": (str,), "numel": (int,),
                          "requires_grad": (bool,)},
    ("model", "buffers"): {"path": (str,), "shape": (list,), "dtype": (str,), "numel": (int,),
                           "persistent": (bool,)},
    ("forward_pre", "inputs"): _SUMMARY,
    ("forward", "outputs"): _SUMMARY,
    ("backward_pre", "grad_outputs"): _SUMMARY,
    ("backward", "grad_inputs"): _SUMMARY,
    ("params", "items"): {"path": (str,), "norm": _OPT_NUM, "grad_norm": _OPT_NUM,
                          "update_ratio": _OPT_NUM, "mean": _OPT_NUM, "std": _OPT_NUM,
                          "nan": (int,), "inf": (int,)},
    ("graph", "nodes"): {"id": (int,), "op": (str,), "module": _OPT_STR, "shape": (list,),
                         "saved_bytes": (int,), "inputs": (list,)},
    ("graph", "leaves"): {"id": (int,), "path": _OPT_STR, "shape": (list,)},
}
# Item fields a list item may carry, checked when present: added within schema version 1, as
# ``OPTIONAL_FIELDS``. ``params`` items: ``update_sampled``, the number of values the update
# ratio was measured on (an evenly strided sample of a large tensor: the ratio is an estimate);
# absent, every value was (``capture.param_stats``). ``stats_sampled``: likewise for the values'
# norm, mean and std (estimates from that sample, the norm scaled to the whole tensor) and their
# NaN/Inf counts (the sample's, not scaled); absent, they are over every value.
_OPTIONAL_ITEM_FIELDS: dict[tuple[str, str], dict[str, tuple[type, ...]]] = {
    ("params", "items"): {"update_sampled": (int,), "stats_sampled": (int,)},
}
# Summaries may be None: a module input that is not a tensor, or a gradient that is undefined.
_NULLABLE_ITEMS = {("forward_pre", "inputs"), ("forward", "outputs"), ("backward_pre", "grad_outputs"),
                   ("backward", "grad_inputs")}
_STAT_KEYS = ("mean", "std", "min", "max", "absmax", "zeros", "nan", "inf")


class EventError(ValueError):
    """An event that does not follow the protocol; the message says which field and why."""


# The rank fields, in the order an event carries them (see the module's docstring).
ORIGIN_FIELDS = ("rank", "local_rank", "world_size", "restart")
_origin: dict[str, int] = {}  # this process's rank fields ({} for a single process)
_origin_json = b""  # the same as the JSON text that follows ``"step":N`` in a line


def set_origin(origin: dict[str, int] | None) -> None:
    """Say which rank this process is: ``{"rank", "local_rank", "world_size", "restart"}`` (all
    ints), or ``None`` for a single process. Every event ``make`` builds from now on carries it.
    Set by capture when a trace starts (``capture.ranks``); ``ValueError`` naming a field that is
    missing or not a non-negative int."""
    global _origin, _origin_json
    if origin is None:
        _origin, _origin_json = {}, b""
        return
    for key in ORIGIN_FIELDS:
        value = origin.get(key)
        if type(value) is not int or value < 0:
            raise ValueError(f"rank field {key!r} must be an integer >= 0, got {value!r}")
    _origin = {key: origin[key] for key in ORIGIN_FIELDS}
    _origin_json = b"".join(b',"%s":%d' % (key.encode(), _origin[key]) for key in ORIGIN_FIELDS)


def origin() -> dict[str, int]:
    """This process's rank fields as events carry them (``{}``: a single process)."""
    return dict(_origin)


def origin_json() -> bytes:
    """This process's rank fields as the JSON text an event line has after ``"step":N``
    (``b""`` for a single process): for writers that format lines without a dict."""
    return _origin_json


def envelope_prefix(kind: str) -> bytes:
    """The bytes a line of ``kind`` starts with, up to the value of ``seq``."""
    return b'{"v":%d,"kind":"%s","seq":' % (SCHEMA_VERSION, kind.encode())


def make(kind: str, seq: int, t: int, step: int, **fields: Any) -> dict[str, Any]:
    """Build an event: the envelope, this process's rank fields (``set_origin``), then
    ``fields`` (no validation: producers are trusted, consumers validate). Every event
    modscope makes is built here."""
    return {"v": SCHEMA_VERSION, "kind": kind, "seq": seq, "t": t, "step": step, **_origin, **fields}


def rank_of(event: dict[str, Any]) -> int:
    """The rank that made ``event`` (0 for a single process's)."""
    return event.get("rank", 0)


def validate(event: Any) -> dict[str, Any]:
    """Return ``event`` if it follows the protocol, else raise ``EventError``.

    Checks the envelope, the schema version, the kind's required fields and their types, and
    the items of list fields one level deep. Unknown extra fields are allowed (forward
    compatibility within a schema version)."""
    if not isinstance(event, dict):
        raise EventError(f"an event must be a JSON object, got {type(event).__name__}")
    for key, types in (("v", (int,)), ("kind", (str,)), ("seq", (int,)), ("t", (int,)), ("step", (int,))):
        _check_field(event, key, types, "event")
    if event["v"] != SCHEMA_VERSION:
        raise EventError(f"unsupported schema version {event['v']} (this modscope reads version {SCHEMA_VERSION})")
    for key in ORIGIN_FIELDS:  # optional; when present, an int
        if key in event:
            _check_field(event, key, (int,), "event")
    kind = event["kind"]
    if kind not in FIELDS:
        raise EventError(f"unknown event kind {kind!r} (known: {', '.join(KINDS)})")
    for key, types in FIELDS[kind].items():
        _check_field(event, key, types, f"{kind} event")
    for key, types in OPTIONAL_FIELDS.get(kind, {}).items():
        if key in event:
            _check_field(event, key, types, f"{kind} event")
    if kind == "step" and event.get("detail", "full") not in DETAILS:
        raise EventError(f"step event: field 'detail' must be one of {', '.join(DETAILS)}, got {event['detail']!r}")
    for (item_kind, key), spec in _ITEM_FIELDS.items():
        if item_kind != kind:
            continue
        for i, item in enumerate(event[key]):
            if item is None and (kind, key) in _NULLABLE_ITEMS:
                continue
            if not isinstance(item, dict):
                raise EventError(f"{kind} event: {key}[{i}] must be an object, got {type(item).__name__}")
            for field, types in spec.items():
                _check_field(item, field, types, f"{kind} event {key}[{i}]")
            for field, types in _OPTIONAL_ITEM_FIELDS.get((kind, key), {}).items():
                if field in item:
                    _check_field(item, field, types, f"{kind} event {key}[{i}]")
    return event


def _check_field(obj: dict, key: str, types: tuple[type, ...], where: str) -> None:
    if key not in obj:
        raise EventError(f"{where}: missing field {key!r}")
    value = obj[key]
    # bool is an int in Python; an int field must not accept True/False.
    if isinstance(value, bool) and bool not in types:
        raise EventError(f"{where}: field {key!r} must be {_names(types)}, got bool")
    if not isinstance(value, types):
        raise EventError(f"{where}: field {key!r} must be {_names(types)}, got {type(value).__name__}")


def _names(types: tuple[type, ...]) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


def finite_or_none(x: float) -> float | None:
    """JSON has no NaN/Inf: statistics that are not finite travel as null (counts say why)."""
    return x if math.isfinite(x) else None


def _not_json(obj: Any) -> Any:
    raise TypeError(f"an event field holds a {type(obj).__name__}, which JSON cannot carry")


# The standard library's C encoder, made once (``json.dumps`` builds a new one per call): the
# fallback for what orjson refuses but JSON can carry (integers past 64 bits).
_STDLIB = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=_not_json)


def dumps_bytes(event: dict[str, Any]) -> bytes:
    """One event as one line of compact UTF-8 JSON, without the newline.

    orjson encodes an event about six times faster than the standard library, which is what lets
    a file or socket sink keep up with a training loop. Non-finite floats are written as
    ``null`` (``finite_or_none`` already turns statistics into ``None``); a value JSON cannot
    carry raises ``TypeError`` naming its type."""
    try:
        return orjson.dumps(event, default=_not_json)
    except orjson.JSONEncodeError as e:
        if isinstance(e.__cause__, TypeError):
            raise e.__cause__ from None
        return _STDLIB.encode(event).encode()  # e.g. an int beyond 64 bits


def dumps(event: dict[str, Any]) -> str:
    """One event as one line of compact JSON (see ``dumps_bytes``)."""
    return dumps_bytes(event).decode()


def loads(line: bytes | str) -> Any:
    """Parse one line of JSON. Raises ``json.JSONDecodeError`` (orjson's is a subclass) for
    anything that is not strict JSON, including the ``NaN``/``Infinity`` tokens."""
    return orjson.loads(line)
