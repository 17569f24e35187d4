"""Key → screen latency of the keys a new user presses first, while the demo trains (issue 30).

``z`` (maximise the focused view), ``?`` (the help), ``/`` (the find dialog) and ``space`` (until
the screen says "paused": the program stops at its step's end, so this includes up to one step
of training and the round trip to the child), in a real ``modscope run`` of the demo Net
(``ChildProcess`` + ``SocketSource``, as ``modscope demo``), headless at ``--size``.

Timing is ``bench_tui_scale``'s (``PaintClock.press``): from sending the key through the driver to
the end of the first paint after the key's effect holds that leaves the widgets it changed with
nothing left to repaint; wall clock, and the UI thread's CPU time in brackets. Each key is
undone, unmeasured, before the next press (``z`` again, escape, space to resume), presses
150-250 ms apart. ``--rounds 2`` runs the scenario twice, interleaved: the A/A row.

Space's time is split in two, from the ``paused`` status event's own time (the child's
``time.monotonic_ns``; the viewer's ``perf_counter`` reads the same clock on Linux): *program*,
from the pause command sent to the status emitted (the rest of the step being trained, and the
command's way there), and *viewer*, from the status emitted to the paint that shows it (its way
back, the fold and the draw).

``--nice 10`` runs the training child at ``modscope demo``'s niceness (``launch.DEMO_NICE``); the
default, 0, is a user's program's.

Run: ``.venv/bin/python bench/bench_tui_dialogs.py [--presses 30 --rounds 2 --size 200x55 --nice 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from typing import Any

from bench_tui_scale import NET, TIMEOUT, PaintClock, find_listing, pct, until

from modscope.views.tui import state as state_module
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.screens import HelpScreen
from modscope.views.tui.sources import ChildProcess, SocketSource
from modscope.views.tui.widgets.module_tree import ModuleTree
from modscope.views.tui.widgets.training import TrainingPanel

KEYS = ("z", "help", "find", "pause")
PAUSE_PARTS = ("program", "viewer")  # space's time split (see the module docstring)


class PauseMarks:
    """When the pause command was sent, and when the program says it paused (its status event's
    own time): wraps the source's ``control`` and the state's status handler."""

    def __init__(self, app: ModscopeApp) -> None:
        self.sent: float | None = None
        self.paused_at: float | None = None
        control = app.source.control

        def sent(message: dict[str, Any]) -> bool:
            if message.get("cmd") == "pause":
                self.sent = time.perf_counter()
            return control(message)

        app.source.control = sent  # type: ignore[method-assign]
        on_status = state_module._HANDLERS["status"]

        def status(state: Any, event: dict[str, Any]) -> None:
            if event["state"] == "paused" and self.paused_at is None:
                self.paused_at = event["t"] / 1e9
            on_status(state, event)

        state_module._HANDLERS["status"] = status
        self._restore = lambda: state_module._HANDLERS.__setitem__("status", on_status)

    def close(self) -> None:
        self._restore()

    def clear(self) -> None:
        self.sent = self.paused_at = None


async def measure(app: ModscopeApp, clock: PaintClock, presses: int, seed: int,
                  keys: list[str]) -> dict[str, list[tuple[float, float]]]:
    rng = random.Random(seed)
    tree, panel = app.query_one(ModuleTree), app.query_one(TrainingPanel)
    main = app.screen_stack[0]
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in KEYS + PAUSE_PARTS}

    async def gap() -> None:
        await asyncio.sleep(0.15 + rng.random() * 0.1)

    async def timed(name: str, *args: Any) -> None:
        try:
            out[name].append(await clock.press(*args))
        except TimeoutError:
            out[name].append((TIMEOUT, float("nan")))

    await until(lambda: app._auto_selected and app.selected != "")
    tree.focus()
    await gap()
    for _ in range(presses if "z" in keys else 0):
        await timed("z", "z", "z", lambda: main.maximized is tree, lambda: [tree, main])
        await gap()
        await clock.press("z", "z", lambda: main.maximized is None, lambda: [tree, main])
        await gap()
    for _ in range(presses if "help" in keys else 0):
        await timed("help", "question_mark", "?", lambda: isinstance(app.screen, HelpScreen) and
                    bool(app.screen.query("Static")), lambda: [app.screen])
        await gap()
        await clock.press("escape", "\x1b", lambda: app.screen is main, lambda: [tree])
        await gap()
    for _ in range(presses if "find" in keys else 0):
        await timed("find", "slash", "/", lambda: find_listing(app),
                    lambda: [app.screen.query_one("#matches"), app.screen])
        await gap()
        await clock.press("escape", "\x1b", lambda: app.screen is main, lambda: [tree])
        tree.focus()
        await gap()
    marks = PauseMarks(app)
    try:
        for _ in range(presses if "pause" in keys else 0):
            marks.clear()
            t0 = time.perf_counter()
            await timed("pause", "space", " ", lambda: app.state.status == "paused" and "paused" in str(app.title),
                        lambda: [panel, main])
            if marks.sent is not None and marks.paused_at is not None and out["pause"][-1][0] < TIMEOUT:
                out["program"].append((marks.paused_at - marks.sent, float("nan")))
                out["viewer"].append((t0 + out["pause"][-1][0] - marks.paused_at, float("nan")))
            await gap()
            await clock.press("space", " ", lambda: app.state.status == "running", lambda: [panel])
            await gap()
    finally:
        marks.close()
    return out


async def live(presses: int, seed: int, size: tuple[int, int], keys: list[str], nice: int = 0) -> dict[str, Any]:
    source = SocketSource()
    child = ChildProcess(source, str(NET), ["--epochs", "1000"], None)
    if nice:  # as ``modscope demo`` does (launch.DEMO_NICE); set here so a base tree's viewer gets it too
        os.setpriority(os.PRIO_PROCESS, child.proc.pid, nice)
    app = ModscopeApp(source, child=child)
    clock = PaintClock(app)
    try:
        async with app.run_test(size=size):
            await until(lambda: app.query_one(ModuleTree).modules and len(app.state.steps_available()) >= 3)
            timed = await measure(app, clock, presses, seed, keys)
            result = {"keys": {k: v for k, v in timed.items() if v}, "steps": app.state.step}
            child.stop(source)
    finally:
        if child.returncode is None:
            child.proc.kill()
    return result


def row(name: str, result: dict[str, Any]) -> str:
    cells = []
    for key, samples in result["keys"].items():
        wall = [w for w, _ in samples]
        cpu = [c for _, c in samples if c == c] or [float("nan")]
        cell = f"{key} {statistics.median(wall) * 1e3:.0f}/{pct(wall, 0.95) * 1e3:.0f}"
        if key not in PAUSE_PARTS:  # (the parts of space have no CPU time of their own)
            cell += f" ({statistics.median(cpu) * 1e3:.0f}/{pct(cpu, 0.95) * 1e3:.0f})"
        cells.append(cell)
    return f"{name:<8} " + "  ".join(cells) + f"   steps {result['steps']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presses", type=int, default=30, help="timed presses per key (>= 30 for a p95)")
    parser.add_argument("--rounds", type=int, default=2, help="runs, interleaved (2: an A/A row)")
    parser.add_argument("--size", default="200x55", help="terminal size, WxH")
    parser.add_argument("--keys", default=",".join(KEYS), help=f"which keys (default: {','.join(KEYS)})")
    parser.add_argument("--nice", type=int, default=0,
                        help="the training child's niceness (modscope demo's is launch.DEMO_NICE, 10)")
    args = parser.parse_args()
    size = tuple(int(x) for x in args.size.split("x"))
    print(f"key: median/p95 ms wall (UI thread CPU ms); net demo training (nice {args.nice}), {args.size}, "
          f"{args.presses} presses, load {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        result = asyncio.run(live(args.presses, seed=r, size=size, keys=args.keys.split(","), nice=args.nice))
        print(row(f"net #{r + 1}", result), flush=True)


if __name__ == "__main__":
    main()
