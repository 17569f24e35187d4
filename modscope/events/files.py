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

Both directions stream: ``save_events`` encodes and writes ``SAVE_BATCH`` events at a time, and
``TraceFile`` validates a file in one pass that keeps no event, then reads it again lazily each
time it is iterated, so neither holds a whole trace in memory.
"""

from __future__ import annotations

import array
import bisect
import gzip
import itertools
import json
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from .records import VALUES_FIELD, event_line
from .schema import (
    _ITEM_FIELDS,
    _NULLABLE_ITEMS,
    _OPTIONAL_ITEM_FIELDS,
    DETAILS,
    FIELDS,
    OPTIONAL_FIELDS,
    ORIGIN_FIELDS,
    SCHEMA_VERSION,
    EventError,
    loads,
    validate,
)

GZIP_MAGIC = b"\x1f\x8b"
MAX_LINE_BYTES = 16 << 20  # 16 MiB: the longest line (one event) a trace file may hold
READ_CHUNK = 1 << 16  # bytes read from the file at a time
INFLATE_CHUNK = 1 << 20  # most bytes one gzip decompression step may produce (bounds a gzip bomb's chunk)
SAVE_BATCH = 4096  # events encoded and written at a time by ``save_events`` (~1 MB of text)


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

    def lines(self, chunk: bytes) -> list[bytes]:
        """What ``feed`` yields, as a list: one call per chunk instead of a generator step per
        line (reading a big trace). In a chunk no longer than ``max_line`` (a file's always are)
        only its first line can be too long, so the error comes at the same point as ``feed``'s;
        in a longer one, the lines before a line too long are not returned with the error."""
        if len(chunk) > self.max_line:
            return list(self.feed(chunk))
        if chunk.find(b"\n") < 0:
            self._keep(chunk)
            return []
        pieces = chunk.split(b"\n")
        rest = pieces.pop()
        first = self._finish(pieces[0])
        self.lineno += len(pieces)
        if first is None:
            del pieces[0]
        else:
            pieces[0] = first
        self._keep(rest)  # (cannot be too long: the chunk is not, and what was pending ended above)
        return pieces

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


def save_events(events: Iterable[dict[str, Any]], path: str | os.PathLike) -> None:
    """Write ``events`` as JSON Lines (gzip when ``path`` ends in ``.gz``), ``SAVE_BATCH`` at a
    time: memory holds one batch of lines, never the file, and ``events`` may be a generator
    (each event is read once, in order). The bytes are those of ``dumps_bytes`` and a newline per
    event. A value JSON cannot carry raises ``TypeError`` (what came before it is written)."""
    save_lines(map(event_line, events), path)


def save_lines(lines: Iterable[bytes], path: str | os.PathLike) -> None:
    """Write JSON lines (each ending in its newline) to ``path`` as ``save_events`` does."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "wb") as f:
            iterator = iter(lines)
            while batch := b"".join(itertools.islice(iterator, SAVE_BATCH)):
                f.write(batch)
    except OSError as e:
        raise OSError(f"cannot write trace file {path}: {e.strerror or e}") from e


def _open(path: Path) -> Any:
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise TraceFileError(f"{path}: no such trace file") from None
    except IsADirectoryError:
        raise TraceFileError(f"{path}: is a directory, not a trace file") from None
    except OSError as e:
        raise TraceFileError(f"{path}: cannot read trace file ({e.strerror})") from None


class Checkpoint(NamedTuple):
    """Where decompression of a gzip trace can resume: ``out`` bytes of the decompressed text
    lie before it, the next compressed byte to feed is at ``inp`` in the file, and ``decoder``
    is a copy of the inflater's state there (None: a gzip member starts at ``inp``)."""

    out: int
    inp: int
    decoder: Any


class TraceStream:
    """Random access to a trace file's text (decompressed when it is gzip, by content, not by
    name): ``chunks(start)`` yields ``(offset, bytes)`` from text offset ``start`` on.

    A plain file is read from ``start`` after a seek. A gzip stream cannot be entered in the
    middle, so the first pass over it (``chunks(0, checkpoints=True)``, the replay's indexing
    pass) keeps a ``Checkpoint`` every ``CHECKPOINT_SPACING`` bytes of text: a copy of the
    inflater (zlib's ``Decompress.copy``: its 32 KiB window and state, about 40 KB) and the
    file offsets where it stands. Reading from ``start`` resumes at the last checkpoint before it
    and inflates at most ``CHECKPOINT_SPACING`` bytes that are thrown away. (The alternative, to
    inflate the whole trace once into a temporary file, costs disk as large as the text, writes
    the recording's data to a second place, and leaves it behind when the viewer is killed.)

    A compressed stream cut short by a crash, or corrupt from some point on, yields everything
    that inflates before that point, then ends quietly (the reader sees a cut-off trace)."""

    CHECKPOINT_SPACING = 4 << 20

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        with _open(self.path) as f:
            self.gzip = f.read(2) == GZIP_MAGIC
        self.checkpoints: list[Checkpoint] = [Checkpoint(0, 0, None)]
        self._outs: list[int] = [0]  # the checkpoints' ``out``, for bisect

    def chunks(self, start: int = 0, *, checkpoints: bool = False) -> Iterator[tuple[int, bytes]]:
        with _open(self.path) as f:
            if not self.gzip:
                f.seek(start)
                while chunk := f.read(READ_CHUNK):
                    yield start, chunk
                    start += len(chunk)
                return
            yield from self._inflate(f, start, checkpoints)

    def _inflate(self, f: Any, start: int, keep: bool) -> Iterator[tuple[int, bytes]]:
        cp = self.checkpoints[bisect.bisect_right(self._outs, start) - 1]
        f.seek(cp.inp)
        decoder = cp.decoder.copy() if cp.decoder is not None else zlib.decompressobj(wbits=31)
        out_pos, in_pos = cp.out, cp.inp
        most = min(INFLATE_CHUNK, self.CHECKPOINT_SPACING)  # output per step: checkpoints can be that close
        chunk = f.read(READ_CHUNK)
        in_pos += len(chunk)
        while chunk:
            if keep and out_pos - self._outs[-1] >= self.CHECKPOINT_SPACING:
                self.checkpoints.append(Checkpoint(out_pos, in_pos - len(chunk), decoder.copy()))
                self._outs.append(out_pos)
            try:
                out = decoder.decompress(chunk, most)
            except zlib.error:
                return  # corrupt from here on: keep what came before
            if out:
                if out_pos + len(out) > start:
                    yield max(out_pos, start), out[max(0, start - out_pos):]
                out_pos += len(out)
            if decoder.eof:  # (checked first: a member can end with input left in unconsumed_tail too)
                if decoder.unused_data:  # concatenated gzip members
                    chunk, decoder = decoder.unused_data, zlib.decompressobj(wbits=31)
                    continue
            elif decoder.unconsumed_tail:  # more output from the same input: in bounded steps
                chunk = decoder.unconsumed_tail
                continue
            chunk = f.read(READ_CHUNK)
            in_pos += len(chunk)

    def read_lines(self, start: int, end: int) -> Iterator[bytes]:
        """The lines that begin in text offsets [start, end) (``start``: the start of a line)."""
        reader = LineReader(MAX_LINE_BYTES)
        pos = start
        for offset, chunk in self.chunks(start):
            for line in reader.feed(chunk):
                if pos >= end:
                    return
                yield line
                pos += len(line) + 1
            if offset + len(chunk) >= end and pos >= end:
                return
        if pos < end and reader.pending:
            yield reader.pending


def _batches(path: Path, stream: TraceStream | None = None,
             checkpoints: bool = False) -> Iterator[tuple[list[bytes], bool]]:
    """The lines of the (decompressed) file, a read chunk's at a time: ``(lines, complete?)``,
    the last line without its newline in a batch of its own (``complete`` False). A line longer
    than ``MAX_LINE_BYTES`` raises ``TraceFileError`` naming the file and the line, after the
    lines before it (the reader asks for the next batch when it is done with one)."""
    reader = LineReader(MAX_LINE_BYTES)
    try:
        for _, chunk in (stream or TraceStream(path)).chunks(checkpoints=checkpoints):
            lines = reader.lines(chunk)  # strict: no line is skipped, so counting numbers them
            if lines:
                yield lines, True
    except LineTooLong as e:
        what = "not a modscope trace (" if e.lineno == 1 else "corrupt trace file ("
        raise TraceFileError(f"{path}:{e.lineno}: {what}a line longer than {_size(e.max_line)}; "
                             f"no trace event is that long)") from None
    pending = reader.pending
    if pending:
        yield [pending], False


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


class TraceScan:
    """One pass over a trace file: iterating yields ``(text offset, line number, event)`` for
    every complete, valid event, in order, holding none of them. A malformed line raises
    ``TraceFileError`` naming the file and line (as ``read_events``); once the pass is over,
    ``truncated`` says whether the recording was cut off; ``end`` is where the good text read so
    far ends (the text's length, or the start of a cut or bad line)."""

    def __init__(self, path: str | os.PathLike, stream: TraceStream | None = None, *,
                 checkpoints: bool = False) -> None:
        self.path = Path(path)
        self.stream = stream
        self.checkpoints = checkpoints
        self.count = 0  # events yielded so far
        self.truncated: bool | None = None  # known when the pass is over
        self.ended = False  # an ``end`` event was seen
        self.end = 0

    def __iter__(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        return self._scan(None)  # type: ignore[return-value]  (no pattern: every item is a dict)

    def module_lines(self) -> Iterator[tuple[int, int, dict[str, Any] | re.Match[bytes]]]:
        """As iterating, but a module event written in the form ``records.record_line`` writes
        (``MODULE_LINE``) comes as the ``re.Match`` of that pattern instead of a dict: the match
        proves it a valid event (see ``MODULE_LINE``) without parsing it; its ``lastindex``
        numbers its kind in ``MODULE_LINE_KINDS`` and that group is its path (ASCII bytes). Every
        other line is parsed and validated as usual."""
        return self._scan(MODULE_LINE.fullmatch)

    def _scan(self, fast: Any) -> Iterator[tuple[int, int, Any]]:
        path = self.path
        cut = False
        lineno = offset = 0
        for lines, complete in _batches(path, self.stream, self.checkpoints):
            for line in lines:  # (one loop per line: a million lines made generator steps the cost)
                lineno += 1
                start, offset = offset, offset + len(line) + 1
                if fast is not None:
                    match = fast(line)
                    if match is not None:
                        self.count += 1
                        self.end = start + len(line) + complete
                        yield start, lineno, match
                        continue
                self.end = start  # the end of the good text: a bad line is not part of it
                try:
                    obj = loads(line)  # (orjson checks the UTF-8 itself: no decoded copy of every line)
                except json.JSONDecodeError as e:
                    if not line.strip():  # a blank line: allowed
                        self.end = start + len(line) + complete
                        continue
                    e = _not_utf8(line) or e
                    if not complete and self.count:  # the last line, cut by a crash: keep what came before
                        cut = True
                        break
                    if lineno == 1:
                        raise TraceFileError(f"{path}:1: not a modscope trace (not JSON Lines: {_reason(e)})") from None
                    raise TraceFileError(f"{path}:{lineno}: not valid JSON ({_reason(e)})") from None
                try:
                    if not valid_event(obj):  # validate's checks, in a fraction of its time
                        validate(obj)
                except EventError as e:
                    if lineno == 1:
                        raise TraceFileError(f"{path}:1: not a modscope trace ({e})") from None
                    raise TraceFileError(f"{path}:{lineno}: {e}") from None
                if obj["kind"] == "end":
                    self.ended = True
                self.count += 1
                self.end = start + len(line) + complete
                yield start, lineno, obj
                del obj  # (a big event, the graph, is not kept alive through the module lines after it)
        if not self.count:
            raise TraceFileError(f"{path}: empty trace file (no events)")
        self.truncated = cut or not self.ended


def _module_line_pattern() -> re.Pattern[bytes]:
    """The module events that ``records.record_line`` writes, as one regular expression over the
    line's bytes; what it matches is a JSON object that ``schema.validate`` accepts, so the
    loading pass checks such a line without parsing it (three times faster: most of a trace's
    lines are these). The fields in the writer's order, no whitespace; integers non-negative,
    without leading zeros and at most 18 digits (they fit in 64 bits, as orjson requires);
    strings of printable ASCII without quote or backslash (so the bytes are the string, and
    valid UTF-8); summaries ``{"shape", "dtype"[, "tid"]}`` or ``null``; ``dur_ns`` where the
    kind requires it; the rank fields after ``step`` (``schema.ORIGIN_FIELDS``) or none. Anything
    else (statistics, escapes, another order) is not matched and is
    parsed and validated as any line. One alternative per kind, each with one group, its path:
    ``match.lastindex`` numbers the kind (``MODULE_LINE_KINDS``)."""
    number = rb"(?:0|[1-9][0-9]{0,17})"
    text = rb"[\x20\x21\x23-\x5b\x5d-\x7e]"
    summary = (rb'\{"shape":\[(?:' + number + rb"(?:," + number + rb')*)?\],"dtype":"' + text
               + rb'+"(?:,"tid":' + number + rb")?\}")
    value = rb"(?:" + summary + rb"|null)"
    origin = rb"(?:" + b"".join(rb',"%s":' % key.encode() + number for key in ORIGIN_FIELDS) + rb")?"
    branches = []
    for kind, field in VALUES_FIELD.items():
        dur = rb',"dur_ns":' + number if "dur_ns" in FIELDS[kind] else b""
        branches.append(kind.encode() + rb'","seq":' + number + rb',"t":' + number + rb',"step":' + number + origin
                        + rb',"path":"(' + text + rb'*)","call":' + number + rb',"' + field.encode()
                        + rb'":\[(?:' + value + rb"(?:," + value + rb")*)?\]" + dur)
    return re.compile(rb'\{"v":%d,"kind":"(?:' % SCHEMA_VERSION + b"|".join(branches) + rb")\}")


MODULE_LINE = _module_line_pattern()
MODULE_LINE_KINDS = (None, *VALUES_FIELD)  # match.lastindex -> the kind


# Per kind: its required fields' types, and for each list field with items its item fields'
# types, whether an item may be null and its optional fields' types (all from ``schema``: the
# shortcut follows the protocol).
_SPECS = {kind: (tuple(fields.items()),
                 tuple((key, tuple(_ITEM_FIELDS[kind, key].items()), (kind, key) in _NULLABLE_ITEMS,
                        tuple(_OPTIONAL_ITEM_FIELDS.get((kind, key), {}).items()))
                       for key in fields if (kind, key) in _ITEM_FIELDS))
          for kind, fields in FIELDS.items()}
_OPTIONAL_SPECS = {kind: tuple(fields.items()) for kind, fields in OPTIONAL_FIELDS.items()}
_MISSING: Any = object()  # a missing field: of no type a field accepts (not even null)


def valid_event(obj: Any) -> bool:
    """True only if ``schema.validate`` accepts ``obj``: the same checks with exact types (what
    ``orjson`` produces; ``bool`` is never taken for ``int``) and no messages, several times
    faster (validating was most of the time of loading a trace). False for anything it does not
    accept, which the caller then gives to ``validate`` for its verdict and its message (a
    subclass of a JSON type, say, passes there)."""
    if type(obj) is not dict:
        return False
    spec = _SPECS.get(obj.get("kind"))
    if spec is None or obj.get("v") != SCHEMA_VERSION or type(obj.get("v")) is not int:
        return False
    if type(obj.get("seq")) is not int or type(obj.get("t")) is not int or type(obj.get("step")) is not int:
        return False
    if "rank" in obj:  # a rank's event: its origin fields are ints (any of them alone: validate says)
        for key in ORIGIN_FIELDS:
            if type(obj.get(key)) is not int:
                return False
    elif "local_rank" in obj or "world_size" in obj or "restart" in obj:
        return False
    fields, item_specs = spec
    for key, types in fields:
        if type(obj.get(key, _MISSING)) not in types:
            return False
    for key, types in _OPTIONAL_SPECS.get(obj["kind"], ()):  # (a step event's detail, loss, ...)
        if key in obj and type(obj[key]) not in types:
            return False
    if "detail" in obj and obj["kind"] == "step" and obj["detail"] not in DETAILS:
        return False
    for key, item_fields, nullable, optional in item_specs:
        for item in obj[key]:
            if item is None and nullable:
                continue
            if type(item) is not dict:
                return False
            for field, types in item_fields:
                if type(item.get(field, _MISSING)) not in types:
                    return False
            for field, types in optional:
                if field in item and type(item[field]) not in types:
                    return False
    return True


def read_events(path: str | os.PathLike) -> tuple[list[dict[str, Any]], bool]:
    """All complete, valid events of a trace file, and whether the recording was cut off
    (``truncated``): its last line was cut short, or it has no ``end`` event (the recording
    process died, e.g. was killed, before closing the trace). Either way every complete event
    before the cut is returned."""
    scan = TraceScan(path)
    events = [event for _, _, event in scan]
    return events, bool(scan.truncated)


class TraceFile:
    """A trace file read lazily (``load_trace``). Opening it validates every line in one pass
    that keeps no event, raising ``TraceFileError`` naming the file and line as ``read_events``
    does, and notes how many events it holds (``count``), whether the recording was cut off
    (``truncated``), its last ``end`` event (``end_event``), each event's kind and module path
    (4 bytes an event: ``firing_order`` needs no second read) and where its good text ends. Each
    iteration reads the file again and yields those events, in order, one at a time (memory: one
    read chunk and one event). The file must stay as it was: an iteration that finds it changed
    (size, modification time, inode) raises ``TraceFileError`` before yielding anything."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.stream = TraceStream(self.path)
        self._stamp = _stamp(self.path)  # before the pass: a change during it is seen later too
        scan = TraceScan(self.path, self.stream)
        self.end_event: dict[str, Any] | None = None
        pairs: dict[tuple[str, Any], int] = {}  # (kind, path or None) -> its number
        # the same for module lines taken by their pattern: per kind, the path's bytes -> its number
        by_bytes: list[dict[bytes, int]] = [{} for _ in MODULE_LINE_KINDS]
        self._index = index = array.array("I")  # each event's pair number, in order
        add = index.append
        for _, _, event in scan.module_lines():
            if type(event) is not dict:  # a module line's match: its kind's number and its path
                kind_number = event.lastindex
                raw = event[kind_number]
                number = by_bytes[kind_number].get(raw)
                if number is None:
                    pair = (MODULE_LINE_KINDS[kind_number], raw.decode("ascii"))
                    number = by_bytes[kind_number][raw] = pairs.setdefault(pair, len(pairs))
                add(number)
                continue
            kind = event["kind"]
            pair = (kind, event.get("path"))
            number = pairs.get(pair)
            if number is None:
                number = pairs[pair] = len(pairs)
            add(number)
            if kind == "end":
                self.end_event = event
        self._pairs = list(pairs)
        self.count = scan.count
        self.truncated = bool(scan.truncated)
        self._end = scan.end

    def __len__(self) -> int:
        return self.count

    def firing_order(self, kinds: Iterable[str]) -> list[tuple[str, Any]]:
        """``(kind, path)`` of every event of ``kinds``, in order, from what the validating pass
        noted (equal pairs are one tuple); ``path`` is None for an event without one."""
        wanted = set(kinds)
        table = [pair if pair[0] in wanted else None for pair in self._pairs]
        return [pair for pair in map(table.__getitem__, self._index) if pair is not None]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if _stamp(self.path) != self._stamp:
            raise TraceFileError(f"{self.path}: the trace file changed since it was loaded; load it again")
        return self._events()

    def _events(self) -> Iterator[dict[str, Any]]:
        # Every line before ``_end`` was validated by the first pass: parsing is enough now. The
        # text is split a chunk at a time (``LineReader.lines``), and this is the only generator
        # stepped per event: a million events cost a second in nothing but such steps before.
        end = self._end
        reader = LineReader(MAX_LINE_BYTES)
        for offset, chunk in self.stream.chunks(0):
            last = offset + len(chunk) >= end
            for line in reader.lines(chunk[:end - offset] if last else chunk):
                try:
                    yield loads(line)
                except json.JSONDecodeError:
                    self._not_json(line)
            if last:
                break
        tail = reader.pending  # the last line, when the good text ends without a newline
        if tail:
            try:
                yield loads(tail)
            except json.JSONDecodeError:
                self._not_json(tail)

    def _not_json(self, line: bytes) -> None:
        """A line of the good text that is not JSON now: a blank line (allowed: skipped), or the
        file changed under us."""
        if line.strip():
            raise TraceFileError(f"{self.path}: the trace file changed while it was read; load it again") from None


def _stamp(path: Path) -> tuple[int, int, int]:
    try:
        st = path.stat()
    except OSError as e:
        raise TraceFileError(f"{path}: cannot read trace file ({e.strerror})") from None
    return st.st_size, st.st_mtime_ns, st.st_ino


def _not_utf8(line: bytes) -> UnicodeDecodeError | None:
    """The error of decoding ``line`` as UTF-8, None if it is UTF-8 (to say why it is not JSON)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as e:
        return e
    return None


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
