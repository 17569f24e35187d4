"""Attach to first frame, by hand: a job that has kept a long history (``modscope record --serve``'s
``EventServer``, 10,000 steps of a small engine model's events, of which it keeps the last
100,000 events) and a viewer that attaches (``AttachSource`` in the TUI, headless with Textual's
``run_test``). Timed from the connection to the app's first frame, to the model on screen
(``app.first_model_at``, as ``bench_tui`` times a replay) and to the whole history folded (the
newest step shown); each run in a fresh app, ``--runs`` times (median, and every run).
An A/A row repeats the measurement.

Run: ``.venv/bin/python bench/bench_attach.py [--steps 10000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402
import modscope  # noqa: E402
from modscope.events.records import event_line  # noqa: E402
from modscope.events.serve import EventServer  # noqa: E402
from modscope.views.tui.app import ModscopeApp  # noqa: E402
from modscope.views.tui.sources import AttachSource  # noqa: E402
from modscope.views.tui.widgets.module_tree import ModuleTree  # noqa: E402

SECRET = "0" * 32


def history(steps: int) -> tuple[bytes, int]:
    """The JSON lines of ``steps`` training steps (a 3-layer MLP), and the last step."""
    model = engine.nn.Sequential(engine.nn.Linear(8, 16), engine.nn.ReLU(), engine.nn.Linear(16, 2))
    opt = engine.optim.SGD(model.parameters(), lr=0.01)
    x = engine.randn(4, 8)
    with modscope.trace(model, keep_steps=None, max_events=None, graph=False) as tr:
        for _ in range(steps):
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
    events = [e for e in tr.iter_events() if e["kind"] != "end"]  # the job is still running
    return b"".join(map(event_line, events)), events[-1]["step"]


async def first_frame(server: EventServer, last_step: int) -> tuple[float, float, float]:
    """Seconds from the connection to: the app's first frame, the model on screen
    (``app.first_model_at``, as ``bench_tui`` measures a replay), the whole history folded."""
    start = time.perf_counter()
    source = AttachSource(server.host, server.port, SECRET)
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0)
        mounted = time.perf_counter() - start
        while app.first_model_at is None:
            await pilot.pause(0.005)
        model = app.first_model_at - start
        while not (app.query_one(ModuleTree).modules and app.state.step >= last_step):
            await pilot.pause(0.005)
        folded = time.perf_counter() - start
    source.stop()
    return mounted, model, folded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    lines, last = history(args.steps)
    server = EventServer(SECRET)
    server.write_lines(lines)
    kept = len(server._body) + len(server._headers)
    total = lines.count(b"\n")
    print(f"history: {args.steps:,} steps, {total:,} events; the job keeps {kept:,} "
          f"({sum(map(len, server._body)) / 1e6:.1f} MB)")
    for label in ("attach", "again (A/A)"):
        runs = [asyncio.run(first_frame(server, last)) for _ in range(args.runs)]
        for i, what in enumerate(("first frame", "model on screen", "history folded")):
            times = [r[i] for r in runs]
            print(f"{label:12} {what:16} median {statistics.median(times):.3f} s   runs: "
                  + " ".join(f"{t:.3f}" for t in times))
    server.close()


if __name__ == "__main__":
    main()
