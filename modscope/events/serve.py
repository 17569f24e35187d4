"""A live event stream on TCP for viewers that attach to a running job (``modscope record --serve``,
``modscope attach``).

``EventServer`` is a sink that takes JSON lines (run it behind a ``BackgroundSink``: the training
thread only hands events over; lines reach the server on the writer thread). It keeps a bounded
history (the session and model events, and the last ``history`` events) and streams to every
attached viewer. The rules that keep training safe from viewers, and the job safe from strangers:

- the listener binds 127.0.0.1 unless another address is asked for (``modscope record`` warns);
- a connection must send the job's secret as its first line within ``HANDSHAKE_TIMEOUT`` seconds
  (a deadline for the whole line, not per read) and ``MAX_HELLO_BYTES`` bytes; anything else
  (garbage, an HTTP request, a huge line, silence, a wrong secret) is closed and counted
  (``refused``), after reading at most ``MAX_HELLO_BYTES``;
- the secret is never on a command line: ``write_secret`` puts it in an owner-only file (0600, in
  a 0700 folder) that ``attach`` reads for the same user, or that is given with ``--token-file``;
- each viewer has its own bounded queue and thread: the writer thread never waits for a viewer;
  a viewer whose queue fills (it stopped reading, or reads slower than the job writes) or whose
  socket does not take a send within ``SEND_TIMEOUT`` is disconnected and counted (``dropped_viewers``);
- at most ``MAX_VIEWERS`` at once; quitting a viewer detaches and training goes on; it may
  attach again later;
- the controls (pause, resume, step, breakpoints): when the job has them (``on_control``), one
  viewer at a time holds them, the first to attach, then, when it detaches, the one attached
  longest. Each viewer is told which it is by a line of its own before any event
  (``{"attach": 1, "controls": true|false, "why": ...}``) and again at a handover. What a viewer
  sends after its secret is read on a thread of its own, in lines of at most ``MAX_HELLO_BYTES``
  and at most ``CONTROL_BYTES_PER_S`` (past that the thread sleeps: TCP then holds the viewer
  back, never the job); the holder's lines that are JSON objects with a ``cmd`` of
  ``VIEWER_COMMANDS`` go to ``on_control`` (the job's controller checks them further and never
  blocks there), everything else is dropped and counted (``refused_lines``). A viewer cannot stop
  the job (``stop`` is not among them). When the holder detaches and no viewer is left, the job's
  breakpoints are cleared and it is resumed: a job is never left paused by a viewer gone.
"""

from __future__ import annotations

import hmac
import json
import os
import queue
import secrets
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .schema import dumps_bytes, envelope_prefix

HANDSHAKE_TIMEOUT = 5.0  # seconds a connection has to send the whole secret line
MAX_HELLO_BYTES = 4096  # the secret line is far shorter
SEND_TIMEOUT = 10.0  # seconds a viewer's socket may take to accept one send
MAX_VIEWERS = 8
VIEWER_QUEUE = 1024  # batches of lines waiting for one viewer before it is dropped
DEFAULT_HISTORY = 100_000  # events kept for a viewer that attaches later
IDLE_CHECK = 0.5  # seconds between checks that an idle viewer is still there
VIEWER_COMMANDS = ("pause", "resume", "step", "break", "full")  # what the viewer holding the controls may send
CONTROL_BYTES_PER_S = 64 * 1024  # what one viewer may send a second before its reader sleeps
_HEADERS = (envelope_prefix("session"), envelope_prefix("model"))


def secret_dir() -> Path:
    """The owner-only folder of this user's job secrets (``~/.modscope/attach``)."""
    return Path.home() / ".modscope" / "attach"


def secret_path(port: int) -> Path:
    """Where the secret of the job serving on ``port`` is, for this user."""
    return secret_dir() / f"{port}.secret"


def write_secret(port: int, secret: str) -> Path:
    """Write ``secret`` to ``secret_path(port)``: the folder 0700, the file 0600, created so (never
    readable by others, not even for a moment). Replaces a stale file of an earlier job."""
    folder = secret_dir()
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    path = secret_path(port)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
    return path


class SecretFileError(OSError):
    """A secret file that cannot be used: missing, readable by others, or malformed."""


def read_secret(path: str | os.PathLike) -> str:
    """The secret in ``path``; ``SecretFileError`` naming the file when it is missing, when
    others may read it (it must be 0600 or stricter), or when it holds no secret."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii", errors="replace")[:MAX_HELLO_BYTES]
    except OSError as e:
        raise SecretFileError(f"{path}: cannot read the job's secret ({e.strerror})") from None
    if mode & 0o077:
        raise SecretFileError(f"{path}: readable by other users (mode {mode & 0o777:o}); it must be 0600")
    secret = text.strip()
    if not secret or not secret.isalnum():
        raise SecretFileError(f"{path}: holds no secret")
    return secret


def new_secret() -> str:
    return secrets.token_hex(16)


class _Viewer:
    def __init__(self, conn: socket.socket, address: Any) -> None:
        self.conn = conn
        self.address = address
        self.queue: queue.Queue[bytes | None] = queue.Queue(VIEWER_QUEUE)
        self.closed = False


def attach_line(controls: bool, why: str = "") -> bytes:
    """The line that tells a viewer whether it holds the controls (not an event: viewers tell it
    by its ``attach`` key)."""
    return json.dumps({"attach": 1, "controls": controls, "why": why}).encode() + b"\n"


class EventServer:
    """A sink of JSON lines that viewers attach to over TCP (see the module's docstring)."""

    takes_lines = True

    def __init__(self, secret: str, host: str = "127.0.0.1", port: int = 0, *,
                 history: int = DEFAULT_HISTORY, on_control: Callable[[bytes], None] | None = None,
                 read_only: str = "") -> None:
        if history < 1:
            raise ValueError(f"history must be a positive number of events, got {history}")
        self.secret = secret
        self.history = history
        self._listener = socket.create_server((host, port), backlog=16)
        self.host, self.port = self._listener.getsockname()[:2]
        self._lock = threading.Lock()
        self._headers: list[bytes] = []  # session and model lines, kept whole
        self._body: deque[bytes] = deque()  # the other lines, the last ``history``
        self._viewers: list[_Viewer] = []
        self._stopped = False
        self.on_control = on_control  # the job's controller (None: every viewer is read-only)
        self.read_only = read_only or "this job takes no controls from viewers"  # why, when on_control is None
        self._holder: _Viewer | None = None  # the viewer holding the controls
        self.commands = 0  # controls passed on to the job
        self.refused_lines = 0  # lines from viewers dropped (not the holder's, not a command, too long)
        self.refused = 0  # connections without the secret
        self.dropped_viewers = 0  # viewers disconnected for falling behind
        self.attached = 0  # viewers ever attached
        self.dropped = 0  # (the sink protocol: the server never loses events of the trace)
        threading.Thread(target=self._accept, daemon=True, name="modscope-serve").start()

    # --- the sink side (the writer thread) -------------------------------------------------------

    def write_lines(self, data: bytes) -> None:
        lines = data.splitlines(keepends=True)
        with self._lock:
            for line in lines:
                if line.startswith(_HEADERS):
                    self._headers.append(line)
                else:
                    self._body.append(line)
            while len(self._body) > self.history:
                self._body.popleft()
            viewers = list(self._viewers)
        for viewer in viewers:
            try:
                viewer.queue.put_nowait(data)
            except queue.Full:  # it stopped reading, or reads slower than the job writes
                self._drop(viewer, slow=True)

    def write(self, event: dict[str, Any]) -> None:
        self.write_lines(dumps_bytes(event) + b"\n")

    def write_many(self, events: list[dict[str, Any]]) -> None:
        self.write_lines(b"".join(dumps_bytes(e) + b"\n" for e in events))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        """Stop listening and detach every viewer (each gets what was queued for it first)."""
        with self._lock:
            self._stopped = True
            viewers = list(self._viewers)
        try:
            self._listener.close()
        except OSError:
            pass
        for viewer in viewers:
            try:
                viewer.queue.put_nowait(None)
            except queue.Full:
                self._drop(viewer, slow=True)

    @property
    def viewers(self) -> int:
        with self._lock:
            return len(self._viewers)

    # --- the viewers' side ------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                conn, address = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handshake, args=(conn, address), daemon=True,
                             name="modscope-attach").start()

    def _hello(self, conn: socket.socket) -> bytes | None:
        """The first line, read within the deadline and the byte bound, or None."""
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT
        received = b""
        try:
            while b"\n" not in received and len(received) <= MAX_HELLO_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                conn.settimeout(left)
                data = conn.recv(MAX_HELLO_BYTES + 1 - len(received))
                if not data:
                    return None
                received += data
        except OSError:
            return None
        end = received.find(b"\n")
        return received[:end].strip() if 0 <= end <= MAX_HELLO_BYTES else None

    def _handshake(self, conn: socket.socket, address: Any) -> None:
        hello = self._hello(conn)
        ok = hello is not None and hmac.compare_digest(hello, self.secret.encode())
        with self._lock:
            if not ok or self._stopped or len(self._viewers) >= MAX_VIEWERS:
                self.refused += 1
                viewer = None
            else:
                viewer = _Viewer(conn, address)
                holds = self.on_control is not None and self._holder is None
                if holds:
                    self._holder = viewer
                why = ("" if holds else "another viewer holds the controls" if self.on_control is not None
                       else self.read_only)
                # the history and the registration under one lock: nothing missed, nothing twice
                backlog = attach_line(holds, why) + b"".join(self._headers) + b"".join(self._body)
                self._viewers.append(viewer)
                self.attached += 1
        if viewer is None:
            _close(conn)
            return
        threading.Thread(target=self._read, args=(viewer,), daemon=True, name="modscope-attach-read").start()
        self._send(viewer, backlog)

    def _send(self, viewer: _Viewer, backlog: bytes) -> None:
        conn = viewer.conn
        try:
            conn.settimeout(SEND_TIMEOUT)
            if backlog:
                conn.sendall(backlog)
            while True:
                try:
                    data = viewer.queue.get(timeout=IDLE_CHECK)
                except queue.Empty:
                    if viewer.closed:  # the viewer quit (its reader saw it) while the job had nothing to send
                        break
                    continue
                if data is None:
                    break
                conn.sendall(data)
        except (OSError, ValueError):  # gone (detached), dropped, or did not take a send in time
            pass
        self._drop(viewer, slow=False)

    def _read(self, viewer: _Viewer) -> None:
        """What the viewer sends after its secret (its own thread): lines of at most
        ``MAX_HELLO_BYTES``, at most ``CONTROL_BYTES_PER_S``; the holder's commands go to the job.
        The end of the stream is the viewer detaching."""
        conn = viewer.conn
        pending = b""
        window, used = time.monotonic(), 0
        while not viewer.closed:
            try:  # (no socket timeout here: the sender's SEND_TIMEOUT is the socket's)
                readable, _, _ = select.select([conn], [], [], IDLE_CHECK)
                if not readable:
                    continue
                data = conn.recv(MAX_HELLO_BYTES, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except (OSError, ValueError):  # closed here (dropped for falling behind), or reset
                break
            if not data:
                break
            used += len(data)
            if used > CONTROL_BYTES_PER_S:  # a flood: hold the viewer back (TCP), never the job
                time.sleep(max(0.0, 1.0 - (time.monotonic() - window)))
                window, used = time.monotonic(), 0
            pending += data
            *lines, pending = pending.split(b"\n")
            if len(pending) > MAX_HELLO_BYTES:  # a line past the bound: dropped whole
                self.refused_lines += 1
                pending = b""
            if lines:
                deliver = self.on_control if (viewer is self._holder and self.on_control is not None) else None
                if deliver is None:
                    self.refused_lines += sum(1 for line in lines if line.strip())
                else:
                    self.viewer_lines(b"\n".join(lines), deliver)
        self._drop(viewer, slow=False)

    def viewer_lines(self, data: bytes, deliver: Callable[[bytes], None]) -> tuple[int, int]:
        """Pass the commands among ``data``'s lines to ``deliver``; returns ``(commands, refused)``
        (also added to ``commands`` and ``refused_lines``). A command is a line of at most
        ``MAX_HELLO_BYTES`` holding a JSON object whose ``cmd`` is one of ``VIEWER_COMMANDS``."""
        commands = refused = 0
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            message = None
            if len(line) <= MAX_HELLO_BYTES:
                try:
                    message = json.loads(line)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    message = None
            if isinstance(message, dict) and message.get("cmd") in VIEWER_COMMANDS:
                commands += 1
                deliver(line)
            else:
                refused += 1
        self.commands += commands
        self.refused_lines += refused
        return commands, refused

    def _drop(self, viewer: _Viewer, slow: bool) -> None:
        with self._lock:
            if viewer.closed:
                return
            viewer.closed = True
            if viewer in self._viewers:
                self._viewers.remove(viewer)
            if slow:
                self.dropped_viewers += 1
            heir = None
            orphaned = False
            if viewer is self._holder:  # a handover: the viewer attached longest holds them now
                self._holder = heir = self._viewers[0] if self._viewers else None
                orphaned = heir is None
        if orphaned and self.on_control is not None:
            # nobody left to resume: a job paused by a viewer that went away goes on (its
            # breakpoints cleared, or they would stop it again with nobody there)
            self.on_control(b'{"cmd": "break"}')
            self.on_control(b'{"cmd": "resume"}')
        if heir is not None:
            try:
                heir.queue.put_nowait(attach_line(True))
            except queue.Full:
                pass  # it is being dropped for falling behind: the next one inherits then
        if slow:  # wake its thread: it ends on the closed socket
            try:
                viewer.queue.put_nowait(None)
            except queue.Full:
                pass
        _close(viewer.conn)


def _close(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


def parse_address(text: str) -> tuple[str, int]:
    """``"PORT"`` or ``"HOST:PORT"`` (``"[::1]:PORT"`` for IPv6) -> ``(host, port)``; the host
    defaults to 127.0.0.1. ``ValueError`` naming what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected [HOST:]PORT with PORT in 0-65535, got {text!r}")
    return host, int(port)
