"""Smoke tests of modscope as a user installs it: the wheel in a fresh virtualenv (no ``-e``, no
clone on the path), its console script driven through a real pseudo-terminal.

``make smoke`` builds the wheel, installs it and runs this folder from here; ``make smoke-floors``
does the same with the lowest dependency versions ``pyproject.toml`` allows. A file the package
opens at run time and the wheel lacks (the TUI's stylesheet, the demos, the bundled digits) fails
the first screen here.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import importlib.util
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

import modscope

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "tiny_train.py"
BIN = Path(sys.executable).parent
MODSCOPE = str(BIN / "modscope")
ANSI = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed here")


class Terminal:
    """A command on a fresh pseudo-terminal of 160x45: what it drew (escape codes removed),
    keys typed into it."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 45, 160, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "TMPDIR": str(cwd)}
        self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.master, self.raw = master, b""

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.raw).decode("utf-8", "replace")

    def _read(self, timeout: float) -> None:
        if select.select([self.master], [], [], timeout)[0]:
            try:
                self.raw += os.read(self.master, 1 << 16)
            except OSError:  # the other end closed
                time.sleep(timeout)

    def wait_for(self, condition, what: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{what}: not reached (exit {self.proc.poll()}); the screen had:\n"
                                     f"{self.text[-3000:]}")
            self._read(0.1)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def exit_code(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        return self.proc.wait(timeout=1)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


def trace_events(path: Path) -> list[dict]:
    from modscope import load_trace

    return load_trace(path).events


# --- the install itself -----------------------------------------------------------------------

def test_modscope_comes_from_the_install_not_a_clone():
    installed = Path(modscope.__file__).resolve()
    assert installed.is_relative_to(Path(sys.prefix).resolve()), installed
    assert "site-packages" in installed.parts


def test_one_version_everywhere(tmp_path):
    out = subprocess.run([MODSCOPE, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert out == f"modscope {modscope.__version__}" == f"modscope {importlib.metadata.version('modscope')}"


def test_no_top_level_examples_or_tests_package_is_installed():
    for name in ("examples", "tests"):
        spec = importlib.util.find_spec(name)
        assert spec is None or not Path(spec.origin or "/").is_relative_to(Path(sys.prefix).resolve()), name


# --- the commands ------------------------------------------------------------------------------

def test_demo_reaches_its_first_screen_and_quits_with_a_complete_trace(tmp_path):
    trace = tmp_path / "demo.jsonl.gz"
    term = Terminal([MODSCOPE, "demo", "--trace-file", str(trace)], tmp_path)
    try:
        term.wait_for(lambda: "conv1" in term.text and "conv2_drop" in term.text, "the demo's module tree")
        term.type("q")
        assert term.exit_code() == 0, term.text[-2000:]
    finally:
        term.close()
    events = trace_events(trace)
    assert events[-1]["kind"] == "end"
    assert {"conv1", "fc2"} <= {e.get("path") for e in events if e["kind"] == "forward"}


def _run_script(tmp_path: Path, backend: str) -> Path:
    trace = tmp_path / f"{backend}.jsonl"
    term = Terminal([MODSCOPE, "run", "--backend", backend, "--trace-file", str(trace), str(SCRIPT), backend, "5"],
                    tmp_path)
    try:
        term.wait_for(lambda: "ended" in term.text, f"the {backend} script's end")
        term.type("q")
        assert term.exit_code() == 0, term.text[-2000:]
    finally:
        term.close()
    return trace


def test_run_an_engine_script(tmp_path):
    events = trace_events(_run_script(tmp_path, "engine"))
    assert events[0]["kind"] == "session" and events[0]["framework"] == "engine"
    assert {"0", "1", "2"} <= {e.get("path") for e in events if e["kind"] == "forward"}
    assert events[-1]["kind"] == "end"


@needs_torch
def test_run_a_torch_script(tmp_path):
    events = trace_events(_run_script(tmp_path, "torch"))
    assert events[0]["kind"] == "session" and events[0]["framework"] == "torch"
    assert {"0", "1", "2"} <= {e.get("path") for e in events if e["kind"] == "forward"}


def test_replay_shows_the_recorded_model(tmp_path):
    trace = _run_script(tmp_path, "engine")
    term = Terminal([MODSCOPE, "replay", str(trace)], tmp_path)
    try:
        term.wait_for(lambda: "Sequential" in term.text and "Linear" in term.text, "the replayed module tree")
        term.type("q")
        assert term.exit_code() == 0
    finally:
        term.close()


def test_diff_of_a_run_with_itself_finds_no_difference(tmp_path):
    trace = _run_script(tmp_path, "engine")
    done = subprocess.run([MODSCOPE, "diff", str(trace), str(trace), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


def test_export_draws_a_demo_model_with_dot(tmp_path):
    out = tmp_path / "net.svg"
    done = subprocess.run([MODSCOPE, "export", "net", "--what", "autograd", "-o", str(out)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert out.read_text().lstrip().startswith(("<?xml", "<svg")) and "conv1" in out.read_text()


def test_summary_of_a_demo_model(tmp_path):
    done = subprocess.run([MODSCOPE, "summary", "net"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "conv1" in done.stdout and "21,840" in done.stdout


def test_a_bad_trace_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    done = subprocess.run([MODSCOPE, "replay", str(bad)], capture_output=True, text=True)
    assert done.returncode != 0 and str(bad) in done.stderr and "Traceback" not in done.stderr


def test_record_runs_headless_and_says_what_the_trace_holds(tmp_path):
    trace = tmp_path / "rec.jsonl"
    done = subprocess.run([MODSCOPE, "record", "--trace-file", str(trace), str(SCRIPT), "engine", "4"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "trained 4 steps" in done.stdout
    assert str(trace) in done.stderr.strip().splitlines()[-1]
    assert trace_events(trace)[-1]["kind"] == "end"


def test_report_is_one_self_contained_page(tmp_path):
    trace = tmp_path / "rec.jsonl"
    subprocess.run([MODSCOPE, "record", "--trace-file", str(trace), str(SCRIPT), "engine", "3"], capture_output=True,
                   cwd=tmp_path, timeout=120, check=True)
    page = tmp_path / "run.html"
    done = subprocess.run([MODSCOPE, "report", str(trace), "-o", str(page)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "<svg" in html and "Sequential" in html and "http://" not in html.replace("http://www.w3.org", "")


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="the notebook extra is not installed here")
def test_notebook_extra_tables(tmp_path):
    from modscope import load_trace

    trace = _run_script(tmp_path, "engine")
    loaded = load_trace(trace)
    events = loaded.to_pandas("events")
    assert len(events) == len(loaded.events) and "kind" in events.columns
    assert "<details" in loaded._repr_html_() or "<ul" in loaded._repr_html_()


@pytest.mark.skipif(importlib.util.find_spec("textual_serve") is None, reason="the web extra is not installed here")
def test_web_extra_serves_a_page(tmp_path):
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    trace = _run_script(tmp_path, "engine")
    server = subprocess.Popen([MODSCOPE, "web", "--port", str(port), str(trace)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True)
    try:
        deadline, page = time.monotonic() + 60, ""
        while time.monotonic() < deadline and server.poll() is None:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert page, f"no page on port {port} (exit {server.poll()})"
        assert "textual" in page.lower()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
