"""``modscope web``: bad input stops before any server starts (one line, exit 2), the viewer
command per tab, and the TUI served to a real headless Chromium (the page loads, the module
tree arrives, a key works: ``?`` opens the help; ``e`` exports, and the file arrives as a
download)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import engine
import modscope
from modscope.cli import build_parser, main
from modscope.views import web

from ._browser import PageWatch, browser

ROOT = Path(__file__).resolve().parents[2]

# Every screen update the page receives, as text (the terminal draws on a canvas: its text is in
# the websocket's messages, not in the DOM). Installed before the page's own script runs.
RECORD_SCREEN = """
(() => {
  const Original = window.WebSocket;
  window.__screen = {text: "", times: []};
  const decoder = new TextDecoder();
  function Recording(url, protocols) {
    const ws = protocols === undefined ? new Original(url) : new Original(url, protocols);
    ws.addEventListener("message", (event) => {
      const data = typeof event.data === "string" ? event.data : decoder.decode(event.data);
      window.__screen.text += data;
      window.__screen.times.push(performance.now());
    });
    return ws;
  }
  Recording.prototype = Original.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Recording[k] = Original[k];
  window.WebSocket = Recording;
  window.__opened = [];  // what the page asks to open in a new tab (textual-serve's downloads)
  window.open = (url) => { window.__opened.push(String(url)); return null; };
})();
"""


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("web") / "run.jsonl.gz"
    model = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(), engine.nn.Linear(4, 2))
    with modscope.trace(model) as tr:
        model(engine.randn(5, 3)).sum().backward()
    tr.save(path)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("modscope web: error: "), err
    return err


def test_a_missing_trace_is_one_line_exit_2_and_no_server(tmp_path, capsys, monkeypatch):
    started = []
    monkeypatch.setattr(web, "serve", lambda *a, **k: started.append(a))
    assert main(["web", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl: no such trace file" in _one_line(capsys)
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"\x00\x01 not json\n")
    assert main(["web", str(damaged)]) == 2
    assert "damaged.jsonl:1: not a modscope trace" in _one_line(capsys)
    assert main(["web", str(tmp_path / "nope.jsonl"), "--compare", "x"]) == 2
    capsys.readouterr()
    assert started == []


def test_a_port_in_use_is_named(trace_file, capsys, monkeypatch):
    monkeypatch.setattr(web, "serve", lambda *a, **k: pytest.fail("no server may start"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["web", "--port", str(port), str(trace_file)]) == 2
    assert f"port {port} on 127.0.0.1 is in use: choose another with --port" in _one_line(capsys)
    assert main(["web", "--port", "70000", str(trace_file)]) == 2
    assert "port 70000 is not a TCP port" in _one_line(capsys)


def test_a_trace_or_the_demo_not_both_nor_neither(trace_file, capsys):
    assert main(["web"]) == 2
    assert "give a TRACE file or --demo" in _one_line(capsys)
    assert main(["web", "--demo", "net", str(trace_file)]) == 2
    _one_line(capsys)


def test_without_textual_serve_it_says_how_to_install_it(trace_file, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "textual_serve" else real(name))
    assert main(["web", str(trace_file)]) == 2
    assert "needs textual-serve, which is not installed: pip install 'modscope[web]'" in _one_line(capsys)


def test_it_binds_this_machine_only_unless_asked():
    args = build_parser().parse_args(["web", "t.jsonl"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)


def test_each_tab_runs_a_replay_or_the_demo():
    assert web.viewer_command("a b.jsonl") == f"{sys.executable} -m modscope replay 'a b.jsonl'"
    assert web.viewer_command("a.jsonl", compare="b.jsonl").endswith("replay a.jsonl --compare b.jsonl")
    assert web.viewer_command(demo="rnn").endswith("-m modscope demo --model rnn")


def test_the_served_page_leaves_out_the_web_font():
    folder = web._templates()
    try:
        page = (folder / "app_index.html").read_text()
        assert "fonts.googleapis.com" not in page and "js/textual.js" in page
    finally:
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()


def start_server(*args: str, cwd: Path) -> tuple[subprocess.Popen, int]:
    """``modscope web --port P ARGS`` in its own process group (in ``cwd``: where a tab's exports
    are written), once it accepts connections."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "modscope", "web", "--port", str(port), *args], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"modscope web exited {proc.returncode}: {proc.stderr.read().decode()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, port
        except OSError:
            time.sleep(0.2)
    stop_server(proc)
    raise AssertionError("modscope web did not listen within 60 s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and the viewer it started for the tab
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_for_screen(page, text: str, since: int = 0, timeout: float = 60) -> None:
    """Until the screen updates received (after the first ``since`` characters) show ``text``."""
    page.wait_for_function("([t, since]) => window.__screen.text.slice(since).includes(t)", arg=[text, since],
                           timeout=timeout * 1000)



def test_the_tui_in_headless_chromium(trace_file, tmp_path):
    with browser() as chromium:
        proc, port = start_server(str(trace_file), cwd=tmp_path)
        try:
            page = chromium.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(RECORD_SCREEN)
            watch = PageWatch(page)
            page.goto(f"http://127.0.0.1:{port}/")
            assert f"<div>modscope: {trace_file}</div>" in page.content()  # textual-serve's page, our title
            wait_for_screen(page, "Modules")  # the module tree's pane, then its modules
            wait_for_screen(page, "Sequential")
            wait_for_screen(page, "Linear")
            page.locator(".xterm-helper-textarea").focus()
            # an export reaches the browser: the page opens each file's /download/KEY (a new tab,
            # here only recorded), which serves it as an attachment
            page.keyboard.press("e")
            page.wait_for_function("() => window.__opened.length >= 3", timeout=60_000)
            names = []
            for url in page.evaluate("() => window.__opened"):
                assert url.startswith(f"http://127.0.0.1:{port}/download/"), url
                response = page.request.get(url)
                disposition = response.headers["content-disposition"]
                assert response.status == 200 and disposition.startswith("attachment; filename="), disposition
                name = disposition.split("filename=", 1)[1]
                assert response.body() == (tmp_path / "modscope-export" / name).read_bytes()
                names.append(name)
            assert sorted(n.rsplit(".", 1)[1] for n in names) == ["dot", "png", "svg"], names
            assert all(n.startswith("Sequential-tree-") for n in names), names
            page.keyboard.press("?")
            wait_for_screen(page, "pause / resume training")  # the help screen
            assert page.locator("canvas").count() >= 1
            assert all(url.startswith(f"http://127.0.0.1:{port}/") or url.startswith(f"ws://127.0.0.1:{port}/")
                       for url in watch.requests), watch.requests
        finally:
            stop_server(proc)
