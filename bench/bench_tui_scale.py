"""Key → screen latency of the TUI on big models and big files, headless (``run_test(size=(200, 55))``).

Scenarios (each run ``--rounds`` times, interleaved, so every row has an A/A twin beside it):

* ``wide``: the issue-21 model (``bench/_wide_model.py``: ``Sequential`` of 2,500 × [Linear,
  ReLU, LayerNorm, Identity], 10,001 modules, 40,006 events a step) TRAINING in a real child
  process, exactly ``modscope run``'s path (``ChildProcess`` + ``SocketSource``);
* ``net``: the demo Net (``modscope/examples/mnist_net.py``, what ``modscope demo`` runs) training the same way;
* ``replay``: a 1M-event trace of the wide model (written once by ``_wide_model.py --trace``):
  time to the first frame, to the model drawn and to the whole file indexed, the viewer's
  resident memory, and the same key presses while it loads.

How a press is timed. The key goes in through the driver (``driver.send_message(Key)``, Textual's
own input path, as ``Pilot.press`` does, without Pilot's wait for an idle app: an app fed live
never is). Every paint is recorded by wrapping ``App._display``, which each screen's compositor
refresh calls once it has rendered the dirty regions (headless, the renderable is then dropped:
the work of drawing is done by that time). For each press we know what it must change on screen
(a predicate on the widgets: the root expanded, the params table showing the module under the
cursor, the timeline drawn for the new step, the find dialog listing matches). The latency is
from sending the key to the end of the first paint that (1) starts after the predicate holds and
(2) leaves the widgets the key changed with no repaint pending (``_repaint_required``,
``_layout_required``, the screen's dirty set): the screen has changed and
settled. The bench polls the predicate every millisecond on the app's own event loop, so it
never runs inside a handler or a paint. Presses are spaced 150–250 ms apart (seeded jitter, so
they do not lock step with the app's 100 ms ticker).

Keys: ``expand`` (root collapsed, unmeasured, then expanded: measured), ``move`` (tree cursor
down ×5 then up ×5, repeated), ``select`` (the hook timeline's cursor moves, up ×5 then down ×5: the module under it
is selected in the tree and the params table), ``step`` (``[`` and ``]`` alternately),
``find`` (``/`` until the dialog lists modules; escape, unmeasured, closes it).

Run: ``.venv/bin/python bench/bench_tui_scale.py`` (``--scenarios wide,net,replay --presses 30 --rounds 2``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if os.environ.get("BENCH_VIEWER_SRC"):  # the viewer from another tree (e.g. a `git archive` of a base commit)
    sys.path.insert(0, os.environ["BENCH_VIEWER_SRC"])
sys.path.insert(0, str(ROOT / "bench"))

import _common  # noqa: E402,F401  (one BLAS thread here and in every child)
from textual import events  # noqa: E402
from textual.widget import Widget  # noqa: E402

from modscope.views.tui.app import ModscopeApp  # noqa: E402
from modscope.views.tui.screens import FindScreen  # noqa: E402
from modscope.views.tui.sources import ChildProcess, ReplaySource, SocketSource  # noqa: E402
from modscope.views.tui.widgets.module_tree import ModuleTree  # noqa: E402
from modscope.views.tui.widgets.params_table import ParamsTable  # noqa: E402
from modscope.views.tui.widgets.timeline import HookTimeline  # noqa: E402

WIDE = ROOT / "bench" / "_wide_model.py"
NET = ROOT / "modscope" / "examples" / "mnist_net.py"
REPLAY_STEPS = 25  # × 40,006 events: the 1M-event file
KEYS = ("expand", "move", "select", "step", "find")
TIMEOUT = 20.0  # seconds a press may take before the bench gives up on it (counted, shown as ">")
GIVE_UP = 3  # timeouts of one key before its remaining presses are skipped


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class PaintClock:
    """Records the end of every paint (``App._display`` calls)."""

    def __init__(self, app: ModscopeApp) -> None:
        self.app = app
        self.paints: list[float] = []
        self.cpu: list[float] = []  # the UI thread's CPU time at the end of each paint
        self.first: float | None = None
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            now = time.perf_counter()
            if self.first is None:
                self.first = now
            self.paints.append(now)
            self.cpu.append(time.thread_time())

        app._display = display  # type: ignore[method-assign]

    async def press(self, key: str, char: str | None, done: Callable[[], bool],
                    watch: Callable[[], list[Widget]]) -> tuple[float, float]:
        """Seconds from sending ``key`` to the end of the first paint after ``done()`` holds that
        leaves ``watch()`` with nothing left to repaint: wall clock, and the UI thread's CPU time
        over the same span (what the machine's other load cannot inflate)."""
        t0, c0 = time.perf_counter(), time.thread_time()
        send(self.app, key, char)
        while not done():
            await asyncio.sleep(0.001)
            if time.perf_counter() - t0 > TIMEOUT:
                raise TimeoutError(f"{key}: the screen never showed its effect")
        shown, widgets = time.perf_counter(), watch()
        # Pending at ``shown``: not painted yet, wait for the paint that clears it. Else it was
        # painted between two polls: by the last paint since the key (if the key needed one).
        wait = any(pending(w) for w in widgets)
        while wait and not (self.paints[-1] > shown and not any(pending(w) for w in widgets)):
            await asyncio.sleep(0.001)
            if time.perf_counter() - t0 > TIMEOUT:
                raise TimeoutError(f"{key}: the screen never settled: " + ", ".join(
                    f"{w!r} {w._repaint_required} {w._layout_required} {w._repaint_regions}"
                    f" {w in w.screen._dirty_widgets}" for w in widgets if pending(w))
                    + f" paints {len(self.paints)} last {time.perf_counter() - self.paints[-1]:.1f}s ago")
        last = max((i for i, t in enumerate(self.paints) if t > t0), default=None)
        if last is None:
            return shown - t0, time.thread_time() - c0
        return self.paints[last] - t0, self.cpu[last] - c0


def pending(w: Widget) -> bool:
    try:
        screen = w.screen
    except Exception:  # noqa: BLE001 - removed with its screen: nothing left to paint
        return False
    # (not ``_repaint_regions``: regions of a widget already repainted whole can stay behind)
    return bool(w._repaint_required or w._layout_required or w in screen._dirty_widgets)


def send(app: ModscopeApp, key: str, char: str | None) -> None:
    event = events.Key(key, char)
    event.set_sender(app)
    app._driver.send_message(event)


def find_listing(app: ModscopeApp) -> bool:
    """The find dialog is on screen, composed, and listing matches (what `/` must reach)."""
    screen = app.screen
    matches = screen.query("#matches") if isinstance(screen, FindScreen) else []
    return bool(matches) and matches.first().option_count > 0


async def until(pred: Callable[[], bool], timeout: float = 120.0) -> None:
    t0 = time.perf_counter()
    while not pred():
        await asyncio.sleep(0.005)
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError("the app never got there")


async def measure_keys(app: ModscopeApp, clock: PaintClock, presses: int,
                       seed: int) -> dict[str, list[tuple[float, float]]]:
    """``presses`` timed presses of each of ``KEYS`` (see the module docstring)."""
    rng = random.Random(seed)
    tree, params, timeline = app.query_one(ModuleTree), app.query_one(ParamsTable), app.query_one(HookTimeline)
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in KEYS}

    async def gap() -> None:
        await asyncio.sleep(0.15 + rng.random() * 0.1)

    async def timed(name: str, *args: Any) -> None:
        """One measured press; a timeout counts as TIMEOUT (the key never answered in time)."""
        if sum(1 for w, _ in out[name] if w >= TIMEOUT) >= GIVE_UP:
            return
        try:
            out[name].append(await clock.press(*args))
        except TimeoutError:
            out[name].append((TIMEOUT, float("nan")))

    await until(lambda: app._auto_selected and app.selected != "")  # it moves the cursor once, by itself
    tree.focus()
    tree.move_cursor(tree.root)
    await until(lambda: params.module_path == "")
    for _ in range(presses):  # expand: collapse first (unmeasured), then expand (measured)
        try:
            await clock.press("enter", "\r", lambda: not tree.root.is_expanded, lambda: [tree])
        except TimeoutError:
            pass  # counted by the expand that follows (it finds the root still expanded, or not)
        await gap()
        await timed("expand", "enter", "\r", lambda: tree.root.is_expanded, lambda: [tree])
        await gap()
    for i in range(presses):
        key = "down" if (i // 5) % 2 == 0 else "up"
        target = tree.cursor_line + (1 if key == "down" else -1)

        def moved(target: int = target) -> bool:
            node = tree.cursor_node
            return tree.cursor_line == target and node is not None and params.module_path == node.data

        await timed("move", key, None, moved, lambda: [tree, params])
        await gap()
    timeline.focus()
    await gap()
    for i in range(presses):
        key, char = ("left_square_bracket", "[") if i % 2 == 0 else ("right_square_bracket", "]")
        before = timeline.step

        def stepped(before: int | None = before) -> bool:
            return not timeline.follow and timeline.step != before and timeline._shown is not None \
                and timeline._shown[0] == timeline.step

        await timed("step", key, char, stepped, lambda: [timeline])
        await gap()
    for i in range(presses):  # up first: the timeline followed to its last line
        key = "up" if (i // 5) % 2 == 0 else "down"
        target = timeline.cursor + (1 if key == "down" else -1)

        def selected(target: int = target) -> bool:
            path = timeline._paths[timeline.cursor] if timeline._paths else None
            node = tree.cursor_node
            return timeline.cursor == target and params.module_path == path and node is not None \
                and node.data == path

        await timed("select", key, None, selected, lambda: [timeline, tree, params])
        await gap()
    for _ in range(presses):
        await timed("find", "slash", "/", lambda: find_listing(app),
                    lambda: [app.screen.query_one("#matches"), app.screen])
        await gap()
        if isinstance(app.screen, FindScreen) or out["find"][-1][0] < TIMEOUT:
            await clock.press("escape", "\x1b", lambda: not isinstance(app.screen, FindScreen), lambda: [tree])
        timeline.focus()
        await gap()
    return out


async def live(script: Path, args: list[str], presses: int, seed: int) -> dict[str, Any]:
    """A real ``modscope run`` child training ``script``; keys timed while it trains."""
    source = SocketSource()
    child = ChildProcess(source, str(script), args, None)
    app = ModscopeApp(source, child=child)
    clock = PaintClock(app)
    try:
        async with app.run_test(size=(200, 55)):
            await until(lambda: app.query_one(ModuleTree).modules and len(app.state.steps_available()) >= 3)
            keys = await measure_keys(app, clock, presses, seed)
            result = {"keys": keys, "rss_mib": rss_mib(), "steps": app.state.step,
                      "events": app.state.events_total, "skipped": app.state.skipped,
                      "alive": child.returncode is None}
            child.stop(source)
    finally:
        if child.returncode is None:
            child.proc.kill()
    return result


async def first_frame(path: Path) -> float:
    """Seconds from opening ``path`` to the app's first paint."""
    t0 = time.perf_counter()
    app = ModscopeApp(ReplaySource(path))
    clock = PaintClock(app)
    async with app.run_test(size=(200, 55)):
        await until(lambda: clock.first is not None)
        return clock.first - t0


async def replay(path: Path, presses: int, seed: int) -> dict[str, Any]:
    """The 1M-event file: first frame (beside the small fixture's: the app's own start-up),
    model drawn, fully indexed; memory; keys while loading."""
    # The scenario before this one (the wide model's viewer, ~600 MiB) left its garbage in this
    # process: collected first, so that a full collection of it does not land in this
    # measurement (a real viewer starts in a process of its own).
    gc.collect()
    small = await first_frame(ROOT / "tests" / "tui" / "data" / "small_trace.jsonl")
    gc.collect()
    rss0 = rss_mib()
    t0 = time.perf_counter()
    source = ReplaySource(path)
    app = ModscopeApp(source)
    clock = PaintClock(app)
    async with app.run_test(size=(200, 55)):
        await until(lambda: clock.first is not None)
        await until(lambda: app.first_model_at is not None)
        await until(lambda: len(app.state.steps_available()) >= 3)
        keys = await measure_keys(app, clock, presses, seed)
        keys_done = time.perf_counter() - t0
        await until(lambda: not source.thread.is_alive(), timeout=600)
        loaded = time.perf_counter() - t0
        result = {"first_frame_s": clock.first - t0, "small_file_first_frame_s": small,
                  "first_model_s": app.first_model_at - t0,
                  "loaded_s": loaded, "keys_done_s": keys_done, "rss_mib": rss_mib() - rss0,
                  "events": app.state.events_total, "keys": keys}
    return result


def ensure_replay_file(path: Path) -> Path:
    if not path.exists():
        print(f"writing {path} ({REPLAY_STEPS} steps of the wide model)…", flush=True)
        subprocess.run([sys.executable, str(WIDE), str(REPLAY_STEPS), "--trace", str(path)], check=True)
    return path


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def row(name: str, result: dict[str, Any]) -> str:
    cells = []
    for k, samples in result["keys"].items():
        if not samples:
            continue
        wall, cpu = [w for w, _ in samples], [c for _, c in samples if c == c]
        cpu = cpu or [float("nan")]
        late = sum(1 for w in wall if w >= TIMEOUT)
        cells.append(f"{k} {statistics.median(wall) * 1e3:.0f}/{pct(wall, 0.95) * 1e3:.0f}"
                     f" ({statistics.median(cpu) * 1e3:.0f}/{pct(cpu, 0.95) * 1e3:.0f})"
                     + (f" [{late} of {len(wall)} > {TIMEOUT:.0f} s]" if late else ""))
    extra = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in result.items() if k != "keys"}
    return f"{name:<10} " + "  ".join(cells) + f"   {extra}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default="wide,net,replay")
    parser.add_argument("--presses", type=int, default=30, help="timed presses per key (≥ 30 for a p95)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each scenario, interleaved (2: A/A)")
    parser.add_argument("--replay-file", type=Path, default=Path("/tmp/modscope-bench-wide-1m.jsonl"))
    args = parser.parse_args()
    runs: dict[str, Callable[[int], Any]] = {
        "wide": lambda seed: live(WIDE, ["100000"], args.presses, seed),
        "net": lambda seed: live(NET, ["--epochs", "1000"], args.presses, seed),
        "replay": lambda seed: replay(ensure_replay_file(args.replay_file), args.presses, seed),
    }
    chosen = args.scenarios.split(",")
    print(f"key: wall p50/p95 ms (UI-thread CPU p50/p95 ms), {args.presses} presses each; load average "
          f"{open('/proc/loadavg').read().split()[0]}; viewer from {os.environ.get('BENCH_VIEWER_SRC') or ROOT}")
    for r in range(args.rounds):
        for name in chosen:
            result = asyncio.run(runs[name](r))
            print(row(f"{name}#{r + 1}", result), flush=True)


if __name__ == "__main__":
    main()
