"""Attaching to a job of several ranks, end to end: ``modscope record --nproc-per-node 2 --serve
PORT`` (torch's launcher, gloo DDP on CPU) serves rank R on PORT + R with one secret; ``attach``
(``AttachSource``) follows every rank into one state, holds the controls on both, and the viewer's
``RankHold`` pauses both at one step boundary and resumes them; detaching leaves the job running."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from modscope.cli.attach import open_source
from modscope.events.serve import secret_path
from modscope.views.tui.ranks import RankHold
from modscope.views.tui.state import SessionState

from .test_record import _env

pytest.importorskip("torch")
SCRIPT = Path(__file__).resolve().parent.parent / "tui" / "ddp_hold.py"


def _free_pair() -> int:
    """A port P with P + 1 free too (the ranks serve on P and P + 1)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise AssertionError("no two free ports in a row")


def _wait(condition, timeout: float = 120.0, each=None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if each is not None:
            each()
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_attach_follows_every_rank_and_holds_them_at_one_step(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    port = _free_pair()
    job = subprocess.Popen([sys.executable, "-m", "modscope", "record", "--nproc-per-node", "2", "--serve", str(port),
                            "--trace-file", "run.jsonl", str(SCRIPT), "--steps", "100000", "--sleep", "0.05"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                           env=_env(HOME=str(tmp_path)))
    try:
        assert _wait(lambda: secret_path(port).exists() and secret_path(port + 1).exists(), 180)
        assert secret_path(port).read_text() == secret_path(port + 1).read_text()  # one secret for the job
        state, hold = SessionState(), RankHold()
        source = open_source(f"127.0.0.1:{port}")
        source.start(state)

        def ranks() -> dict:
            with state.lock:
                return {r: (s.status, s.step) for r, s in state.all_ranks().items()}

        assert _wait(lambda: len(ranks()) == 2 and min(step for _, step in ranks().values()) >= 2 and source.controls)
        assert "controls: this viewer" in source.description

        def settle() -> None:  # what the app does every tick
            with state.lock:
                moves = hold.settle(state.board, state.all_ranks())
            for rank, message in moves.items():
                source.control(message, rank=rank)

        def held() -> int | None:
            with state.lock:
                return RankHold.held_at(state.all_ranks())

        hold.start()
        assert source.control({"cmd": "pause"})
        assert _wait(lambda: held() is not None, 60, each=settle), ranks()
        for _ in range(10):  # the app's ticks go on: a rank that stopped behind runs on to the boundary
            settle()
            time.sleep(0.1)
        assert _wait(lambda: held() is not None, 60, each=settle), ranks()
        step = held()
        for _ in range(10):
            settle()
            time.sleep(0.1)
        assert held() == step and job.poll() is None, ranks()
        with state.lock:
            hold.release(state.all_ranks())
        assert source.control({"cmd": "resume"})
        assert _wait(lambda: min(s for _, s in ranks().values()) >= step + 3, 60)
        source.stop()  # detach: the job goes on
        time.sleep(0.5)
        assert job.poll() is None
        job.send_signal(signal.SIGTERM)
        job.communicate(timeout=120)
    finally:
        job.kill()
    assert not secret_path(port).exists() and not secret_path(port + 1).exists()


def test_serving_several_ranks_needs_a_port(tmp_path):
    done = subprocess.run([sys.executable, "-m", "modscope", "record", "--serve", "0", "--trace-file", "run.jsonl",
                           str(SCRIPT), "--steps", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env=_env(HOME=str(tmp_path), RANK="1", LOCAL_RANK="1", WORLD_SIZE="2"))
    assert done.returncode == 2
    assert "--serve: a job of several ranks needs a port to serve on (rank R serves on PORT + its local rank)" \
        in done.stderr
