"""The demo's training runs at ``DEMO_NICE``, and the log says so; a user's program keeps its priority
(``launch``)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from textual.widgets import Static

from modscope.views.tui import launch
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.launch import DEMO_NICE
from modscope.views.tui.screens import TextScreen
from modscope.views.tui.sources import ChildProcess, EventListSource, SocketSource
from tests.tui.test_app import settle

SCRIPT = str(Path(__file__).parent / "train_script.py")


def _niceness_of(nice: int) -> int:
    source = SocketSource()
    child = ChildProcess(source, SCRIPT, ["100000"], None, nice=nice)
    try:
        return os.getpriority(os.PRIO_PROCESS, child.proc.pid)
    finally:
        child.proc.kill()
        child.proc.wait()
        source.stop()


def test_the_child_runs_at_the_niceness_asked_for_and_a_users_at_ours():
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert _niceness_of(0) == ours
    assert _niceness_of(DEMO_NICE) == min(19, ours + DEMO_NICE)


def test_only_the_demo_asks_for_it(monkeypatch):
    assert inspect.signature(launch.run_script).parameters["nice"].default == 0  # run, record: untouched
    calls = []
    monkeypatch.setattr(launch, "run_script", lambda *a, **kw: calls.append(kw) or 0)
    monkeypatch.setattr(launch, "check_framework", lambda backend: None)
    assert launch.demo("net") == 0
    assert calls[0]["nice"] == DEMO_NICE


@pytest.mark.asyncio
async def test_the_log_says_the_demo_trains_at_a_lower_priority(events):
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.state.status == "ended")
        for nice, said in ((0, False), (DEMO_NICE, True)):
            app.child = SimpleNamespace(log=["step 0 loss 2.3"], nice=nice)
            await pilot.press("l")
            await settle(pilot, app, lambda a: isinstance(a.screen, TextScreen))
            text = str(app.screen.query_one(Static).render())
            assert "step 0 loss 2.3" in text
            assert (f"lower priority (nice {DEMO_NICE})" in text) == said
            await pilot.press("escape")
            await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        app.child = None
