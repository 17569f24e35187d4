"""The controls over the attach socket (``events.serve``): one viewer at a time holds them (the
first to attach; at its detach, the one attached longest), each viewer is told which it is, only
the holder's commands reach the job, a viewer cannot stop the job, and a flood of bytes from a
viewer never reaches the job's controller. Through real sockets and the TUI's ``AttachSource``."""

from __future__ import annotations

import json
import socket
import time

import pytest

from modscope.events.schema import dumps_bytes, make
from modscope.events.serve import MAX_HELLO_BYTES, EventServer
from modscope.views.tui.sources import AttachSource
from modscope.views.tui.state import SessionState

SECRET = "0123456789abcdef0123456789abcdef"
HEADERS = (dumps_bytes(make("session", 0, 0, 0, schema=1, engine_version="0", modscope_version="0", pid=1,
                            started="x", argv=[])) + b"\n")


def _wait(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


@pytest.fixture
def job():
    commands: list[dict] = []
    server = EventServer(SECRET, on_control=lambda line: commands.append(json.loads(line)))
    server.write_lines(HEADERS)
    yield server, commands
    server.close()


def _attach(server: EventServer) -> tuple[AttachSource, SessionState]:
    source, state = AttachSource(server.host, server.port, SECRET), SessionState()
    source.start(state)
    assert _wait(lambda: source.controls is not None)
    return source, state


def test_one_viewer_holds_the_controls_and_its_commands_reach_the_job(job):
    server, commands = job
    first, _ = _attach(server)
    second, _ = _attach(server)
    assert first.controls is True and "controls: this viewer" in first.description
    assert second.controls is False and "read-only: another viewer holds the controls" in second.description
    assert first.control({"cmd": "pause"}) and first.control({"cmd": "break", "nan": True})
    assert not second.control({"cmd": "resume"}) and "another viewer holds the controls" in second.read_only
    assert _wait(lambda: len(commands) == 2)
    assert commands == [{"cmd": "pause"}, {"cmd": "break", "nan": True}]
    first.stop()
    second.stop()


def test_the_controls_pass_to_the_viewer_attached_longest_when_the_holder_detaches(job):
    server, commands = job
    first, _ = _attach(server)
    second, _ = _attach(server)
    third, _ = _attach(server)
    first.stop()  # detach: the handover
    assert _wait(lambda: second.controls is True)
    assert third.controls is False
    assert second.control({"cmd": "step"}) and _wait(lambda: commands == [{"cmd": "step"}])
    second.stop()
    assert _wait(lambda: third.controls is True)
    third.stop()
    assert _wait(lambda: server.viewers == 0)
    again, _ = _attach(server)  # a viewer attaching to a job nobody controls takes them
    assert again.controls is True
    again.stop()


def test_a_job_without_controls_says_why_every_viewer_is_read_only():
    server = EventServer(SECRET, read_only="the job has 2 ranks and serves rank 0 only")
    server.write_lines(HEADERS)
    try:
        viewer, _ = _attach(server)
        assert viewer.controls is False and not viewer.control({"cmd": "pause"})
        assert viewer.read_only == "read-only: the job has 2 ranks and serves rank 0 only"
        viewer.stop()
    finally:
        server.close()


def test_a_viewer_cannot_stop_the_job_and_garbage_is_counted(job):
    server, commands = job
    viewer, _ = _attach(server)
    viewer._sock.sendall(b'{"cmd": "stop"}\nnot json\n{"cmd": "pause"}\n' + b"x" * (MAX_HELLO_BYTES + 10) + b"\n")
    assert _wait(lambda: commands == [{"cmd": "pause"}])
    assert _wait(lambda: server.refused_lines >= 3)
    viewer.stop()


def test_a_read_only_viewers_lines_never_reach_the_job(job):
    server, commands = job
    holder, _ = _attach(server)
    other, _ = _attach(server)
    other._sock.sendall(b'{"cmd": "pause"}\n')  # (as a modified viewer would)
    assert _wait(lambda: server.refused_lines == 1)
    assert commands == []
    holder.stop()
    other.stop()


def test_a_flood_from_a_viewer_is_held_back_and_the_writer_never_waits(job, monkeypatch):
    from modscope.events import serve

    monkeypatch.setattr(serve, "CONTROL_BYTES_PER_S", 8192)
    server, commands = job
    viewer, state = _attach(server)  # the holder, watching
    flood = socket.create_connection((server.host, server.port), timeout=0.5)  # a read-only viewer that floods
    flood.sendall(SECRET.encode() + b"\n")
    started = time.monotonic()
    try:
        while time.monotonic() - started < 1.5:
            flood.send(b"{}\n" * 1000)
    except OSError:
        pass  # the job stopped reading (TCP's window is full): held back
    server.write_lines(dumps_bytes(make("metric", 1, 0, 0, values={"loss": 1.0})) + b"\n")  # (put_nowait: never waits)
    assert commands == []
    assert _wait(lambda: state.metrics.get("loss") is not None)  # the stream goes on meanwhile
    viewer.stop()
    flood.close()


def test_a_job_left_by_its_last_viewer_is_resumed_and_its_breakpoints_cleared(job):
    server, commands = job
    viewer, _ = _attach(server)
    assert viewer.control({"cmd": "pause"})
    assert _wait(lambda: commands == [{"cmd": "pause"}])
    viewer.stop()
    assert _wait(lambda: commands[1:] == [{"cmd": "break"}, {"cmd": "resume"}])


def test_a_holder_leaving_for_another_viewer_hands_the_pause_over(job):
    server, commands = job
    holder, _ = _attach(server)
    other, _ = _attach(server)
    assert holder.control({"cmd": "pause"})
    holder.stop()
    assert _wait(lambda: other.controls is True)
    assert commands == [{"cmd": "pause"}]  # still paused: the new holder resumes it
    other.stop()
