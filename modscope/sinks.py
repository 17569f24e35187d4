"""Where events go: memory (bounded), a JSON Lines file (streamed), a socket (the TUI).

Every sink has ``write(event)``, ``flush()``, ``close()`` and ``dropped`` (how many events it had
to drop). Sinks never raise into the traced program for back-pressure: a full buffer drops and
counts instead.
"""

from __future__ import annotations

import gzip
import heapq
import os
import queue
import socket
import threading
import zlib
from collections import deque
from pathlib import Path
from typing import IO, Any, Protocol

from .events import dumps_bytes

HEADER_KINDS = ("session", "model", "end")  # always kept, never evicted


class Sink(Protocol):
    dropped: int

    def write(self, event: dict[str, Any]) -> None: ...
    # optional: ``write_many(events)``, a batch in order (the tracer uses it when present)
    def flush(self) -> None: ...
    def close(self) -> None: ...


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
        for event in events:
            if event["kind"] in HEADER_KINDS:
                self.headers.append(event)
                continue
            if self.max_events is not None and len(self.body) == self.max_events:
                self.dropped += 1
            self.body.append(event)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Everything kept, in sequence order (headers and the rest are each already sorted)."""
        return list(heapq.merge(self.headers, self.body, key=lambda e: e["seq"]))

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


class SocketSink:
    """Streams events as JSON lines to a listening viewer (the TUI) over a local socket.

    A background thread encodes and sends; ``write`` only enqueues. When the viewer falls behind
    and the queue is full, events are dropped and counted, so training never waits for the UI.
    The first line sent is ``{"hello": "modscope", "token": ...}`` so the viewer can refuse
    strangers. Messages coming back (the control channel) are handed to ``on_control``.
    """

    def __init__(self, address: str | tuple[str, int], token: str, *, queue_size: int = 65536,
                 on_control: Any = None) -> None:
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.connect(address)
        except OSError as e:
            self._sock.close()
            raise ConnectionError(f"cannot connect to the modscope viewer at {address}: {e.strerror}") from e
        self._queue: queue.Queue[list[dict[str, Any]] | None] = queue.Queue(maxsize=queue_size)
        self.dropped = 0
        self.on_control = on_control
        self._send_raw(dumps_bytes({"hello": "modscope", "token": token}) + b"\n")
        self._sender = threading.Thread(target=self._send_loop, name="modscope-sink", daemon=True)
        self._sender.start()
        self._receiver = threading.Thread(target=self._receive_loop, name="modscope-control", daemon=True)
        self._receiver.start()
        self.connected = True

    def _send_raw(self, data: bytes) -> None:
        self._sock.sendall(data)

    def write(self, event: dict[str, Any]) -> None:
        self.write_many([event])

    def write_many(self, events: list[dict[str, Any]]) -> None:
        """Hand a batch to the sender thread, which encodes it (out of the training loop)."""
        try:
            self._queue.put_nowait(events)
        except queue.Full:
            self.dropped += len(events)

    def _send_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            chunk = [item]
            while len(chunk) < 512:  # batch what is already waiting: fewer syscalls
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._send_batch(chunk)
                    return
                chunk.append(nxt)
            self._send_batch(chunk)

    def _send_batch(self, chunk: list[list[dict[str, Any]]]) -> None:
        data, sent, bad = _encode([event for batch in chunk for event in batch])
        self.dropped += bad  # not JSON: never sent (the tracer makes none; a user's code might)
        if not self.connected:
            self.dropped += sent
            return
        try:
            self._sock.sendall(data)
        except OSError:
            self.connected = False  # the viewer went away: keep training, count what is lost
            self.dropped += sent

    def _receive_loop(self) -> None:
        buffer = b""
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                return
            if not data:
                self.connected = False
                return
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if self.on_control is not None and line.strip():
                    self.on_control(line)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._queue.put(None)
        self._sender.join(timeout=5)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class BackgroundSink:
    """Runs another sink (e.g. a ``JsonlSink``) on a thread of its own: ``write``/``write_many``/
    ``flush`` only hand events over, so encoding, compression and file I/O stay out of the
    training loop. ``modscope run`` records its trace file this way.

    The guarantee shifts by one hand-over: ``flush`` returns at once and first waits, if need be,
    until the *previous* flush reached the file. A hard crash (a kill, not an exception: the
    runner closes the trace then) can lose the step in progress and, in the moment after a step
    ends, that step too. ``close`` writes everything. A handover that finds the queue full is
    dropped and counted (the writer never blocks training).
    """

    def __init__(self, sink: Any, *, queue_size: int = 4096) -> None:
        self.sink = sink
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=queue_size)
        self._flushed = threading.Event()
        self._flushed.set()
        self._lost = 0
        self.error: Exception | None = None  # the first error the wrapped sink raised
        self._thread = threading.Thread(target=self._run, name="modscope-writer", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        return self._lost + self.sink.dropped

    def write(self, event: dict[str, Any]) -> None:
        self._put(("events", [event]), 1)

    def write_many(self, events: list[dict[str, Any]]) -> None:
        self._put(("events", events), len(events))

    def flush(self) -> None:
        self._flushed.wait()  # the previous step is on disk before this one is handed over
        self._flushed.clear()
        if not self._put(("flush", None), 0):
            self._flushed.set()

    def close(self) -> None:
        self._queue.put(("close", None))  # blocks if full: closing must not lose the end
        self._thread.join()

    def _put(self, item: tuple[str, Any], count: int) -> bool:
        if self.error is not None:
            raise self.error  # the tracer detaches a failing sink and reports why
        try:
            self._queue.put_nowait(item)
            return True
        except queue.Full:
            self._lost += count
            return False

    def _run(self) -> None:
        while True:
            what, payload = self._queue.get()
            try:
                if what == "events":
                    write_many = getattr(self.sink, "write_many", None)
                    if write_many is not None:
                        write_many(payload)
                    else:
                        for event in payload:
                            self.sink.write(event)
                elif what == "flush":
                    self.sink.flush()
                else:
                    self.sink.close()
                    return
            except Exception as exc:  # noqa: BLE001 - reported through the next hand-over
                self.error = self.error or exc
                if what == "close":
                    return
            finally:
                if what == "flush":
                    self._flushed.set()


def _encode(events: list[dict[str, Any]]) -> tuple[bytes, int, int]:
    """JSON lines for ``events``: (bytes, events encoded, events that JSON cannot carry)."""
    try:
        return b"".join([dumps_bytes(event) + b"\n" for event in events]), len(events), 0
    except (TypeError, ValueError):
        lines = []
        for event in events:
            try:
                lines.append(dumps_bytes(event) + b"\n")
            except (TypeError, ValueError):
                pass
        return b"".join(lines), len(lines), len(events) - len(lines)


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
        for sink in self.sinks:
            write_many = getattr(sink, "write_many", None)
            if write_many is not None:
                write_many(events)
            else:
                for event in events:
                    sink.write(event)

    def flush(self) -> None:
        for sink in self.sinks:
            sink.flush()

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
