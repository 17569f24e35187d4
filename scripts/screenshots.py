"""Regenerates ``screenshots/``: the whole TUI while the MNIST Net really trains (a child process
streaming over the socket, as ``modscope demo`` runs it), one screenshot per view, the same TUI
with the Net trained under real PyTorch (``modscope demo --backend torch``), the Net's
autograd graph rendered by graphviz, the TUI in a browser tab (``modscope web --demo`` in
Debian's headless chromium, driven by Playwright), a tab attached to a live job (``modscope web
--attach`` to ``modscope record --serve``), and the TUI over a 2-rank DDP run (``modscope
run --nproc-per-node 2``: gloo on CPU, every rank held at one step, rank 1 shown, parted from rank
0). SVG from Textual, PNG through ``rsvg-convert``
(Debian's ``librsvg2-bin``).

    .venv/bin/python scripts/screenshots.py                  # all of them
    .venv/bin/python scripts/screenshots.py --only torch     # some: engine, torch, diagram, web, attach, ranks
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
sys.path.insert(0, str(ROOT))

from modscope.install_hints import TORCH_INSTALL  # noqa: E402
from modscope.views.tui.app import ModscopeApp  # noqa: E402
from modscope.views.tui.launch import start_child, torch_installed  # noqa: E402
from modscope.views.tui.sources import SocketSource  # noqa: E402

SIZE = (200, 55)
VIEWS = {"tree": "#tree", "params": "#params", "timeline": "#timeline", "training": "#training", "graph": "#graph"}
GROUPS = ("engine", "torch", "diagram", "web", "attach", "ranks")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NET = ROOT / "modscope" / "examples" / "mnist_net.py"
DDP = ROOT / "tests" / "tui" / "ddp_hold.py"  # a 2-rank gloo DDP script; rank 1 parts after step 3

Shoot = Callable[[ModscopeApp, object], Awaitable[list[Path]]]


def to_png(svg: Path) -> Path:
    """Textual writes spaces as &#160;, which rsvg collapses at the start of a styled span; plain
    spaces under xml:space="preserve" render as the terminal shows them."""
    text = svg.read_text().replace("&#160;", " ").replace("<svg ", '<svg xml:space="preserve" ', 1)
    fixed = svg.with_suffix(".render.svg")
    fixed.write_text(text)
    png = svg.with_suffix(".png")
    subprocess.run(["rsvg-convert", str(fixed), "-o", str(png)], check=True)
    fixed.unlink()
    return png


async def capture(args: list[str], backend: str, shoot: Shoot) -> list[Path]:
    """Train the Net with ``args`` in a traced child (``backend``), wait until it has stepped 40
    times and drawn its autograd graph, select ``conv2``, then let ``shoot`` take screenshots."""
    source = SocketSource()
    source.description = f"live {NET.name} ({backend})"  # the title modscope demo shows
    child = start_child(source, str(NET), args, None, stats=True, backend=backend)
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(600):
            await pilot.pause(0.1)
            if app.state.step >= 40 and app.state.graph is not None:
                break
        print(f"{backend}: captured at step {app.state.step} ({app.state.events_total} events)", file=sys.stderr)
        app._select("conv2")
        await pilot.pause(1.0)
        written = await shoot(app, pilot)
        await pilot.press("q")
        for _ in range(100):
            await pilot.pause(0.1)
            if child.returncode is not None:
                break
    return written


async def engine_shots(app: ModscopeApp, pilot: object) -> list[Path]:
    """The whole TUI, then each view maximised."""
    written = [save(app, "tui-training")]
    for name, selector in VIEWS.items():
        widgets = app.query(selector)
        if not widgets:
            continue
        app.screen.maximize(widgets.first())
        await pilot.pause(0.5)
        written.append(save(app, f"view-{name}"))
        app.screen.minimize()
    return written


async def torch_shots(app: ModscopeApp, pilot: object) -> list[Path]:
    """The whole TUI over the torch run."""
    return [save(app, "tui-torch")]


def save(app: ModscopeApp, name: str) -> Path:
    svg = OUT / f"{name}.svg"
    app.save_screenshot(filename=svg.name, path=str(OUT))
    return to_png(svg)


def diagram() -> Path:
    png = OUT / "autograd-net.png"
    subprocess.run([str(Path(sys.executable).parent / "modscope"), "export", "net", "--what", "autograd",
                    "--depth", "1", "-o", str(png)], check=True)
    return png


def web_demo(seconds: float = 40.0) -> Path:
    """``modscope web --demo`` in a 1600x900 chromium tab, after ``seconds`` of training."""
    _need_browser()
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "modscope", "web", "--demo", "--port", str(port)],
                              cwd=OUT, start_new_session=True,  # (the demo's trace goes to screenshots/; removed)
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        png = _shoot_tab(port, seconds, OUT / "web-demo.png")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        shutil.rmtree(OUT / "modscope-traces", ignore_errors=True)
    return png


def _need_browser() -> None:
    """Exit with what to install when Playwright's package or Debian's chromium is missing."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        sys.exit("the web screenshots need Playwright's Python package: pip install playwright "
                 "(and Debian's chromium: apt-get install chromium; never `playwright install`)")
    if not Path(CHROMIUM).exists():
        sys.exit("the web screenshots need Debian's chromium: apt-get install chromium")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shoot_tab(port: int, seconds: float, png: Path) -> Path:
    """Wait for the server on ``port``, open it in a 1600x900 chromium tab, shoot ``png`` after
    ``seconds``."""
    from playwright.sync_api import sync_playwright

    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/")
        time.sleep(seconds)
        page.screenshot(path=str(png))
        browser.close()
    return png


def web_attach(seconds: float = 30.0) -> Path:
    """``modscope web --attach`` in a 1600x900 chromium tab: the Net trains under ``modscope
    record --serve`` (a job of its own, with its trace file), the tab's viewer attaches to it, and
    the tab is shot after ``seconds``. A private HOME holds the job's secret file (the tab's viewer
    reads it there, as ``modscope attach`` does); removed after, with the job's trace."""
    import tempfile

    _need_browser()
    with tempfile.TemporaryDirectory(prefix="modscope-shot-") as home:
        env = {**os.environ, "HOME": home, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
        job = subprocess.Popen([sys.executable, "-m", "modscope", "record", "--serve", "0", "--trace-file",
                                "run.jsonl.gz", str(NET), "--epochs", "1000"], cwd=home, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        server = None
        try:
            announced = job.stderr.readline()  # "modscope record: serving on 127.0.0.1:PORT ..."
            if "serving on 127.0.0.1:" not in announced:
                sys.exit(f"modscope record --serve did not start: {announced.strip()}")
            job_port = int(announced.split("127.0.0.1:", 1)[1].split(":", 1)[0].split()[0])
            port = _free_port()
            server = subprocess.Popen([sys.executable, "-m", "modscope", "web", "--attach", f"127.0.0.1:{job_port}",
                                       "--port", str(port)], cwd=home, env=env, start_new_session=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            png = _shoot_tab(port, seconds, OUT / "web-attach.png")
        finally:
            if server is not None:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=30)
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGTERM)
            job.communicate(timeout=60)
    return png


async def ranks() -> list[Path]:
    """``modscope run --nproc-per-node 2`` on the DDP script: every rank held at one step (space),
    rank 1 shown (r), its parted parameter flagged in the rank bar and the parameter table."""
    from modscope.views.tui.ranks import RankHold

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    source = SocketSource(ranks=2)
    source.description = f"live {DDP.name} (torch)"
    child = start_child(source, str(DDP), ["--steps", "100000", "--sleep", "0.1", "--diverge-step", "3"], None,
                        backend="torch", nproc=2)
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(1200):
            await pilot.pause(0.1)
            if app.root.board is not None and min(s.step for s in app.root.all_ranks().values()) >= 20 \
                    and len(app.root.all_ranks()) == 2:
                break
        await pilot.press("space")
        for _ in range(300):
            await pilot.pause(0.1)
            with app.root.lock:
                if RankHold.held_at(app.root.all_ranks()) is not None:
                    break
        app._select("module.0")
        await pilot.press("r")
        await pilot.pause(2.0)
        print(f"ranks: captured at step {app.state.step}", file=sys.stderr)
        written = [save(app, "tui-ranks")]
        await pilot.press("q")
        for _ in range(400):
            await pilot.pause(0.1)
            if child.returncode is not None:
                break
    return written


def make(group: str) -> list[Path]:
    """The screenshots of one group: ``engine``, ``torch``, ``diagram``, ``web``, ``attach`` or ``ranks``."""
    if group == "web":
        return [web_demo()]
    if group == "attach":
        return [web_attach()]
    if group == "ranks":
        if not torch_installed():
            sys.exit(f"the ranks screenshot needs PyTorch: {TORCH_INSTALL}")
        return asyncio.run(ranks())
    if group == "engine":
        return asyncio.run(capture(["--epochs", "100"], "engine", engine_shots))
    if group == "torch":
        if not torch_installed():
            sys.exit(f"the torch screenshot needs PyTorch: {TORCH_INSTALL}")
        return asyncio.run(capture(["--epochs", "100", "--backend", "torch"], "torch", torch_shots))
    return [diagram()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=GROUPS, default=list(GROUPS),
                        help="which screenshots (default: all): engine (tui-training, view-*), torch (tui-torch), "
                             "diagram (autograd-net), web (web-demo: modscope web --demo in chromium), "
                             "attach (web-attach: modscope web --attach to a record --serve job), "
                             "ranks (tui-ranks: a 2-rank DDP run)")
    groups = parser.parse_args(argv).only
    if shutil.which("rsvg-convert") is None and {"engine", "torch", "ranks"} & set(groups):
        sys.exit("rsvg-convert is missing: apt-get install librsvg2-bin")
    OUT.mkdir(exist_ok=True)
    for group in GROUPS:
        if group in groups:
            for path in make(group):
                print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
