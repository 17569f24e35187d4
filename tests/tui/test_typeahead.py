"""Keys typed right after ``q`` reach the shell (``modscope/views/tui/driver.py``): through a real
pseudo-terminal, the TUI quits and the next program reading the terminal gets the line typed
while the TUI was leaving."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from modscope.views.tui.driver import QUIT_WAIT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty")

TRACE = Path(__file__).parent / "data" / "small_trace.jsonl"
SCRIPT = Path(__file__).parent / "train_script.py"
ANSI = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")
# The next reader of the terminal: what is waiting in its input queue, within 5 s.
READER = ("import os, select; ready = select.select([0], [], [], 5)[0]; "
          "print('GOT:' + (os.read(0, 100).decode() if ready else '(nothing)').strip(), flush=True)")


class Terminal:
    """``sh -c COMMAND`` on a fresh pseudo-terminal of 160x45 (its controlling terminal)."""

    def __init__(self, command: str, cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "TMPDIR": str(cwd)}
        self.proc = subprocess.Popen(["sh", "-c", command], stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=cwd, start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.master, self.raw = master, b""

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.raw).decode("utf-8", "replace")

    def read(self, timeout: float) -> None:
        if select.select([self.master], [], [], timeout)[0]:
            try:
                self.raw += os.read(self.master, 1 << 16)
            except OSError:  # the other end closed
                time.sleep(timeout)

    def wait_for(self, condition, what: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not reached; the screen had:\n{self.text[-3000:]}")
            self.read(0.05)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        os.close(self.master)


def _quit_then_type(tmp_path: Path, tui: str, ready: str, line: str = "echo typed-ahead") -> str:
    term = Terminal(f"{tui}; {sys.executable} -c \"{READER}\"", tmp_path)
    try:
        term.wait_for(lambda: ready in term.text, "the TUI drew")
        time.sleep(0.5)  # settled
        shown = len(term.text)
        os.write(term.master, b"q")
        time.sleep(0.05)  # the user starts the next command while the TUI leaves
        os.write(term.master, line.encode() + b"\r")
        term.wait_for(lambda: "GOT:" in term.text[shown:], "the next reader ran", timeout=60)
        got = term.text.rsplit("GOT:", 1)[1].splitlines()[0]
        term.wait_for(lambda: term.proc.poll() is not None, "the shell ended", timeout=30)
        return got.strip()
    finally:
        term.close()


def test_a_line_typed_right_after_q_reaches_the_next_reader(tmp_path):
    tui = f"{sys.executable} -m modscope replay {TRACE}"
    assert _quit_then_type(tmp_path, tui, "Modules") == "echo typed-ahead"


def test_a_line_typed_while_q_stops_the_training_program_reaches_the_shell(tmp_path):
    """``q`` under ``modscope run``: the app stops its program first (``ModscopeApp._stopping``),
    for a second or more, and leaves after."""
    tui = f"{sys.executable} -m modscope run --trace-file {tmp_path / 't.jsonl'} {SCRIPT} 100000"
    assert _quit_then_type(tmp_path, tui, "Sequential") == "echo typed-ahead"


def test_a_q_typed_into_a_text_field_types_there_and_keys_after_it_still_arrive(tmp_path):
    term = Terminal(f"{sys.executable} -m modscope replay {TRACE}", tmp_path)
    typed = re.compile(rb"q(\x1b\[[0-9;]*m)*z(\x1b\[[0-9;]*m)*y")  # the field's text, styles between
    try:
        term.wait_for(lambda: "Modules" in term.text, "the TUI drew")
        time.sleep(0.5)
        shown = len(term.raw)
        os.write(term.master, b"/")
        term.wait_for(lambda: b"Find a module" in term.raw[shown:], "the find dialog opened")
        shown = len(term.raw)
        os.write(term.master, b"q")
        time.sleep(0.05)
        os.write(term.master, b"zy")
        # sooner than QUIT_WAIT: the input thread did not stop to see whether the app leaves
        term.wait_for(lambda: typed.search(term.raw[shown:]), "the field got q and the keys after it",
                      timeout=QUIT_WAIT - 0.5)
        assert term.proc.poll() is None
        os.write(term.master, b"\x1b")  # escape (a lone ESC, read a byte at a time) closes the dialog
        time.sleep(1.0)
        os.write(term.master, b"q")
        term.wait_for(lambda: term.proc.poll() is not None, "q quit", timeout=30)
        assert term.proc.returncode == 0
    finally:
        term.close()
