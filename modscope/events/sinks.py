"""Where events go: memory (bounded), a JSON Lines file (streamed), a socket (the TUI).

Every sink has ``write(event)``, ``flush()``, ``close()`` and ``dropped`` (how many events it had
to drop). Sinks never raise into the traced program for back-pressure: a full buffer drops and
counts instead.
"""

from __future__ import annotations

import gzip
import heapq
import operator
import os
import socket
import threading
import zlib
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

from .files import LineReader
from .schema import dumps_bytes

MAX_CONTROL_BYTES = 1 << 20  # a control message from the viewer is a few hundred bytes: longer lines are skipped

# The environment variable that hands the live session's token to the traced child (never its
# command line, which every local user can read); the child greets the viewer with it.
TOKEN_VARIABLE = "MODSCOPE_TOKEN"

HEADER_KINDS = ("session", "model", "end")  # always kept, never evicted
_HEADER_SET = frozenset(HEADER_KINDS)
_kind_of = operator.itemgetter("kind")
ToEvent = Callable[[Any], dict[str, Any]]  # makes one of the tracer's records an event dict


class Sink(Protocol):
    dropped: int

    def write(self, event: dict[str, Any]) -> None: ...
    # optional: ``write_many(events)``, a batch in order (the tracer uses it when present);
    # ``write_records(items, to_event)``, a batch of the tracer's records, each made an event
    # dict by ``to_event`` where and when the sink needs it (e.g. on its own thread)
    def flush(self) -> None: ...
    def close(self) -> None: ...


def write_batch(sink: Sink, events: list[dict[str, Any]]) -> None:
    """Hand ``events`` to ``sink`` at once when it has ``write_many``, else one by one."""
    write_many = getattr(sink, "write_many", None)
    if write_many is not None:
        write_many(events)
    else:
        for event in events:
            sink.write(event)


def write_records(sink: Sink, items: list[Any], to_event: ToEvent) -> None:
    """Hand the tracer's records to ``sink``: as they are when it has ``write_records``, else
    made into event dicts here, by ``to_event``."""
    method = getattr(sink, "write_records", None)
    if method is not None:
        method(items, to_event)
    else:
        write_batch(sink, [to_event(item) for item in items])


def in_sequence(headers: list[dict[str, Any]], body: Any) -> list[dict[str, Any]]:
    """Header events and the rest, each already in order, merged by sequence number."""
    return list(heapq.merge(headers, body, key=lambda e: e["seq"]))


class MemorySink:
    """Keeps events in a list. With ``max_events`` it keeps the header events (session, model, end)
    and the most recent others, counting what it evicted in ``dropped``."""

    def __init__(self, max_events: int | None = None) -> None:
        if max_events is not None and max_events < 1:
            raise ValueError(f"max_events must be a positive number or None, got {max_events}")
        self.max_events = max_events
        self.headers: list[dict[str, Any]] = []
        self.body: deque[dict[str, Any]] = deque(maxlen=max_events)
        self.dropped = 0

    def write(self, event: dict[str, Any]) -> None:
        if event["kind"] in HEADER_KINDS:
            self.headers.append(event)
            return
        if self.max_events is not None and len(self.body) == self.max_events:
            self.dropped += 1
        self.body.append(event)

    def write_many(self, events: list[dict[str, Any]]) -> None:
        if _HEADER_SET.isdisjoint(map(_kind_of, events)):  # a step's events: one C-level scan
            self._extend(events)
            return
        for event in events:
            self.write(event)

    def _extend(self, items: list[Any]) -> None:
        """Append ``items``, none of them a header, evicting (and counting) as ``write`` does."""
        if self.max_events is not None:
            self.dropped += max(0, len(self.body) + len(items) - self.max_events)
        self.body.extend(items)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Everything kept, in sequence order (headers and the rest are each already sorted)."""
        return in_sequence(self.headers, self.body)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class JsonlSink:
    """One JSON object per line, streamed to ``path`` (gzip, at a fast compression level, when it
    ends in ``.gz``). Lines are encoded at once and written in batches; ``flush`` (called at
    every training step) pushes everything to the file, so a crash loses at most that step."""

    BATCH = 2048

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            raw: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        except OSError as e:
            raise OSError(f"cannot write trace file {self.path}: {e.strerror}") from e
        self._raw = raw
        self._file: IO[bytes] = (gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1)
                                 if self.path.suffix == ".gz" else raw)
        self._lines: list[bytes] = []
        self._closed = False
        self.dropped = 0

    def write(self, event: dict[str, Any]) -> None:
        self._lines.append(dumps_bytes(event))
        if len(self._lines) >= self.BATCH:
            self._drain()

    def write_many(self, events: list[dict[str, Any]]) -> None:
        self._lines += [dumps_bytes(event) for event in events]
        if len(self._lines) >= self.BATCH:
            self._drain()

    def write_lines(self, data: bytes) -> None:
        """Events already encoded: JSON lines, each ending in a newline (see ``SharedLines``)."""
        self._drain()  # what came one by one goes first
        self._file.write(data)

    def _drain(self) -> None:
        if self._lines:
            self._lines.append(b"")  # the last line's newline
            self._file.write(b"\n".join(self._lines))
            self._lines.clear()

    def flush(self) -> None:
        self._drain()
        if isinstance(self._file, gzip.GzipFile):
            self._file.flush(zlib.Z_SYNC_FLUSH)  # a readable prefix even if we die here
        self._raw.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._drain()
        if self._file is not self._raw:
            self._file.close()
        self._raw.close()


class _Courier:
    """Carries batches of events from the training thread to a worker thread, which handles them
    (``_deliver``) at most every ``interval`` seconds: a training step only appends to a list,
    and the worker wakes a few dozen times a second instead of once per step (each wake-up would
    take the GIL from the training loop). ``write`` (a single event: a status, an error) wakes
    the worker at once. Past ``limit`` waiting events, new ones are dropped and counted.

    ``write_records`` takes the tracer's records as they are: the worker makes them event dicts,
    so a training step does not spend its time building dicts for the file or the viewer."""

    interval = 0.025

    def __init__(self, name: str, limit: int) -> None:
        self._lost = 0
        self._limit = limit
        self._waiting: list[tuple[list[Any], ToEvent | None]] = []
        self._count = 0
        self._closing = False
        self._cond = threading.Condition()
        self._worker = threading.Thread(target=self._work, name=name, daemon=True)

    @property
    def dropped(self) -> int:
        return self._lost

    def write(self, event: dict[str, Any]) -> None:
        self._hand_over([event], urgent=True)

    def write_many(self, events: list[dict[str, Any]]) -> None:
        self._hand_over(events, urgent=False)

    def write_records(self, items: list[Any], to_event: ToEvent) -> None:
        self._hand_over(items, urgent=False, to_event=to_event)

    takes_lines = False  # True: delivers JSON lines (``_deliver_lines``), not event dicts

    def write_shared(self, shared: SharedLines) -> None:
        """A batch another sink may already have encoded (``TeeSink``): only for sinks whose
        ``takes_lines`` is true."""
        self._hand_over(shared, urgent=False, to_event=_SHARED)

    def _hand_over(self, events: list[Any] | SharedLines, urgent: bool,
                   to_event: ToEvent | None = None) -> None:
        with self._cond:
            if self._count + len(events) > self._limit:
                self._lost += len(events)  # the worker is far behind: training never waits
                return
            self._waiting.append((events, to_event))
            self._count += len(events)
            if urgent:
                self._cond.notify()

    def _stop_worker(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._worker.join(timeout=10)

    def _work(self) -> None:
        while True:
            with self._cond:
                if not self._closing:
                    self._cond.wait(self.interval)
                batches, self._waiting, self._count = self._waiting, [], 0
                closing = self._closing
            if batches:
                if self.takes_lines:
                    self._deliver_lines(*self._lines_of(batches))
                else:
                    self._deliver(self._events_of(batches))
            if closing:
                self._finish()
                return

    def _events_of(self, batches: list[tuple[Any, ToEvent | None]]) -> list[dict[str, Any]]:
        """The batches' events in order, records made dicts. A record that cannot be made one is
        dropped and counted: this thread must go on for the events that follow."""
        events: list[dict[str, Any]] = []
        for items, to_event in batches:
            if to_event is None:
                events += items
                continue
            for item in items:
                try:
                    events.append(to_event(item))
                except Exception:  # noqa: BLE001 - counted in ``dropped``
                    self._count_lost(1)
        return events

    def _lines_of(self, batches: list[tuple[Any, ToEvent | None]]) -> tuple[bytes, int]:
        """The batches' events as JSON lines, in order, and how many: a shared batch encoded at
        most once for all its sinks. What cannot be an event, or JSON, is dropped and counted."""
        chunks, count, lost = [], 0, 0
        for items, to_event in batches:
            data, n, bad = items.encoded() if to_event is _SHARED else _encode(items, to_event)
            chunks.append(data)
            count += n
            lost += bad
        if lost:
            self._count_lost(lost)
        return b"".join(chunks), count

    def _count_lost(self, n: int) -> None:
        with self._cond:  # the training thread counts its drops under this lock too
            self._lost += n

    def _deliver(self, events: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def _deliver_lines(self, data: bytes, count: int) -> None:
        raise NotImplementedError

    def _finish(self) -> None:
        pass


class SharedLines:
    """One batch for several sinks (``TeeSink``: the viewer's socket and the trace file of
    ``modscope run``), made JSON lines once: whichever sink's worker comes first builds the
    event dicts and encodes them, the others take the same bytes. (Each worker doing it again
    would double the Python work that competes with the training loop for the GIL.)"""

    def __init__(self, items: list[Any], to_event: ToEvent | None) -> None:
        self._items: list[Any] | None = items
        self._to_event = to_event
        self._count = len(items)
        self._lock = threading.Lock()
        self._encoded: tuple[bytes, int, int] | None = None

    def __len__(self) -> int:
        return self._count

    def encoded(self) -> tuple[bytes, int, int]:
        """(JSON lines, events in them, events dropped: no event dict, or not JSON)."""
        with self._lock:
            if self._encoded is None:
                self._encoded = _encode(self._items, self._to_event)
                self._items = None  # the records can go: only the bytes are needed now
            return self._encoded


_SHARED: Any = object()  # marks a waiting SharedLines in a courier's queue


class SocketSink(_Courier):
    """Streams events as JSON lines to a listening viewer (the TUI) over a local socket.

    A worker thread encodes and sends (see ``_Courier``: every 25 ms, or at once for a single
    event such as a pause status). When the viewer falls far behind, events are dropped and
    counted, so training never waits for the UI. The first line sent is
    ``{"hello": "modscope", "token": ...}`` so the viewer can refuse strangers. Messages coming
    back (the control channel) are handed to ``on_control``.
    """

    def __init__(self, address: str | tuple[str, int], token: str, *, queue_size: int = 65536,
                 on_control: Any = None) -> None:
        super().__init__("modscope-sink", queue_size)
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.connect(address)
        except OSError as e:
            self._sock.close()
            raise ConnectionError(f"cannot connect to the modscope viewer at {address}: {e.strerror}") from e
        self.on_control = on_control
        self.connected = True
        self._sock.sendall(dumps_bytes({"hello": "modscope", "token": token}) + b"\n")
        self._worker.start()
        self._receiver = threading.Thread(target=self._receive_loop, name="modscope-control", daemon=True)
        self._receiver.start()

    takes_lines = True

    def _deliver_lines(self, data: bytes, sent: int) -> None:
        if not self.connected:
            self._count_lost(sent)
            return
        try:
            self._sock.sendall(data)
        except OSError:
            self.connected = False  # the viewer went away: keep training, count what is lost
            self._count_lost(sent)

    def _receive_loop(self) -> None:
        reader = LineReader(MAX_CONTROL_BYTES, strict=False)  # linear time, bounded memory
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                return
            if not data:
                self.connected = False
                return
            for line in reader.feed(data):
                if self.on_control is not None and line.strip():
                    self.on_control(line)

    def flush(self) -> None:
        pass  # the worker sends within ``interval``

    def close(self) -> None:
        self._stop_worker()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class BackgroundSink(_Courier):
    """Runs another sink (e.g. a ``JsonlSink``) on a worker thread: the training thread only
    hands events over, and encoding, compression and file I/O happen every 25 ms out of its way
    (see ``_Courier``). ``modscope run`` records its trace file this way.

    The file is flushed after each delivery, so a hard crash (a kill; an exception closes the
    trace properly) loses at most the last 25 ms of events. ``close`` writes everything. An error
    of the wrapped sink is raised at the next hand-over, so the tracer detaches it and says why.
    """

    def __init__(self, sink: Any, *, queue_size: int = 1 << 18) -> None:
        super().__init__("modscope-writer", queue_size)
        self.sink = sink
        self.error: Exception | None = None  # the first error the wrapped sink raised
        self._close_error: Exception | None = None
        self._worker.start()

    @property
    def dropped(self) -> int:
        return self._lost + getattr(self.sink, "dropped", 0)

    def _hand_over(self, events: list[Any] | SharedLines, urgent: bool,
                   to_event: ToEvent | None = None) -> None:
        if self.error is not None:
            raise self.error
        super()._hand_over(events, urgent, to_event)

    def flush(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self._stop_worker()
        if self._close_error is not None:
            raise self._close_error

    @property
    def takes_lines(self) -> bool:
        return hasattr(self.sink, "write_lines")

    def _deliver(self, events: list[dict[str, Any]]) -> None:
        self._write(len(events), write_batch, events)

    def _deliver_lines(self, data: bytes, count: int) -> None:
        self._write(count, type(self.sink).write_lines, data)

    def _write(self, count: int, write: Callable[[Any, Any], None], payload: Any) -> None:
        if self.error is not None:
            self._count_lost(count)
            return
        try:
            write(self.sink, payload)
            self.sink.flush()
        except Exception as exc:  # noqa: BLE001 - raised in the training thread at the next hand-over
            self.error = exc

    def _finish(self) -> None:
        try:
            self.sink.close()
        except Exception as exc:  # noqa: BLE001 - raised by close(), in the caller's thread
            self._close_error = exc


def _encode(items: list[Any], to_event: ToEvent | None = None) -> tuple[bytes, int, int]:
    """JSON lines for ``items``, event dicts or the tracer's records (made dicts by ``to_event``):
    (bytes, events encoded, items dropped: no event, or not JSON). A worker must go on after a
    bad item, so nothing raises."""
    lines = []
    for item in items:
        try:
            lines.append(dumps_bytes(item if to_event is None else to_event(item)) + b"\n")
        except Exception:  # noqa: BLE001 - counted in the third figure
            pass
    return b"".join(lines), len(lines), len(items) - len(lines)


class TeeSink:
    """Hands every event to several sinks (the viewer's socket and the trace file)."""

    def __init__(self, *sinks: Any) -> None:
        self.sinks = [s for s in sinks if s is not None]

    @property
    def dropped(self) -> int:
        return max((s.dropped for s in self.sinks), default=0)

    def write(self, event: dict[str, Any]) -> None:
        for sink in self.sinks:
            sink.write(event)

    def write_many(self, events: list[dict[str, Any]]) -> None:
        self._share(events, None)

    def write_records(self, items: list[Any], to_event: ToEvent) -> None:
        self._share(items, to_event)

    def _share(self, items: list[Any], to_event: ToEvent | None) -> None:
        """Sinks that take JSON lines share one ``SharedLines`` (encoded once); the others get
        the dicts or records as usual."""
        shared = None
        for sink in self.sinks:
            if getattr(sink, "takes_lines", False):
                if shared is None:  # (not ``or``: an empty batch has a length of 0)
                    shared = SharedLines(items, to_event)
                sink.write_shared(shared)
            elif to_event is None:
                write_batch(sink, items)
            else:
                write_records(sink, items, to_event)

    def flush(self) -> None:
        for sink in self.sinks:
            sink.flush()

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
