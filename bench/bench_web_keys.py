"""``modscope web --demo``: key -> screen in a browser tab, measured from the page (issue 28).

``modscope web --demo`` serves the TUI; Debian's headless chromium (driven by Playwright, never
``playwright install``) opens a tab, which starts its own viewer and the demo training (the MNIST
Net on the engine, as ``modscope demo``). Once it trains, ``?`` is pressed ``--presses`` times
(the help opens; ``escape`` closes it between presses, at random gaps of 0.3-0.6 s). In the page:

- the key's time is taken by a capture-phase ``keydown`` listener (before textual-serve's own
  script sends it over the websocket);
- the screen's time is the frame after the one in which the websocket message that completes
  the help's text ("pause / resume training") arrived (two ``requestAnimationFrame`` callbacks
  after the message: the terminal writes the message and paints it in between), so the figure
  includes the network round trip, the viewer's work and the browser's paint.

Rounds: "demo" and "demo again" (the A/A row), each a new tab (a new viewer and a new training
process), and "replay" over a recorded trace (the viewer idle) for comparison. Medians and p95
per round, in ms. Target (issue 28): p95 <= 150 ms on the demo.

Run: ``.venv/bin/python bench/bench_web_keys.py [--presses 40]``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MARKER = "pause / resume training"

PROBE = """
(() => {
  const Original = window.WebSocket;
  const decoder = new TextDecoder();
  window.__probe = null;  // {marker, text, key, done}
  window.__text = "";
  document.addEventListener("keydown", () => {
    if (window.__probe && window.__probe.key === null) window.__probe.key = performance.now();
  }, true);
  function Recording(url, protocols) {
    const ws = protocols === undefined ? new Original(url) : new Original(url, protocols);
    ws.addEventListener("message", (event) => {
      const data = typeof event.data === "string" ? event.data : decoder.decode(event.data);
      window.__text = (window.__text + data).slice(-200000);
      const p = window.__probe;
      if (p && p.key !== null && p.done === null && p.arrived === null) {
        p.text += data;
        if (p.text.includes(p.marker)) {
          p.arrived = performance.now();
          requestAnimationFrame(() => requestAnimationFrame(() => { p.done = performance.now(); }));
        }
      }
    });
    return ws;
  }
  Recording.prototype = Original.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Recording[k] = Original[k];
  window.WebSocket = Recording;
})();
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], cwd: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "modscope", "web", "--port", str(port), *args], cwd=cwd,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, port
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("modscope web did not start")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def measure(browser, port: int, presses: int, ready: str, settle: float) -> list[float]:
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    page.add_init_script(PROBE)
    page.goto(f"http://127.0.0.1:{port}/")
    page.wait_for_function("t => window.__text.includes(t)", arg=ready, timeout=120_000)
    time.sleep(settle)
    page.locator(".xterm-helper-textarea").focus()
    rng = random.Random(0)
    out = []
    for _ in range(presses):
        page.evaluate("m => { window.__probe = {marker: m, text: '', key: null, arrived: null, done: null}; }", MARKER)
        page.keyboard.press("?")
        page.wait_for_function("() => window.__probe.done !== null", timeout=30_000)
        out.append(page.evaluate("() => window.__probe.done - window.__probe.key"))
        page.evaluate("() => { window.__probe = null; }")
        page.keyboard.press("Escape")
        time.sleep(rng.uniform(0.3, 0.6))
    page.close()
    return out


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presses", type=int, default=40)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        trace = os.path.join(tmp, "net.jsonl.gz")
        subprocess.run([sys.executable, "-c", "import engine, modscope\n"
                        "from modscope.examples.mnist_net import Net\n"
                        "m = Net(); opt = engine.optim.SGD(m.parameters(), lr=0.01)\n"
                        "with modscope.trace(m) as tr:\n"
                        "  for _ in range(5):\n"
                        "    m(engine.randn(8, 1, 28, 28)).sum().backward(); opt.step(); opt.zero_grad()\n"
                        f"tr.save({trace!r})"], check=True, cwd=ROOT)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        rows = {}
        for name, server_args, ready, settle in (("demo", ["--demo"], "running", 10.0),
                                                 ("demo again", ["--demo"], "running", 10.0),
                                                 ("replay", [trace], "Hook firing order", 3.0)):
            proc, port = start(server_args, tmp)
            try:
                rows[name] = measure(browser, port, args.presses, ready, settle)
            finally:
                stop(proc)
        browser.close()
    print(f"key (?) -> screen in the page, ms ({args.presses} presses each, load average {os.getloadavg()[0]:.1f}):")
    for name, xs in rows.items():
        print(f"  {name:11s} median {statistics.median(xs):6.1f}   p95 {p95(xs):6.1f}   max {max(xs):6.1f}")


if __name__ == "__main__":
    main()
