"""Space: the status says "pausing" at once, and "paused" only once the program says it is
(it stops at its step's end, ``capture.control``); the folding thread tells the UI thread when
the confirmation is folded, so it is drawn then, not at the next tick (issue 30). Behaviour
only; the timings are ``bench/bench_tui_dialogs.py``'s."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from textual.widget import Widget

from modscope.views.tui.app import PAUSING, ModscopeApp
from modscope.views.tui.sources import QueueSource
from tests.tui.test_app import settle
from tests.tui.test_key_latency import screen_lines, training_to_step_5


class LiveQueueSource(QueueSource):
    """A live program that takes the viewer's commands (recorded) and answers only when told."""

    live = True

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict[str, Any]] = []

    def control(self, message: dict[str, Any]) -> bool:
        self.sent.append(message)
        return True


def status(seq: int, state: str, reason: str = "") -> dict[str, Any]:
    return {"v": 1, "kind": "status", "seq": seq, "t": seq * 1000, "step": 5, "state": state, "reason": reason}


def status_line(app: ModscopeApp) -> str:
    """The training panel's status line as on screen."""
    return next(line for line in screen_lines(app) if "│ status" in line)


async def running_without_ticks(pilot, app: ModscopeApp, source: LiveQueueSource, events: list[dict]) -> None:
    """Five steps trained and the program running; then no tick, so only a key and a status
    event draw."""
    await training_to_step_5(pilot, app, source, [e for e in events if e["kind"] != "status"] +
                             [status(100_000, "running")])
    await settle(pilot, app, lambda a: str(a.title).endswith("running"))
    app._ticker.pause()


@asynccontextmanager
async def pausing(events: list[dict]) -> AsyncIterator[tuple[Any, ModscopeApp, LiveQueueSource]]:
    """A program running (no ticks), space pressed: the viewer says "pausing" and the program
    has not answered yet."""
    source = LiveQueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await running_without_ticks(pilot, app, source, events)
        await pilot.press("space")
        await settle(pilot, app, lambda a: "pausing" in str(a.title))
        yield pilot, app, source


@pytest.mark.asyncio
async def test_space_says_pausing_at_once_and_paused_when_the_program_is(events):
    async with pausing(events) as (pilot, app, source):
        assert source.sent == [{"cmd": "pause"}]
        assert app.state.status == "running"  # not paused yet: the program has not said so
        assert "pausing" in status_line(app) and PAUSING in status_line(app)
        await pilot.pause(0.3)
        assert "paused" not in str(app.title)  # and it never says so before the program does
        source.sink.write(status(100_001, "paused", "paused from the viewer"))
        await settle(pilot, app, lambda a: "paused" in str(a.title), timeout=2.0)
        assert "paused from the viewer" in status_line(app) and not app._pausing
        assert app.state.on_status is None  # told once: the viewer stops listening with the confirmation
        await pilot.press("space")
        assert source.sent[-1] == {"cmd": "resume"}


@pytest.mark.asyncio
async def test_space_again_while_pausing_resumes(events):
    source = LiveQueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await training_to_step_5(pilot, app, source, [e for e in events if e["kind"] != "status"] +
                                 [status(100_000, "running")])
        await settle(pilot, app, lambda a: a.state.status == "running")
        await pilot.press("space")
        await settle(pilot, app, lambda a: "pausing" in str(a.title))
        await pilot.press("space")  # changed its mind before the step ended
        assert source.sent == [{"cmd": "pause"}, {"cmd": "resume"}]
        await settle(pilot, app, lambda a: str(a.title).endswith("running"))
        assert not app._pausing and app.state.on_status is None


@pytest.mark.asyncio
async def test_a_confirmation_folded_under_the_lock_is_drawn_once_the_lock_is_free(events):
    """The status event is folded under the state's lock, and the UI thread, told from there,
    finds the state locked: it tries again in a moment (``FORCED_RETRY_S``), not at the next tick."""
    async with pausing(events) as (pilot, app, source):
        folded = threading.Event()

        def fold_slowly() -> None:  # as sources.fold does: apply under the lock, which it keeps a while
            with app.state.lock:
                app.state.apply(status(100_001, "paused", "paused from the viewer"))
                time.sleep(0.2)
            folded.set()

        threading.Thread(target=fold_slowly).start()
        await settle(pilot, app, lambda a: "paused" in str(a.title), timeout=2.0)
        assert folded.is_set() and not app._pausing


@pytest.mark.asyncio
async def test_a_new_title_repaints_the_title_line_only(events, monkeypatch):
    """The title says the status: Textual's App repainted the whole screen when it changed, and
    its header laid the screen out again (``widgets/header.py``): both before "paused" showed."""
    source = LiveQueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await running_without_ticks(pilot, app, source, events)
        await pilot.pause(0.2)
        refreshed: list[tuple[str, bool]] = []
        original = Widget.refresh

        def refresh(self, *regions, repaint=True, layout=False, recompose=False):
            refreshed.append((type(self).__name__, layout))
            return original(self, *regions, repaint=repaint, layout=layout, recompose=recompose)

        monkeypatch.setattr(Widget, "refresh", refresh)
        app.title = "modscope · Net · paused"
        await settle(pilot, app, lambda a: "· paused" in next(iter(screen_lines(a))))
        assert refreshed and set(refreshed) == {("TitleLine", False)}, refreshed


@pytest.mark.asyncio
async def test_paused_is_painted_first_and_the_views_right_after(events):
    """The confirmation changes the timeline as well (which step it follows): the status is
    drawn in a paint of its own, and the timeline in the next, with no tick (``_after_the_key``)."""
    async with pausing(events) as (pilot, app, source):
        drawn: list[str] = []
        original = app._refresh_timeline

        def refresh_timeline(snap: dict[str, Any]) -> None:
            drawn.append(str(app.title))  # what the title said when the timeline was drawn
            original(snap)

        app._refresh_timeline = refresh_timeline  # type: ignore[method-assign]
        source.sink.write(status(100_001, "paused", "paused from the viewer"))
        await settle(pilot, app, lambda a: "paused from the viewer" in status_line(a) and drawn, timeout=2.0)
        assert all(title.endswith("paused") for title in drawn), drawn  # after the status, not with it
        assert app._seen == app.state.rev.as_dict() and not app._due_after_key  # nothing left behind
