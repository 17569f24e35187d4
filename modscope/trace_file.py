"""Trace files: JSON Lines (optionally gzip) in, JSON Lines and Chrome's Trace Event Format out.

``load_trace`` never executes anything from the file: each line is parsed as JSON and validated
against the event protocol. A malformed, foreign or unreadable file raises ``TraceFileError``
naming the file and line; a file whose last line was cut short by a crash loads every complete
record before it (``Trace.truncated`` says so).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .events import EventError, dumps, validate

GZIP_MAGIC = b"\x1f\x8b"


class TraceFileError(ValueError):
    """A trace file that cannot be read; the message names the file (and line)."""


def save_events(events: list[dict[str, Any]], path: str | os.PathLike) -> None:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "wt", encoding="utf-8", newline="\n") as f:
            for event in events:
                f.write(dumps(event))
                f.write("\n")
    except OSError as e:
        raise OSError(f"cannot write trace file {path}: {e.strerror or e}") from e


def _open_binary(path: Path) -> IO[bytes]:
    try:
        raw = open(path, "rb")  # noqa: SIM115 - handed to the caller
    except FileNotFoundError:
        raise TraceFileError(f"{path}: no such trace file") from None
    except IsADirectoryError:
        raise TraceFileError(f"{path}: is a directory, not a trace file") from None
    except OSError as e:
        raise TraceFileError(f"{path}: cannot read trace file ({e.strerror})") from None
    if raw.peek(2)[:2] == GZIP_MAGIC:  # by content, not by name
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return raw


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, complete?) — a gzip stream cut short ends the iteration quietly."""
    stream = _open_binary(path)
    try:
        reader = io.BufferedReader(stream) if isinstance(stream, gzip.GzipFile) else stream
        lineno = 0
        while True:
            try:
                line = reader.readline()
            except (EOFError, zlib.error, gzip.BadGzipFile):
                return  # compressed stream cut by a crash: everything before it was yielded
            if not line:
                return
            lineno += 1
            yield lineno, line, line.endswith(b"\n")
    finally:
        stream.close()


def read_events(path: str | os.PathLike) -> tuple[list[dict[str, Any]], bool]:
    """All complete, valid events of a trace file, and whether its last line was cut short."""
    path = Path(path)
    events: list[dict[str, Any]] = []
    truncated = False
    for lineno, line, complete in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            if not complete:  # the last line, cut by a crash: keep what came before
                truncated = True
                break
            if lineno == 1:
                raise TraceFileError(f"{path}:1: not a modscope trace (not JSON Lines: {_reason(e)})") from None
            raise TraceFileError(f"{path}:{lineno}: not valid JSON ({_reason(e)})") from None
        try:
            validate(obj)
        except EventError as e:
            if lineno == 1:
                raise TraceFileError(f"{path}:1: not a modscope trace ({e})") from None
            raise TraceFileError(f"{path}:{lineno}: {e}") from None
        events.append(obj)
    if not events:
        raise TraceFileError(f"{path}: empty trace file (no events)")
    return events, truncated


def _reason(e: Exception) -> str:
    return e.msg if isinstance(e, json.JSONDecodeError) else "not UTF-8 text"


def load_trace(path: str | os.PathLike) -> Any:
    """A ``Trace`` holding the events of a recorded file (see module docstring for errors)."""
    from .tracer import Trace

    events, truncated = read_events(path)
    trace = Trace(None)
    for event in events:
        trace._memory.write(event)
    trace._seq = events[-1]["seq"] + 1
    trace.truncated = truncated
    trace.path = Path(path)
    return trace


def chrome_trace_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trace Event Format records: module forward/backward as nested complete ("X") spans on one
    thread, user hooks as spans, optimizer steps as instants, metrics as counters."""
    pid = next((e["pid"] for e in events if e["kind"] == "session"), 1)
    out: list[dict[str, Any]] = [{"ph": "M", "pid": pid, "tid": 1, "name": "thread_name",
                                  "args": {"name": "training"}}]
    for e in events:
        kind, ts_us = e["kind"], e["t"] / 1000
        if kind in ("forward", "backward"):
            dur = e["dur_ns"] / 1000
            out.append({"ph": "X", "pid": pid, "tid": 1, "cat": kind, "name": e["path"] or "<root>",
                        "ts": ts_us - dur, "dur": dur, "args": {"call": e["call"], "step": e["step"]}})
        elif kind == "hook":
            dur = e["dur_ns"] / 1000
            out.append({"ph": "X", "pid": pid, "tid": 1, "cat": "hook", "name": e["qualname"], "ts": ts_us - dur,
                        "dur": dur, "args": {"target": e["target"], "kind": e["hook_kind"], "replaced": e["replaced"]}})
        elif kind == "step":
            out.append({"ph": "i", "pid": pid, "tid": 1, "s": "p", "cat": "optimizer",
                        "name": f"{e['optimizer']}.step", "ts": ts_us, "args": {"lrs": e["lrs"]}})
        elif kind == "metric":
            values = {k: v for k, v in e["values"].items() if v is not None}
            if values:
                out.append({"ph": "C", "pid": pid, "name": "metrics", "ts": ts_us, "args": values})
        elif kind == "error":
            out.append({"ph": "i", "pid": pid, "tid": 1, "s": "g", "cat": "error",
                        "name": f"{e['etype']}: {e['message'][:80]}", "ts": ts_us})
    return out


def write_chrome_trace(events: list[dict[str, Any]], path: str | os.PathLike) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": chrome_trace_events(events), "displayTimeUnit": "ms"}, f)
    except OSError as e:
        raise OSError(f"cannot write Chrome trace {path}: {e.strerror or e}") from e
