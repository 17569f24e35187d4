"""``modscope record --serve`` and attaching to it, end to end: a real job, real sockets, the
viewer's source and state (no app): attach, detach, attach again while training goes on; the
secret only in an owner-only file that is gone when the job ends."""

from __future__ import annotations

import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import modscope
from modscope.cli.attach import open_source
from modscope.events.serve import secret_path
from modscope.views.tui.state import SessionState

from .test_record import SCRIPT, _env


def _wait(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def _start(tmp_path: Path, serve: str) -> subprocess.Popen:
    (tmp_path / "train.py").write_text(SCRIPT)
    return subprocess.Popen([sys.executable, "-m", "modscope", "record", "--serve", serve, "--trace-file", "run.jsonl",
                             "train.py", "-1", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, env=_env(HOME=str(tmp_path)))


def test_attach_detach_and_attach_again_while_the_job_trains(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    job = _start(tmp_path, "0")
    try:
        announced = job.stderr.readline()
        match = re.fullmatch(r"modscope record: serving on 127\.0\.0\.1:(\d+): modscope attach 127\.0\.0\.1:\d+ "
                             r"\(the job's secret: (.+), owner-only\)\n", announced)
        assert match, announced
        port, secret_file = int(match[1]), Path(match[2])
        assert secret_file == secret_path(port) and stat.S_IMODE(secret_file.stat().st_mode) == 0o600
        assert secret_file.read_text().strip() not in " ".join(job.args)  # never on a command line
        seen = []
        for _ in range(2):
            state = SessionState()
            source = open_source(f"127.0.0.1:{port}")
            source.start(state)
            assert _wait(lambda s=state: s.model_name == "Sequential" and s.step >= 2)  # history, then live
            seen.append(state.step)
            source.stop()  # detach: the job goes on
            assert _wait(lambda s=state: s.status == "disconnected")
            assert job.poll() is None
        assert seen[1] >= seen[0]
        job.send_signal(signal.SIGTERM)
        _, err = job.communicate(timeout=60)
    finally:
        job.kill()
    assert job.returncode == 128 + signal.SIGTERM
    assert "(stopped by SIGTERM)" in err.splitlines()[-1]
    assert not secret_file.exists()  # the secret leaves with the job
    assert not modscope.load_trace(tmp_path / "run.jsonl").truncated


def test_serving_beyond_this_machine_warns_and_a_bad_address_is_refused(tmp_path):
    job = _start(tmp_path, "0.0.0.0:0")
    try:
        first = job.stderr.readline()
        job.send_signal(signal.SIGTERM)
        job.communicate(timeout=60)
    finally:
        job.kill()
    assert re.fullmatch(r"modscope record: warning: serving on 0\.0\.0\.0:\d+, reachable from other machines "
                        r"\(a viewer still needs the job's secret\)\n", first), first
    done = subprocess.run([sys.executable, "-m", "modscope", "record", "--serve", "x:99999", "train.py", "1", "0"],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(HOME=str(tmp_path)), timeout=120)
    assert done.returncode == 2
    assert done.stderr == ("modscope record: error: --serve: expected [HOST:]PORT with PORT in 0-65535, "
                           "got 'x:99999'\n")


def test_a_port_in_use_is_one_clear_line(tmp_path):
    import socket

    taken = socket.create_server(("127.0.0.1", 0))
    try:
        port = taken.getsockname()[1]
        (tmp_path / "train.py").write_text(SCRIPT)
        done = subprocess.run([sys.executable, "-m", "modscope", "record", "--serve", str(port), "train.py", "1", "0"],
                              capture_output=True, text=True, cwd=tmp_path, env=_env(HOME=str(tmp_path)), timeout=120)
    finally:
        taken.close()
    assert done.returncode == 2
    assert done.stderr.startswith("modscope record: error: --serve: [Errno 98] Address already in use")


def test_attach_without_a_secret_file_is_one_clear_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "modscope", "attach", "127.0.0.1:1"], capture_output=True,
                          text=True, cwd=tmp_path, env=_env(HOME=str(tmp_path)), timeout=120)
    assert done.returncode == 2
    assert done.stderr == (f"modscope attach: error: {tmp_path}/.modscope/attach/1.secret: cannot read the job's "
                           "secret (No such file or directory)\n")
