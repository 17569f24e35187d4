"""The TUI under load, headless (Textual's run_test), fed through the real socket path:

1. a producer process floods the viewer with realistic events at ``--rate`` events/s until
   ``--events`` have been sent; meanwhile key presses move the module-tree cursor and we time how
   long each takes to be answered (the selection changed and the screen refreshed): p50/p95;
2. the viewer's resident memory at 10 %, 50 % and 100 % of the flood (flat = bounded state);
3. time to the first screen and to the first model drawn (replay of a recorded trace);
4. training throughput of the MNIST Net with the TUI attached vs the same script headless.

Run: ``.venv/bin/python bench/bench_tui.py`` (defaults: 25,000 events/s, 1,000,000 events).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _common  # noqa: E402,F401  (one BLAS thread here and in every child: a fair comparison)
from textual import events  # noqa: E402

from modscope.views.tui.app import ModscopeApp  # noqa: E402
from modscope.views.tui.sources import ChildProcess, ReplaySource, SocketSource  # noqa: E402
from modscope.views.tui.widgets.module_tree import ModuleTree  # noqa: E402

FIXTURE = ROOT / "tests" / "tui" / "data" / "small_trace.jsonl"


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def producer(address: str, token: str, rate: int, total: int) -> None:
    """Replays the fixture's step pattern with fresh seq/step numbers at ``rate`` events/s."""
    events = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    header = [e for e in events if e["kind"] in ("session", "model")]
    body = [e for e in events if e["step"] == 2 and e["kind"] not in ("session", "model", "end")]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(address)
    sock.sendall(json.dumps({"hello": "modscope", "token": token}).encode() + b"\n")
    seq, step, sent = 0, 0, 0
    lines = []
    for e in header:
        lines.append(json.dumps({**e, "seq": seq}))
        seq += 1
    sock.sendall(("\n".join(lines) + "\n").encode())
    start = time.perf_counter()
    chunk = max(rate // 100, 1)  # 100 sends a second
    while sent < total:
        lines = []
        for _ in range(chunk):
            e = body[sent % len(body)]
            if sent % len(body) == 0:
                step += 1
            lines.append(json.dumps({**e, "seq": seq, "step": step, "t": time.monotonic_ns()}))
            seq += 1
            sent += 1
        sock.sendall(("\n".join(lines) + "\n").encode())
        ahead = sent / rate - (time.perf_counter() - start)
        if ahead > 0:
            time.sleep(ahead)
    sock.close()


async def flood(rate: int, total: int) -> dict:
    source = SocketSource()
    app = ModscopeApp(source)
    latencies: list[float] = []
    memory: dict[str, float] = {}
    async with app.run_test(size=(200, 55)) as pilot:
        proc = subprocess.Popen([sys.executable, __file__, "--produce", source.address, source.token,
                                 str(rate), str(total)])
        start = time.perf_counter()
        while not app.query_one(ModuleTree).modules:
            await pilot.pause(0.05)
        app.query_one(ModuleTree).focus()
        memory["start"] = rss_mib()
        marks = {int(total * f): name for f, name in ((0.1, "10%"), (0.5, "50%"))}
        keys = ["down", "down", "down", "up", "up", "up"]
        i = 0
        while proc.poll() is None or app.state.events_total < total * 0.99:
            before = app.selected
            t0 = time.perf_counter()
            # The key goes through the app's normal input path; Pilot.press would also wait for
            # the whole app to be idle, which a continuous flood never is.
            app.post_message(events.Key(keys[i % len(keys)], None))
            while app.selected == before:
                await asyncio.sleep(0.001)
            frames = app.screen._compositor  # noqa: F841 - the next paint follows within one frame
            await asyncio.sleep(1 / 60)
            latencies.append(time.perf_counter() - t0)
            i += 1
            for mark, name in list(marks.items()):
                if app.state.events_total >= mark:
                    memory[name] = rss_mib()
                    del marks[mark]
            await asyncio.sleep(0.2)
            if time.perf_counter() - start > total / rate * 3 + 30:
                break
        elapsed = time.perf_counter() - start
        memory["100%"] = rss_mib()
        proc.wait()
        received = app.state.events_total
        skipped = app.state.skipped
    latencies.sort()
    return {"latency_p50_ms": statistics.median(latencies) * 1e3,
            "latency_p95_ms": latencies[int(len(latencies) * 0.95) - 1] * 1e3, "presses": len(latencies),
            "events_per_s": received / elapsed, "received": received, "skipped": skipped, "rss_mib": memory}


async def first_screen() -> dict:
    t0 = time.perf_counter()
    app = ModscopeApp(ReplaySource(FIXTURE))
    async with app.run_test(size=(200, 55)) as pilot:
        await pilot.pause(0)
        mounted = time.perf_counter() - t0
        while app.first_model_at is None:
            await pilot.pause(0.01)
        model = app.first_model_at - t0
    return {"first_frame_s": mounted, "first_model_s": model}


def headless_rate(steps: int) -> float:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "_timed_net.py"), str(steps)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split("STEPS_PER_S")[1])


async def tui_rate(steps: int, refresh: float | None = None) -> float:
    """The same script as a ``modscope run`` child, with the TUI (headless) drawing it live and
    the trace recorded to a file, as ``modscope run`` does (``refresh``: the app's redraw
    interval, its default when None)."""
    source = SocketSource()
    with tempfile.TemporaryDirectory() as tmp:
        child = ChildProcess(source, str(ROOT / "bench" / "_timed_net.py"), [str(steps)],
                             str(Path(tmp) / "trace.jsonl.gz"))
        app = ModscopeApp(source, child=child, **({} if refresh is None else {"refresh_interval": refresh}))
        async with app.run_test(size=(200, 55)) as pilot:
            while child.returncode is None:
                await pilot.pause(0.2)
            await pilot.pause(0.5)
    line = next(line for line in child.log if line.startswith("STEPS_PER_S"))
    return float(line.split()[1])


def throughput(steps: int, rounds: int, refresh: float | None = None) -> tuple[float, float, float]:
    """Median steps/s headless and with the TUI attached, and the median of the rounds' ratios.
    Each round runs both, in turn first (the machine's speed drifts over minutes: a ratio of two
    runs side by side is steadier than the ratio of two medians)."""
    headless, live, ratios = [], [], []
    for i in range(rounds):
        pair = {}
        for kind in (("headless", "live") if i % 2 == 0 else ("live", "headless")):
            pair[kind] = headless_rate(steps) if kind == "headless" else asyncio.run(tui_rate(steps, refresh))
        headless.append(pair["headless"])
        live.append(pair["live"])
        ratios.append(pair["live"] / pair["headless"])
    return statistics.median(headless), statistics.median(live), statistics.median(ratios)


def main() -> None:
    if sys.argv[1:2] == ["--produce"]:  # the producer process
        address, token, rate, total = sys.argv[2:6]
        producer(address, token, int(rate), int(total))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=int, default=25_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=200, help="Net steps per throughput run")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs each way")
    parser.add_argument("--throughput-only", action="store_true")
    parser.add_argument("--refresh", type=float, help="the TUI's redraw interval (default: the app's)")
    args = parser.parse_args()
    headless, live, ratio = throughput(args.steps, args.rounds, args.refresh)
    print(f"Net training, {args.steps} steps, median of {args.rounds} rounds: headless {headless:.1f} steps/s, "
          f"with the TUI attached {live:.1f} steps/s  (median ratio of a round's two runs {ratio:.3f})")
    if args.throughput_only:
        return
    print("first screen (replay of the fixture):", {k: round(v, 3) for k, v in asyncio.run(first_screen()).items()})
    result = asyncio.run(flood(args.rate, args.events))
    print(f"flood of {args.events:,} events at {args.rate:,}/s requested:")
    print(f"  received {result['received']:,} events at {result['events_per_s']:,.0f} events/s "
          f"(viewer sampled away {result['skipped']:,})")
    print(f"  key press answered on screen: p50 {result['latency_p50_ms']:.1f} ms, "
          f"p95 {result['latency_p95_ms']:.1f} ms over {result['presses']} presses")
    print("  resident memory (MiB): " + ", ".join(f"{k} {v:.1f}" for k, v in result["rss_mib"].items()))


if __name__ == "__main__":
    main()
