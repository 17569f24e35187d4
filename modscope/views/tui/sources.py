"""Event sources for the TUI. Live (a child process over a socket), replayed (a trace file) and
in-process (a queue) all end the same way: validated events folded into ``SessionState`` on a
thread of the source's own, never on the UI thread. The app only reads the state.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ...events.files import MAX_LINE_BYTES, LineReader, TraceFileError, TraceScan, TraceStream
from ...events.schema import EventError, dumps_bytes, loads, make, validate
from ...events.sinks import TOKEN_VARIABLE
from ...events.trace_paths import RankNotFoundError, rank_path_base, rank_paths, resolve_rank
from .key_window import KEYS
from .state import EVENTS_PER_STEP, MODULE_KINDS, TIMELINE_KINDS, SessionState, StepRecord

HANDSHAKE_TIMEOUT = 10.0  # seconds a new connection has to present the token
MAX_HELLO_BYTES = 4096  # the token line is far shorter: a longer first line is refused
BULK_KINDS = (*MODULE_KINDS, "hook")
FOLD_BUDGET = 3000  # module/hook events folded per batch; beyond that the viewer samples
SLICE = 200  # events folded per hold of the state lock


class Source:
    """Base: ``start(state)`` begins folding events into ``state``; ``control`` talks back to a
    live program (False when there is none)."""

    live = False
    description = ""

    def start(self, state: SessionState) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        pass

    def control(self, message: dict[str, Any]) -> bool:
        return False


def fold(state: SessionState, events: Iterable[dict[str, Any]], budget: int | None = FOLD_BUDGET) -> None:
    """Fold a batch into ``state``, ``SLICE`` events per hold of its lock, so the UI thread never
    waits long for it. When a batch carries more module/hook events than ``budget`` (the viewer
    fell behind), the rest of those are counted as skipped; structural events (model, params,
    steps, metrics, errors, graph, status, end) are always folded."""
    bulk = skipped = 0
    kept = []
    for event in events:
        if event["kind"] in BULK_KINDS and budget is not None:
            bulk += 1
            if bulk > budget:
                skipped += 1
                continue
        kept.append(event)
    for i in range(0, len(kept), SLICE):
        with state.lock:
            for event in kept[i:i + SLICE]:
                try:
                    state.apply(event)
                except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
                    _note_malformed(state, event, e)
        time.sleep(0)  # let the UI thread have the GIL between slices
        KEYS.wait()  # and the whole of it from a key until its screen is painted (key_window)
    if skipped:
        with state.lock:
            state.skip(skipped)


MALFORMED_NOTES = 20  # malformed events reported per state; the rest are counted (``state.malformed``)


def _note_malformed(state: SessionState, event: dict[str, Any], error: Exception) -> None:
    """An event whose envelope is valid but whose contents are not what its kind carries (a
    tensor summary without its ``inf`` count, found by fuzzing a job's stream): reported once in
    the viewer's errors and otherwise skipped; the folding goes on (caller holds the lock)."""
    state.malformed += 1
    if state.malformed > MALFORMED_NOTES:
        return
    message = (f"ignored a malformed {event.get('kind')} event (seq {event.get('seq')}, rank "
               f"{event.get('rank', 0)}): {type(error).__name__} {str(error)[:80]}")
    state.apply(make("error", state.last_seq, 0, state.step, etype="ProtocolError", message=message,
                     where="viewer", module=None, traceback=""))
    state.events_total -= 1  # the viewer's own note is not a received event


class EventListSource(Source):
    """Events given as a list (tests, notebooks): folded on a background thread."""

    description = "events"

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = [validate(e) for e in events]
        self.thread: threading.Thread | None = None

    def start(self, state: SessionState) -> None:
        self.thread = threading.Thread(target=fold, args=(state, self.events, None), daemon=True)
        self.thread.start()


class QueueSource(Source):
    """In-process: a training thread's trace writes into ``sink`` (a sink object), the source's
    thread folds. ``modscope.trace(model, sink=source.sink)``."""

    description = "in-process"

    def __init__(self, maxsize: int = 100_000) -> None:
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=maxsize)
        self.sink = _QueueSink(self.queue)
        self._thread: threading.Thread | None = None

    def start(self, state: SessionState) -> None:
        self._thread = threading.Thread(target=self._run, args=(state,), daemon=True, name="modscope-queue")
        self._thread.start()

    def _run(self, state: SessionState) -> None:
        while True:
            event = self.queue.get()
            batch = [event]
            while len(batch) < 10_000:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            done = None in batch
            fold(state, [e for e in batch if e is not None])
            if done:
                return

    def stop(self) -> None:
        self.queue.put(None)


class _QueueSink:
    def __init__(self, q: queue.Queue) -> None:
        self.q, self.dropped = q, 0

    def write(self, event: dict[str, Any]) -> None:
        try:
            self.q.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


REPLAY_CHECK_BYTES = 4 << 20  # text of a trace checked before the app starts; the rest is read in the background
REPLAY_CACHE_EVENTS = 10_000  # timeline events a replay keeps in memory (steps are reloaded from the file)
REPLAY_BATCH = 5000  # events read from the file per fold


class ReplaySource(Source):
    """A recorded trace file, every step of it reachable in the timeline within bounded memory.

    Before the app starts, the first ``check_bytes`` of the text are read and checked: a foreign,
    malformed or empty file raises ``TraceFileError`` (one clear line), and a file that short is
    checked whole (``truncated``, "(cut off)" in the description). Then one pass on a thread of
    its own (the first frame never waits for it) reads the file once, folds every event into the
    state and indexes it: ``ReplaySteps`` takes the place of the state's last-64-steps deque and
    keeps, per step, the text offset of its first timeline line. A step's events are read back
    from the file when the timeline asks for them, and only ``cache_events`` of them (plus the
    step being folded and the one last asked for) stay in memory. A bad line past the checked
    part stops the replay there, reported in the app (an error and the status), as does a cut.
    """

    def __init__(self, path: str | os.PathLike, *, check_bytes: int = REPLAY_CHECK_BYTES,
                 cache_events: int = REPLAY_CACHE_EVENTS) -> None:
        try:  # "F#R": rank R of a run recorded by several (events.trace_paths)
            self.path = resolve_rank(path)
        except RankNotFoundError as e:
            raise TraceFileError(str(e)) from None
        self.stream = TraceStream(self.path)
        self.cache_events = cache_events
        scan = TraceScan(self.path, self.stream)
        for offset, _, _ in scan:  # raises TraceFileError for a foreign or malformed start
            if offset >= check_bytes:
                break
        self.truncated: bool | None = scan.truncated  # None: not known until the background pass ends
        self.description = f"replay {self.path.name}" + (" (cut off)" if self.truncated else "")
        base = rank_path_base(self.path)
        ranks = rank_paths(base)
        self.rank = next((r for r, p in ranks.items() if p == self.path), 0)
        # a run of several ranks: the other ranks' files are folded beside this one (``r`` in the
        # viewer shows them; only this rank's steps are indexed for the timeline, the others keep
        # their last ``STEPS_KEPT``)
        self.others = {r: p for r, p in ranks.items() if p != self.path}
        if len(ranks) > 1:
            # (the rank shown is in the title: after r it is another than the file's)
            self.description += f" · {len(ranks)} ranks, opened at rank {self.rank} (r: next rank)"
        self.steps: ReplaySteps | None = None
        self.thread: threading.Thread | None = None
        self._stopped = False

    def start(self, state: SessionState) -> None:
        self.steps = ReplaySteps(self.stream, self.cache_events)
        with state.lock:
            state.steps = self.steps  # type: ignore[assignment] - same interface as the deque
            state.rank = self.rank  # (F#R: the views open on rank R)
        self.thread = threading.Thread(target=self._run, args=(state,), daemon=True, name="modscope-replay")
        self.thread.start()
        if self.others:
            threading.Thread(target=self._run_others, args=(state,), daemon=True, name="modscope-replay-ranks").start()

    def _run_others(self, state: SessionState) -> None:
        """Fold the other ranks' files (each up to its end, or to a bad or cut-off line)."""
        for rank, path in sorted(self.others.items()):
            scan = TraceScan(path)
            why = ""
            try:
                if not self._fold_scan(state, scan):
                    return
            except (TraceFileError, OSError) as e:
                why = f"its file stops at a bad line: {e}"
            if why or scan.truncated:
                state.mark_disconnected(why or "its file was cut off", rank=rank)

    def stop(self) -> None:
        self._stopped = True

    def _run(self, state: SessionState) -> None:
        steps = self.steps
        assert steps is not None
        scan = TraceScan(self.path, self.stream, checkpoints=True)
        last: int | None = None

        def note_step(offset: int, event: dict[str, Any]) -> None:
            nonlocal last
            if event["kind"] in TIMELINE_KINDS and event["step"] != last:
                last = event["step"]  # the state starts a timeline record here: say where it is
                steps.expect(last, offset)

        try:
            if not self._fold_scan(state, scan, note_step):
                return
        except TraceFileError as e:
            with state.lock:
                steps.finish(scan.end)
            with state.lock:  # the viewer's own note, not an event of the file
                state.apply(make("error", state.last_seq, 0, state.step, etype="TraceFileError", message=str(e),
                                 where="viewer", module=None, traceback=""))
                state.events_total -= 1
            state.mark_disconnected(f"replay stopped at a bad line: {e}")
            return
        self.truncated = bool(scan.truncated)
        with state.lock:
            steps.finish(scan.end)
        state.mark_disconnected("replay finished" + (" (the recording was cut off)" if self.truncated else ""))

    def _fold_scan(self, state: SessionState, scan: TraceScan,
                   each: Callable[[int, dict[str, Any]], None] | None = None) -> bool:
        """Fold the events of ``scan`` into ``state``, ``REPLAY_BATCH`` at a time (``each`` sees
        every event and its offset first). False when stopped; a bad line raises, after what came
        before it was folded (the main file and the other ranks' alike)."""
        batch: list[dict[str, Any]] = []
        try:
            for offset, _, event in scan:
                if each is not None:
                    each(offset, event)
                batch.append(event)
                if len(batch) >= REPLAY_BATCH:
                    fold(state, batch, budget=None)
                    batch = []
                    if self._stopped:
                        return False
        finally:
            fold(state, batch, budget=None)
        return True


class _StepRef:
    """One step's timeline record in a replay (``StepRecord``'s interface): ``events`` come from
    the ``ReplaySteps`` cache, or from the file when they are not cached."""

    __slots__ = ("_steps", "end", "index", "overflow", "start", "step")

    def __init__(self, steps: ReplaySteps, index: int, step: int, start: int | None) -> None:
        self._steps, self.index, self.step, self.start = steps, index, step, start
        self.end: int | None = None  # where the next step's record starts (None: not known yet)
        self.overflow = 0

    @property
    def events(self) -> list[dict[str, Any]]:
        return self._steps.events_of(self)


class ReplaySteps:
    """Every timeline step of a replayed file, in the place of ``SessionState.steps`` (a
    ``deque`` of the last ``STEPS_KEPT``): the same sequence interface, read and changed under the
    state's lock. A record holds its step, its text offsets and its overflow count; its events
    live in an LRU cache of at most ``cache_events`` events besides the record being folded and
    the one last loaded (``held`` counts them), and are read back from the file (the first
    ``EVENTS_PER_STEP`` timeline events of its lines, as the state kept them) when evicted."""

    def __init__(self, stream: TraceStream, cache_events: int = REPLAY_CACHE_EVENTS) -> None:
        self.stream = stream
        self.cache_events = cache_events
        self._refs: list[_StepRef] = []
        self._starts: deque[tuple[int, int]] = deque()  # (step, offset) announced by the reader
        self._cache: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        self.end: int | None = None  # the text's end, once the reader is done
        self.loads = 0  # steps read back from the file
        self.error = ""  # why the last step could not be read back

    # the deque's interface, as SessionState uses it
    def __len__(self) -> int:
        return len(self._refs)

    def __getitem__(self, i: int) -> _StepRef:
        return self._refs[i]

    def __iter__(self) -> Iterator[_StepRef]:
        return iter(list(self._refs))  # a copy: steps_available() may run without the lock

    def __reversed__(self) -> Iterator[_StepRef]:
        return reversed(list(self._refs))

    def append(self, record: StepRecord) -> None:
        start = self._starts.popleft()[1] if self._starts else None
        if self._refs and start is not None:  # (None: a record of the viewer's own, e.g. its error note)
            self._refs[-1].end = start
        ref = _StepRef(self, len(self._refs), record.step, start)
        ref.overflow = record.overflow
        self._refs.append(ref)
        self._cache[ref.index] = record.events  # the state appends to it while the step is folded
        self._evict(keep=ref.index)

    # the reader's side
    def expect(self, step: int, offset: int) -> None:
        """The reader saw a timeline record start at text ``offset`` (before folding it)."""
        self._starts.append((step, offset))

    def finish(self, end: int) -> None:
        self.end = end
        if self._refs:
            self._refs[-1].end = end
        self._evict(keep=-1)

    @property
    def held(self) -> int:
        """Events held in memory."""
        return sum(len(events) for events in self._cache.values())

    def events_of(self, ref: _StepRef) -> list[dict[str, Any]]:
        events = self._cache.get(ref.index)
        if events is not None:
            self._cache.move_to_end(ref.index)
            return events
        events = self._load(ref)
        self._cache[ref.index] = events
        self._evict(keep=ref.index)
        return events

    def _load(self, ref: _StepRef) -> list[dict[str, Any]]:
        if ref.start is None or ref.end is None:
            return []
        events: list[dict[str, Any]] = []
        self.loads += 1
        try:
            for line in self.stream.read_lines(ref.start, ref.end):
                if not line.strip():
                    continue
                event = validate(loads(line))
                if event["kind"] in TIMELINE_KINDS and event["step"] == ref.step:
                    events.append(event)
                    if len(events) >= EVENTS_PER_STEP:
                        break
        except (TraceFileError, EventError, ValueError, OSError) as e:  # the file changed since it was read
            self.error = f"{self.stream.path}: cannot read step {ref.step} back: {e}"
        return events

    def _evict(self, keep: int) -> None:
        """Drop least recently used steps until ``cache_events`` are held, never the record the
        state may still be folding into (the last, until ``finish``) nor ``keep``."""
        tail = len(self._refs) - 1 if self.end is None else -1
        held = self.held
        for index in list(self._cache):
            if held <= self.cache_events:
                return
            if index in (tail, keep) or self._refs[index].start is None:
                continue
            held -= len(self._cache.pop(index))


class SocketSource(Source):
    """Listens on a Unix socket in a private directory (owner-only permissions) for the traced
    program. A connection counts as the program only once its first line carries this session's
    token (within ``HANDSHAKE_TIMEOUT`` seconds, ``MAX_HELLO_BYTES`` at most): one that does not is
    closed and reported, and the viewer keeps listening, so no other process of the user can
    take the program's place by connecting first. Each connection is checked on a thread of its
    own, so a silent one does not hold up the real program.

    Every line after the token is parsed and validated before it reaches the state: a malformed
    message is reported as an error in the UI and otherwise ignored, never crashing the viewer.
    ``ranks``: the connections taken, one per rank of ``modscope run --nproc-per-node N`` (each
    rank's events carry its rank, and ``SessionState`` folds each rank apart); ``control`` sends
    to every rank, or to one. The private directory is removed by ``stop``, and at the latest when the interpreter exits
    normally (``modscope run`` also stops on SIGHUP and SIGTERM: see ``launch``)."""

    live = True

    def __init__(self, ranks: int = 1) -> None:
        if ranks < 1:
            raise ValueError(f"ranks must be >= 1, got {ranks}")
        self.ranks = ranks  # connections taken (one per rank of ``modscope run --nproc-per-node``)
        self.dir = tempfile.mkdtemp(prefix="modscope-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.dir, ignore_errors=True)  # also at exit
        os.chmod(self.dir, 0o700)
        self.address = os.path.join(self.dir, "viewer.sock")
        self.token = secrets.token_hex(16)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.address)
        os.chmod(self.address, 0o600)
        self._server.listen(16)
        self._conns: list[socket.socket] = []
        self._by_rank: dict[int, socket.socket] = {}  # learnt from each connection's first ranked event
        self._open = 0  # connections still sending
        self._conn_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._stopped = False
        self.description = "live"
        self.rejected = 0  # malformed messages from the program
        self.refused = 0  # connections refused for want of the token

    def start(self, state: SessionState) -> None:
        threading.Thread(target=self._accept, args=(state,), daemon=True, name="modscope-socket").start()

    def _accept(self, state: SessionState) -> None:
        """Take connections until one proves it is the program (or the source stops)."""
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # the listener was closed: the program connected, or the viewer stops
            threading.Thread(target=self._handshake, args=(state, conn), daemon=True,
                             name="modscope-handshake").start()

    def _handshake(self, state: SessionState, conn: socket.socket) -> None:
        """Read the first line (the token) of ``conn``; serve it if it is the program's, else
        close it and report why."""
        received = b""
        hello: bytes | None = None
        try:
            conn.settimeout(HANDSHAKE_TIMEOUT)
            while b"\n" not in received and len(received) <= MAX_HELLO_BYTES:
                data = conn.recv(1 << 16)
                if not data:
                    break
                received += data  # a few KB at most: the loop ends past MAX_HELLO_BYTES
            conn.settimeout(None)
        except OSError:  # a timeout or a reset
            received = b""
        end = received.find(b"\n", 0, MAX_HELLO_BYTES + 1)
        if end >= 0:
            hello, received = received[:end], received[end + 1:]
        with self._conn_lock:
            taken = len(self._conns) >= self.ranks or self._stopped
            accepted = hello is not None and not taken and _hello_ok(hello, self.token)
            if accepted:
                self._conns.append(conn)
                self._open += 1
                if len(self._conns) >= self.ranks:
                    self._close_listener()  # every rank is here: nobody else can connect now
            else:
                self.refused += 1
                refused = self.refused
        if not accepted:
            conn.close()
            if refused <= 20 and not self._stopped:
                self._report(state, "refused a second connection to this session" if taken else
                             "refused a connection without this session's token (still waiting for the "
                             "training process)")
            return
        self._serve(state, conn, received)

    def _serve(self, state: SessionState, conn: socket.socket, data: bytes) -> None:
        """Fold the program's events as they arrive (``data``: what came after the token),
        until it disconnects."""
        reader = LineReader(MAX_LINE_BYTES, strict=False)
        oversized = 0
        rank: int | None = None
        with conn:
            while True:
                batch = list(reader.feed(data))
                if reader.oversized != oversized:
                    oversized = reader.oversized
                    self.rejected += 1
                    self._report(state, f"ignored a message from the training process longer than "
                                        f"{MAX_LINE_BYTES >> 20} MiB")
                events = self._parse(state, batch)
                if rank is None and events and "rank" in events[0]:
                    rank = events[0]["rank"]
                    with self._conn_lock:
                        self._by_rank[rank] = conn
                fold(state, events)
                try:
                    data = conn.recv(1 << 16)
                except OSError:
                    data = b""
                if not data:
                    with self._conn_lock:
                        self._open -= 1
                        last = self._open == 0 and len(self._conns) >= self.ranks
                    if rank is not None and self.ranks > 1:
                        state.mark_disconnected("its process disconnected", rank=rank)
                    if last or self.ranks == 1:
                        state.mark_disconnected("the training process disconnected")
                    return

    def _parse(self, state: SessionState, lines: list[bytes]) -> list[dict[str, Any]]:
        events = []
        for line in lines:
            if not line.strip():
                continue
            try:
                events.append(validate(loads(line)))
            except (ValueError, EventError) as e:  # JSONDecodeError is a ValueError
                self.rejected += 1
                if self.rejected <= 20:
                    self._report(state, f"ignored a malformed message from the training process: {e}")
        return events

    @staticmethod
    def _report(state: SessionState, message: str) -> None:
        with state.lock:
            state.apply(make("error", state.last_seq, 0, state.step, etype="ProtocolError", message=message,
                             where="viewer", module=None, traceback=""))
            state.events_total -= 1  # the viewer's own note is not a received event

    def control(self, message: dict[str, Any], rank: int | None = None) -> bool:
        """Send ``message`` to the program: to every rank (``rank`` None), or to rank ``rank``.
        False when none of them is connected."""
        with self._conn_lock:
            conns = list(self._conns) if rank is None else [c for c in [self._by_rank.get(rank)] if c is not None]
        sent = False
        line = dumps_bytes(message) + b"\n"
        for conn in conns:
            try:
                with self._send_lock:
                    conn.sendall(line)
                sent = True
            except OSError:
                continue
        return sent

    def _close_listener(self) -> None:
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        except OSError:
            pass
        self._server.close()

    def stop(self) -> None:
        """Close the listener and the program's connection and remove the private directory
        (idempotent)."""
        with self._conn_lock:
            self._stopped = True
            conns = list(self._conns)
        try:
            self._close_listener()
            for conn in conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        finally:
            self._cleanup()


def _hello_ok(line: bytes, token: str) -> bool:
    try:
        hello = json.loads(line)
    except ValueError:
        return False
    return isinstance(hello, dict) and hello.get("hello") == "modscope" and \
        secrets.compare_digest(str(hello.get("token", "")), token)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


MAX_ATTACHED_RANKS = 64  # ranks of one machine a viewer attaches to (PORT .. PORT + 63)


class AttachSource(Source):
    """A running job's live stream (``modscope record --serve``), over TCP: connects to
    ``host:port``, sends the job's secret as its first line, then folds what comes: the history
    the job kept (the session, the model, the last events), then live events, until the job
    ends or the viewer quits (``stop`` closes the socket: the viewer detaches, the job goes on).
    Every line is parsed and validated before it reaches the state, as from a child
    (``SocketSource``); a line over ``MAX_LINE_BYTES`` is skipped and reported.

    Ranks: a job of several ranks serves each local rank's stream on PORT + its local rank. When
    the first stream says the job has more than one rank, the other ranks are attached to as
    well (each with the secret ``secret_for(port)`` gives: the job's own secret files, or the
    one ``--token-file``), each on a thread of its own folding into the same state; a rank that
    cannot be reached is reported.

    The controls: the job tells each viewer whether it holds them (``events.serve``: one viewer
    at a time, handed over when the holder detaches) in a line of its own (``{"attach": 1,
    "controls": ...}``); ``controls`` says whether this viewer holds them (on every rank it is
    attached to; None until told), ``description`` shows it, and ``control`` sends the holder's
    commands (pause, resume, step, breakpoints) back on the same authenticated sockets, to every
    rank or one, refused here with the reason (``read_only``) otherwise."""

    live = True

    def __init__(self, host: str, port: int, secret: str, *, timeout: float = 5.0,
                 secret_for: Any = None) -> None:
        self.host, self.port = host, port
        self._timeout = timeout
        self._secret_for = secret_for or (lambda _port: secret)
        self._sock = self._connect(port, secret)
        self.address = f"{host}:{port}"
        self.description = f"attached to {self.address}"
        self.rejected = 0
        self.controls: bool | None = None  # whether this viewer holds the job's controls (None: not told yet)
        self.read_only = "the job has not said yet who holds its controls"
        self._holds: dict[socket.socket, bool] = {}  # each connection: holds the controls there
        self._socks: list[socket.socket] = [self._sock]
        self._by_rank: dict[int, socket.socket] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._ranks_opened = False
        self._stopped = False

    def _connect(self, port: int, secret: str) -> socket.socket:
        try:
            sock = socket.create_connection((self.host, port), timeout=self._timeout)
            sock.sendall(secret.encode() + b"\n")
            sock.settimeout(None)
        except OSError as e:
            raise ConnectionError(f"cannot attach to {self.host}:{port}: {e.strerror or e}") from None
        return sock

    def start(self, state: SessionState) -> None:
        threading.Thread(target=self._serve, args=(state, self._sock), daemon=True, name="modscope-attach").start()

    def _serve(self, state: SessionState, sock: socket.socket | None = None) -> None:
        sock = sock or self._sock
        main = sock is self._sock
        reader = LineReader(MAX_LINE_BYTES, strict=False)
        oversized = 0
        got = False
        rank: int | None = None
        while True:
            try:
                data = sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                why = ("detached" if self._stopped else "the job's stream ended" if got else
                       "the job closed the connection (a wrong secret, or too many viewers)")
                with self._lock:
                    self._holds.pop(sock, None)
                if rank is not None and self._ranks_opened:
                    state.mark_disconnected(why, rank=rank)
                if main:
                    state.mark_disconnected(why)
                return
            got = True
            batch = list(reader.feed(data))
            if reader.oversized != oversized:
                oversized = reader.oversized
                self.rejected += 1
                self._report(state, f"ignored a message from the job longer than {MAX_LINE_BYTES >> 20} MiB")
            events = self._lines(state, batch, sock)
            if rank is None and events and "rank" in events[0]:
                rank = events[0]["rank"]
                with self._lock:
                    self._by_rank[rank] = sock
                if main and events[0].get("world_size", 1) > 1:
                    self._open_ranks(state, events[0]["world_size"])

    def _open_ranks(self, state: SessionState, world: int) -> None:
        """Attach to the machine's other ranks (PORT + 1, ...), each on a thread of its own."""
        if self._ranks_opened:
            return
        self._ranks_opened = True
        for offset in range(1, min(world, MAX_ATTACHED_RANKS)):
            port = self.port + offset
            try:
                sock = self._connect(port, self._secret_for(port))
            except (ConnectionError, OSError, ValueError) as e:  # (another machine's rank, or gone)
                self._report(state, f"rank on port {port}: {e}")
                continue
            with self._lock:
                if self._stopped:
                    sock.close()
                    return
                self._socks.append(sock)
            threading.Thread(target=self._serve, args=(state, sock), daemon=True, name="modscope-attach").start()

    def _lines(self, state: SessionState, lines: list[bytes], sock: socket.socket | None = None) -> list:
        """Fold the events among ``lines`` (returned); an ``attach`` line says who holds the controls."""
        events = []
        for line in lines:
            if line.startswith(b'{"attach"'):
                self._attach_line(state, line, sock)
            else:
                events.append(line)
        parsed = self._parse(state, events)
        fold(state, parsed)
        return parsed

    def _attach_line(self, state: SessionState, line: bytes, sock: socket.socket | None = None) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict) or not isinstance(message.get("controls"), bool):
            self.rejected += 1
            self._report(state, f"ignored a malformed message from the job: {line[:80]!r}")
            return
        why = message.get("why") if isinstance(message.get("why"), str) else ""
        with self._lock:
            self._holds[sock] = message["controls"]
            self.controls = all(self._holds.values())
        if not message["controls"] or self.controls:
            self.read_only = "" if self.controls else f"read-only: {why[:200] or 'another viewer holds the controls'}"
        self.description = f"attached to {self.address} · " + ("controls: this viewer" if self.controls
                                                              else self.read_only)
        with state.lock:
            state.rev.status += 1  # (the title shows it)

    def control(self, message: dict[str, Any], rank: int | None = None) -> bool:
        """Send a command to the job (every rank attached to, or rank ``rank``) when this viewer
        holds the controls there (False otherwise, and when the job is gone: ``read_only`` says
        why). Never blocks for long: a few bytes on sockets the job reads on threads of its own."""
        with self._lock:
            socks = list(self._socks) if rank is None else [s for s in [self._by_rank.get(rank)] if s is not None]
            holding = bool(socks) and all(self._holds.get(s) for s in socks)
        if not holding or self._stopped:
            return False
        line = dumps_bytes(message) + b"\n"
        try:
            with self._send_lock:
                for sock in socks:
                    sock.sendall(line)
        except OSError:
            self.read_only = "the job's stream is closed"
            return False
        return True

    # the same checks, and the same reports, as a child's lines
    _parse = SocketSource._parse
    _report = staticmethod(SocketSource._report)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            socks = list(self._socks)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def child_env(environ: Any, cores: int, token: str | None = None) -> dict[str, str]:
    """The traced child's environment: the session's ``token`` in ``TOKEN_VARIABLE`` (the child
    takes it out of its environment before the user's script runs; a command line is readable
    by every local user in ``/proc/PID/cmdline``, an environment only by its owner), unbuffered
    output and, unless the user set one of ``THREAD_VARIABLES``, BLAS and torch's intra-op
    threads limited to the cores the viewer leaves free (one fewer than the machine has, at
    least one). Left to their default of one thread per core, they fight the viewer for the
    CPU: on 2 cores a Net step took 52 ms in fc1 alone instead of 0.22 ms, and keys answered in
    0.6 s."""
    env = {k: v for k, v in environ.items() if k != TOKEN_VARIABLE}
    env["PYTHONUNBUFFERED"] = "1"
    if token is not None:
        env[TOKEN_VARIABLE] = token
    if not any(name in environ for name in THREAD_VARIABLES):
        threads = str(max(1, cores - 1))
        env.update(dict.fromkeys(THREAD_VARIABLES, threads))
    return env


# torch's elastic launcher, as ``modscope run --nproc-per-node N`` starts the ranks with it: a
# standalone rendezvous on a free port, no restarts, a dead rank noticed within 0.1 s.
ELASTIC_LAUNCHER = ["-m", "torch.distributed.run", "--standalone", "--max-restarts", "0", "--monitor-interval", "0.1"]


def child_command(source: SocketSource, script: str, args: list[str], trace_file: str | None,
                  stats: bool = False, backend: str = "auto", nproc: int | None = None) -> list[str]:
    """The command line of ``python -m modscope.capture.child`` for ``script`` (``backend``: the
    framework to trace; ``auto`` lets the child tell from the script's imports). The session's
    token is not on it: it goes in the environment (``child_env``). ``nproc``: that many ranks,
    started by torch's elastic launcher (``torch.distributed.run``), each running the child; rank
    0 streams to the viewer, every rank records its own file beside ``trace_file``."""
    launcher = [*ELASTIC_LAUNCHER, "--nproc-per-node", str(nproc)] if nproc else []
    cmd = [sys.executable, "-u", *launcher, "-m", "modscope.capture.child", "--connect", source.address]
    if trace_file:
        cmd += ["--trace-file", trace_file]
    if stats:
        cmd.append("--stats")
    if backend != "auto":
        cmd += ["--backend", backend]
    return [*cmd, script, *args]


RANKS_STOP_TIMEOUT = 30.0  # seconds torch's launcher has to stop its ranks and exit before it is killed


class ChildProcess:
    """The traced program: ``python -m modscope.capture.child`` running the user's script, connected to a
    ``SocketSource``. Its stdout and stderr are collected (last lines) for the log view."""

    def __init__(self, source: SocketSource, script: str, args: list[str], trace_file: str | None,
                 stats: bool = False, backend: str = "auto", nproc: int | None = None, nice: int = 0) -> None:
        if not Path(script).is_file():
            raise FileNotFoundError(f"no such script: {script}")
        self.log: deque[str] = deque(maxlen=500)
        self.log_rev = 0
        self.nproc = nproc  # ranks under torch's launcher (None: one process)
        cmd = child_command(source, script, args, trace_file, stats, backend, nproc)
        env = child_env(os.environ, os.cpu_count() or 1, token=source.token)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env)
        self.nice = nice
        if nice:  # (the demo's: launch.DEMO_NICE) as it starts: the threads its imports start later inherit it
            # below the viewer's own priority (a viewer started under `nice -n 19` gave its demo 10: above it)
            os.setpriority(os.PRIO_PROCESS, self.proc.pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
        self.trace_file = trace_file
        threading.Thread(target=self._read_output, daemon=True, name="modscope-child-output").start()

    def _read_output(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.log.append(raw.decode("utf-8", "replace").rstrip("\n"))
            self.log_rev += 1

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def stop(self, source: SocketSource, timeout: float = 5.0) -> int:
        """Ask the program to stop (it closes its trace file), or terminate it when it is not
        connected (it stops as cleanly on SIGTERM), then kill it if it does not end. Returns
        its exit status as a shell reports it (``exit_status``: 137 for a SIGKILL)."""
        if self.nproc:  # torch's launcher stops its ranks, then itself: seconds on a busy machine
            timeout = max(timeout, RANKS_STOP_TIMEOUT)
        if self.proc.poll() is None:
            # Ranks: the launcher forwards SIGTERM to every rank (each closes its trace file);
            # stopping rank 0 alone would leave the others waiting in a collective.
            if not self.nproc and source.control({"cmd": "stop"}):
                try:
                    return exit_status(self.proc.wait(timeout=timeout))
                except subprocess.TimeoutExpired:
                    pass
            self.proc.terminate()  # (not connected: SIGTERM stops it as cleanly, trace file complete)
            try:
                return exit_status(self.proc.wait(timeout=timeout))
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return exit_status(self.proc.wait())


def exit_status(returncode: int) -> int:
    """A process's exit status as shells report it: a child killed by signal N (``returncode``
    -N) is 128 + N, e.g. 137 for SIGKILL (``sys.exit(-9)`` would make it 247)."""
    return 128 - returncode if returncode < 0 else returncode

