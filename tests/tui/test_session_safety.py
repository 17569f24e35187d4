"""The live session's safety, end to end with a real child: the token never on a command line,
only the real program admitted, nothing left behind on any way out (SIGHUP, SIGTERM, an
exception), a SIGKILLed child reported as shells do (137) with its trace marked as cut off, and
q quitting from the error panel."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from modscope import load_trace
from modscope.cli import main
from modscope.views.tui import launch
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.sources import (
    TOKEN_VARIABLE,
    ChildProcess,
    ReplaySource,
    SocketSource,
    child_command,
    child_env,
    exit_status,
)
from modscope.views.tui.state import SessionState

SCRIPT = str(Path(__file__).parent / "train_script.py")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and a Linux pty")


def wait_until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


async def wait_for(pilot, condition, timeout=30.0):
    for _ in range(int(timeout / 0.1)):
        await pilot.pause(0.1)
        if condition():
            return
    raise AssertionError("condition not reached in time")


# --- the token travels in the environment --------------------------------------------------------

def test_the_token_is_not_on_the_child_command_line_but_in_its_environment():
    source = SocketSource()
    try:
        cmd = child_command(source, "train.py", ["--lr", "1"], "t.jsonl")
        assert not any(source.token in part for part in cmd) and "--token" not in cmd
        env = child_env({"PATH": "/bin", TOKEN_VARIABLE: "the viewer's own"}, 4, token=source.token)
        assert env[TOKEN_VARIABLE] == source.token
        assert TOKEN_VARIABLE not in child_env({TOKEN_VARIABLE: "inherited"}, 4)  # never passed on by accident
    finally:
        source.stop()


SNOOP = '''
import os, subprocess, sys
print("TOKEN-IN-ENV", os.environ.get("MODSCOPE_TOKEN"), flush=True)
with open("/proc/self/cmdline", "rb") as f:
    print("CMDLINE", f.read().replace(b"\\0", b" ").decode(), flush=True)
inherited = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('MODSCOPE_TOKEN'))"],
                           capture_output=True, text=True).stdout.strip()
print("GRANDCHILD", inherited, flush=True)
'''


@linux_only
def test_the_script_its_command_line_and_its_children_never_see_the_token(tmp_path):
    script = tmp_path / "snoop.py"
    script.write_text(SNOOP)
    source, state = SocketSource(), SessionState()
    source.start(state)
    child = ChildProcess(source, str(script), [], None)
    try:
        assert child.proc.wait(timeout=60) == 0, "\n".join(child.log)
        wait_until(lambda: state.status in ("ended", "disconnected"))
        wait_until(lambda: any(line.startswith("GRANDCHILD") for line in child.log))
    finally:
        child.stop(source)
        source.stop()
    log = list(child.log)
    assert state.status == "ended" and not state.errors  # the handshake worked: the token did arrive
    assert "TOKEN-IN-ENV None" in log and "GRANDCHILD None" in log
    assert not any(source.token in line for line in log)
    assert any(line.startswith("CMDLINE") and "modscope.capture.child" in line for line in log)


def test_the_child_refuses_to_start_without_a_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
    result = subprocess.run([sys.executable, "-m", "modscope.capture.child", "--connect", str(tmp_path / "s"),
                             SCRIPT, "1"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and TOKEN_VARIABLE in result.stderr


# --- only the real program is admitted -----------------------------------------------------------

def test_the_real_child_gets_in_past_an_intruder_that_connected_first():
    source, state = SocketSource(), SessionState()
    source.start(state)
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.connect(source.address)  # connects first and says nothing (before the fix: locked the child out)
    liar = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    liar.connect(source.address)
    liar.sendall(b'{"hello": "modscope", "token": "0000"}\n')
    child = ChildProcess(source, SCRIPT, ["100000"], None)
    try:
        wait_until(lambda: state.step > 3 and state.model_name == "Sequential")
        assert source.control({"cmd": "pause"})
        wait_until(lambda: state.status == "paused")
        assert state.status != "disconnected"
        assert any("without this session's token" in e["message"] for e in state.errors)
    finally:
        code = child.stop(source)
        source.stop()
        squatter.close()
        liar.close()
    assert code == 0


# --- nothing left behind ---------------------------------------------------------------------------

class FakeApp:
    """Stands in for the TUI in ``run_script``: folds events from the source, then does ``act``."""

    act = staticmethod(lambda app: None)
    last: FakeApp | None = None
    return_code = 0  # Textual's: non-zero when the app itself failed

    def __init__(self, source: SocketSource, child: ChildProcess) -> None:
        self.source, self.child, self.state = source, child, SessionState()
        FakeApp.last = self

    def run(self) -> None:
        self.source.start(self.state)
        wait_until(lambda: self.state.step > 3)
        type(self).act(self)

    def exit(self, result=None, return_code: int = 0) -> None:  # pragma: no cover - no loop here
        pass


@pytest.fixture()
def fake_app(monkeypatch):
    monkeypatch.setattr(launch, "ModscopeApp", FakeApp)
    yield FakeApp
    FakeApp.act = staticmethod(lambda app: None)


def test_a_sigkilled_child_exits_137_and_its_trace_says_it_was_cut_off(tmp_path, fake_app, capsys):
    trace_file = tmp_path / "killed.jsonl.gz"

    def kill(app):
        app.child.proc.kill()
        app.child.proc.wait()

    fake_app.act = staticmethod(kill)
    code = main(["run", "--trace-file", str(trace_file), SCRIPT, "100000"])
    assert code == 137  # before the fix: sys.exit(-9), i.e. 247
    assert "killed by SIGKILL (exit status 137)" in capsys.readouterr().err
    trace = load_trace(trace_file)
    assert trace.truncated and trace.events and trace.events[-1]["kind"] != "end"  # before: truncated=False
    # checked whole before the app starts (a file longer than the default check, as a child
    # that ran long before the kill writes, is known to be cut off only once the replay's
    # background pass ends)
    assert "(cut off)" in ReplaySource(trace_file, check_bytes=1 << 40).description
    assert not os.path.exists(fake_app.last.source.dir)
    assert exit_status(-15) == 143 and exit_status(3) == 3


def test_an_exception_in_the_viewer_still_stops_the_child_and_removes_the_folder(tmp_path, fake_app):
    trace_file = tmp_path / "crash.jsonl"

    def crash(app):
        app.source.stop()  # as the app's unmount does: the control channel is gone
        raise RuntimeError("the viewer broke")

    fake_app.act = staticmethod(crash)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="the viewer broke"):
        launch.run_script(SCRIPT, ["100000"], str(trace_file))
    app = fake_app.last
    assert app.child.returncode == 0 and not os.path.exists(app.source.dir)
    assert time.monotonic() - start < 20  # terminated at once, not after waiting for a stop it cannot get
    assert not load_trace(trace_file).truncated  # stopped cleanly (SIGTERM): the trace file is complete


def test_sigterm_while_the_viewer_runs_tears_down_then_exits_143(tmp_path, fake_app):
    trace_file = tmp_path / "term.jsonl"
    fake_app.act = staticmethod(lambda app: os.kill(os.getpid(), signal.SIGTERM))
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as info:  # no Textual loop here: the handler exits by itself
        launch.run_script(SCRIPT, ["100000"], str(trace_file))
    assert info.value.code == 143
    app = fake_app.last
    assert app.child.returncode == 0 and not os.path.exists(app.source.dir)
    assert not load_trace(trace_file).truncated
    assert signal.getsignal(signal.SIGTERM) is before  # the previous handler is back


def run_in_a_terminal(tmp_path: Path) -> tuple[subprocess.Popen, int, Path, Path]:
    """``modscope run`` under a fresh pseudo-terminal (its controlling terminal), its private
    folders made under ``tmp_path/tmp``; returns once it is training."""
    folders = tmp_path / "tmp"
    folders.mkdir()
    trace = tmp_path / "run.jsonl"
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x28\x00\xa0\x00\x00\x00\x00\x00")  # 40 rows, 160 columns
    env = {**os.environ, "TMPDIR": str(folders), "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from modscope.cli import main; sys.exit(main())", "run",
         "--trace-file", str(trace), SCRIPT, "100000"],
        stdin=slave, stdout=slave, stderr=slave, env=env, cwd=tmp_path, start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    deadline = time.monotonic() + 60
    while not (list(folders.glob("modscope-*")) and trace.exists() and trace.stat().st_size > 5000):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            proc.wait()
            os.close(master)
            raise AssertionError("modscope run did not start")
        if select.select([master], [], [], 0.1)[0]:
            os.read(master, 1 << 16)  # keep the terminal's buffer from filling up
    return proc, master, folders, trace


def drain_until_exit(proc: subprocess.Popen, master: int, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([master], [], [], 0.1)[0]:
            try:
                os.read(master, 1 << 16)
            except OSError:
                break
    return proc.wait(timeout=max(0.1, deadline - time.monotonic()))


@linux_only
def test_closing_the_terminal_leaves_nothing_behind(tmp_path):
    proc, master, folders, trace = run_in_a_terminal(tmp_path)
    os.close(master)  # the terminal window closes: SIGHUP
    try:
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:  # (a hang fails the test without leaving the process behind)
            proc.kill()
            proc.wait()
    assert code == 129  # before the fix: killed by SIGHUP (-1), the private folder left behind
    assert list(folders.iterdir()) == []
    loaded = load_trace(trace)
    assert not loaded.truncated and loaded.events[-1]["kind"] == "end"


@linux_only
def test_sigterm_to_modscope_run_leaves_nothing_behind(tmp_path):
    proc, master, folders, trace = run_in_a_terminal(tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)
        code = drain_until_exit(proc, master)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 143
    assert list(folders.iterdir()) == []
    assert not load_trace(trace).truncated


# --- q quits from the error panel ------------------------------------------------------------------

@pytest.mark.asyncio
async def test_q_quits_from_the_error_panel_of_a_script_that_raised(tmp_path):
    source = SocketSource()
    child = ChildProcess(source, SCRIPT, ["20", "raise"], str(tmp_path / "err.jsonl"))
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.screen is not app.screen_stack[0])  # the panel opened by itself
        await pilot.press("q")  # before the fix: closed nothing, quit nothing until Escape
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 1 and child.returncode == 1
    assert not os.path.exists(source.dir)


def test_a_runaway_line_from_the_program_is_skipped_and_reported(events):
    from modscope.events.files import MAX_LINE_BYTES

    source, state = SocketSource(), SessionState()
    source.start(state)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(source.address)
        client.sendall(json.dumps({"hello": "modscope", "token": source.token}).encode() + b"\n")
        client.sendall(json.dumps(events[0]).encode() + b"\n" + b"[" * (MAX_LINE_BYTES + 10) + b"\n")
        client.sendall(b"".join(json.dumps(e).encode() + b"\n" for e in events[1:]))
        wait_until(lambda: state.status == "ended")
        assert any("longer than 16 MiB" in e["message"] for e in state.errors)
        assert state.events_total == len(events) and state.model_name
    finally:
        client.close()
        source.stop()
