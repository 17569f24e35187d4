"""Trace files: JSON Lines (optionally gzip) in, JSON Lines and Chrome's Trace Event Format out.

``load_trace`` never executes anything from the file: each line is parsed as JSON and validated
against the event protocol. A malformed, foreign or unreadable file raises ``TraceFileError``
naming the file and line; a file whose recording was cut off (its last line cut short by a crash,
or no ``end`` event: the recording process was killed before it closed the trace) loads every
complete record before the cut, and ``read_events`` says it was cut off (``truncated``).

Reading is linear in the file's size: lines are split as the bytes arrive (``LineReader``), and
a line longer than ``MAX_LINE_BYTES`` (no modscope event comes near it) is refused as soon as
the reader has seen that many bytes of it, so a corrupt or foreign file is rejected quickly and
with bounded memory.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .schema import EventError, dumps_bytes, loads, validate

GZIP_MAGIC = b"\x1f\x8b"
MAX_LINE_BYTES = 16 << 20  # 16 MiB: the longest line (one event) a trace file may hold
READ_CHUNK = 1 << 16  # bytes read from the file at a time
INFLATE_CHUNK = 1 << 20  # most bytes one gzip decompression step may produce (bounds a gzip bomb's chunk)


class TraceFileError(ValueError):
    """A trace file that cannot be read; the message names the file (and line)."""


class LineTooLong(ValueError):
    """A line went past ``LineReader.max_line`` bytes: ``lineno`` is its number (1-based)."""

    def __init__(self, lineno: int, max_line: int) -> None:
        super().__init__(f"line {lineno} is longer than {_size(max_line)}")
        self.lineno, self.max_line = lineno, max_line


class LineReader:
    """Splits a stream of byte chunks into newline-terminated lines in time linear in the bytes
    fed: each chunk is scanned once and a line's pieces are joined once, when its newline comes
    (re-splitting everything pending at every chunk, as ``(pending + chunk).split``, is quadratic
    in a long line's length: a 64 MB line took tens of seconds).

    A line longer than ``max_line`` bytes raises ``LineTooLong`` as soon as that many bytes of it
    have arrived (``strict``), or is skipped up to its newline and counted in ``oversized``
    (``strict=False``: a stream that must go on, like the live socket)."""

    def __init__(self, max_line: int = MAX_LINE_BYTES, *, strict: bool = True) -> None:
        self.max_line = max_line
        self.strict = strict
        self.lineno = 0  # lines completed (yielded or skipped) so far
        self.oversized = 0  # lines skipped for their length (strict=False)
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The lines (without their newline) that ``chunk`` completes, in order. (``lineno``
        counts them as soon as the chunk is split; a caller numbering lines counts what it gets.)"""
        if chunk.find(b"\n") < 0:
            self._keep(chunk)
            return
        pieces = chunk.split(b"\n")  # this chunk only: every byte is split once
        rest = pieces.pop()
        if len(chunk) > self.max_line:  # (rare) a line inside the chunk may be too long itself
            for piece in pieces:
                line = self._finish(piece)
                self.lineno += 1
                if line is not None:
                    yield line
        else:  # only the first line, joined to what came before, can be too long
            first = self._finish(pieces[0])
            self.lineno += len(pieces)
            if first is not None:
                yield first
            yield from itertools.islice(pieces, 1, None)
        self._keep(rest)

    def _finish(self, piece: bytes) -> bytes | None:
        """The line that ``piece`` ends (None: skipped for its length)."""
        if self._skipping:
            self._skipping = False
            return None
        if self._size + len(piece) > self.max_line:
            self._overflow()
            self._skipping = False  # its newline is here: the next line is read as usual
            return None
        if not self._parts:
            return piece
        self._parts.append(piece)
        line, self._parts, self._size = b"".join(self._parts), [], 0
        return line

    def _keep(self, rest: bytes) -> None:
        """Hold the start of a line whose newline has not come yet."""
        if not rest or self._skipping:
            return
        if self._size + len(rest) > self.max_line:
            self._overflow()
            return
        self._parts.append(rest)
        self._size += len(rest)

    def _overflow(self) -> None:
        """The line being read went past ``max_line``: raise, or skip it up to its newline."""
        self._parts, self._size = [], 0
        if self.strict:
            raise LineTooLong(self.lineno + 1, self.max_line)
        self.oversized += 1
        self._skipping = True

    @property
    def pending(self) -> bytes:
        """What came after the last newline (a line not finished yet)."""
        return b"".join(self._parts)


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
        first = f.read(READ_CHUNK)
        if first[:2] != GZIP_MAGIC:
            while first:
                yield first
                first = f.read(READ_CHUNK)
            return
        decoder = zlib.decompressobj(wbits=31)
        chunk = first
        while chunk:
            try:
                out = decoder.decompress(chunk, INFLATE_CHUNK)
            except zlib.error:
                return  # corrupt from here on: keep what came before
            if out:
                yield out
            if decoder.unconsumed_tail:  # more output from the same input: in bounded steps
                chunk = decoder.unconsumed_tail
                continue
            if decoder.eof and decoder.unused_data:  # concatenated gzip members
                chunk, decoder = decoder.unused_data, zlib.decompressobj(wbits=31)
                continue
            chunk = f.read(READ_CHUNK)


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, complete?) for every line of the (decompressed) file; a line longer
    than ``MAX_LINE_BYTES`` raises ``TraceFileError`` naming the file and the line."""
    reader = LineReader(MAX_LINE_BYTES)
    lineno = 0
    try:
        for chunk in _chunks(path):
            for line in reader.feed(chunk):  # strict: no line is skipped, so counting numbers them
                lineno += 1
                yield lineno, line, True
    except LineTooLong as e:
        what = "not a modscope trace (" if e.lineno == 1 else "corrupt trace file ("
        raise TraceFileError(f"{path}:{e.lineno}: {what}a line longer than {_size(e.max_line)}; "
                             f"no trace event is that long)") from None
    pending = reader.pending
    if pending:
        yield lineno + 1, pending, False


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


def read_events(path: str | os.PathLike) -> tuple[list[dict[str, Any]], bool]:
    """All complete, valid events of a trace file, and whether the recording was cut off
    (``truncated``): its last line was cut short, or it has no ``end`` event (the recording
    process died, e.g. was killed, before closing the trace). Either way every complete event
    before the cut is returned."""
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
    ended = any(e["kind"] == "end" for e in reversed(events))
    return events, truncated or not ended


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
