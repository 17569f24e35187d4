"""The TUI attached to a serving job (``modscope attach``), with Textual's Pilot: the history the
job kept is shown, live events follow, and quitting detaches while the job's stream stays open."""

from __future__ import annotations

import time

import pytest

import engine
import modscope
from modscope.events.schema import dumps_bytes
from modscope.events.serve import EventServer
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.sources import AttachSource
from modscope.views.tui.widgets.module_tree import ModuleTree

SECRET = "feedfacefeedfacefeedfacefeedface"


def _trace_lines(steps: int) -> list[bytes]:
    model = engine.nn.Sequential(engine.nn.Linear(4, 8), engine.nn.ReLU(), engine.nn.Linear(8, 2))
    opt = engine.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model, keep_steps=None, max_events=None) as tr:
        for _ in range(steps):
            model(engine.randn(3, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
    return [dumps_bytes(e) + b"\n" for e in tr.events if e["kind"] != "end"]  # (the job is still running)


async def _settle(pilot, condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


@pytest.mark.asyncio
async def test_the_tui_shows_a_jobs_history_then_live_steps_and_quitting_detaches():
    lines = _trace_lines(6)
    steps_at = [i for i, line in enumerate(lines) if b'"kind":"step"' in line]
    server = EventServer(SECRET)
    try:
        server.write_lines(b"".join(lines[: steps_at[2] + 1]))  # three steps of history
        source = AttachSource(server.host, server.port, SECRET)
        app = ModscopeApp(source)
        async with app.run_test(size=(160, 45)) as pilot:
            await _settle(pilot, lambda: app.query_one(ModuleTree).modules != {} and app.state.step >= 2)
            assert "attached to 127.0.0.1" in source.description
            server.write_lines(b"".join(lines[steps_at[2] + 1:]))  # live
            await _settle(pilot, lambda: app.state.step >= 5)
            assert server.viewers == 1
            await pilot.press("q")
        source.stop()
        deadline = time.monotonic() + 10
        while server.viewers and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.viewers == 0 and server.dropped_viewers == 0  # detached, not dropped
    finally:
        server.close()
