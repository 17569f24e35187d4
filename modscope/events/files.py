"""Trace files: JSON Lines (optionally gzip) in, JSON Lines and Chrome's Trace Event Format out.

``load_trace`` never executes anything from the file: each line is parsed as JSON and validated
against the event protocol. A malformed, foreign or unreadable file raises ``TraceFileError``
naming the file and line; a file whose last line was cut short by a crash loads every complete
record before it (``Trace.truncated`` says so).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .schema import EventError, dumps_bytes, loads, validate

GZIP_MAGIC = b"\x1f\x8b"


class TraceFileError(ValueError):
    """A trace file that cannot be read; the message names the file (and line)."""


def save_events(events: list[dict[str, Any]], path: str | os.PathLike) -> None:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "wb") as f:
            f.write(b"".join(dumps_bytes(event) + b"\n" for event in events))
    except OSError as e:
        raise OSError(f"cannot write trace file {path}: {e.strerror or e}") from e


def _chunks(path: Path) -> Iterator[bytes]:
    """The file's bytes, decompressed when it is gzip (by content, not by name). A compressed
    stream cut short by a crash yields everything that decompresses, then ends quietly."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise TraceFileError(f"{path}: no such trace file") from None
    except IsADirectoryError:
        raise TraceFileError(f"{path}: is a directory, not a trace file") from None
    except OSError as e:
        raise TraceFileError(f"{path}: cannot read trace file ({e.strerror})") from None
    with f:
        first = f.read(1 << 16)
        if first[:2] != GZIP_MAGIC:
            while first:
                yield first
                first = f.read(1 << 16)
            return
        decoder = zlib.decompressobj(wbits=31)
        chunk = first
        while chunk:
            try:
                yield decoder.decompress(chunk)
            except zlib.error:
                return  # corrupt from here on: keep what came before
            if decoder.eof and decoder.unused_data:  # concatenated gzip members
                chunk, decoder = decoder.unused_data, zlib.decompressobj(wbits=31)
                continue
            chunk = f.read(1 << 16)


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, complete?) for every line of the (decompressed) file."""
    pending = b""
    lineno = 0
    for chunk in _chunks(path):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            lineno += 1
            yield lineno, line, True
    if pending:
        yield lineno + 1, pending, False


def read_events(path: str | os.PathLike) -> tuple[list[dict[str, Any]], bool]:
    """All complete, valid events of a trace file, and whether its last line was cut short."""
    path = Path(path)
    events: list[dict[str, Any]] = []
    truncated = False
    for lineno, line, complete in _lines(path):
        if not line.strip():
            continue
        try:
            obj = loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            if not complete and events:  # the last line, cut by a crash: keep what came before
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
