"""The live stream of ``modscope record --serve`` (``events.serve``) through real sockets: viewers
attach, detach and attach again and get the kept history then live lines; hostile clients
(garbage, an HTTP request, a wrong secret, silence, a 64 MB line, a viewer that never reads) are
closed or dropped and counted, and never block the writer."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modscope.events import serve
from modscope.events.schema import dumps_bytes, make
from modscope.events.serve import EventServer, SecretFileError, parse_address, read_secret, write_secret
from modscope.views.tui.sources import AttachSource
from modscope.views.tui.state import SessionState

SECRET = "0123456789abcdef0123456789abcdef"


def _line(kind: str, seq: int, **fields) -> bytes:
    return dumps_bytes(make(kind, seq, 0, 0, **fields)) + b"\n"


HEADERS = (_line("session", 0, schema=1, engine_version="0", modscope_version="0", pid=1, started="x", argv=[])
           + _line("model", 1, model="M", modules=[], params=[], buffers=[]))


def _metrics(first: int, count: int) -> bytes:
    return b"".join(_line("metric", seq, values={"loss": float(seq)}) for seq in range(first, first + count))


@pytest.fixture
def server():
    s = EventServer(SECRET, history=50)
    s.write_lines(HEADERS + _metrics(2, 100))
    yield s
    s.close()


def _connect(s: EventServer, hello: bytes | None = SECRET.encode() + b"\n") -> socket.socket:
    conn = socket.create_connection((s.host, s.port), timeout=10)
    if hello is not None:
        conn.sendall(hello)
    return conn


def _read_lines(conn: socket.socket, count: int) -> list[bytes]:
    """The next ``count`` event lines (the job's ``attach`` line, who holds the controls, skipped)."""
    data = b""
    while sum(not line.startswith(b'{"attach"') for line in data.split(b"\n")[:-1]) < count:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return [line for line in data.splitlines() if not line.startswith(b'{"attach"')][:count]


def _closed(conn: socket.socket) -> bool:
    try:
        return conn.recv(1 << 16) == b""
    except ConnectionResetError:
        return True


def _wait(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_viewer_gets_the_kept_history_then_live_lines_and_may_attach_again(server):
    for _ in range(2):  # attach, detach, attach again
        conn = _connect(server)
        lines = _read_lines(conn, 52)
        assert lines[:2] == HEADERS.splitlines()  # the session and model events are kept whole
        assert lines[2:] == _metrics(52, 50).splitlines()  # then the last 50 others
        assert _wait(lambda: server.viewers == 1)
        server.write_lines(_metrics(102, 3))
        assert _read_lines(conn, 3) == _metrics(102, 3).splitlines()
        conn.close()  # detach: noticed without a send
        assert _wait(lambda: server.viewers == 0)
        server._body.clear()
        server.write_lines(_metrics(52, 50))  # the same history for the next attach
    assert server.attached == 2 and server.refused == 0 and server.dropped_viewers == 0


@pytest.mark.parametrize("hello", [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x00\xff garbage\n",
                                   b"0123456789abcdef0123456789abcdee\n", SECRET.encode()[:-1] + b"\n",
                                   b"x" * 10_000])
def test_a_connection_without_the_secret_is_closed_and_counted(server, hello):
    conn = _connect(server, hello)
    assert _closed(conn)
    assert _wait(lambda: server.refused == 1) and server.viewers == 0


def test_a_silent_connection_is_closed_at_the_handshake_deadline(server, monkeypatch):
    monkeypatch.setattr(serve, "HANDSHAKE_TIMEOUT", 0.3)
    conn = _connect(server, None)
    conn.sendall(SECRET.encode()[:5])  # a slow client: part of the line, then nothing
    assert _closed(conn)
    assert server.refused == 1


def test_a_64_mb_line_is_refused_after_a_bounded_read_while_the_writer_goes_on(server):
    conn = _connect(server, None)
    failed = []

    def flood() -> None:
        try:
            conn.sendall(b"y" * (64 << 20))
        except OSError as e:
            failed.append(e)

    sender = threading.Thread(target=flood)
    sender.start()
    for i in range(20):  # the writer is never held by it
        server.write_lines(_metrics(200 + i, 1))
    sender.join(timeout=60)
    assert not sender.is_alive() and failed  # the server closed it: the rest could not be sent
    assert server.refused == 1


def test_a_viewer_that_never_reads_is_dropped_and_the_writer_never_waits(server, monkeypatch):
    monkeypatch.setattr(serve, "VIEWER_QUEUE", 4)
    conn = _connect(server)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert _wait(lambda: server.viewers == 1)
    big = _metrics(0, 2000)  # ~120 KB a batch
    for _ in range(200):  # far more than the socket's buffers and the queue hold
        server.write_lines(big)
        if server.dropped_viewers:
            break
    assert server.dropped_viewers == 1 and _wait(lambda: server.viewers == 0)
    conn.close()


def test_viewers_are_bounded(server, monkeypatch):
    monkeypatch.setattr(serve, "MAX_VIEWERS", 2)
    viewers = [_connect(server) for _ in range(2)]
    assert _wait(lambda: server.viewers == 2)
    extra = _connect(server)
    assert _closed(extra) and server.refused == 1
    for v in viewers:
        v.close()


def test_the_tui_source_attaches_folds_and_detaches(server):
    state = SessionState()
    source = AttachSource(server.host, server.port, SECRET)
    source.start(state)
    assert _wait(lambda: state.model_name == "M")
    server.write_lines(_metrics(102, 1))
    assert _wait(lambda: state.last_seq == 102)
    source.stop()
    assert _wait(lambda: state.status == "disconnected")
    assert _wait(lambda: server.viewers == 0)


def test_the_tui_source_says_when_the_job_refuses_it(server):
    state = SessionState()
    source = AttachSource(server.host, server.port, "wrong")
    source.start(state)
    assert _wait(lambda: state.status == "disconnected")
    assert "wrong secret" in state.status_reason
    source.stop()


def test_attaching_to_nothing_is_a_clear_error():
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with pytest.raises(ConnectionError, match=f"cannot attach to 127.0.0.1:{port}: "):
        AttachSource("127.0.0.1", port, SECRET)


def test_the_secret_file_is_owner_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    path = write_secret(7010, SECRET)
    assert path == tmp_path / ".modscope" / "attach" / "7010.secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_secret(path) == SECRET
    os.chmod(path, 0o644)
    with pytest.raises(SecretFileError, match=r"7010.secret: readable by other users \(mode 644\); it must be 0600"):
        read_secret(path)
    with pytest.raises(SecretFileError, match=r"gone.secret: cannot read the job's secret"):
        read_secret(tmp_path / "gone.secret")
    empty = tmp_path / "empty.secret"
    empty.write_text("\n")
    empty.chmod(0o600)
    with pytest.raises(SecretFileError, match="holds no secret"):
        read_secret(empty)


def test_addresses():
    assert parse_address("7010") == ("127.0.0.1", 7010)
    assert parse_address("0.0.0.0:7010") == ("0.0.0.0", 7010)
    assert parse_address("[::1]:7010") == ("::1", 7010)
    with pytest.raises(ValueError, match=r"expected \[HOST:\]PORT with PORT in 0-65535, got 'x:70000'"):
        parse_address("x:70000")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hello=st.binary(max_size=6000) | st.text(max_size=200).map(str.encode).map(lambda b: b + b"\n"))
def test_fuzzed_handshakes_are_refused_cleanly_and_the_server_goes_on(server, hello):
    """Whatever a stranger sends first (then closing its side), it is refused, nothing raises in
    the server, and a viewer with the secret still attaches."""
    conn = _connect(server, None)
    try:
        conn.sendall(hello)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the server may close first (a line past the bound)
    assert _closed(conn)
    conn.close()
    assert server.viewers == 0


def test_after_fuzzing_a_viewer_still_attaches(server):
    for junk in (b"\n", b"\xff" * 5000, b"{}\n"):
        conn = _connect(server, junk)
        assert _closed(conn)
    good = _connect(server)
    assert _read_lines(good, 2) == HEADERS.splitlines()
    good.close()
