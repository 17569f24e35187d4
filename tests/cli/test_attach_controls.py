"""Attached viewers and the job's controls, end to end: a real ``modscope record --serve`` job,
two viewers (``AttachSource``) through real sockets: the first holds the controls and pauses,
steps and resumes the job; the second is told it is read-only and its commands are refused; when
the holder detaches the second gets the controls; the last viewer leaving never leaves the job
paused."""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path

from modscope.cli.attach import open_source
from modscope.views.tui.state import SessionState

from .test_record_serve import _start, _wait


def _attach(port: int) -> tuple:
    state = SessionState()
    source = open_source(f"127.0.0.1:{port}")
    source.start(state)
    assert _wait(lambda: source.controls is not None and state.model_name == "Sequential")
    return source, state


def _paused(state: SessionState) -> bool:
    with state.lock:
        return state.status == "paused"


def test_one_viewer_pauses_steps_and_resumes_the_job_the_other_watches_then_takes_over(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    job = _start(tmp_path, "0")
    try:
        port = int(re.search(r"serving on 127\.0\.0\.1:(\d+)", job.stderr.readline())[1])
        holder, held = _attach(port)
        watcher, watched = _attach(port)
        assert holder.controls and "controls: this viewer" in holder.description
        assert watcher.controls is False and "another viewer holds the controls" in watcher.description
        assert not watcher.control({"cmd": "pause"})
        assert holder.control({"cmd": "pause"})
        assert _wait(lambda: _paused(held) and _paused(watched))  # both see it
        step = held.step
        time.sleep(0.5)
        assert held.step == step and job.poll() is None  # really held
        assert holder.control({"cmd": "step"})
        assert _wait(lambda: held.step == step + 1 and _paused(held) and "stepped" in held.status_reason)
        holder.stop()  # detach while paused: the watcher inherits the controls, the job stays paused
        assert _wait(lambda: watcher.controls is True)
        assert _paused(watched)
        assert watcher.control({"cmd": "resume"})
        assert _wait(lambda: watched.step >= step + 3)
        assert watcher.control({"cmd": "pause"})
        assert _wait(lambda: _paused(watched))
        watcher.stop()  # the last viewer leaves a paused job: it is resumed
        time.sleep(2.0)  # (the job sees the detach within half a second; a viewer before that would inherit)
        again, state = _attach(port)
        assert again.controls is True
        assert _wait(lambda: state.step > watched.step + 1)  # training goes on
        again.stop()
        job.send_signal(signal.SIGTERM)
        job.communicate(timeout=60)
    finally:
        job.kill()
    assert job.returncode == 128 + signal.SIGTERM


def test_the_attach_line_reaches_the_app_title(tmp_path: Path):
    from modscope.views.tui.sources import AttachSource

    source = AttachSource.__new__(AttachSource)
    source.address, source.rejected, source.controls = "h:1", 0, None
    source._lock, source._holds = threading.Lock(), {}
    state = SessionState()
    source._lines(state, [b'{"attach": 1, "controls": false, "why": "the job has 2 ranks"}'])
    assert source.description == "attached to h:1 · read-only: the job has 2 ranks"
    source._lines(state, [b'{"attach": 1, "controls": true, "why": ""}'])
    assert source.description == "attached to h:1 · controls: this viewer" and state.rev.status == 2
    source._lines(state, [b'{"attach": 1, "controls": "yes"}'])
    assert source.rejected == 1 and state.errors[-1]["etype"] == "ProtocolError"
