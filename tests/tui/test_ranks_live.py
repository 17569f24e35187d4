"""Every rank live, end to end: the app over a real 2-rank DDP run (CPU, gloo, torch's elastic
launcher), as ``modscope run --nproc-per-node 2`` starts it: the rank bar, a rank that parts
flagged, space holding every rank at one step boundary past gloo's collective timeout, r
switching the views, n stepping every rank, and a rank killed shown gone with its last event."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.ranks import RankHold
from modscope.views.tui.sources import ChildProcess, SocketSource
from modscope.views.tui.widgets.rank_bar import RankBar
from tests.tui.test_end_to_end import wait_for

pytest.importorskip("torch")
SCRIPT = str(Path(__file__).parent / "ddp_hold.py")
GLOO_TIMEOUT = 3.0  # seconds: the test holds the ranks longer than this


def held_at(app) -> int | None:
    with app.root.lock:
        return RankHold.held_at(app.root.all_ranks())


def rows(app) -> dict[int, dict]:
    with app.root.lock:
        return {r["rank"]: r for r in app.root.board.rows()}


@pytest.mark.asyncio
async def test_two_live_ranks_held_switched_stepped_and_one_killed(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    source = SocketSource(ranks=2)
    child = ChildProcess(source, SCRIPT, ["--steps", "100000", "--sleep", "0.05", "--timeout", str(GLOO_TIMEOUT),
                                          "--diverge-step", "2"], str(tmp_path / "run.jsonl"), backend="torch", nproc=2)
    app = ModscopeApp(source, child=child)
    try:
        async with app.run_test(size=(180, 50)) as pilot:
            await wait_for(pilot, lambda: app.root.board is not None and len(app.root.board.last) == 2
                           and min(s.step for s in app.root.all_ranks().values()) > 4, timeout=240)
            bar = app.query_one(RankBar)
            assert bar.display and "rank 0 of 2" in app.title
            await wait_for(pilot, lambda: "parted at step 3: module.0.bias" in str(bar.render()))
            await pilot.press("space")
            await wait_for(pilot, lambda: held_at(app) is not None, timeout=60)
            step = held_at(app)
            await wait_for(pilot, lambda: f"every rank held at step {step}" in str(bar.render()))
            await asyncio.sleep(GLOO_TIMEOUT + 3)  # past gloo's timeout: no collective is pending
            assert held_at(app) == step and child.returncode is None
            await pilot.press("r")
            await wait_for(pilot, lambda: app.state.rank == 1 and "rank 1 of 2" in app.title)
            await pilot.press("n")  # every rank runs one whole step and is held again

            def stepped() -> bool:
                with app.root.lock:
                    return all(s.status_reason.startswith("stepped") for s in app.root.all_ranks().values())

            await wait_for(pilot, lambda: stepped() and held_at(app) == step + 1, timeout=60)
            await pilot.press("space")
            await wait_for(pilot, lambda: min(s.step for s in app.root.all_ranks().values()) > step + 3, timeout=60)
            assert not app.hold.holding
            pid = app.root.rank_state(1).session["pid"]
            os.kill(pid, signal.SIGKILL)
            await wait_for(pilot, lambda: rows(app)[1]["state"] == "gone", timeout=60)
            assert "rank 1" in str(bar.render()) and "disconnected" in rows(app)[1]["why"]
            await wait_for(pilot, lambda: child.returncode is not None, timeout=120)  # the launcher stops rank 0
            await pilot.press("q")
    finally:
        child.stop(source)
        source.stop()
