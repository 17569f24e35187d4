"""``modscope web``: bad input stops before any server starts (one line, exit 2), the viewer
command per tab, and the TUI served to a real headless Chromium (the page loads, the module
tree arrives, a key works: ``?`` opens the help; ``e`` exports, and the file arrives as a
download; no request fails, the favicon included). ``--attach``: a tab on a real ``modscope
record --serve`` job, its viewer attached from outside the job, the secret on no command line."""

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
    assert "give a TRACE file, --demo or --attach (one of them)" in _one_line(capsys)
    assert main(["web", "--demo", "net", str(trace_file)]) == 2
    _one_line(capsys)


def test_without_textual_serve_it_says_how_to_install_it(trace_file, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "textual_serve" else real(name))
    assert main(["web", str(trace_file)]) == 2
    assert "needs textual-serve, which is not installed: pip install 'modscope[web]'" in _one_line(capsys)


def test_attach_checks_the_job_before_any_server_starts(tmp_path, capsys, monkeypatch):
    from modscope.events.serve import EventServer, secret_path, write_secret

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(web, "serve", lambda *a, **k: pytest.fail("no server may start"))
    nobody = _free_port()
    assert main(["web", "--attach", str(nobody)]) == 2  # no secret file: no job of this user there
    assert f"{secret_path(nobody)}: cannot read the job's secret" in _one_line(capsys)
    write_secret(nobody, "abc123")
    assert main(["web", "--attach", f"127.0.0.1:{nobody}"]) == 2
    assert f"no job serves on 127.0.0.1:{nobody}" in _one_line(capsys)
    assert main(["web", "--attach", "host:port"]) == 2
    assert "expected [HOST:]PORT" in _one_line(capsys)
    job = EventServer("right0secret")
    try:
        write_secret(job.port, "wrong0secret")
        assert main(["web", "--attach", str(job.port)]) == 2
        assert f"the job on 127.0.0.1:{job.port} closed the connection: a wrong secret" in _one_line(capsys)
        loose = tmp_path / "loose.secret"
        loose.write_text("right0secret\n")
        loose.chmod(0o644)
        assert main(["web", "--attach", str(job.port), "--token-file", str(loose)]) == 2
        assert "loose.secret: readable by other users" in _one_line(capsys)
        assert job.attached == 0 and job.refused == 1
    finally:
        job.close()
    assert main(["web", "--token-file", "x", "t.jsonl"]) == 2
    assert "--token-file goes with --attach" in _one_line(capsys)
    assert main(["web", "--attach", "7010", "--compare", "b.jsonl"]) == 2
    assert "--compare goes with a TRACE" in _one_line(capsys)


def test_attach_serves_when_the_job_takes_the_secret(tmp_path, capsys, monkeypatch):
    from modscope.events.serve import EventServer

    served = []
    monkeypatch.setattr(web, "serve", lambda command, **k: served.append((command, k)))
    token = tmp_path / "job.secret"
    token.write_text("right0secret\n")
    token.chmod(0o600)
    job = EventServer("right0secret")
    try:
        port = _free_port()
        assert main(["web", "--port", str(port), "--attach", str(job.port), "--token-file", str(token)]) == 0
        assert job.attached == 1 and job.refused == 0  # the probe attached, as a viewer does
    finally:
        job.close()
    [(command, kwargs)] = served
    assert command == f"{sys.executable} -m modscope attach 127.0.0.1:{job.port} --token-file {token}"
    assert "right0secret" not in command and kwargs["port"] == port
    assert f"serving the job on 127.0.0.1:{job.port} on http://127.0.0.1:{port}" in capsys.readouterr().err


def test_it_binds_this_machine_only_unless_asked():
    args = build_parser().parse_args(["web", "t.jsonl"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)


def test_each_tab_runs_a_replay_or_the_demo():
    assert web.viewer_command("a b.jsonl") == f"{sys.executable} -m modscope replay 'a b.jsonl'"
    assert web.viewer_command("a.jsonl", compare="b.jsonl").endswith("replay a.jsonl --compare b.jsonl")
    assert web.viewer_command(demo="rnn").endswith("-m modscope demo --model rnn")
    assert web.viewer_command(attach="127.0.0.1:7010").endswith("-m modscope attach 127.0.0.1:7010")
    assert web.viewer_command(attach="h:1", token_file="s.secret").endswith(
        f"attach h:1 --token-file {Path.cwd() / 's.secret'}")


def test_the_served_page_leaves_out_the_web_font():
    folder = web._templates()
    try:
        page = (folder / "app_index.html").read_text()
        assert "fonts.googleapis.com" not in page and "js/textual.js" in page
        assert page.count('rel="icon" href="data:image/svg+xml,') == 1  # no /favicon.ico request
    finally:
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()


def start_server(*args: str, cwd: Path, **environ: str) -> tuple[subprocess.Popen, int]:
    """``modscope web --port P ARGS`` in its own process group (in ``cwd``: where a tab's exports
    are written; ``environ`` added to its environment), once it accepts connections."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), **environ}
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
            # its backdrop is the screen beneath as the page shows it: its cells are never sent
            assert "\ue000" not in page.evaluate("() => window.__screen.text")
            assert page.locator("canvas").count() >= 1
            assert all(url.startswith(f"http://127.0.0.1:{port}/") or url.startswith(f"ws://127.0.0.1:{port}/")
                       for url in watch.requests), watch.requests
            assert watch.failed == [] and watch.errors == [], (watch.failed, watch.errors)
        finally:
            stop_server(proc)


FOOTER_KEYS = ["q quit", "? help", "tab next view", "z maximise/restore", "space pause/resume", "n step",
               "b breakpoints", "/ find", "e export"]  # the main screen's footer, in order, when all fit

# The screen's text with the terminal's escape sequences left out (styles, cursor moves): a
# footer key's letter and label are two styled runs, one after the other in the stream.
PLAIN_SCREEN = r"() => window.__screen.text.replace(/\x1b\[[0-9;?<>$]*[A-Za-z]/g, '')"


def test_the_key_footer_fits_a_narrow_tab(trace_file, tmp_path):
    """In a tab about 90 columns wide (its app never has focus: nothing is clicked), the footer
    shows its first keys whole and ``? more`` for the rest, instead of a key cut mid-word
    (``widgets/footer.py``); and it shows keys at all (a footer that composed an extra widget
    once showed none in a tab)."""
    with browser() as chromium:
        proc, port = start_server(str(trace_file), cwd=tmp_path)
        try:
            page = chromium.new_page(viewport={"width": 800, "height": 600})
            page.add_init_script(RECORD_SCREEN)
            page.goto(f"http://127.0.0.1:{port}/")
            wait_for_screen(page, "Sequential")
            page.wait_for_function(f"() => ({PLAIN_SCREEN})().includes('? more')", timeout=60_000)
            page.wait_for_timeout(1000)  # (any later draw of the footer: the last one counts)
            plain = page.evaluate(PLAIN_SCREEN)
            # (the cells between keys come as cursor moves, not spaces: compared without spaces)
            footer = plain[plain.rindex("q quit"):plain.rindex("? more")].replace(" ", "")
            prefixes = ["".join(FOOTER_KEYS[:n]).replace(" ", "") for n in range(2, len(FOOTER_KEYS))]
            assert footer in prefixes, footer  # whole keys, in order, then the hint
        finally:
            stop_server(proc)


JOB = """
import time
import engine as torch

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
while True:
    loss = model(torch.randn(3, 4)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    time.sleep(0.05)
"""


def _processes_holding(text: str) -> list[str]:
    """The command lines of this machine's processes that contain ``text``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in argv:
            found.append(argv)
    return found


def test_a_running_job_in_headless_chromium(tmp_path):
    """A tab on ``modscope web --attach``: its viewer (a process of its own, started by
    textual-serve for the tab) attaches to a real ``modscope record --serve`` job; the model and
    its live steps arrive, a key works; the secret is on no process's command line; closing the
    tab detaches and the job goes on."""
    with browser() as chromium:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
        (tmp_path / "train.py").write_text(JOB)
        job = subprocess.Popen([sys.executable, "-m", "modscope", "record", "--serve", "0", "--trace-file",
                                "run.jsonl", "train.py"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
        proc = None
        try:
            announced = job.stderr.readline()
            assert announced.startswith("modscope record: serving on 127.0.0.1:"), announced
            job_port = int(announced.split("127.0.0.1:", 1)[1].split(":", 1)[0])
            secret = (tmp_path / ".modscope" / "attach" / f"{job_port}.secret").read_text().strip()
            proc, port = start_server("--attach", f"127.0.0.1:{job_port}", cwd=tmp_path, HOME=str(tmp_path))
            page = chromium.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(RECORD_SCREEN)
            watch = PageWatch(page)
            page.goto(f"http://127.0.0.1:{port}/")
            assert f"<div>modscope: the job on 127.0.0.1:{job_port}</div>" in page.content()
            wait_for_screen(page, f"attached to 127.0.0.1:{job_port}")  # the viewer's source
            wait_for_screen(page, "Sequential")
            wait_for_screen(page, "Linear")
            since = page.evaluate("() => window.__screen.text.length")
            wait_for_screen(page, "step", since=since)  # live: the training panel keeps moving
            viewers = [argv for argv in _processes_holding(f"modscope attach 127.0.0.1:{job_port}")
                       if argv.startswith(sys.executable)]
            assert len(viewers) == 1, viewers  # the tab's viewer (under textual-serve's shell), outside the job
            assert _processes_holding(secret) == []  # the secret: on no command line
            page.locator(".xterm-helper-textarea").focus()
            page.keyboard.press("?")
            wait_for_screen(page, "pause / resume training")
            assert watch.failed == [] and watch.errors == [], (watch.failed, watch.errors)
            page.close()  # the tab goes, its viewer with it; the job trains on
            deadline = time.monotonic() + 30
            while _processes_holding(f"modscope attach 127.0.0.1:{job_port}") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert [a for a in _processes_holding(f"modscope attach 127.0.0.1:{job_port}") if "web" not in a] == []
            assert job.poll() is None
            assert watch.failed == [], watch.failed
            assert job.poll() is None
        finally:
            if proc is not None:
                stop_server(proc)
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGTERM)
            job.communicate(timeout=60)
        assert job.returncode == 128 + signal.SIGTERM
        assert not modscope.load_trace(tmp_path / "run.jsonl").truncated
